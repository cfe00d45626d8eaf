// The call view's templates, the same rules as the Swift SDK's CallViewLayout
// (Sources/Switchboard/View/CallLayout.swift): float, grid and pip, tile frames for a viewport.

export const MARGIN = 16;
export const FLOATING_SHARE = 0.28;

/** Float for one-to-one (up to two members), grid above. */
export function automaticTemplate(memberCount) {
  return memberCount > 2 ? "grid" : "float";
}

/** The members shown: you first, then everyone still in the call or being called. */
export function members(call, me) {
  if (!call) return [];
  const self = call.participants.find((p) => p.userId === me) ?? { userId: me, status: "none" };
  return [self, ...call.participants.filter((p) => p.userId !== me && p.status !== "none")];
}

/** The other member the single large tile shows: the active speaker, the first who answered, the first called. */
export function featured(others, speaker) {
  return others.find((p) => p.userId === speaker) ?? others.find((p) => p.status === "accept") ?? others[0] ?? null;
}

/** The strip of members below a shared screen: 20 % of the view's height. */
export const STRIP_SHARE = 0.2;

/** The member whose screen is shown: the first other member in the call who shares one. */
export function screenSharer(shown) {
  return shown.slice(1).find((p) => p.screenSharing && p.status === "accept") ?? null;
}

/** A shared screen fills the view above a strip of square member tiles (you first), centred. */
export function screenTiles(sharer, shown, viewport) {
  const strip = Math.round(viewport.height * STRIP_SHARE);
  const screen = { x: 0, y: 0, width: viewport.width, height: viewport.height - strip };
  const side = Math.min(strip, viewport.width / shown.length);
  const left = (viewport.width - side * shown.length) / 2;
  const top = screen.height + (strip - side) / 2;
  return [
    { userId: sharer.userId, role: "screen", frame: screen },
    ...shown.map((p, i) => ({ userId: p.userId, role: "strip", frame: { x: left + side * i, y: top, width: side, height: side } })),
  ];
}

/** The small tile: a miniature of the view at 28 % of its size. */
export function floatingSize(viewport) {
  return { width: Math.round(viewport.width * FLOATING_SHARE), height: Math.round(viewport.height * FLOATING_SHARE) };
}

/** Where a dragged small tile lands: within the view, MARGIN from its edges. */
export function clampFloating(origin, viewport) {
  const size = floatingSize(viewport);
  const clamp = (value, low, high) => Math.min(Math.max(value, low), Math.max(low, high));
  return {
    x: clamp(origin.x, MARGIN, viewport.width - size.width - MARGIN),
    y: clamp(origin.y, MARGIN, viewport.height - size.height - MARGIN),
  };
}

/** Grid cells: 2 columns up to 4, 3 up to 9, 4 above; square, centred, a short last row centred. */
export function cells(count, area) {
  if (count <= 0) return [];
  const columns = count === 1 ? 1 : count <= 4 ? 2 : count <= 9 ? 3 : 4;
  const rows = Math.ceil(count / columns);
  const side = Math.min(area.width / columns, area.height / rows);
  const top = area.y + (area.height - side * rows) / 2;
  return Array.from({ length: count }, (_, index) => {
    const row = Math.floor(index / columns);
    const inRow = Math.min(columns, count - row * columns);
    const left = area.x + (area.width - side * inRow) / 2;
    return { x: left + side * (index % columns), y: top + side * row, width: side, height: side };
  });
}

/**
 * The tiles to draw, back to front: `{userId, role, frame}` with role main, floating, grid,
 * enlarged, or screen and strip while another member shares a screen. `view` holds the user's choices: `{template, swapped, enlarged, floatingOrigin}`.
 */
export function tiles(call, me, speaker, viewport, view = {}) {
  const shown = members(call, me);
  if (!shown.length || viewport.width <= 0 || viewport.height <= 0) return [];
  const full = { x: 0, y: 0, width: viewport.width, height: viewport.height };
  const self = shown[0];
  const connected = self.status === "accept";
  const sharer = connected ? screenSharer(shown) : null;
  if (sharer) return screenTiles(sharer, shown, viewport);
  const template = view.template && view.template !== "auto" ? view.template : automaticTemplate(shown.length);
  if (template === "float") {
    const peer = connected ? featured(shown.slice(1), speaker) : null;
    if (!peer) return [{ userId: self.userId, role: "main", frame: full }];
    const [large, small] = view.swapped ? [self, peer] : [peer, self];
    const size = floatingSize(viewport);
    const origin = view.floatingOrigin ?? { x: viewport.width - size.width - MARGIN, y: MARGIN };
    return [
      { userId: large.userId, role: "main", frame: full },
      { userId: small.userId, role: "floating", frame: { ...origin, ...size } },
    ];
  }
  if (template === "pip") {
    const one = connected ? featured(shown.slice(1), speaker) ?? self : self;
    return [{ userId: one.userId, role: "main", frame: full }];
  }
  if (shown.length === 1) return [{ userId: self.userId, role: "main", frame: full }];
  const focus = view.enlarged && shown.find((p) => p.userId === view.enlarged);
  if (!focus) return shown.map((p, i) => ({ userId: p.userId, role: "grid", frame: cells(shown.length, full)[i] }));
  const top = { x: 0, y: 0, width: full.width, height: Math.min(full.width, (full.height * 2) / 3) };
  const rest = { x: 0, y: top.height, width: full.width, height: full.height - top.height };
  const others = shown.filter((p) => p.userId !== focus.userId);
  const restCells = cells(others.length, rest);
  return [
    { userId: focus.userId, role: "enlarged", frame: top },
    ...others.map((p, i) => ({ userId: p.userId, role: "grid", frame: restCells[i] })),
  ];
}

/**
 * Which layer of each other member's camera the tiles need (CallPlus's `isTiny`): the big one
 * for a tile that fills the view or is enlarged, the small one for thumbnails (grid cells, the
 * floating tile, the strip under a shared screen). Members with no tile are left out.
 */
export function videoLayers(placed, me) {
  const layers = {};
  for (const tile of placed) {
    if (tile.userId === me || tile.role === "screen") continue;
    const layer = tile.role === "main" || tile.role === "enlarged" ? "big" : "small";
    if (layers[tile.userId] !== "big") layers[tile.userId] = layer;
  }
  return layers;
}

/** `mm:ss`, `h:mm:ss` from an hour. */
export function durationText(seconds) {
  const total = Math.max(0, Math.floor(seconds));
  const two = (n) => String(n).padStart(2, "0");
  const h = Math.floor(total / 3600);
  const m = Math.floor(total / 60) % 60;
  const s = total % 60;
  return h > 0 ? `${h}:${two(m)}:${two(s)}` : `${two(m)}:${two(s)}`;
}
