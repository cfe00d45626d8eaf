// What the page tells the user in each place (home, call, login): a notice that stays, or one that
// passes after a while.

import { liveCall, state } from "./state.js";
import { render } from "./render.js";

/** How long a passing notice stays (a declined switch, a busy invitee), ms. */
export const PASSING_NOTICE_MS = 10000;

/** Shows `text` in `place` (home, call, login); a passing one goes after `ttl` ms. */
export function say(place, text, { tone = "info", ttl = null, ...data } = {}) {
  const notice = { text, tone, ...data };
  state.notices[place] = notice;
  if (ttl) {
    setTimeout(() => {
      if (state.notices[place] === notice) {
        state.notices[place] = null;
        render();
      }
    }, ttl);
  }
  render();
}

export function clear(...places) {
  for (const place of places) state.notices[place] = null;
}

/** Where the user is looking: the call screen while in a call, else the home screen. */
export function placeInView() {
  return liveCall() ? "call" : "home";
}
