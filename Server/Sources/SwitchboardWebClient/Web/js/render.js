// Drawing the page from the state: which screen shows, the notices, the ringing screen and its
// sounds, the home screen's calls, the call screen.

import { clampFloating, durationText, tiles, videoLayers } from "./layout.js";
import { connectionText, listText, mediaText, nameOf } from "./words.js";
import { recordRow } from "./records.js";
import { Ringer } from "./ringer.js";
import { Attention } from "./attention.js";
import { avatarSource, fillAvatar } from "./avatar.js";
import { renderRoster, renderStage } from "./callview.js";
import { activeCall, myStatus, name, person, state, waitingCall } from "./state.js";
import { signaling } from "./login.js";
import { join, placeCall } from "./calls.js";
import { othersText, takeCall } from "./move.js";
import { recordingNews, recordingText } from "./recording.js";
import { peerName } from "./events.js";
import { media, remoteScreens, remoteStreams, stalled, unreachable } from "./callmedia.js";

export const $ = (id) => document.getElementById(id);

export const ringer = new Ringer();
export const attention = new Attention();

/** Which screen shows: `login`, `home` or `call`, and the call ringing over it, if any. */
function screens() {
  const loggedIn = state.status !== "loggedOut" && state.status !== "loggingIn" && !!state.me;
  const call = loggedIn ? activeCall() : null;
  const status = call ? myStatus(call.info) : "none";
  const ringing = call && call.direction === "incoming" && status === "waiting";
  const inCall = call && !ringing;
  return {
    loggedIn,
    call: inCall ? call : null,
    incoming: ringing ? call : inCall ? waitingCall() : null,
  };
}

export function render() {
  const { loggedIn, call, incoming } = screens();
  $("status").dataset.status = state.status;
  $("status").textContent = state.status === "loggingIn" ? "Logging in…" : loggedIn ? connectionText(state.status) : "";
  $("logout").hidden = !loggedIn;
  $("profile").hidden = !loggedIn;
  if (loggedIn) {
    $("me-name").textContent = nameOf(person(state.me));
    $("profile").setAttribute("aria-label", `Your profile: ${nameOf(person(state.me))}`);
    fillAvatar($("me-avatar"), person(state.me));
  }
  $("login-view").hidden = loggedIn;
  $("home-view").hidden = !loggedIn || !!call;
  $("call-view").hidden = !call;
  for (const place of ["home", "call", "login"]) renderNotice(place);
  renderIncoming(incoming, !!call);
  renderAlerts(incoming, call);
  if (loggedIn && !call) renderHome();
  if (call) renderCall(call);
}

function renderNotice(place) {
  const node = $(`${place}-notice`);
  const notice = state.notices[place];
  node.hidden = !notice;
  node.dataset.tone = notice?.tone ?? "";
  node.dataset.reason = notice?.reason ?? "";
  node.dataset.code = notice?.code ?? "";
  node.dataset.result = notice?.result ?? "";
  const text = node.querySelector(".text");
  if (text.textContent !== (notice?.text ?? "")) text.textContent = notice?.text ?? "";
}

function renderIncoming(incoming, inCall) {
  const overlay = $("incoming");
  const wasHidden = overlay.hidden;
  overlay.hidden = !incoming;
  // The rest of the page cannot be reached while a call rings over it.
  for (const id of ["page-header", "main"]) $(id).inert = !!incoming;
  if (!incoming) {
    if (!wasHidden && document.activeElement === document.body) (inCall ? $("hangup") : $("callee")).focus();
    return;
  }
  const info = incoming.info;
  const inviter = person(incoming.inviterId);
  const caller = info.participants.find((p) => p.userId === incoming.inviterId) ?? inviter;
  const group = info.callType === "group";
  overlay.dataset.callId = info.callId;
  overlay.dataset.media = info.mediaType;
  overlay.dataset.callType = info.callType;
  fillAvatar($("incoming-avatar"), caller);
  $("incoming-caller").textContent = nameOf(caller);
  $("incoming-media").textContent = `${group ? "Group " : "Incoming "}${mediaText(info.mediaType)}`;
  const others = info.participants.filter((p) => p.userId !== state.me && p.userId !== incoming.inviterId && p.status !== "none");
  $("incoming-members").hidden = !group;
  $("incoming-members").textContent = group
    ? `With ${listText([nameOf(caller), ...others.map((p) => nameOf(p) + (p.status === "waiting" ? " (ringing)" : ""))])}`
    : "";
  // A recorded call says so before it is answered: the member's notice.
  const recording = recordingText(info);
  $("incoming-recording").hidden = !recording;
  $("incoming-recording-text").textContent = recording ?? "";
  $("incoming-note").hidden = !inCall;
  $("accept").textContent = inCall ? "End call and accept" : "Accept";
  $("accept").setAttribute("aria-label", `${inCall ? "End your call and accept" : "Accept"} the ${mediaText(info.mediaType)} from ${nameOf(caller)}`);
  $("reject").setAttribute("aria-label", `Decline the call from ${nameOf(caller)}`);
  if (wasHidden) $("accept").focus();
}

