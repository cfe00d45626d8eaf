// A member's picture: their avatar image when the page may show it, else their initial on a
// colour of their own. The page's Content-Security-Policy lets images come from its own origin
// only (an image elsewhere could carry the UserSig out in its address), so an avatar URL on
// another origin shows as the initial.

import { nameOf } from "./words.js";

const HUES = 8;

/** The avatar URL the page may load for `member`, or null. */
export function avatarSource(member, page = location) {
  const text = member?.avatarURL;
  if (!text) return null;
  try {
    const url = new URL(text, page.href);
    return url.origin === page.origin && (url.protocol === "https:" || url.protocol === "http:") ? url.href : null;
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
