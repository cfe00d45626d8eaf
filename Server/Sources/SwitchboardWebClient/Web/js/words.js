// Everything the page tells its user, in words: end reasons, errors, record results, member
// states. The protocol's names (`noResponse`, `lineBusy`, error codes) stop here; the rest of
// the page shows only what these functions return.

/** A member's name as people see it: the nickname, else the user ID. */
export function nameOf(member) {
  return (member?.nickname ?? "").trim() || member?.userId || "Someone";
}

/** Names as a sentence: "Bob", "Bob and Carol", "Bob, Carol and Dave". */
export function listText(names) {
  if (names.length <= 1) return names[0] ?? "";
  return `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
}

/** "video call" / "audio call". */
export function mediaText(mediaType) {
  return mediaType === "video" ? "video call" : "audio call";
}

/**
 * Why a call ended, told to this user. `end` is the `callEnded` event; `context` says who this
 * user was in the call (`me`, `callerId`, `group`, `connected`: whether it had connected for
 * them) and `name(userId)` names the other members.
 */
export function endText(end, { me, callerId, group, connected, name }) {
  const byMe = end.userId === me;
  const who = end.userId ? name(end.userId) : "The other person";
  const caller = name(callerId);
  switch (end.reason) {
    case "hangup":
      if (byMe) return group ? "You left the call." : "You hung up.";
      return group ? `${who} left; the call has ended.` : `${who} hung up.`;
    case "reject":
      if (byMe) return `You declined the call from ${caller}.`;
      return `${who} declined the call.`;
    case "noResponse":
      if (callerId === me) return group ? "Nobody answered." : `${who} didn't answer.`;
      return `You missed a call from ${caller}.`;
    case "offline":
      return `${who} can't be reached right now.`;
    case "lineBusy":
      return `${who} is on another call.`;
    case "canceled":
      if (callerId === me) return "Call cancelled.";
      return `You missed a call from ${caller}.`;
    case "otherDeviceAccepted":
      return "You answered on another device.";
    case "otherDeviceReject":
      return "You declined on another device.";
    case "endByServer":
      return "The call was ended by the service.";
    default:
      return connected ? "The call ended." : "The call could not be connected.";
  }
}

/** Whether an end is news to the user (a warning) or what they did themselves. */
export function endTone(end, me) {
  if (end.userId === me && ["hangup", "reject", "canceled"].includes(end.reason)) return "info";
  return ["hangup", "otherDeviceAccepted", "otherDeviceReject"].includes(end.reason) ? "info" : "warning";
}

/** Where a member stands, in a few words: for the list of who is in the call. */
export function memberStateText(member, callerId) {
  if (member.status === "accept") return "in the call";
  if (member.status === "waiting") return member.userId === callerId ? "calling…" : "ringing…";
  switch (member.endReason) {
    case "reject":
    case "otherDeviceReject":
      return "declined";
    case "noResponse":
      return "didn't answer";
    case "lineBusy":
      return "on another call";
    case "offline":
      return "can't be reached";
    case "canceled":
      return "missed it";
    default:
      return "left";
  }
}

// The wire's error codes (docs/PROTOCOL.md, "Error codes") as sentences, and 9001–9003, which
// this page raises itself (no connection, no answer in time, not connected).
const ERROR_SENTENCES = {
  1003: "Something in that request was not accepted. Check what you typed and try again.",
  1005: "You are not logged in any more. Log in again.",
  1008: "That was too many requests at once. Wait a moment and try again.",
  1011: "You logged in to this tab somewhere else, so this page was logged out.",
  1013: "You are logged in on too many devices. Log out on one of them and try again.",
  2001: "This sign-in key is not valid. Ask your app for a new one.",
  2002: "This sign-in key was not made for this server.",
  2003: "Your sign-in has expired. Log in again.",
  2004: "This sign-in key is not valid yet. Check your computer's clock.",
  2005: "This sign-in key is for another app.",
  2006: "This sign-in key is for another user ID.",
  2007: "A user ID has 1 to 32 letters, digits, dashes or underscores.",
  2008: "This server does not know that app.",
  3001: "That call is not going on any more.",
  3002: "That call is not yours to join.",
  3003: "That can't be done in this call right now.",
  3004: "You are already in that call.",
  3005: "That call has already ended.",
  3006: "You can't call yourself.",
  3007: "The call is full.",
  3009: "You are already in a call.",
  3011: "Type who to call first.",
  3012: "You can't join this call: you were not invited to it.",
  3014: "A switch between audio and video is still waiting for an answer.",
  3015: "That request to switch has already been answered.",
  3017: "Only calls between two people can switch between audio and video.",
  3020: "This call was not offered here. Choose “Move to another device” in the call first.",
  3021: "Recording is not allowed in this app.",
  3022: "Recording is not available right now. Try again later.",
  5001: "The server ran into a problem. Try again.",
  5002: "The server is restarting. Try again in a moment.",
  5003: "The server can't save right now. Try again in a moment.",
  5006: "This server does not hand out development sign-ins. Log in with a UserSig from your app.",
  5007: "This server hands out development sign-ins only to pages opened on this computer.",
  9001: "Can't reach the server. Check your connection and try again.",
  9002: "The server did not answer in time. Try again.",
  9003: "You are not connected to the server.",
};