/** Ringtone, ringback, the tab's title and a notification, for what rings now. */
function renderAlerts(incoming, call) {
  const calling = call && call.direction === "outgoing" && myStatus(call.info) === "waiting";
  if (incoming) {
    ringer.play("ringtone");
    const caller = incoming.info.participants.find((p) => p.userId === incoming.inviterId) ?? person(incoming.inviterId);
    const source = avatarSource(caller);
    attention.show({
      key: incoming.info.callId, title: `${nameOf(caller)} is calling`,
      body: `${incoming.info.callType === "group" ? "Group " : "Incoming "}${mediaText(incoming.info.mediaType)}`,
      ...(source ? { icon: source } : {}),
    });
  } else if (calling) {
    ringer.play("ringback");
    attention.show(null);
  } else {
    ringer.stop();
    attention.show(null);
  }
  const sound = ringer.state;
  for (const id of ["ring-mute", "ringback-mute"]) {
    $(id).setAttribute("aria-pressed", String(ringer.muted));
  }
  $("ringback-mute").hidden = !calling;
  $("incoming-sound-note").hidden = !(incoming && sound === "blocked");
  $("incoming").dataset.sound = incoming ? sound : "off";
  $("call-view").dataset.sound = calling ? sound : "off";
}

function renderHome() {
  $("alerts-offer").hidden = !attention.canAsk;
  renderElsewhere();
  const ongoing = [...state.ongoing.values()].reverse();
  const records = state.records.map((record) => recordRow(record, state.me, name));
  // Rebuilt only when it changed, so that keyboard focus in the list stays where it is.
  const signature = JSON.stringify([ongoing.map((info) => info.callId), records]);
  if ($("records").dataset.signature !== signature) {
    $("records").dataset.signature = signature;
    $("records").replaceChildren(...ongoing.map(ongoingRow), ...records.map(recordItem));
  }
  $("records-empty").hidden = ongoing.length + records.length > 0;
}

/** The calls this user is in on other devices: "Continue here" where one is offered to this tab,
 * "Take it here" otherwise (where the app allows taking a call without an offer). */
function renderElsewhere() {
  const calls = [...state.elsewhere.values()].reverse();
  $("elsewhere").hidden = calls.length === 0;
  const signature = JSON.stringify(calls.map(({ info }) => [info.callId, othersText(info), state.moveOffers.has(info.callId)]));
  if ($("elsewhere-calls").dataset.signature === signature) return;
  $("elsewhere-calls").dataset.signature = signature;
  $("elsewhere-calls").replaceChildren(...calls.map(({ info }) => {
    const offered = state.moveOffers.has(info.callId);
    const kind = mediaText(info.mediaType);
    const label = offered ? "Continue here" : "Take it here";
    return actionRow({
      info, className: `elsewhere${offered ? " offered" : ""}`, who: othersText(info),
      what: `${kind[0].toUpperCase()}${kind.slice(1)} · ${offered ? "your other device offers it to this tab" : "on your other device"}`,
      button: { className: `take${offered ? " primary" : ""}`, label, aria: `${label}: your call with ${othersText(info)}` },
      onClick: () => takeCall(info.callId),
    });
  }));
}

