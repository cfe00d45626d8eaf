// The media of the call on screen: started, changed and stopped to match it (a mesh of peer
// connections, media.js, or the SFU, sfu.js), and this member's status reported each second.

import { MediaSession } from "./media.js";
import { networkQuality, volumeLevel } from "./levels.js";
import { StallWatch } from "./stall.js";
import { SFUSession } from "./sfu.js";
import { deviceErrorText } from "./words.js";
import { options } from "./options.js";
import { activeCall, myStatus, state } from "./state.js";
import { clear, say } from "./notices.js";
import { signaling } from "./login.js";
import { reportDevices } from "./calls.js";
import { render } from "./render.js";

export let media = null;
export const remoteStreams = new Map();
export const remoteScreens = new Map();
// Members this page has no media path to (their connection gave up restarting ICE): shown down.
export const unreachable = new Set();
// Members whose media stopped arriving for 2 s (stall.js): shown down too, until it comes again.
export const stalled = new Set();
let stallWatch = new StallWatch();
let statsTimer = null;
let lastBytesSent = 0;

/** Starts, updates or stops the media to match the call on screen: capture from the moment you
 * call or answer (your own video shows while it rings), a connection per member who answered;
 * then reports this member's devices and draws the page. */
export function sync() {
  const call = activeCall();
  const status = call ? myStatus(call.info) : "none";
  const inCall = status === "accept" || (call?.direction === "outgoing" && status === "waiting");
  if (!inCall) {
    stopMedia();
  } else {
    // A one-to-one call that becomes a group call on a server with an SFU moves there, as does
    // one the server records (the route says so, whatever the call's type).
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

export function stopMedia() {
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
