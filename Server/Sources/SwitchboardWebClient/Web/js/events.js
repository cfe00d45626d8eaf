// The server's events: calls ringing, changing and ending, members' devices and status, media
// signals, switches between audio and video, records, the session ending.

import { endText, endTone, mediaChangeResultText, nameOf } from "./words.js";
import {
  activeCall, forget, myStatus, name, ONGOING_LIMIT, RECORDS_LIMIT, state, track, updateParticipant, waitingCall,
} from "./state.js";
import { PASSING_NOTICE_MS, placeInView, say } from "./notices.js";
import { logout, signaling } from "./login.js";
import { media, sync } from "./callmedia.js";
import { onMoveEvent } from "./move.js";
import { onRecordingEvent } from "./recording.js";

/** At most this many ended calls remembered (`refuseResumption`). */
const HEARD_ENDED_LIMIT = 32;

/** A call this page does not show but heard end, coming back as going on: a server node killed
 * between telling the members and storing the end resumes it as it last stored it. The page hangs
 * it up instead of showing it again (the Swift SDK does the same); the server then ends it and
 * writes its records. A call the user takes part in again comes through a join, a take or a new
 * invitation, never through this. */
function refuseResumption(info) {
  if (state.calls.has(info.callId) || !state.heardEnded.includes(info.callId)) return false;
  signaling.request("call.hangup", { callId: info.callId }).catch(() => {});
  return true;
}

export function onEvent({ event, data }) {
  switch (event) {
    case "callReceived":
      track(data.call, "incoming", data.inviterId);
      break;
    case "callStarted":
      if (refuseResumption(data.call)) break;
      // A connected call this page never saw: it was reloaded in the call, and resumes it.
      if (!state.calls.has(data.call.callId) && myStatus(data.call) === "accept") state.resumed = data.call.callId;
      track(data.call);
      break;
    case "callUpdated":
      if (refuseResumption(data.call)) break;
      track(data.call);
      break;
    case "callEnded": {
      const ended = state.calls.get(data.callId);
      if (!ended) break;
      const wasOnScreen = activeCall() === ended || waitingCall() === ended;
      forget(data.callId);
      state.heardEnded = [...state.heardEnded.filter((id) => id !== data.callId), data.callId].slice(-HEARD_ENDED_LIMIT);
      if (ended.info.callType === "group" && goesOn(ended.info)) keepOngoing(ended.info);
      if (wasOnScreen) announceEnd(data, ended);
      break;
    }
    case "callsSynced":
      for (const id of [...state.arrival]) if (!data.callIds.includes(id)) forget(id);
      for (const id of [...state.elsewhere.keys()]) if (!data.elsewhereCallIds.includes(id)) state.elsewhere.delete(id);
      break;
    case "deviceChanged":
      updateParticipant(data.callId, data.userId, (p) => {
        p.microphoneOn = data.microphoneOn;
        p.cameraOn = data.cameraOn;
        p.screenSharing = data.screenSharing || undefined;
      });
      break;
    case "memberStatus":
      updateParticipant(data.callId, data.userId, (p) => {
        p.networkQuality = data.networkQuality;
        p.volumeLevel = data.volumeLevel;
      });
      updateSpeaker();
      break;
    case "mediaSignal":
      if (media?.callId === data.callId && media.route === "mesh") media.handleSignal(data);
      break;
    case "sfuSession":
      if (media?.callId === data.callId && media.route === "sfu") media.handleSession(data);
      break;
    case "sfuSignal":
      if (media?.callId === data.callId && media.route === "sfu") media.handleSignal(data);
      break;
    case "mediaTypeChangeRequested":
      // Asked as a phone asks; no answer within the server's timeout counts as declined.
      state.mediaChange = { role: "asked", ...data };
      break;
    case "mediaTypeChangeResult":
      mediaChangeFinished(data);
      break;
    case "callRecord":
      state.records = [data.record, ...state.records.filter((r) => r.callId !== data.record.callId)].slice(0, RECORDS_LIMIT);
      state.ongoing.delete(data.record.callId);
      break;
    case "sessionEnded":
      logout(data.error);
      return;
    default:
      if (!onMoveEvent(event, data)) onRecordingEvent(event, data);
  }
  sync();
}

function mediaChangeFinished(data) {
  if (state.mediaChange?.transactionId === data.transactionId) state.mediaChange = null;
  if (data.userId === state.me) {
    say("call", mediaChangeResultText(data.result, data.mediaType, peerName(data.callId)), {
      tone: data.result === "agreed" ? "info" : "warning", ttl: PASSING_NOTICE_MS, result: data.result,
    });
  }
  if (data.result === "agreed" && media?.callId === data.callId) {
    // As the SDK does (CallPlus): switching to video turns the camera on, to audio off. The
    // report to the other member follows from reportDevices().
    state.cameraOn = data.mediaType === "video";
    media.setMediaType(data.mediaType);
  }
}

export function peerName(callId) {
  const other = state.calls.get(callId)?.info.participants.find((p) => p.userId !== state.me);
  return other ? nameOf(other) : "The other person";
}

/** Whether a group call goes on once this user is out of it: two others in it, or one and someone ringing. */
function goesOn(info) {
  const others = info.participants.filter((p) => p.userId !== state.me);
  const joined = others.filter((p) => p.status === "accept").length;
  const ringing = others.filter((p) => p.status === "waiting").length;
  return joined >= 2 || (joined >= 1 && ringing >= 1);
}

function keepOngoing(info) {
  state.ongoing.delete(info.callId);
  state.ongoing.set(info.callId, info);
  while (state.ongoing.size > ONGOING_LIMIT) state.ongoing.delete(state.ongoing.keys().next().value);
}

function announceEnd(data, ended) {
  const info = ended.info;
  const connected = !!info.startTime;
  const text = endText(data, {
    me: state.me, callerId: info.callerId, group: info.callType === "group", connected, name,
  });
  say(placeInView(), text, { tone: endTone(data, state.me), reason: data.reason });
}

/** The loudest other member, kept through silence (the SDK's rule). */
function updateSpeaker() {
  const call = activeCall();
  if (!call) return;
  const rank = ["mute", "low", "medium", "high", "peak"];
  const others = call.info.participants.filter((p) => p.userId !== state.me && p.status === "accept");
  const loudest = others.reduce((a, b) => (rank.indexOf(b.volumeLevel ?? "mute") > rank.indexOf(a?.volumeLevel ?? "mute") ? b : a), null);
  const current = others.find((p) => p.userId === state.speaker);
  if (loudest && (loudest.volumeLevel ?? "mute") !== "mute" && (!current || rank.indexOf(loudest.volumeLevel) > rank.indexOf(current.volumeLevel ?? "mute"))) {
    state.speaker = loudest.userId;
  }
}