function ongoingRow(info) {
  const others = listText(info.participants.filter((p) => p.userId !== state.me).map(nameOf));
  return actionRow({
    info, className: "ongoing", who: others, what: `Group ${mediaText(info.mediaType)} · going on now`,
    button: { className: "join primary", label: "Join", aria: `Join the group call with ${others}` },
    onClick: () => join(info.callId),
  });
}

/** A call in the home screen's lists with one button: who, what, and the action. */
function actionRow({ info, className, who, what, button, onClick }) {
  const item = document.createElement("li");
  item.className = `record ${className}`;
  item.dataset.callId = info.callId;
  const text = document.createElement("div");
  text.className = "record-text";
  const whoText = document.createElement("span");
  whoText.className = "peers";
  whoText.textContent = who;
  const whatText = document.createElement("span");
  whatText.className = "outcome";
  whatText.textContent = what;
  text.append(whoText, whatText);
  const action = document.createElement("button");
  action.className = button.className;
  action.textContent = button.label;
  action.setAttribute("aria-label", button.aria);
  action.addEventListener("click", onClick);
  item.append(text, action);
  return item;
}

function recordItem(row) {
  const item = document.createElement("li");
  item.className = `record${row.missed ? " missed" : ""}`;
  item.dataset.callId = row.callId;
  item.dataset.result = state.records.find((r) => r.callId === row.callId)?.result ?? "";
  const button = document.createElement("button");
  button.className = "record-button";
  button.setAttribute("aria-label", `${row.peers}, ${row.outcome}, ${row.media}, ${row.when}. Call back with ${row.media}.`);
  const icon = document.createElement("span");
  icon.className = `media-icon ${row.media}`;
  icon.setAttribute("aria-hidden", "true");
  const text = document.createElement("span");
  text.className = "record-text";
  const who = document.createElement("span");
  who.className = "peers";
  who.textContent = row.peers;
  const what = document.createElement("span");
  what.className = "outcome";
  what.textContent = `${row.outcome} · ${row.media === "video" ? "Video" : "Audio"}`;
  text.append(who, what);
  const when = document.createElement("time");
  when.dateTime = row.whenISO;
  when.textContent = row.when;
  button.append(icon, text, when);
  button.addEventListener("click", () => placeCall(row.callBack.participantIds, row.callBack.mediaType));
  item.append(button);
  return item;
}

