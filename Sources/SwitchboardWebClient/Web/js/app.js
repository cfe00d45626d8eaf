// The browser client: log in, call, ring, answer, talk, hang up, records. It speaks the same
// protocol as the Swift SDK and follows the same rules (which call is on screen, who offers,
// the layouts).

import { Signaling, tabDeviceId } from "./signaling.js";
import { MediaSession, networkQuality, volumeLevel } from "./media.js";
import { clampFloating, durationText, tiles } from "./layout.js";
import { resolveServers } from "./servers.js";

const params = new URLSearchParams(location.search);
// `?server=URL` (repeatable): the nodes of a cluster, tried in turn; by default the page's own
// server. Servers its own server does not list are refused before anything connects.
const servers = resolveServers(params, location);
const options = { relayOnly: params.get("relay") === "1", loopbackOnly: params.get("loopback") === "1" };

const $ = (id) => document.getElementById(id);

// The SDK's default icon mapping (CallViewSettings), drawn with characters every font has:
// nothing while the network is fine, a warning when it is bad, a cross when the member is down.
const QUALITY_ICONS = { bad: "⚠ net", veryBad: "⚠ net", down: "✕ net" };
const VOLUME_ICONS = { mute: "", low: "▁", medium: "▁▃", high: "▁▃▅", peak: "▁▃▅▇" };

const state = {
  me: null,
  status: "loggedOut",
  /** Every call this tab takes part in: callId → {info, direction, inviterId}. */
  calls: new Map(),
  /** Arrival order of the calls, to pick the newest. */
  arrival: [],
  lastEnd: null,
  records: [],
  view: { template: "auto", swapped: false, enlarged: null, callId: null },
  speaker: null,
  microphoneOn: true,
  cameraOn: true,
  screenSharing: false,
  /** A media-type change the other member asked for, waiting for this user's answer. */
  mediaChangeAsked: null,
  own: { quality: "unknown", volume: "mute" },
  problems: [],
  lastStats: {},
};

let signaling = null;
let media = null;
const remoteStreams = new Map();
const remoteScreens = new Map();
let statsTimer = null;
let lastBytesSent = 0;

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

function track(info, direction, inviterId) {
  if (!state.calls.has(info.callId)) state.arrival.push(info.callId);
  const previous = state.calls.get(info.callId);
  state.calls.set(info.callId, {
    info,
    direction: previous?.direction ?? direction ?? (info.callerId === state.me ? "outgoing" : "incoming"),
    inviterId: previous?.inviterId ?? inviterId ?? info.callerId,
  });
}

function forget(callId) {
  state.calls.delete(callId);
  state.arrival = state.arrival.filter((id) => id !== callId);
}

function updateParticipant(callId, userId, change) {
  const participant = state.calls.get(callId)?.info.participants.find((p) => p.userId === userId);
  if (participant) change(participant);
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
  signaling.addEventListener("reconnected", (event) => {
    if (!event.detail?.afterRestart) media?.reconnected();
  });
  signaling.addEventListener("problem", (event) => {
    state.problems.push(event.detail);
    console.warn("protocol mismatch", event.detail);
  });
  const result = await signaling.login({ sdkAppID, userID, userSig, deviceId: tabDeviceId() });
  state.me = result.userID;
  state.status = "loggedIn";
  render();
  await loadRecords();
}

async function loginDevelopment(userID) {
  // No UserSig is fetched for a server the page will not use.
  await servers;
  const response = await fetch(`/v1/dev/usersig?userID=${encodeURIComponent(userID)}`);
  const body = await response.json();
  if (!response.ok) throw new Error(`${body.error?.message ?? response.statusText} (${body.error?.code ?? response.status})`);
  await login(body.userID, body.sdkAppID, body.userSig);
}

async function logout() {
  try {
    await signaling?.request("logout");
  } catch {}
  signaling?.close();
  signaling = null;
  stopMedia();
  state.me = null;
  state.status = "loggedOut";
  state.calls.clear();
  state.arrival = [];
  state.records = [];
  state.lastEnd = null;
  render();
}

async function loadRecords() {
  const page = await signaling.request("records.query", { syncTime: -1, count: 30, order: "descending" });
  state.records = page.records;
  render();
}

// MARK: - calls

