// The browser client: log in, call, ring, answer, talk, invite, join, hang up, records. It
// speaks the same protocol as the Swift SDK and follows the same rules (which call is on screen,
// who offers, the layouts). Everything it tells the user comes from words.js.

import { Signaling, tabDeviceId } from "./signaling.js";
import { MediaSession, networkQuality, volumeLevel } from "./media.js";
import { StallWatch } from "./stall.js";
import { SFUSession } from "./sfu.js";
import { clampFloating, durationText, tiles, videoLayers } from "./layout.js";
import { ServerRefused, resolveServers } from "./servers.js";
import {
  connectionText, deviceErrorText, endText, endTone, errorText, listText, mediaChangeResultText, mediaText, nameOf,
} from "./words.js";
import { recordRow } from "./records.js";
import { Ringer } from "./ringer.js";
import { Attention } from "./attention.js";
import { forgetSession, saveSession, savedSession } from "./session.js";
import { fillAvatar, avatarSource, allowImageOrigins } from "./avatar.js";
import { webConfig } from "./config.js";
import { renderRoster, renderStage } from "./callview.js";
import { pushLaunch, pushState, startPush, stopPush } from "./push.js";

const params = new URLSearchParams(location.search);
// `?server=URL` (repeatable): the nodes of a cluster, tried in turn; by default the page's own
// server. Servers its own server does not list are refused before anything connects.
const servers = resolveServers(params, location);
// `?capture=WxH@FPS`: the camera's size and rate (default 640x360 at 30), for slow links and tests.
const capture = params.get("capture")?.match(/^(\d+)x(\d+)(?:@(\d+))?$/);
const options = {
  relayOnly: params.get("relay") === "1", loopbackOnly: params.get("loopback") === "1",
  capture: capture ? { width: Number(capture[1]), height: Number(capture[2]), frameRate: Number(capture[3] ?? 30) } : null,
};
webConfig().then((config) => allowImageOrigins(config.imageOrigins));

const $ = (id) => document.getElementById(id);

/** How long a passing notice stays (a declined switch, a busy invitee), ms. */
const PASSING_NOTICE_MS = 10000;
/** At most this many names remembered, group calls left that may still be going on, recent
 * calls listed (the newest kept) and protocol mismatches kept for the console. */
const NAMES_LIMIT = 500;
const ONGOING_LIMIT = 20;
const RECORDS_LIMIT = 100;
const PROBLEMS_LIMIT = 100;

const state = {
  me: null,
  /** This user's own nickname and avatar URL (`profile.set`). */
  profile: { nickname: null, avatarURL: null },
  status: "loggedOut",
  /** Every call this tab takes part in: callId → {info, direction, inviterId}. */
  calls: new Map(),
  /** Arrival order of the calls, to pick the newest. */
  arrival: [],
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
  problems: [],
};

let signaling = null;
let media = null;
const remoteStreams = new Map();
const remoteScreens = new Map();
// Members this page has no media path to (their connection gave up restarting ICE): shown down.
const unreachable = new Set();
// Members whose media stopped arriving for 2 s (stall.js): shown down too, until it comes again.
const stalled = new Set();
let stallWatch = new StallWatch();
let statsTimer = null;
let lastBytesSent = 0;
const ringer = new Ringer();
const attention = new Attention();

// MARK: - which call is on screen (the SDK's CallStore rule)

function myStatus(info) {
  return info.participants.find((p) => p.userId === state.me)?.status ?? "none";
}

/** The call you are in, else the newest one ringing. */
function activeCall() {
  const ordered = state.arrival.map((id) => state.calls.get(id)).filter(Boolean);
  const isIn = (c) => myStatus(c.info) === "accept" || (c.direction === "outgoing" && myStatus(c.info) === "waiting");
  return [...ordered].reverse().find(isIn) ?? ordered[ordered.length - 1] ?? null;
}