function renderCall(call) {
  const info = call.info;
  if (state.view.callId !== info.callId) {
    state.view = { template: state.view.template, swapped: false, enlarged: null, callId: info.callId };
  }
  const me = state.me;
  const group = info.callType === "group";
  const connected = myStatus(info) === "accept";
  const others = info.participants.filter((p) => p.userId !== me && p.status !== "none");
  $("call-title").textContent = listText((others.length ? others : info.participants.filter((p) => p.userId !== me)).map(nameOf));
  $("call-view").dataset.callId = info.callId;
  $("call-view").dataset.callType = info.callType;
  $("call-view").dataset.media = info.mediaType;
  $("call-state").textContent = info.startTime && connected
    ? durationText((signaling.serverNow() - info.startTime) / 1000)
    : call.direction === "outgoing" ? "Calling…" : "Connecting…";
  const gate = media?.videoGate;
  $("own-quality").textContent =
    gate === "paused" ? "Your network is too weak for video: video paused"
    : gate === "trial" ? "Your network was too weak for video: trying video again"
    : { bad: "Your network is weak", veryBad: "Your network is very weak", down: "No network" }[state.own.quality] ?? "";
  $("own-quality").hidden = !$("own-quality").textContent;
  renderRecording(info, connected);

  // Toggles keep their label; pressed says the state (muted, camera off, sharing).
  $("mute").setAttribute("aria-pressed", String(!state.microphoneOn));
  $("camera").hidden = info.mediaType !== "video";
  $("camera").setAttribute("aria-pressed", String(!state.cameraOn));
  $("share").setAttribute("aria-pressed", String(state.screenSharing));
  $("share").hidden = !connected;
  $("switch-media").textContent = info.mediaType === "video" ? "Switch to audio" : "Switch to video";
  $("switch-media").hidden = group || !connected;
  $("switch-media").disabled = !!state.mediaChange;
  $("add-people").hidden = !connected;
  $("move-call").hidden = !connected;
  $("add-people").setAttribute("aria-expanded", String(state.inviteOpen));
  $("invite-form").hidden = !state.inviteOpen || !connected;
  $("hangup").textContent = group && connected ? "Leave" : "Hang up";
  $("layout").value = state.view.template;

  const asked = state.mediaChange?.role === "asked" ? state.mediaChange : null;
  const asking = state.mediaChange?.role === "asking" ? state.mediaChange : null;
  $("media-change").hidden = !asked;
  if (asked) $("media-change-text").textContent = `${name(asked.userId)} asks to switch to ${asked.mediaType}.`;
  $("media-asking").hidden = !asking;
  if (asking) $("media-asking-text").textContent = `Waiting for ${peerName(info.callId)} to agree to ${asking.mediaType}…`;

  // While a one-to-one call rings, the stage says who is being called (the layout shows you).
  const calling = !connected && call.direction === "outgoing" && !group;
  $("calling-card").hidden = !calling;
  $("stage").classList.toggle("calling", calling);
  if (calling) {
    const callee = info.participants.find((p) => p.userId !== me) ?? { userId: "" };
    fillAvatar($("calling-avatar"), callee);
    $("calling-name").textContent = nameOf(callee);
    $("calling-what").textContent = `Calling… (${mediaText(info.mediaType)})`;
  }

  const stage = $("stage");
  const viewport = { width: stage.clientWidth, height: stage.clientHeight };
  if (state.view.floatingOrigin) state.view.floatingOrigin = clampFloating(state.view.floatingOrigin, viewport);
  renderStage(stage, {
    info, me, self: person(me), speaker: state.speaker, view: state.view,
    local: {
      microphoneOn: state.microphoneOn, cameraOn: state.cameraOn, quality: state.own.quality, volume: state.own.volume,
      stream: media?.localStream,
    },
    remote: (userId, screen) => (screen ? remoteScreens : remoteStreams).get(userId),
    unreachable: (userId) => unreachable.has(userId) || stalled.has(userId),
    videoPaused: (userId) => media?.videoStalled?.(userId) ?? false,
    onTap: tap,
  });
  if (media?.route === "sfu" && connected) {
    // The enlarged tile gets the big layer of a member's camera, thumbnails the small one; only
    // members in the call have a camera to choose from (the server refuses the others).
    const inCall = new Set(info.participants.filter((p) => p.status === "accept").map((p) => p.userId));
    const wanted = videoLayers(tiles(info, me, state.speaker, viewport, state.view), me);
    media.setLayers(Object.fromEntries(Object.entries(wanted).filter(([userId]) => inCall.has(userId))));
  }
  renderRoster($("roster"), info, me, person(me));
  $("call-id").textContent = info.callId;
  $("call-details").hidden = !group;
}

/** The recording mark, the words a screen reader hears when the recording starts or stops, and
 * the button: Record, or Stop recording while a member's recording runs (one the app makes of
 * every call cannot be stopped, so the button goes). */
function renderRecording(info, connected) {
  const text = recordingText(info);
  $("recording-mark").hidden = !text;
  $("recording-text").textContent = text ?? "";
  const news = recordingNews(info);
  if (news) $("recording-live").textContent = news;
  $("record").hidden = !connected || (!!info.recording && !info.recording.startedBy);
  $("record").textContent = info.recording ? "Stop recording" : "Record";
  $("call-view").dataset.recording = info.recording ? "on" : "off";
}

function tap(userId) {
  const call = activeCall();
  if (!call) return;
  const stage = $("stage");
  const placed = tiles(call.info, state.me, state.speaker, { width: stage.clientWidth, height: stage.clientHeight }, state.view);
  const tile = placed.find((t) => t.userId === userId);
  if (tile?.role === "floating") state.view.swapped = !state.view.swapped;
  else if (tile?.role === "enlarged") state.view.enlarged = null;
  else if (tile?.role === "grid") state.view.enlarged = userId;
  render();
  stage.querySelector(`.tile[data-key="${CSS.escape(userId)}"]`)?.focus();
}