async function placeCall(mediaType) {
  const callees = $("callee").value.split(",").map((id) => id.trim()).filter(Boolean);
  $("call-error").textContent = "";
  try {
    const result = await signaling.request("call.start", { participantIds: callees, mediaType });
    state.lastEnd = null;
    track(result.call, "outgoing", state.me);
    if (result.busyUserIds.length) $("call-error").textContent = `Busy: ${result.busyUserIds.join(", ")}`;
    sync();
  } catch (error) {
    $("call-error").textContent = `${error.message} (${error.code})`;
  }
}

/** The call the incoming screen shows: ringing, or waiting while you are in another call. */
function incomingCallId() {
  return $("incoming").hidden ? null : $("incoming").dataset.callId;
}

async function accept() {
  const callId = incomingCallId();
  if (!callId) return;
  state.lastEnd = null;
  // With call waiting, the server hangs up the current call for you.
  const result = await signaling.request("call.accept", { callId });
  track(result.call);
  sync();
}

async function reject() {
  const callId = incomingCallId();
  if (callId) await signaling.request("call.reject", { callId });
}

async function hangup() {
  const call = activeCall();
  if (call) await signaling.request("call.hangup", { callId: call.info.callId });
}

async function toggleMicrophone() {
  state.microphoneOn = !state.microphoneOn;
  await media?.setEnabled("audio", state.microphoneOn);
  reportDevices();
  render();
}

async function toggleCamera() {
  state.cameraOn = !state.cameraOn;
  await media?.setEnabled("video", state.cameraOn);
  reportDevices();
  render();
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
    $("call-error").textContent = `Screen sharing: ${error.message}`;
  }
  reportDevices();
  render();
}

/** Asks the other member to switch the call to the other media type. */
async function requestMediaChange() {
  const call = activeCall();
  if (!call) return;
  const mediaType = call.info.mediaType === "video" ? "audio" : "video";
  try {
    await signaling.request("call.changeMediaType", { callId: call.info.callId, mediaType });
  } catch (error) {
    $("call-error").textContent = `${error.message} (${error.code})`;
  }
}

/** The user's answer to the other member's media-type change, as a phone asks it. */
function answerMediaChange(agree) {
  const asked = state.mediaChangeAsked;
  state.mediaChangeAsked = null;
  render();
  if (asked) signaling.post("call.replyMediaType", { callId: asked.callId, transactionId: asked.transactionId, agree });
}

function reportDevices() {
  const call = activeCall();
  if (!call || myStatus(call.info) !== "accept") return;
  updateParticipant(call.info.callId, state.me, (p) => {
    p.microphoneOn = state.microphoneOn;
    p.cameraOn = state.cameraOn && call.info.mediaType === "video";
    p.screenSharing = state.screenSharing || undefined;
  });
  signaling.post("call.deviceState", {
    callId: call.info.callId,
    microphoneOn: state.microphoneOn,
    cameraOn: state.cameraOn && call.info.mediaType === "video",
    screenSharing: state.screenSharing,
  });
}

// MARK: - events

