// A member's picture: their avatar image when the page may show it, else their initial on a
// colour of their own. Avatar URLs are whatever members set, so the page loads images only from
// its own origin and the ones its server lists (`serve --web-image-origins`, through config.js),
// as its Content-Security-Policy does: a stranger's URL elsewhere shows as the initial instead of
// telling a server of theirs who looked at it and from where.

import { nameOf } from "./words.js";

const HUES = 8;

/** Origins besides the page's own that avatars may come from (set once the config is read). */
let imageOrigins = new Set();

/** Allows avatars from `origins` (as `/v1/web/config` lists them) besides the page's own. */
export function allowImageOrigins(origins) {
  imageOrigins = new Set(origins);
}

/** The avatar URL the page may load for `member`, or null. */
export function avatarSource(member, page = location) {
  const text = member?.avatarURL;
  if (!text) return null;
  try {
    const url = new URL(text, page.href);
    if (url.protocol !== "https:" && url.protocol !== "http:") return null;
    return url.origin === page.origin || imageOrigins.has(url.origin) ? url.href : null;
  } catch {
    return null;
  }
}

/** A colour class for a user id, the same on every device. */
export function hueOf(userId) {
  let hash = 0;
  for (const char of userId ?? "") hash = (hash * 31 + char.codePointAt(0)) >>> 0;
  return `hue-${hash % HUES}`;
}

/** Fills `node` (a `.avatar` element) with `member`'s picture; decorative, the name is beside it. */
export function fillAvatar(node, member) {
  const source = avatarSource(member);
  const initial = nameOf(member).slice(0, 1).toUpperCase();
  const key = source ?? `initial:${initial}`;
  node.className = `avatar ${hueOf(member?.userId)} ${[...node.classList].filter((c) => c.startsWith("size-")).join(" ")}`.trim();
  node.setAttribute("aria-hidden", "true");
  if (node.dataset.shows === key) return;
  node.dataset.shows = key;
  if (source) {
    const image = document.createElement("img");
    image.alt = "";
    image.src = source;
    // A broken image shows the initial instead.
    image.addEventListener("error", () => {
      node.dataset.shows = `initial:${initial}`;
      node.replaceChildren(initial);
    });
    node.replaceChildren(image);
  } else {
    node.replaceChildren(initial);
  }
}

/** A new avatar element for `member`, `size` small, medium or large. */
export function avatarElement(member, size = "small") {
  const node = document.createElement("span");
  node.classList.add(`size-${size}`);
  fillAvatar(node, member);
  return node;
}
