// The call screen's stage and its list of people: a tile per member (their video, or their
// picture with where they stand), placed by layout.js; each tile captioned with the name and the
// microphone, volume and network state in words for screen readers.

import { tiles } from "./layout.js";
import { fillAvatar } from "./avatar.js";
import { memberStateText, nameOf } from "./words.js";

const VOLUME_BARS = { mute: 0, low: 1, medium: 2, high: 3, peak: 4 };
const QUALITY_TEXT = { bad: "Weak network", veryBad: "Very weak network", down: "No network" };

/**
 * Draws the tiles of `info` on `stage`. `local` is this user's own state ({microphoneOn,
 * cameraOn, quality, volume, stream}); `remote(userId, screen)` gives a member's stream;
 * `unreachable(userId)` says this page has no media path to a member, or that no media came from
 * them for 2 s (stall.js): shown as `down`, whatever their own reports say; `videoPaused(userId)`
 * that no new frame of a member's camera came for a
 * while (their picture shows, saying so, not a frozen frame); `onTap(userId)` is a click or Enter
 * on a tile.
 */
export function renderStage(stage, { info, me, self, speaker, view, local, remote, unreachable, videoPaused, onTap }) {
  const viewport = { width: stage.clientWidth, height: stage.clientHeight };
  const placed = tiles(info, me, speaker, viewport, view);
  // A member's screen is a tile of its own, next to the member's tile.
  const key = (tile) => (tile.role === "screen" ? `screen:${tile.userId}` : tile.userId);
  const keep = new Set(placed.map(key));
  for (const node of [...stage.querySelectorAll(".tile")]) if (!keep.has(node.dataset.key)) node.remove();
  placed.forEach((tile, index) => {
    const isSelf = tile.userId === me;
    const member = isSelf ? { ...self, ...(info.participants.find((p) => p.userId === me) ?? {}), nickname: self.nickname, avatarURL: self.avatarURL }
      : info.participants.find((p) => p.userId === tile.userId) ?? { userId: tile.userId };
    let node = stage.querySelector(`.tile[data-key="${CSS.escape(key(tile))}"]`);
    if (!node) node = newTile(stage, key(tile), tile.userId, onTap);
    node.className = `tile ${tile.role}`;
    node.dataset.role = tile.role;
    Object.assign(node.style, {
      left: `${tile.frame.x}px`, top: `${tile.frame.y}px`, width: `${tile.frame.width}px`, height: `${tile.frame.height}px`,
      zIndex: String(index + 1),
    });
    const screen = tile.role === "screen";
    const video = node.querySelector("video");
    const stream = screen ? remote(tile.userId, true) : isSelf ? local.stream : remote(tile.userId, false);
    if (stream && video.srcObject !== stream) video.srcObject = stream;
    // The screen tile shows the picture only; the member's own tile plays their audio.
    video.muted = isSelf || screen;
    const video_ = info.mediaType === "video";
    const cameraOn = screen || (video_ && (isSelf ? local.cameraOn : member.cameraOn && member.status === "accept"));
    const paused = !screen && cameraOn && !isSelf && !!videoPaused?.(tile.userId);
    video.hidden = !cameraOn || paused;
    node.dataset.camera = paused ? "paused" : cameraOn ? "on" : "off";
    node.dataset.status = member.status ?? "none";
    const persona = node.querySelector(".persona");
    persona.hidden = cameraOn && !paused;
    fillAvatar(persona.querySelector(".avatar"), member);
    const waiting = member.status === "waiting" && !isSelf;
    persona.querySelector(".state").textContent =
      waiting ? "Ringing…" : paused ? "Video paused: weak network" : cameraOn || !video_ ? "" : "Camera off";
    const name = nameOf(member) + (isSelf ? " (you)" : "") + (screen ? "’s screen" : "");
    node.querySelector(".label").textContent = name;

    const microphoneOn = isSelf ? local.microphoneOn : member.microphoneOn !== false;
    const quality = (isSelf ? local.quality : unreachable?.(member.userId) ? "down" : member.networkQuality) ?? "unknown";
    const volume = microphoneOn ? (isSelf ? local.volume : member.volumeLevel) ?? "mute" : "mute";
    const indicators = node.querySelector(".indicators");
    indicators.dataset.microphone = microphoneOn ? "on" : "off";
    indicators.dataset.camera = cameraOn ? "on" : "off";
    indicators.dataset.quality = quality;
    indicators.dataset.volume = volume;
    indicators.hidden = screen || waiting;
    indicators.querySelector(".mic-off").hidden = microphoneOn;
    const bars = indicators.querySelector(".bars");
    bars.hidden = !microphoneOn;
    bars.dataset.level = String(VOLUME_BARS[volume] ?? 0);
    const network = indicators.querySelector(".network");
    network.textContent = QUALITY_TEXT[quality] ?? "";
    network.hidden = !QUALITY_TEXT[quality];
    const said = [
      microphoneOn ? (volume === "mute" ? "quiet" : "speaking") : "microphone off",
      video_ && !screen && !cameraOn ? "camera off" : null,
      paused ? "video paused: weak network" : null,
      QUALITY_TEXT[quality]?.toLowerCase(),
    ].filter(Boolean).join(", ");
    indicators.setAttribute("aria-label", said);
    const action = tile.role === "floating" ? "swap with the large picture" : tile.role === "grid" ? "show larger" : tile.role === "enlarged" ? "back to the grid" : null;
    node.setAttribute("aria-label", `${name}${waiting ? ", ringing" : ""}: ${said}`);
    if (action) {
      node.tabIndex = 0;
      node.setAttribute("role", "button");
      node.setAttribute("aria-label", `${name}${waiting ? ", ringing" : ""}: ${said}. Activate to ${action}.`);
    } else {
      node.removeAttribute("tabindex");
      node.setAttribute("role", "group");
    }
  });
}