function onEvent({ event, data }) {
  switch (event) {
    case "callReceived":
      track(data.call, "incoming", data.inviterId);
      break;
    case "callStarted":
    case "callUpdated":
      track(data.call);
      break;
    case "callEnded": {
      const wasActive = activeCall()?.info.callId === data.callId;
      if (!state.calls.has(data.callId)) break;
      forget(data.callId);
      if (wasActive) state.lastEnd = data;
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
      if (media?.callId === data.callId) media.handleSignal(data);
      break;
    case "mediaTypeChangeRequested":
      // Asked as a phone asks; no answer within the server's timeout counts as declined.
      state.mediaChangeAsked = data;
      break;
    case "mediaTypeChangeResult":
      if (state.mediaChangeAsked?.transactionId === data.transactionId) state.mediaChangeAsked = null;
      if (data.result === "agreed" && media?.callId === data.callId) {
        // As the SDK does (CallPlus): switching to video turns the camera on, to audio off.
        state.cameraOn = data.mediaType === "video";
        media.setMediaType(data.mediaType);
        updateParticipant(data.callId, state.me, (p) => (p.cameraOn = state.cameraOn));
      }
      break;
    case "callRecord":
      state.records = [data.record, ...state.records.filter((r) => r.callId !== data.record.callId)];
      break;
    case "sessionEnded":
      $("login-error").textContent = `Session ended: ${data.error.message} (${data.error.code})`;
      logout();
      return;
  }
  sync();
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
 * call or answer (your own video shows while it rings), a connection per member who answered. */
function sync() {
  const call = activeCall();
  const status = call ? myStatus(call.info) : "none";
  const inCall = status === "accept" || (call?.direction === "outgoing" && status === "waiting");
  if (!inCall) {
    stopMedia();
  } else {
    if (media?.callId !== call.info.callId) startMedia(call.info);
    const peers = call.info.participants.filter((p) => p.userId !== state.me && p.status === "accept").map((p) => p.userId);
    media.setPeers(peers);
  }
  render();
}

function startMedia(info) {
  stopMedia();
  state.microphoneOn = true;
  state.cameraOn = info.mediaType === "video";
  media = new MediaSession({
    me: state.me,
    callId: info.callId,
    mediaType: info.mediaType,
    iceServers: signaling.request("media.iceServers").then((r) => r.iceServers).catch(() => []),
    ...options,
    send: (peer, signal) => signaling.post("call.media", { callId: info.callId, to: peer, ...signal }),
    onRemoteStream: (peer, stream, screen) => {
      remoteStreams.set(peer, stream);
      remoteScreens.set(peer, screen);
      render();
    },
  });
  media.onScreenShareEnded = () => {
    if (!state.screenSharing) return;
    media?.stopScreenShare();
    state.screenSharing = false;
    reportDevices();
    render();
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
  state.mediaChangeAsked = null;
  remoteStreams.clear();
  remoteScreens.clear();
  state.speaker = null;
}

/** Once a second: statistics to the server, which tells the other members our quality and volume. */
async function reportStatus() {
  if (!media) return;
  const callId = media.callId;
  const stats = await media.stats();
  state.lastStats = stats;
  const entries = Object.values(stats);
  if (!entries.length || media?.callId !== callId) return;
  const packetLoss = Math.min(100, Math.max(...entries.map((e) => e.packetLoss)));
  const rtt = Math.max(...entries.map((e) => e.rtt));
  const sent = entries.reduce((sum, e) => sum + e.bytesSent.audio + e.bytesSent.video + e.bytesSent.screen, 0);
  const bitrate = lastBytesSent ? Math.max(0, Math.round(((sent - lastBytesSent) * 8) / 1000)) : 0;
  lastBytesSent = sent;
  const audioLevel = state.microphoneOn ? Math.min(100, Math.max(...entries.map((e) => e.audioLevel))) : 0;
  state.own = { quality: networkQuality(packetLoss, rtt), volume: volumeLevel(audioLevel, state.microphoneOn) };
  signaling.post("call.statusReport", { callId, packetLoss: Math.round(packetLoss * 10) / 10, rtt, bitrate, audioLevel });
  render();
}

// MARK: - rendering

function render() {
  const loggedIn = state.status !== "loggedOut" && state.me;
  const call = loggedIn ? activeCall() : null;
  const status = call ? myStatus(call.info) : "none";
  const ringing = call && call.direction === "incoming" && status === "waiting";
  const inCall = call && !ringing;

  $("status").dataset.status = state.status;
  $("status").textContent = loggedIn ? `${state.me} · ${state.status === "loggedIn" ? "online" : state.status}` : "not logged in";
  $("logout").hidden = !loggedIn;
  $("login-view").hidden = !!loggedIn;
  $("home-view").hidden = !loggedIn || inCall;
  $("incoming").hidden = !(ringing || (inCall && waitingCall()));
  $("call-view").hidden = !inCall;

  const incoming = ringing ? call : waitingCall();
  if (incoming) {
    const caller = incoming.info.participants.find((p) => p.userId === incoming.inviterId);
    $("incoming-caller").textContent = caller?.nickname || incoming.inviterId;
    $("incoming-media").textContent = incoming.info.mediaType;
    $("incoming-note").hidden = !inCall;
    $("incoming").dataset.callId = incoming.info.callId;
  }

  const end = $("end-reason");
  end.hidden = !state.lastEnd;
  if (state.lastEnd) {
    end.dataset.reason = state.lastEnd.reason;
    const by = state.lastEnd.userId && state.lastEnd.userId !== state.me ? ` by ${state.lastEnd.userId}` : "";
    end.textContent = `Call ended: ${state.lastEnd.reason}${by}`;
  }

  renderRecords();
  if (inCall) renderCall(call);
}

/** A call ringing while you are in another one. */
function waitingCall() {
  const active = activeCall();
  return [...state.calls.values()].reverse().find(
    (c) => c !== active && c.direction === "incoming" && myStatus(c.info) === "waiting") ?? null;
}

function renderRecords() {
  const list = $("records");
  list.replaceChildren(
    ...state.records.map((record) => {
      const item = document.createElement("li");
      item.dataset.callId = record.callId;
      item.dataset.result = record.result;
      const peers = record.participantIds.filter((id) => id !== state.me).join(", ");
      const when = new Date(record.endTime).toLocaleString();
      for (const text of [
        record.direction === "outgoing" ? "↗" : "↙", peers, record.mediaType, record.result, durationText(record.duration), when,
      ]) {
        const cell = document.createElement("span");
        cell.textContent = text;
        item.append(cell);
      }
      return item;
    }),
  );
}

function renderCall(call) {
  const info = call.info;
  if (state.view.callId !== info.callId) state.view = { template: state.view.template, swapped: false, enlarged: null, callId: info.callId };
  const others = info.participants.filter((p) => p.userId !== state.me).map((p) => p.nickname || p.userId);
  $("call-peer").textContent = others.join(", ");
  $("timer").textContent = info.startTime
    ? durationText((signaling.serverNow() - info.startTime) / 1000)
    : call.direction === "outgoing" ? "Calling…" : "Connecting…";
  $("own-quality").textContent = QUALITY_ICONS[state.own.quality] ?? "";
  $("mute").textContent = state.microphoneOn ? "Mute" : "Unmute";
  $("mute").setAttribute("aria-pressed", String(!state.microphoneOn));
  $("camera").hidden = info.mediaType !== "video";
  $("share").textContent = state.screenSharing ? "Stop sharing" : "Share screen";
  $("share").setAttribute("aria-pressed", String(state.screenSharing));
  $("switch-media").textContent = info.mediaType === "video" ? "Switch to audio" : "Switch to video";
  $("switch-media").hidden = info.callType !== "oneToOne";
  $("media-change").hidden = !state.mediaChangeAsked;
  if (state.mediaChangeAsked) $("media-change-type").textContent = state.mediaChangeAsked.mediaType;
  $("camera").textContent = state.cameraOn ? "Camera off" : "Camera on";
  $("camera").setAttribute("aria-pressed", String(!state.cameraOn));
  $("layout").value = state.view.template;

  const stage = $("stage");
  const viewport = { width: stage.clientWidth, height: stage.clientHeight };
  if (state.view.floatingOrigin) state.view.floatingOrigin = clampFloating(state.view.floatingOrigin, viewport);
  const placed = tiles(info, state.me, state.speaker, viewport, state.view);
  // A member's screen is a tile of its own, next to the member's tile.
  const key = (tile) => (tile.role === "screen" ? `screen:${tile.userId}` : tile.userId);
  const keep = new Set(placed.map(key));
  for (const node of [...stage.children]) if (!keep.has(node.dataset.key)) node.remove();
  placed.forEach((tile, index) => {
    const member = info.participants.find((p) => p.userId === tile.userId) ?? { userId: tile.userId };
    let node = stage.querySelector(`.tile[data-key="${CSS.escape(key(tile))}"]`);
    if (!node) {
      node = document.createElement("div");
      node.className = "tile";
      node.dataset.key = key(tile);
      node.dataset.user = tile.userId;
      node.innerHTML = `<video autoplay playsinline></video><div class="avatar"></div><div class="waiting">calling…</div><span class="label"></span><span class="indicators"></span>`;
      makeTappable(node);
      stage.append(node);
    }
    node.className = `tile ${tile.role}`;
    node.dataset.role = tile.role;
    Object.assign(node.style, {
      left: `${tile.frame.x}px`, top: `${tile.frame.y}px`, width: `${tile.frame.width}px`, height: `${tile.frame.height}px`,
      zIndex: String(index + 1),
    });
    const isSelf = tile.userId === state.me;
    const screen = tile.role === "screen";
    const video = node.querySelector("video");
    const stream = screen ? remoteScreens.get(tile.userId) : isSelf ? media?.localStream : remoteStreams.get(tile.userId);
    if (stream && video.srcObject !== stream) video.srcObject = stream;
    // The screen tile shows the picture only; the member's own tile plays their audio.
    video.muted = isSelf || screen;
    const cameraOn = screen || (info.mediaType === "video" && (isSelf ? state.cameraOn : member.cameraOn && member.status === "accept"));
    video.hidden = !cameraOn;
    node.querySelector(".avatar").textContent = cameraOn ? "" : (member.nickname || tile.userId).slice(0, 1).toUpperCase();
    node.querySelector(".waiting").hidden = member.status !== "waiting" || isSelf;
    node.querySelector(".label").textContent = (member.nickname || tile.userId) + (isSelf ? " (you)" : "") + (screen ? "'s screen" : "");
    const microphoneOn = isSelf ? state.microphoneOn : member.microphoneOn !== false;
    const quality = isSelf ? state.own.quality : member.networkQuality;
    const volume = isSelf ? state.own.volume : member.volumeLevel ?? "mute";
    const indicators = node.querySelector(".indicators");
    indicators.dataset.microphone = microphoneOn ? "on" : "off";
    indicators.dataset.camera = cameraOn ? "on" : "off";
    indicators.dataset.quality = quality ?? "unknown";
    indicators.dataset.volume = microphoneOn ? volume : "mute";
    indicators.textContent = [
      microphoneOn ? VOLUME_ICONS[volume] ?? "" : "✕ mic", cameraOn || info.mediaType !== "video" ? "" : "✕ cam",
      QUALITY_ICONS[quality] ?? "",
    ].filter(Boolean).join("  ");
  });
}

/** A tap swaps (float's small tile) or enlarges (grid); dragging moves float's small tile. */
function makeTappable(node) {
  let start = null;
  node.addEventListener("pointerdown", (event) => {
    start = { x: event.clientX, y: event.clientY, left: node.offsetLeft, top: node.offsetTop, moved: false };
    node.setPointerCapture(event.pointerId);
  });
  node.addEventListener("pointermove", (event) => {
    if (!start || node.dataset.role !== "floating") return;
    const dx = event.clientX - start.x;
    const dy = event.clientY - start.y;
    if (!start.moved && Math.hypot(dx, dy) < 5) return;
    start.moved = true;
    const stage = $("stage");
    state.view.floatingOrigin = clampFloating(
      { x: start.left + dx, y: start.top + dy }, { width: stage.clientWidth, height: stage.clientHeight });
    render();
  });
  node.addEventListener("pointerup", () => {
    if (start && !start.moved) tap(node.dataset.user);
    start = null;
  });
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
}

// MARK: - wiring

function wire() {
  servers.catch((refusal) => {
    $("server-error").textContent = refusal.message;
    $("server-error").hidden = false;
    for (const id of ["login-dev", "login"]) $(id).disabled = true;
  });
  $("login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("login-error").textContent = "";
    try {
      await loginDevelopment($("user-id").value.trim());
    } catch (error) {
      $("login-error").textContent = error.message;
    }
  });
  $("login").addEventListener("click", async () => {
    $("login-error").textContent = "";
    try {
      await login($("user-id").value.trim(), Number($("sdk-app-id").value), $("user-sig").value.trim());
    } catch (error) {
      $("login-error").textContent = `${error.message} (${error.code ?? ""})`;
    }
  });
  $("logout").addEventListener("click", logout);
  // Enter in the callee field submits the form; the buttons say which call to place.
  $("call-form").addEventListener("submit", (event) => event.preventDefault());
  $("call-audio").addEventListener("click", () => placeCall("audio"));
  $("call-video").addEventListener("click", () => placeCall("video"));
  $("accept").addEventListener("click", () => accept().catch((e) => ($("call-error").textContent = e.message)));
  $("reject").addEventListener("click", () => reject().catch(() => {}));
  $("hangup").addEventListener("click", () => hangup().catch(() => {}));
  $("mute").addEventListener("click", toggleMicrophone);
  $("camera").addEventListener("click", toggleCamera);
  $("share").addEventListener("click", toggleScreenShare);
  $("switch-media").addEventListener("click", requestMediaChange);
  $("media-change-agree").addEventListener("click", () => answerMediaChange(true));
  $("media-change-decline").addEventListener("click", () => answerMediaChange(false));
  $("layout").addEventListener("change", (event) => {
    state.view.template = event.target.value;
    render();
  });
  window.addEventListener("resize", render);
  setInterval(() => {
    if (activeCall()) render();
  }, 500);
  render();
}

// For tests and the curious: the client's state and its media statistics.
window.switchboard = {
  state,
  activeCall,
  stats: async () => (media ? media.stats() : {}),
  mediaReady: async () => {
    await media?.ready;
    return !!media;
  },
  tiles: () => [...document.querySelectorAll("#stage .tile")].map((n) => ({ user: n.dataset.user, role: n.dataset.role })),
  /** Whether the screen tile of `user` plays a picture. */
  screenPlaying: (user) => (document.querySelector(`.tile[data-key="screen:${CSS.escape(user)}"] video`)?.videoWidth ?? 0) > 0,
};

wire();
