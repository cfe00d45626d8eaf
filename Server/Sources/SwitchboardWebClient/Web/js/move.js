// Moving a call between this user's devices (docs/PROTOCOL.md, "Moving a call to another device"):
// the calls the user is in on other devices, the offers to continue one here, taking one, offering
// the call on this tab to the others, and what the server says when a call moved.

import { errorText, listText, nameOf } from "./words.js";
import { activeCall, forget, myStatus, state, track } from "./state.js";
import { PASSING_NOTICE_MS, say, clear } from "./notices.js";
import { signaling } from "./login.js";
import { media, sync } from "./callmedia.js";

/** At most this many calls elsewhere and offers kept (a user has few devices and calls). */
const ELSEWHERE_LIMIT = 16;

function keep(map, key, value) {
  map.delete(key);
  map.set(key, value);
  while (map.size > ELSEWHERE_LIMIT) map.delete(map.keys().next().value);
}

/** Who else is in a call, in words. */
export function othersText(info) {
  const others = info.participants.filter((p) => p.userId !== state.me && p.status !== "none");
  return listText(others.map(nameOf)) || "nobody else yet";
}

/** Handles the server's events about moves and calls elsewhere; false for any other event. */
export function onMoveEvent(event, data) {
  switch (event) {
    case "callElsewhere":
      // This tab was in the call and another device has it now: it moved while this tab was
      // away (its callMoved was missed): the same as hearing it.
      const here = state.calls.get(data.call.callId);
      if (data.active && data.deviceId !== state.deviceId && here && myStatus(here.info) === "accept") {
        moved({ call: data.call, fromDeviceId: state.deviceId, toDeviceId: data.deviceId });
        return true;
      }
      if (data.active) keep(state.elsewhere, data.call.callId, { info: data.call, deviceId: data.deviceId });
      else {
        state.elsewhere.delete(data.call.callId);
        state.moveOffers.delete(data.call.callId);
      }
      return true;
    case "callMoveOffered": {
      const offer = { info: data.call, fromDeviceId: data.fromDeviceId, expiresAt: data.expiresAt };
      keep(state.moveOffers, data.call.callId, offer);
      // The prompt goes at the offer's end even if the server's word of it is lost.
      setTimeout(() => {
        if (state.moveOffers.get(data.call.callId) === offer) {
          state.moveOffers.delete(data.call.callId);
          sync();
        }
      }, Math.max(0, data.expiresAt - signaling.serverNow()));
      return true;
    }
    case "callMoveOfferEnded":
      state.moveOffers.delete(data.callId);
      return true;
    case "callMoved":
      moved(data);
      return true;
    case "memberMoved":
      // The member is on another device now: the connection to them starts over (through the SFU
      // the server renews the subscriptions).
      if (media?.callId === data.callId && media.route === "mesh") media.memberMoved(data.userId);
      return true;
    default:
      return false;
  }
}

function moved({ call, fromDeviceId, toDeviceId }) {
  state.moveOffers.delete(call.callId);
  if (toDeviceId === state.deviceId) {
    state.elsewhere.delete(call.callId);
    track(call);
    return;
  }
  if (fromDeviceId === state.deviceId && state.calls.has(call.callId)) {
    // Not an end: the call goes on on the other device.
    forget(call.callId);
    say("home", `Your call with ${othersText(call)} continues on your other device.`, { tone: "info", reason: "moved" });
  }
  keep(state.elsewhere, call.callId, { info: call, deviceId: toDeviceId });
}

/** Offers the call on this tab to this user's other devices (tabs, browsers, apps) for 30 s. */
export async function offerMove() {
  const call = activeCall();
  if (!call) return;
  try {
    await signaling.request("call.offerMove", { callId: call.info.callId });
    say("call", "Offered to your other devices for 30 seconds: choose “Continue here” on the one you want.", {
      tone: "info", ttl: PASSING_NOTICE_MS, reason: "moveOffered",
    });
  } catch (error) {
    say("call", errorText(error, "move"), { tone: "error", code: error.code, ttl: PASSING_NOTICE_MS });
  }
}

/** Takes the user's call from another device onto this tab. */
export async function takeCall(callId) {
  clear("home");
  try {
    const result = await signaling.request("call.take", { callId });
    state.moveOffers.delete(callId);
    state.elsewhere.delete(callId);
    track(result.call);
    clear("call");
    sync();
  } catch (error) {
    // callNotFound, callAlreadyEnded: the call is gone. moveNotOffered: the server has no such
    // offer (it lapsed, was withdrawn while this tab was away, or was lost with a server that
    // died before storing it): the call stays listed, without the offer.
    if ([3001, 3005].includes(error.code)) state.elsewhere.delete(callId);
    if ([3001, 3005, 3020].includes(error.code)) state.moveOffers.delete(callId);
    say("home", errorText(error, "take"), { tone: "error", code: error.code });
  }
}
