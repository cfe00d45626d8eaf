// The page's state, and which call is on screen (the SDK's CallStore rule): every call this tab
// takes part in, the names and pictures of the people in them, what each place on the page says.
// The other modules of the client change it; render.js draws it.

import { nameOf } from "./words.js";

/** At most this many names remembered, group calls left that may still be going on, recent
 * calls listed (the newest kept) and protocol mismatches kept for the console. */
const NAMES_LIMIT = 500;
export const ONGOING_LIMIT = 20;
export const RECORDS_LIMIT = 100;
export const PROBLEMS_LIMIT = 100;

export const state = {
  me: null,
  /** This user's own nickname and avatar URL (`profile.set`). */
  profile: { nickname: null, avatarURL: null },
  status: "loggedOut",
  /** Every call this tab takes part in: callId → {info, direction, inviterId}. */
  calls: new Map(),
  /** Arrival order of the calls, to pick the newest. */
  arrival: [],
  /** Calls this page heard end, newest last (events.js, refuseResumption). */
  heardEnded: [],
  /** Group calls this user left (or declined) that went on without them: callId → info. Gone
   * once the call's record arrives (records are written when a call ends). */
  ongoing: new Map(),
  records: [],
  /** Everyone's nickname and avatar, from the snapshots: userId → {nickname, avatarURL}. */
  names: new Map(),
  view: { template: "auto", swapped: false, enlarged: null, callId: null },
  /** The invite form's visibility in the call view. */
  inviteOpen: false,
  speaker: null,
  microphoneOn: true,
  cameraOn: true,
  screenSharing: false,
  /**
   * A media-type change in flight: `{role: "asked", callId, transactionId, mediaType, userId}`
   * (the other member asks this user) or `{role: "asking", callId, transactionId, mediaType}`.
   */
  mediaChange: null,
  /** What each place on the page says: home, call, login → {text, tone, reason?, code?} or null. */
  notices: { home: null, call: null, login: null },
  own: { quality: "unknown", volume: "mute" },
  /** The call this page found itself in after a reload (its media starts over). */
  resumed: null,
  /** This tab's device id (signaling.js keeps it per tab). */
  deviceId: null,
  /** Calls this user is in on another device: callId → {info, deviceId} (move.js). */
  elsewhere: new Map(),
  /** Calls another device offers to this tab: callId → {info, fromDeviceId, expiresAt} (move.js). */
  moveOffers: new Map(),
  problems: [],
};

// MARK: - which call is on screen (the SDK's CallStore rule)

export function myStatus(info) {
  return info.participants.find((p) => p.userId === state.me)?.status ?? "none";
}

/** The call you are in, else the newest one ringing. */
export function activeCall() {
  const ordered = state.arrival.map((id) => state.calls.get(id)).filter(Boolean);
  const isIn = (c) => myStatus(c.info) === "accept" || (c.direction === "outgoing" && myStatus(c.info) === "waiting");
  return [...ordered].reverse().find(isIn) ?? ordered[ordered.length - 1] ?? null;
}

/** A call ringing while you are in another one. */
export function waitingCall() {
  const active = activeCall();
  return [...state.calls.values()].reverse().find(
    (c) => c !== active && c.direction === "incoming" && myStatus(c.info) === "waiting") ?? null;
}

export function track(info, direction, inviterId) {
  if (!state.calls.has(info.callId)) state.arrival.push(info.callId);
  const previous = state.calls.get(info.callId);
  state.calls.set(info.callId, {
    info,
    direction: previous?.direction ?? direction ?? (info.callerId === state.me ? "outgoing" : "incoming"),
    inviterId: previous?.inviterId ?? inviterId ?? info.callerId,
  });
  state.ongoing.delete(info.callId);
  remember(info.participants);
}

export function forget(callId) {
  state.calls.delete(callId);
  state.arrival = state.arrival.filter((id) => id !== callId);
}

export function updateParticipant(callId, userId, change) {
  const participant = state.calls.get(callId)?.info.participants.find((p) => p.userId === userId);
  if (participant) change(participant);
}

/** Keeps members' names and pictures for the records and messages after their call ended. */
function remember(participants) {
  for (const p of participants) {
    state.names.delete(p.userId);
    state.names.set(p.userId, { userId: p.userId, nickname: p.nickname, avatarURL: p.avatarURL });
  }
  while (state.names.size > NAMES_LIMIT) state.names.delete(state.names.keys().next().value);
}

export function person(userId) {
  if (userId === state.me) return { userId, ...state.profile };
  return state.names.get(userId) ?? { userId };
}

export const name = (userId) => nameOf(person(userId));

/** The call this user is in or calling from (on screen; logging out would end it). */
export function liveCall() {
  const call = activeCall();
  const status = call ? myStatus(call.info) : "none";
  return call && (status === "accept" || (call.direction === "outgoing" && status === "waiting")) ? call : null;
}