function newTile(stage, key, userId, onTap) {
  const node = document.createElement("div");
  node.className = "tile";
  node.dataset.key = key;
  node.dataset.user = userId;
  node.innerHTML = `<video autoplay playsinline></video>
    <div class="persona"><span class="avatar size-large"></span><span class="state"></span></div>
    <div class="caption"><span class="label"></span><span class="indicators" role="img">
      <span class="mic-off">Mic off</span><span class="bars"><i></i><i></i><i></i><i></i></span><span class="network"></span>
    </span></div>`;
  makeTappable(node, stage, onTap);
  stage.append(node);
  return node;
}

/** A tap or Enter swaps (float's small tile) or enlarges (grid); dragging moves float's small tile. */
function makeTappable(node, stage, onTap) {
  let start = null;
  node.addEventListener("pointerdown", (event) => {
    start = { x: event.clientX, y: event.clientY, left: node.offsetLeft, top: node.offsetTop, moved: false };
    node.setPointerCapture(event.pointerId);
  });
  node.addEventListener("pointermove", (event) => {
    if (!start || node.dataset.role !== "floating") return;
    const dx = event.clientX - start.x;
    const dy = event.clientY - start.y;
    if (!start.moved && Math.hypot(dx, dy) < 5) return;
    start.moved = true;
    stage.dispatchEvent(new CustomEvent("floatmove", { detail: { x: start.left + dx, y: start.top + dy } }));
  });
  node.addEventListener("pointerup", () => {
    if (start && !start.moved) onTap(node.dataset.user);
    start = null;
  });
  node.addEventListener("keydown", (event) => {
    if ((event.key === "Enter" || event.key === " ") && node.getAttribute("role") === "button") {
      event.preventDefault();
      onTap(node.dataset.user);
    }
  });
}

/** The list of people in the call: everyone invited, with where they stand. */
export function renderRoster(list, info, me, self) {
  // Rebuilt only when someone's place or name changed, not with every tick of the call.
  const signature = JSON.stringify([info.participants.map((p) => [p.userId, p.status, p.endReason, p.nickname, p.avatarURL]), self]);
  if (list.dataset.signature === signature) return;
  list.dataset.signature = signature;
  const rows = info.participants.map((p) => {
    const member = p.userId === me ? { ...p, nickname: self.nickname, avatarURL: self.avatarURL } : p;
    const item = document.createElement("li");
    item.dataset.user = p.userId;
    item.dataset.status = p.status;
    const avatar = document.createElement("span");
    avatar.classList.add("size-small");
    fillAvatar(avatar, member);
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = nameOf(member) + (p.userId === me ? " (you)" : "");
    const where = document.createElement("span");
    where.className = "where";
    where.textContent = memberStateText(p, info.callerId);
    item.append(avatar, name, where);
    return item;
  });
  list.replaceChildren(...rows);
}
