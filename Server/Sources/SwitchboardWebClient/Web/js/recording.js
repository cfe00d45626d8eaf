// Recording a call on the server (docs/PROTOCOL.md, "Recording"): the mark the call screen and the
// incoming screen show while a call is recorded, what a screen reader is told when it starts or
// stops, and the call screen's Record / Stop recording button.

import { errorText } from "./words.js";
import { activeCall, name, state, track } from "./state.js";
import { PASSING_NOTICE_MS, clear, say } from "./notices.js";
import { signaling } from "./login.js";
import { sync } from "./callmedia.js";

/** The mark of a recorded call, in words ("This call is recorded" when the app records every
 * call, which nobody started); null when the call is not recorded. */
export function recordingText(info) {
  const recording = info?.recording;
  if (!recording) return null;
  if (!recording.startedBy) return "This call is recorded";
  return `Recording · started by ${recording.startedBy === state.me ? "you" : name(recording.startedBy)}`;
}

/** Handles the server's recording events; false for any other event. The snapshots that follow
 * (and those of a page that missed an event) carry the same `recording`. */
export function onRecordingEvent(event, data) {
  switch (event) {
    case "recordingStarted": {
      const call = state.calls.get(data.callId);
      if (call) call.info.recording = data.recording;
      return true;
    }
    case "recordingStopped": {
      const call = state.calls.get(data.callId);
      if (call) delete call.info.recording;
      state.recordingStop = { callId: data.callId, stoppedBy: data.stoppedBy };
      return true;
    }
    default:
      return false;
  }
}

/** What the live region last said of, per call on screen: `callId` and the recording's key. */
let announced = { callId: null, key: null };

/** The sentence a screen reader hears when the recording of the call on screen starts or stops
 * (null when nothing changed; a call that comes on screen recorded says so on its screen). */
export function recordingNews(info) {
  const key = info.recording ? `${info.recording.startedBy ?? ""}@${info.recording.startedAt}` : null;
  const before = announced;
  announced = { callId: info.callId, key };
  if (before.callId !== info.callId || before.key === key) return null;
  if (key) {
    const by = info.recording.startedBy;
    if (!by) return "This call is now recorded.";
    return by === state.me ? "You started recording this call." : `${name(by)} started recording this call.`;
  }
  const stop = state.recordingStop?.callId === info.callId ? state.recordingStop : null;
  if (!stop) return "The recording of this call stopped.";
  return stop.stoppedBy === state.me ? "You stopped the recording." : `${name(stop.stoppedBy)} stopped the recording.`;
}

/** Record / Stop recording: asks the server, which tells every member (this page too). */
export async function toggleRecording() {
  const call = activeCall();
  if (!call) return;
  const stop = !!call.info.recording;
  try {
    const result = await signaling.request(stop ? "call.stopRecording" : "call.startRecording", { callId: call.info.callId });
    if (stop) state.recordingStop = { callId: call.info.callId, stoppedBy: state.me };
    // An earlier refusal is stale once a try succeeds: left up, it said "not allowed" beside the mark.
    if (state.notices.call?.about === "recording") clear("call");
    track(result.call);
    sync();
  } catch (error) {
    say("call", errorText(error, stop ? "stopRecording" : "record"), {
      tone: "error", code: error.code, ttl: PASSING_NOTICE_MS, about: "recording",
    });
  }
}