// Sentences for what the user was doing, where the general one would be vague.
const ACTION_SENTENCES = {
  join: { 3001: "That call has ended or the ID is wrong.", 3013: "Only group calls can be joined." },
  invite: { 3003: "You can invite people once you are in the call.", 3007: "The call is full: nobody more can be invited." },
  call: { 3009: "Hang up your current call first." },
  switch: { 3003: "The call has to be connected before it can switch." },
  move: { 3003: "The call has to be connected before it can move.", 3002: "That call is not on this tab any more." },
  take: { 3001: "That call has ended.", 3005: "That call has ended." },
  record: {
    3003: "The call has to be connected before it can be recorded.",
    3021: "Recording is not allowed in this app, or only the person who placed the call can start it.",
  },
  stopRecording: {
    3021: "This recording can't be stopped: the app records every call, or only the person who placed the call can stop it.",
  },
};

/** An error from the server or the connection, in words, for what the user was doing. */
export function errorText(error, action) {
  const code = error?.code;
  return ACTION_SENTENCES[action]?.[code] ?? ERROR_SENTENCES[code] ?? "Something went wrong. Try again.";
}

/** A camera, microphone or screen the browser did not give (getUserMedia, getDisplayMedia). */
export function deviceErrorText(error, what) {
  const thing = { screen: "Screen sharing", camera: "The camera", microphone: "The microphone" }[what] ?? "The device";
  switch (error?.name) {
    case "NotAllowedError":
      return what === "screen"
        ? "Screen sharing did not start: the screen picker was closed or the browser refused."
        : `${thing} is blocked. Allow it in the browser's site settings and try again.`;
    case "NotFoundError":
      return `${thing} was not found on this device.`;
    case "NotReadableError":
      return `${thing} is in use by another app.`;
    default:
      return `${thing} could not be started.`;
  }
}

/** The answer to a switch between audio and video, told to the one who asked. */
export function mediaChangeResultText(result, mediaType, peer) {
  const to = mediaType === "video" ? "video" : "audio";
  switch (result) {
    case "agreed": return `Switched to ${to}.`;
    case "declined": return `${peer} declined switching to ${to}.`;
    case "timedOut": return `${peer} did not answer the switch to ${to}.`;
    default: return `The switch to ${to} was cancelled.`;
  }
}

/** A record's outcome as a phone's recents list shows it. */
export function recordResultText(record) {
  switch (record.result) {
    case "answered": return record.direction === "outgoing" ? "Outgoing" : "Incoming";
    case "missed": return "Missed";
    case "noAnswer": return "No answer";
    case "rejected": return record.direction === "outgoing" ? "Declined" : "You declined";
    case "canceled": return "Cancelled";
    case "busy": return record.direction === "outgoing" ? "Busy" : "Missed while on a call";
    case "offline": return "Not reachable";
    default: return "Call";
  }
}

/** The connection to the server, for the header. */
export function connectionText(status) {
  switch (status) {
    case "loggedIn": return "Online";
    case "reconnecting": return "Reconnecting…";
    case "closed": return "Offline";
    default: return "Not logged in";
  }
}