/** A call ringing while you are in another one. */
function waitingCall() {
  const active = activeCall();
  return [...state.calls.values()].reverse().find(
    (c) => c !== active && c.direction === "incoming" && myStatus(c.info) === "waiting") ?? null;
}

function track(info, direction, inviterId) {
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

function forget(callId) {
  state.calls.delete(callId);
  state.arrival = state.arrival.filter((id) => id !== callId);
}

function updateParticipant(callId, userId, change) {
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

function person(userId) {
  if (userId === state.me) return { userId, ...state.profile };
  return state.names.get(userId) ?? { userId };
}

const name = (userId) => nameOf(person(userId));

// MARK: - notices

/** Shows `text` in `place` (home, call, login); a passing one goes after `ttl` ms. */
function say(place, text, { tone = "info", ttl = null, ...data } = {}) {
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

function clear(...places) {
  for (const place of places) state.notices[place] = null;
}

/** Where the user is looking: the call screen while in a call, else the home screen. */
function placeInView() {
  return liveCall() ? "call" : "home";
}

// MARK: - session

async function login(userID, sdkAppID, userSig) {
  const urls = await servers;
  signaling?.close();
  signaling = new Signaling(urls);
  signaling.addEventListener("frame", (event) => onEvent(event.detail));
  signaling.addEventListener("status", (event) => {
    state.status = event.detail === "connected" ? "loggedIn" : event.detail;
    render();
  });
  // After a network drop ICE restarts (the path may have changed); after a server restart the
  // media path never went away.
  // Records of calls that ended while the page was away came as events it never heard: read them.
  signaling.addEventListener("reconnected", (event) => {
    if (!event.detail?.afterRestart) media?.reconnected();
    loadRecords().catch((error) => console.warn("records refused", error.code, error.message));
  });
  signaling.addEventListener("problem", (event) => {
    state.problems = [...state.problems, event.detail].slice(-PROBLEMS_LIMIT);
    console.warn("protocol mismatch", event.detail);
  });
  const result = await signaling.login({ sdkAppID, userID, userSig, deviceId: tabDeviceId() });
  saveSession({ userID: result.userID, sdkAppID, userSig });
  state.me = result.userID;
  state.profile = { nickname: result.profile?.nickname ?? null, avatarURL: result.profile?.avatarURL ?? null };
  state.status = "loggedIn";
  clear("login");
  render();
  $("callee").focus();
  startPush({
    signaling, onAnswer: answerCall,
    session: { sdkAppID, userID: result.userID, userSig, deviceId: tabDeviceId(), server: urls[0] },
  }).catch((error) => console.warn("push", error));
  await loadRecords();
}

async function loginDevelopment(userID) {
  // No UserSig is fetched for a server the page will not use.
  await servers;
  const response = await fetch(`/v1/dev/usersig?userID=${encodeURIComponent(userID)}`);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw Object.assign(new Error("refused"), { code: body.error?.code });
  await login(body.userID, body.sdkAppID, body.userSig);
}

/** Logs in with what this tab kept from before a reload. */
async function resumeSession() {
  const saved = savedSession();
  if (!saved) return;
  $("user-id").value = saved.userID;
  state.status = "loggingIn";
  render();
  try {
    await login(saved.userID, saved.sdkAppID, saved.userSig);
  } catch (error) {
    forgetSession();
    signaling?.close();
    signaling = null;
    state.status = "loggedOut";
    say("login", errorText(error, "login"), { tone: "error", code: error.code });
  }
}

/** Logs out, after asking when that would hang up a live call. */
function requestLogout() {
  if (liveCall()) {
    $("logout-dialog").showModal();
  } else {
    logout();
  }
}

/** The call this user is in or calling from (on screen; logging out would end it). */
function liveCall() {
  const call = activeCall();
  const status = call ? myStatus(call.info) : "none";
  return call && (status === "accept" || (call.direction === "outgoing" && status === "waiting")) ? call : null;
}

async function logout(sessionEnded = null) {
  stopPush();
  if (!sessionEnded) {
    try {
      await signaling?.request("logout");
    } catch {}
  }
  forgetSession();
  signaling?.close();
  signaling = null;
  stopMedia();
  state.me = null;
  state.profile = { nickname: null, avatarURL: null };
  state.status = "loggedOut";
  state.calls.clear();
  state.arrival = [];
  state.ongoing.clear();
  state.records = [];
  state.inviteOpen = false;
  clear("home", "call", "login");
  if (sessionEnded) say("login", errorText(sessionEnded, "session"), { tone: "error", code: sessionEnded.code });
  // The UserSig is a credential: it does not stay in the form for the next person at this screen.
  $("user-sig").value = "";
  render();
  $("user-id").focus();
}

async function loadRecords() {
  const page = await signaling.request("records.query", { syncTime: -1, count: 30, order: "descending" });
  state.records = page.records;
  for (const record of page.records) state.ongoing.delete(record.callId);
  render();
}

async function saveProfile(nickname, avatarURL) {
  const result = await signaling.request("profile.set", { nickname, avatarURL });
  state.profile = { nickname: result.nickname ?? null, avatarURL: result.avatarURL ?? null };
  render();
}

// MARK: - calls

async function placeCall(callees, mediaType) {
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

async function accept() {
  const callId = incomingCallId();
  if (callId) await answerCall(callId);
}

/** Answers a call by its id: from the ringing screen, or a notification's Answer (rung here or not). */
async function answerCall(callId) {
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

async function reject() {
  const callId = incomingCallId();
  if (callId) await signaling.request("call.reject", { callId }).catch(() => {});
}

async function hangup() {
  const call = activeCall();
  if (call) await signaling.request("call.hangup", { callId: call.info.callId }).catch(() => {});
}

async function join(callId) {
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

async function invite(invitees) {
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

async function toggleMicrophone() {
  state.microphoneOn = !state.microphoneOn;
  await media?.setEnabled("audio", state.microphoneOn);
  sync();
}

async function toggleCamera() {
  state.cameraOn = !state.cameraOn;
  await media?.setEnabled("video", state.cameraOn);
  sync();
}

async function toggleScreenShare() {
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
async function requestMediaChange() {
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

function cancelMediaChange() {
  const asking = state.mediaChange;
  if (asking?.role !== "asking") return;
  signaling.post("call.cancelMediaType", { callId: asking.callId, transactionId: asking.transactionId });
}

/** The user's answer to the other member's media-type change, as a phone asks it. */
function answerMediaChange(agree) {
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
function reportDevices() {
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

// MARK: - events

function onEvent({ event, data }) {
  switch (event) {
    case "callReceived":
      track(data.call, "incoming", data.inviterId);
      break;
    case "callStarted":
      // A connected call this page never saw: it was reloaded in the call, and resumes it.
      if (!state.calls.has(data.call.callId) && myStatus(data.call) === "accept") state.resumed = data.call.callId;
      track(data.call);
      break;
    case "callUpdated":
      track(data.call);
      break;
    case "callEnded": {
      const ended = state.calls.get(data.callId);
      if (!ended) break;
      const wasOnScreen = activeCall() === ended || waitingCall() === ended;
      forget(data.callId);
      if (ended.info.callType === "group" && goesOn(ended.info)) keepOngoing(ended.info);
      if (wasOnScreen) announceEnd(data, ended);
      break;
    }
    case "callsSynced":
      for (const id of [...state.arrival]) if (!data.callIds.includes(id)) forget(id);
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

function peerName(callId) {
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

// MARK: - media

/** Starts, updates or stops the media to match the call on screen: capture from the moment you
 * call or answer (your own video shows while it rings), a connection per member who answered;
 * then reports this member's devices and draws the page. */
function sync() {
  const call = activeCall();
  const status = call ? myStatus(call.info) : "none";
  const inCall = status === "accept" || (call?.direction === "outgoing" && status === "waiting");
  if (!inCall) {
    stopMedia();
  } else {
    // A one-to-one call that becomes a group call on a server with an SFU moves there.
    const route = call.info.media === "sfu" ? "sfu" : "mesh";
    if (media?.callId !== call.info.callId || media.route !== route) startMedia(call.info);
    const peers = call.info.participants.filter((p) => p.userId !== state.me && p.status === "accept").map((p) => p.userId);
    media.setPeers(peers);
    if (state.mediaChange && state.mediaChange.callId !== call.info.callId) state.mediaChange = null;
    reportDevices();
  }
  render();
}

function startMedia(info) {
  // The same call moving to the SFU keeps the microphone and camera as they are.
  const moving = media?.callId === info.callId;
  stopMedia();
  // A page reloaded in a call keeps the microphone and camera as they were (a muted user stays
  // muted); otherwise a call starts with both on.
  const resuming = state.resumed === info.callId;
  const mine = resuming || moving ? info.participants.find((p) => p.userId === state.me) : null;
  state.microphoneOn = mine?.microphoneOn ?? true;
  state.cameraOn = info.mediaType === "video" && (mine?.cameraOn ?? true);
  state.inviteOpen = false;
  // What was said about another call is stale in this one.
  clear("call");
  const Session = info.media === "sfu" ? SFUSession : MediaSession;
  media = new Session({
    me: state.me,
    callId: info.callId,
    mediaType: info.mediaType,
    iceServers: signaling.request("media.iceServers").then((r) => r.iceServers).catch(() => []),
    ...options,
    send: info.media === "sfu"
      ? (signal) => signaling.post("call.sfu", signal)
      : (peer, signal) => signaling.post("call.media", { callId: info.callId, to: peer, ...signal }),
    sendLayer: (userId, layer) => signaling.post("call.videoLayer", { callId: info.callId, userId, layer }),
    onRemoteStream: (peer, stream, screen) => {
      remoteStreams.set(peer, stream);
      remoteScreens.set(peer, screen);
      render();
    },
    onReachability: (peer, reachable) => {
      if (reachable) unreachable.delete(peer);
      else unreachable.add(peer);
      render();
    },
    onCaptureFailed: (error, what) => say("call", deviceErrorText(error, what), { tone: "error" }),
    resuming,
  });
  if (!state.microphoneOn) media.setEnabled("audio", false);
  if (info.mediaType === "video" && !state.cameraOn) media.setEnabled("video", false);
  media.onPeerReset = (peer) => {
    remoteStreams.delete(peer);
    remoteScreens.delete(peer);
  };
  media.onScreenShareEnded = () => {
    if (!state.screenSharing) return;
    media?.stopScreenShare();
    state.screenSharing = false;
    sync();
  };
  media.ready.then(() => render());
  lastBytesSent = 0;
  statsTimer = setInterval(reportStatus, 1000);
}

function stopMedia() {
  clearInterval(statsTimer);
  statsTimer = null;
  media?.close();
  media = null;
  state.screenSharing = false;
  state.mediaChange = null;
  remoteStreams.clear();
  remoteScreens.clear();
  unreachable.clear();
  stalled.clear();
  stallWatch = new StallWatch();
  state.speaker = null;
}

/** Once a second: statistics to the server, which tells the other members our quality and volume. */
async function reportStatus() {
  if (!media) return;
  const session = media;
  const figures = await session.status();
  if (!figures || media !== session) return;
  const packetLoss = Math.min(100, figures.packetLoss);
  const rtt = figures.rtt;
  const sent = figures.bytesSent;
  const bitrate = lastBytesSent ? Math.max(0, Math.round(((sent - lastBytesSent) * 8) / 1000)) : 0;
  lastBytesSent = sent;
  const audioLevel = state.microphoneOn ? Math.min(100, figures.audioLevel) : 0;
  const callId = session.callId;
  state.own = { quality: networkQuality(packetLoss, rtt), volume: volumeLevel(audioLevel, state.microphoneOn) };
  const info = state.calls.get(callId)?.info;
  const senders = new Set((info?.participants ?? [])
    .filter((p) => p.userId !== state.me && (p.microphoneOn || p.cameraOn || p.screenSharing)).map((p) => p.userId));
  for (const [user, change] of stallWatch.sample(Date.now(), figures.received ?? {}, senders)) {
    if (change === "stalled") stalled.add(user);
    else stalled.delete(user);
  }
  signaling.post("call.statusReport", { callId, packetLoss: Math.round(packetLoss * 10) / 10, rtt, bitrate, audioLevel });
  render();
}

// MARK: - rendering

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

function render() {
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

function ongoingRow(info) {
  const item = document.createElement("li");
  item.className = "record ongoing";
  item.dataset.callId = info.callId;
  const others = info.participants.filter((p) => p.userId !== state.me).map(nameOf);
  const text = document.createElement("div");
  text.className = "record-text";
  const who = document.createElement("span");
  who.className = "peers";
  who.textContent = listText(others);
  const what = document.createElement("span");
  what.className = "outcome";
  what.textContent = `Group ${mediaText(info.mediaType)} · going on now`;
  text.append(who, what);
  const button = document.createElement("button");
  button.className = "join primary";
  button.textContent = "Join";
  button.setAttribute("aria-label", `Join the group call with ${listText(others)}`);
  button.addEventListener("click", () => join(info.callId));
  item.append(text, button);
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

// MARK: - wiring

const loginErrorText = (error) => (error instanceof ServerRefused ? error.message : errorText(error, "login"));

const ids = (text) => text.split(",").map((id) => id.trim()).filter(Boolean);

function wire() {
  servers.catch((refusal) => {
    $("server-error").textContent = refusal.message;
    $("server-error").hidden = false;
    for (const id of ["login-dev", "login"]) $(id).disabled = true;
  });
  // Browsers let a page make sound only after the user interacted with it.
  for (const type of ["pointerdown", "keydown"]) document.addEventListener(type, () => ringer.unlock(), { capture: true });
  ringer.onchange = () => render();
  attention.onchange = () => render();

  $("login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    clear("login");
    render();
    try {
      await loginDevelopment($("user-id").value.trim());
    } catch (error) {
      say("login", loginErrorText(error), { tone: "error", code: error.code });
    }
  });
  $("login").addEventListener("click", async () => {
    clear("login");
    render();
    try {
      await login($("user-id").value.trim(), Number($("sdk-app-id").value), $("user-sig").value.trim());
    } catch (error) {
      say("login", loginErrorText(error), { tone: "error", code: error.code });
    }
  });
  $("logout").addEventListener("click", requestLogout);
  $("logout-confirm").addEventListener("click", () => {
    $("logout-dialog").close();
    logout();
  });
  $("logout-cancel").addEventListener("click", () => $("logout-dialog").close());

  $("profile").addEventListener("click", () => {
    $("nickname").value = state.profile.nickname ?? "";
    $("avatar-url").value = state.profile.avatarURL ?? "";
    $("profile-error").hidden = true;
    $("profile-dialog").showModal();
  });
  $("profile-cancel").addEventListener("click", () => $("profile-dialog").close());
  $("profile-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await saveProfile($("nickname").value.trim(), $("avatar-url").value.trim());
      $("profile-dialog").close();
    } catch (error) {
      $("profile-error").textContent = errorText(error, "profile");
      $("profile-error").hidden = false;
    }
  });

  // Enter in the callee field places an audio call; the buttons say which call to place.
  $("call-form").addEventListener("submit", (event) => {
    event.preventDefault();
    placeCall(ids($("callee").value), "audio");
  });
  $("call-audio").addEventListener("click", () => placeCall(ids($("callee").value), "audio"));
  $("call-video").addEventListener("click", () => placeCall(ids($("callee").value), "video"));
  $("join-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const callId = $("join-call-id").value.trim();
    if (callId) join(callId);
  });
  $("enable-alerts").addEventListener("click", () => attention.ask().then(render));
  for (const place of ["home", "call", "login"]) {
    $(`${place}-notice`).querySelector(".dismiss").addEventListener("click", () => {
      clear(place);
      render();
    });
  }

  $("accept").addEventListener("click", accept);
  $("reject").addEventListener("click", reject);
  $("hangup").addEventListener("click", hangup);
  for (const id of ["ring-mute", "ringback-mute"]) $(id).addEventListener("click", () => ringer.setMuted(!ringer.muted));
  $("mute").addEventListener("click", toggleMicrophone);
  $("camera").addEventListener("click", toggleCamera);
  $("share").addEventListener("click", toggleScreenShare);
  $("switch-media").addEventListener("click", requestMediaChange);
  $("media-change-agree").addEventListener("click", () => answerMediaChange(true));
  $("media-change-decline").addEventListener("click", () => answerMediaChange(false));
  $("media-change-cancel").addEventListener("click", cancelMediaChange);
  $("add-people").addEventListener("click", () => {
    state.inviteOpen = !state.inviteOpen;
    render();
    if (state.inviteOpen) $("invitees").focus();
  });
  $("invite-form").addEventListener("submit", (event) => {
    event.preventDefault();
    invite(ids($("invitees").value));
  });
  $("layout").addEventListener("change", (event) => {
    state.view.template = event.target.value;
    render();
  });
  $("stage").addEventListener("floatmove", (event) => {
    const stage = $("stage");
    state.view.floatingOrigin = clampFloating(event.detail, { width: stage.clientWidth, height: stage.clientHeight });
    render();
  });
  window.addEventListener("resize", render);
  setInterval(() => {
    if (activeCall()) render();
  }, 500);
  render();
  start();
}

/**
 * A page opened by a notification (push.js) logs in as the tab that subscribed did and answers
 * when that is what the user chose; any other page resumes this tab's session.
 */
async function start() {
  const launch = await pushLaunch().catch(() => null);
  if (!launch) return resumeSession();
  try {
    await login(launch.session.userID, launch.session.sdkAppID, launch.session.userSig);
  } catch (error) {
    say("login", errorText(error, "login"), { tone: "error", code: error.code });
    return;
  }
  if (launch.answer) await answerCall(launch.callId);
}

// For tests and the curious: the client's state and its media statistics.
window.switchboard = {
  state,
  activeCall,
  stats: async () => (media ? media.stats() : {}),
  /** Through the SFU: what this page sends (one connection; the camera's layers), else null. */
  publishStats: async () => (media?.route === "sfu" ? media.publishStats() : null),
  /** Through the SFU: whose each section of the subscribe connection is ({mid, userId, source}), else null. */
  sfuTracks: () => (media?.route === "sfu" ? [...media.tracks.values()] : null),
  /** Through the SFU: the current session's number (null before the first), else null. */
  sfuSession: () => (media?.route === "sfu" ? media.session : null),
  /** The layers this page asked for, by member. */
  layers: () => (media?.route === "sfu" ? Object.fromEntries(media.layers) : null),
  mediaReady: async () => {
    await media?.ready;
    return !!media;
  },
  ringer: () => ({ state: ringer.state, kind: ringer.kind, muted: ringer.muted, level: ringer.level() }),
  tiles: () => [...document.querySelectorAll("#stage .tile")].map((n) => ({ user: n.dataset.user, role: n.dataset.role })),
  /** What became of Web Push on this page (push.js). */
  push: () => ({ ...pushState }),
  /** Whether the screen tile of `user` plays a picture. */
  screenPlaying: (user) => (document.querySelector(`.tile[data-key="screen:${CSS.escape(user)}"] video`)?.videoWidth ?? 0) > 0,
};

wire();
