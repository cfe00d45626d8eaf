// What the user does with a call: place, answer, decline, hang up, join, invite; the microphone,
// camera and screen; asking for and answering a switch between audio and video.

import { deviceErrorText, errorText, listText, nameOf } from "./words.js";
import { activeCall, myStatus, state, track } from "./state.js";
import { clear, PASSING_NOTICE_MS, placeInView, say } from "./notices.js";
import { signaling } from "./login.js";
import { media, sync } from "./callmedia.js";
import { $, render } from "./render.js";

export async function placeCall(callees, mediaType) {
  clear("home", "call");
  if (!callees.length) {
    say("home", errorText({ code: 3011 }, "call"), { tone: "error", code: 3011 });
    $("callee").focus();
    return;
  }
  try {
    const result = await signaling.request("call.start", { participantIds: callees, mediaType });
    track(result.call, "outgoing", state.me);
    sync();
    unreachableNotice(result.call, result.busyUserIds, callees);
  } catch (error) {
    say("home", errorText(error, "call"), { tone: "error", code: error.code });
  }
}

/**
 * Says who of `invited` was not reached, when the call goes on without them (when nobody is
 * left ringing the call ends, and its end says why: said once, not twice).
 */
function unreachableNotice(info, busyUserIds, invited) {
  const ringing = info.participants.some((p) => p.userId !== state.me && p.status !== "none");
  if (!ringing) return;
  const missing = info.participants.filter((p) => invited.includes(p.userId) && p.status === "none");
  const busy = missing.filter((p) => busyUserIds.includes(p.userId) || p.endReason === "lineBusy");
  const away = missing.filter((p) => !busy.includes(p));
  const sentences = [];
  if (busy.length) sentences.push(`${listText(busy.map(nameOf))} ${busy.length > 1 ? "are" : "is"} on another call.`);
  if (away.length) sentences.push(`${listText(away.map(nameOf))} can't be reached right now.`);
  if (sentences.length) say("call", sentences.join(" "), { tone: "warning", ttl: PASSING_NOTICE_MS });
}

/** The call the incoming screen shows: ringing, or waiting while you are in another call. */
function incomingCallId() {
  return $("incoming").hidden ? null : $("incoming").dataset.callId;
}

export async function accept() {
  const callId = incomingCallId();
  if (callId) await answerCall(callId);
}

/** Answers a call by its id: from the ringing screen, or a notification's Answer (rung here or not). */
export async function answerCall(callId) {
  clear("home");
  // With call waiting, the server hangs up the current call for you.
  try {
    const result = await signaling.request("call.accept", { callId });
    clear("call");
    track(result.call);
    sync();
  } catch (error) {
    say(placeInView(), errorText(error, "accept"), { tone: "error", code: error.code });
  }
}

export async function reject() {
  const callId = incomingCallId();
  if (callId) await signaling.request("call.reject", { callId }).catch(() => {});
}

export async function hangup() {
  const call = activeCall();
  if (call) await signaling.request("call.hangup", { callId: call.info.callId }).catch(() => {});
}

export async function join(callId) {
  clear("home");
  try {
    const result = await signaling.request("call.join", { callId });
    clear("call");
    track(result.call);
    sync();
  } catch (error) {
    if ([3001, 3005].includes(error.code)) state.ongoing.delete(callId);
    say("home", errorText(error, "join"), { tone: "error", code: error.code });
  }
}

export async function invite(invitees) {
  const call = activeCall();
  if (!call || !invitees.length) return;
  try {
    const result = await signaling.request("call.invite", { callId: call.info.callId, participantIds: invitees });
    track(result.call);
    state.inviteOpen = false;
    $("invitees").value = "";
    sync();
    unreachableNotice(result.call, result.busyUserIds, invitees);
    $("add-people").focus();
  } catch (error) {
    say("call", errorText(error, "invite"), { tone: "error", code: error.code, ttl: PASSING_NOTICE_MS });
  }
}

export async function toggleMicrophone() {
  state.microphoneOn = !state.microphoneOn;
  await media?.setEnabled("audio", state.microphoneOn);
  sync();
}

export async function toggleCamera() {
  state.cameraOn = !state.cameraOn;
  await media?.setEnabled("video", state.cameraOn);
  sync();
}

export async function toggleScreenShare() {
  if (!media) return;
  try {
    if (state.screenSharing) {
      media.stopScreenShare();
      state.screenSharing = false;
    } else {
      await media.startScreenShare();
      state.screenSharing = true;
    }
  } catch (error) {
    say("call", deviceErrorText(error, "screen"), { tone: "error", ttl: PASSING_NOTICE_MS });
  }
  sync();
}

/** Asks the other member to switch the call to the other media type. */
export async function requestMediaChange() {
  const call = activeCall();
  if (!call || state.mediaChange) return;
  const mediaType = call.info.mediaType === "video" ? "audio" : "video";
  try {
    const result = await signaling.request("call.changeMediaType", { callId: call.info.callId, mediaType });
    // The answer comes after this response (the other member hears the question with it).
    state.mediaChange = { role: "asking", callId: call.info.callId, transactionId: result.transactionId, mediaType };
    render();
  } catch (error) {
    say("call", errorText(error, "switch"), { tone: "error", code: error.code, ttl: PASSING_NOTICE_MS });
  }
}

export function cancelMediaChange() {
  const asking = state.mediaChange;
  if (asking?.role !== "asking") return;
  signaling.post("call.cancelMediaType", { callId: asking.callId, transactionId: asking.transactionId });
}

/** The user's answer to the other member's media-type change, as a phone asks it. */
export function answerMediaChange(agree) {
  const asked = state.mediaChange;
  if (asked?.role !== "asked") return;
  state.mediaChange = null;
  render();
  signaling.post("call.replyMediaType", { callId: asked.callId, transactionId: asked.transactionId, agree });
}

/**
 * This member's microphone, camera and screen as the other members should see them. Whenever
 * they differ from what the call's snapshot says of this member, they are reported, whatever
 * changed them: a button, an agreed switch between audio and video, a screen share the browser
 * stopped. (A report is not echoed back, so the snapshot is updated here too.)
 */
export function reportDevices() {
  const call = activeCall();
  if (!call || myStatus(call.info) !== "accept") return;
  const mine = call.info.participants.find((p) => p.userId === state.me);
  const wanted = {
    microphoneOn: state.microphoneOn,
    cameraOn: state.cameraOn && call.info.mediaType === "video",
    screenSharing: state.screenSharing,
  };
  if (mine.microphoneOn === wanted.microphoneOn && mine.cameraOn === wanted.cameraOn && !!mine.screenSharing === wanted.screenSharing) {
    return;
  }
  mine.microphoneOn = wanted.microphoneOn;
  mine.cameraOn = wanted.cameraOn;
  mine.screenSharing = wanted.screenSharing || undefined;
  signaling.post("call.deviceState", { callId: call.info.callId, ...wanted });
}
