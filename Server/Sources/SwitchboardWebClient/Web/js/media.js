// WebRTC for one connected call: local capture, one peer connection per other member (a mesh),
// the negotiation rules of the Swift SDK's PeerLinkRules (Sources/Switchboard/Media/PeerLinkRules.swift),
// and statistics for the status reports.
//
// - In each pair, the member whose user id sorts first (byte order) offers first and is impolite;
//   the other waits for that offer and is polite.
// - Crossing offers: the impolite side ignores the one it receives, the polite side rolls its own
//   back and answers (W3C "perfect negotiation").
// - ICE restart: the side that sees ICE fail restarts it when it is the offerer, or asks the
//   offerer with a `restart` signal.
// - ICE failing reports the member unreachable at once (`onReachability`), who then shows as
//   `down` until ICE connects again; restarts go on meanwhile. So does a `restart` request while
//   this side's ICE is not connected (the offerer's own checks start over at each request).
// - At most ICE_RESTART_LIMIT restarts in a row that do not connect, on each side (each counts
//   the restarts it makes or asks for): at the bound a side stops on its own failures. The
//   offerer still honours a request. ICE connecting, or the signaling connection coming back,
//   starts the count again.
// - An agreed media-type change adds (or removes) a camera on both sides at once: the polite
//   side waits for the offerer's offer again, which carries both changes.
// - A shared screen is a second video track in a stream of its own; the microphone and camera
//   share one stream. Receivers tell the screen by its stream id (a=msid), as the Swift engine does.
// - A page reloaded in a call (`resuming`) has lost its connections while the others kept theirs:
//   it offers first whatever its role, and an offer whose DTLS fingerprint is not the one the
//   connection knows comes from such a new connection, so it gets a new connection too.
// - A link too narrow for video (videogate.js): a side whose estimate of its bandwidth out to a
//   member stays low stops sending video on that connection and sends thinner audio (Opus at 16
//   kbps in packets as long as Chromium's adaptive ptime makes them), with no negotiation, which
//   could not get through such a link in time; the other side does the same with its own estimate,
//   so a link narrow either way stops video both ways. A later trial sends video again. A page
//   that receives no new frame from a member whose camera is on shows their picture instead,
//   saying the video is paused (`videoStalled`).

import { VideoGate } from "./videogate.js";

/** How long (ms) no new frame of a member whose camera is on may come before the page says their
 * video is paused (their picture, not a frozen frame). */
export const VIDEO_STALL = 3000;

/** Whether `me` makes the first offer to `peer` (byte order of the ids, ASCII for valid ids). */
export function isOfferer(me, peer) {
  return me < peer;
}

/** The DTLS certificate fingerprint a description carries (the first one), or null. */
export function fingerprint(sdp) {
  return sdp?.match(/^a=fingerprint:(.+)$/m)?.[1].trim() ?? null;
}

/** The quality levels of SPEC §3 from packet loss (%) and round-trip time (ms); the worse wins. */
export function networkQuality(packetLoss, rtt) {
  const levels = ["excellent", "good", "poor", "bad", "veryBad"];
  const lossLevel = packetLoss < 1 ? 0 : packetLoss < 3 ? 1 : packetLoss < 8 ? 2 : packetLoss < 15 ? 3 : 4;
  const rttLevel = rtt < 100 ? 0 : rtt < 200 ? 1 : rtt < 400 ? 2 : rtt < 800 ? 3 : 4;
  return levels[Math.max(lossLevel, rttLevel)];
}

/**
 * The mids of the sections of `sdp` that carry a shared screen: video whose stream (a=msid, or
 * the msid of an a=ssrc line) is not the stream of the first audio section.
 */
export function screenMids(sdp) {
  const sections = sdp.split(/\r?\n(?=m=)/).filter((s) => s.startsWith("m="));
  const info = sections.map((section) => {
    const kind = section.slice(2).split(" ")[0];
    const mid = section.match(/^a=mid:(\S+)/m)?.[1] ?? null;
    const stream = section.match(/^a=msid:(\S+)/m)?.[1] ?? section.match(/^a=ssrc:\d+ msid:(\S+)/m)?.[1] ?? null;
    return { kind, mid, stream };
  });
  const audioStream = info.find((i) => i.kind === "audio")?.stream ?? null;
  return new Set(info.filter((i) => i.kind === "video" && i.stream && i.stream !== audioStream).map((i) => i.mid));
}

/** The volume level of SPEC §3 for an audio level 0–100. */
export function volumeLevel(level, microphoneOn) {
  if (!microphoneOn || level <= 0) return "mute";
  return level <= 25 ? "low" : level <= 50 ? "medium" : level <= 75 ? "high" : "peak";
}

/** Restarts in a row that do not bring ICE back before a connection gives up (the SDK's PeerLinkRules). */
export const ICE_RESTART_LIMIT = 3;

/**
 * How long ICE may stay `disconnected` before it counts as failed. Chromium leaves a connection
 * whose every path is dead in `disconnected` for good, never `failed` (measured with the pages in
 * network namespaces: `checking` → `disconnected` 18 s after the answer when no path exists, and
 * 5 s after a connected path dies), so without this a dead path was never restarted.
 */
export const ICE_DISCONNECTED_LIMIT = 5000;

class Peer {
  constructor(session, id, resuming = false) {
    this.session = session;
    this.id = id;
    this.polite = !isOfferer(session.me, id);
    // The polite side waits for the offerer's first offer before it negotiates anything itself,
    // unless the other side still holds a connection from before this page was reloaded.
    this.started = !this.polite || resuming;
    this.makingOffer = false;
    this.ignoreOffer = false;
    this.settingRemoteAnswerPending = false;
    // ICE restarts made or asked for since ICE last connected, and whether the member is shown down
    // (ICE failed and has not connected since).
    this.restartsInARow = 0;
    this.unreachable = false;
    this.disconnectedTimer = null;
    // Whether this side's link to the member carries its video (videogate.js), and when the
    // member's video last brought a new frame here.
    this.gate = new VideoGate();
    this.frames = { count: 0, at: 0 };
    this.chain = Promise.resolve();
    this.stream = new MediaStream();
    this.screen = new MediaStream();
    const pc = new RTCPeerConnection({
      iceServers: session.iceServers,
      iceTransportPolicy: session.relayOnly ? "relay" : "all",
    });
    this.pc = pc;
    this.senders = {};
    for (const track of session.localStream.getTracks()) this.addSender(track.kind, track, session.localStream);
    if (session.screenTrack) this.addSender("screen", session.screenTrack, session.screenStream);
    pc.ontrack = ({ track, transceiver }) => {
      const sdp = pc.remoteDescription?.sdp ?? "";
      const stream = track.kind === "video" && screenMids(sdp).has(transceiver.mid) ? this.screen : this.stream;
      stream.addTrack(track);
      track.addEventListener("ended", () => stream.removeTrack(track));
      session.onRemoteStream(id, this.stream, this.screen);
    };
    pc.onicecandidate = ({ candidate }) => {
      if (candidate && !session.keepCandidate(candidate)) return;
      const init = candidate ? candidate.toJSON() : { candidate: "" };
      session.send(id, { kind: "candidate", candidate: compact(init) });
    };
    pc.onnegotiationneeded = () => {
      if (this.started) this.serially(() => this.negotiate());
    };
    pc.oniceconnectionstatechange = () => {
      const state = pc.iceConnectionState;
      clearTimeout(this.disconnectedTimer);
      if (state === "disconnected") {
        this.disconnectedTimer = setTimeout(() => {
          if (pc.iceConnectionState === "disconnected") this.serially(() => this.iceFailed());
        }, ICE_DISCONNECTED_LIMIT);
      }
      if (state === "failed") this.serially(() => this.iceFailed());
      if (state === "connected" || state === "completed") this.serially(() => this.iceConnected());
    };
  }

  /** Runs negotiation steps one after another, as the SDK does. */
  serially(step) {
    this.chain = this.chain.then(step).catch((error) => console.warn(`negotiation with ${this.id}`, error));
    return this.chain;
  }

  async negotiate() {
    const pc = this.pc;
    this.makingOffer = true;
    try {
      await pc.setLocalDescription();
      // Rolled back meanwhile (offers crossed and this side is polite): it answered instead.
      if (pc.signalingState !== "have-local-offer") return;
      this.session.send(this.id, { kind: "offer", sdp: pc.localDescription.sdp });
    } finally {
      this.makingOffer = false;
    }
  }

  async iceFailed() {
    this.pathDown();
    await this.restart();
  }

  /** No media path to the member: said once, until ICE connects. */
  pathDown() {
    if (this.unreachable) return;
    this.unreachable = true;
    this.session.onReachability?.(this.id, false);
  }

  /** Restarts ICE, or asks the offerer to, unless the restarts in a row reached the bound. */
  async restart() {
    if (this.restartsInARow >= ICE_RESTART_LIMIT) return;
    this.restartsInARow += 1;
    if (this.polite) {
      this.session.send(this.id, { kind: "restart" });
    } else {
      this.pc.restartIce();
    }
  }

  iceConnected() {
    this.restartsInARow = 0;
    if (!this.unreachable) return;
    this.unreachable = false;
    this.session.onReachability?.(this.id, true);
  }

  /** The network changed: restart ICE with a fresh count. */
  async networkChanged() {
    this.restartsInARow = 0;
    await this.restart();
  }

  async receive(signal) {
    const pc = this.pc;
    if (signal.kind === "offer" || signal.kind === "answer") {
      const readyForOffer = !this.makingOffer && (pc.signalingState === "stable" || this.settingRemoteAnswerPending);
      const collision = signal.kind === "offer" && !readyForOffer;
      this.ignoreOffer = !this.polite && collision;
      if (this.ignoreOffer) return;
      this.settingRemoteAnswerPending = signal.kind === "answer";
      await pc.setRemoteDescription({ type: signal.kind, sdp: signal.sdp });
      this.settingRemoteAnswerPending = false;
      if (signal.kind === "offer") {
        await pc.setLocalDescription();
        this.session.send(this.id, { kind: "answer", sdp: pc.localDescription.sdp });
        if (!this.started) {
          this.started = true;
          // Tracks the offer had no place for still need a negotiation of their own.
          if (pc.getTransceivers().some((t) => t.mid === null && !t.stopped)) await this.negotiate();
        }
      }
    } else if (signal.kind === "candidate") {
      try {
        await pc.addIceCandidate(signal.candidate);
      } catch (error) {
        if (!this.ignoreOffer) throw error;
      }
    } else if (signal.kind === "restart") {
      // The member's ICE failed: unless this side's is connected (the member's network changed,
      // or its signaling came back, and the path may well hold), there is no path.
      if (pc.iceConnectionState !== "connected" && pc.iceConnectionState !== "completed") this.pathDown();
      // The asking side bounds its requests; one after its network changed is how the pair recovers.
      this.restartsInARow += 1;
      pc.restartIce();
    }
  }

  replaceTrack(kind, track) {
    return this.senders[kind]?.replaceTrack(track);
  }

  /**
   * One second's readings at `now` (ms): the estimate of the bandwidth out to the member (kbit/s,
   * or null) and the frames of the member's camera decoded so far. Pauses this side's video, or
   * tries it again, as the gate says; notes when the member's video last moved.
   */
  watchLink(now, kbps, framesDecoded) {
    if (framesDecoded !== this.frames.count) this.frames = { count: framesDecoded, at: now };
    const sending = !!(this.senders.video || this.senders.screen);
    const action = this.gate.sample(now, sending ? kbps : null);
    if (action === "pause") this.sendVideo(false);
    if (action === "resume") this.sendVideo(true);
    if (action) this.thinAudio(this.gate.narrow);
  }

  /** Starts or stops this side's video encoders on this connection, at once (no negotiation). */
  sendVideo(on) {
    for (const kind of ["video", "screen"]) {
      const sender = this.senders[kind];
      if (sender) updateEncodings(sender, (encoding) => Object.assign(encoding, { active: on }));
    }
  }

  /** Thinner audio on a link in doubt: Opus at 16 kbps, longer packets (adaptive ptime). */
  thinAudio(on) {
    const sender = this.senders.audio;
    if (!sender) return;
    updateEncodings(sender, (encoding) => {
      if (on) Object.assign(encoding, { maxBitrate: NARROW_AUDIO_BITRATE, adaptivePtime: true });
      else {
        delete encoding.maxBitrate;
        encoding.adaptivePtime = false;
      }
    });
  }

  /** Where this side's video to the member stands: "open", "paused" (the link out is too
   * narrow) or "trial" (sent again to see). */
  get videoGate() {
    return this.gate.phase.name;
  }

  /** Whether the member's video, once it came, brought no new frame for `VIDEO_STALL` ms before `now`. */
  videoStalled(now) {
    return this.frames.count > 0 && now - this.frames.at >= VIDEO_STALL;
  }

  /**
   * Sends a local track (`audio`, `video` or `screen`); the connection then renegotiates. A
   * screen always gets a section of its own (addTrack could reuse the section the other member's
   * screen came in, which an engine that cannot reactivate sections, webrtcbin, then refuses).
   */
  addSender(kind, track, stream) {
    this.senders[kind] =
      kind === "screen"
        ? this.pc.addTransceiver(track, { direction: "sendonly", streams: [stream] }).sender
        : this.pc.addTrack(track, stream);
    if (kind !== "screen" && !this.session.enabled[kind]) this.senders[kind].replaceTrack(null);
    // Video added while this side's video is paused waits for the trial; audio stays thin.
    if (this.gate.paused && kind !== "audio") this.sendVideo(false);
    if (this.gate.narrow && kind === "audio") this.thinAudio(true);
  }

  /** Stops sending a kind of track; the connection renegotiates. */
  removeSender(kind) {
    const sender = this.senders[kind];
    if (!sender) return;
    delete this.senders[kind];
    this.pc.removeTrack(sender);
  }

  /** Both sides are about to change their tracks together: the polite side waits for the offer. */
  expectOffer() {
    if (this.polite) this.started = false;
  }

  close() {
    clearTimeout(this.disconnectedTimer);
    this.pc.close();
    if (this.unreachable) this.session.onReachability?.(this.id, true);
  }
}

/** Opus's rate on a link in doubt (bits per second): speech stays clear at 16 kbps. */
export const NARROW_AUDIO_BITRATE = 16_000;

/** Changes each of a sender's encodings (no negotiation); a sender with none is left alone. */
function updateEncodings(sender, change) {
  const parameters = sender.getParameters();
  if (!parameters.encodings?.length) return;
  parameters.encodings.forEach(change);
  sender.setParameters(parameters).catch((error) => console.warn("video gate", error));
}

function compact(object) {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== null && value !== undefined));
}

/**
 * The media of one connected call. `send(peer, signal)` relays a signal; `onRemoteStream(peer,
 * stream)` shows a member's media.
 */
export class MediaSession {
  constructor({ me, callId, mediaType, iceServers, relayOnly, loopbackOnly, capture, send, onRemoteStream, onReachability, onCaptureFailed, resuming }) {
    this.route = "mesh";
    this.me = me;
    this.callId = callId;
    this.mediaType = mediaType;
    this.iceServers = [];
    this.relayOnly = relayOnly;
    this.loopbackOnly = loopbackOnly;
    this.sendSignal = send;
    this.onRemoteStream = onRemoteStream;
    // (userId, reachable): a connection gave up restarting ICE (false), or connected after all (true).
    this.onReachability = onReachability;
    this.peers = new Map();
    // Members whose connection is from before a reload of this page: the first one offers.
    this.resuming = !!resuming;
    this.localStream = new MediaStream();
    this.screenStream = null;
    this.screenTrack = null;
    this.enabled = { audio: true, video: mediaType === "video" };
    this.closed = false;
    // Capture and the ICE servers come first; signals and peers that arrive meanwhile wait, in order.
    this.ready = Promise.all([
      iceServers,
      navigator.mediaDevices.getUserMedia({
        audio: true,
        video: mediaType === "video" ? { width: capture?.width ?? 640, height: capture?.height ?? 360, frameRate: capture?.frameRate ?? 30 } : false,
      }),
    ]).then(([servers, stream]) => {
      this.iceServers = servers;
      this.localStream = stream;
      if (this.closed) stream.getTracks().forEach((track) => track.stop());
    }, (error) => {
      // No capture: the call goes on, receiving only, and the user is told why.
      if (!this.closed) onCaptureFailed?.(error, mediaType === "video" ? "camera" : "microphone");
    });
    this.onCaptureFailed = onCaptureFailed;
  }

  /** Runs `step` once capture and ICE servers are ready, after the steps queued before it. */
  whenReady(step) {
    this.ready = this.ready.then(() => (this.closed ? undefined : step())).catch((error) => {
      console.warn("media", error);
    });
    return this.ready;
  }

  /** Keeps only loopback host candidates when asked to (tests keep traffic on 127.0.0.0/8). */
  keepCandidate(candidate) {
    if (!this.loopbackOnly || candidate.type !== "host") return true;
    return (candidate.address ?? "").startsWith("127.");
  }

  send(peer, signal) {
    if (!this.closed) this.sendSignal(peer, signal);
  }

  /** The members to be connected with now. */
  setPeers(ids) {
    this.whenReady(() => this.applyPeers(ids));
  }

  applyPeers(ids) {
    for (const [id, peer] of this.peers) {
      if (!ids.includes(id)) {
        peer.close();
        this.peers.delete(id);
      }
    }
    for (const id of ids) this.peer(id);
    // Members who answer later have no old connection.
    this.resuming = false;
  }

  peer(id, resuming = this.resuming) {
    if (this.closed || id === this.me) return null;
    let peer = this.peers.get(id);
    if (!peer) {
      peer = new Peer(this, id, resuming);
      this.peers.set(id, peer);
    }
    return peer;
  }

  handleSignal(signal) {
    this.whenReady(() => {
      const known = this.peers.get(signal.from)?.pc.remoteDescription?.sdp;
      if (signal.kind === "offer" && known && fingerprint(signal.sdp) !== fingerprint(known)) {
        // The member reloaded their page: their old connection is gone, start a new one.
        this.peers.get(signal.from).close();
        this.peers.delete(signal.from);
        this.onPeerReset?.(signal.from);
        this.peer(signal.from, false);
      }
      this.peer(signal.from)?.serially(() => this.peers.get(signal.from)?.receive(signal));
    });
  }

  /** The signaling connection came back: ICE may not have survived the network change. */
  reconnected() {
    for (const peer of this.peers.values()) peer.serially(() => peer.networkChanged());
  }

  /**
   * The call's media type changed (both members agreed): the camera is added to every connection
   * (video) or removed from it (audio), and each connection renegotiates, the offerer first.
   */
  setMediaType(mediaType) {
    return this.whenReady(async () => {
      if (mediaType === this.mediaType) return;
      this.mediaType = mediaType;
      for (const peer of this.peers.values()) peer.expectOffer();
      if (mediaType === "video") {
        let camera;
        try {
          camera = await navigator.mediaDevices.getUserMedia({ video: { width: 640, height: 360 } });
        } catch (error) {
          this.onCaptureFailed?.(error, "camera");
          return;
        }
        const track = camera.getVideoTracks()[0];
        this.localStream.addTrack(track);
        this.enabled.video = true;
        for (const peer of this.peers.values()) peer.addSender("video", track, this.localStream);
      } else {
        for (const track of this.localStream.getVideoTracks()) {
          track.stop();
          this.localStream.removeTrack(track);
        }
        this.enabled.video = false;
        for (const peer of this.peers.values()) peer.removeSender("video");
      }
    });
  }

  /** Shares the screen (`getDisplayMedia`) as a second video track to every member. */
  async startScreenShare() {
    await this.ready;
    if (this.screenTrack) return;
    const stream = await navigator.mediaDevices.getDisplayMedia({ video: true, audio: false });
    this.screenStream = stream;
    this.screenTrack = stream.getVideoTracks()[0];
    // The browser's own "stop sharing" ends the track.
    this.screenTrack.addEventListener("ended", () => this.onScreenShareEnded?.());
    for (const peer of this.peers.values()) peer.addSender("screen", this.screenTrack, stream);
  }

  stopScreenShare() {
    if (!this.screenTrack) return;
    for (const peer of this.peers.values()) peer.removeSender("screen");
    this.screenTrack.stop();
    this.screenTrack = null;
    this.screenStream = null;
  }

  /** Turns sending of a kind on or off without renegotiating: muted audio sends nothing. */
  async setEnabled(kind, on) {
    this.enabled[kind] = on;
    await this.ready;
    const track = this.localStream.getTracks().find((t) => t.kind === kind) ?? null;
    if (track) track.enabled = on;
    await Promise.all([...this.peers.values()].map((peer) => peer.replaceTrack(kind, on ? track : null)));
  }

  /**
   * Per peer: byte counters, what was decoded (audio samples and energy, video and screen frames
   * and their size), round trip, loss and the kind of the selected candidate pair.
   */
  async stats() {
    const result = {};
    for (const [id, peer] of this.peers) {
      const report = await peer.pc.getStats();
      const screens = screenMids(peer.pc.remoteDescription?.sdp ?? "");
      const entry = {
        bytesReceived: { audio: 0, video: 0, screen: 0 }, bytesSent: { audio: 0, video: 0, screen: 0 },
        framesDecoded: { video: 0, screen: 0 }, frameWidth: { video: 0, screen: 0 }, frameHeight: { video: 0, screen: 0 },
        sentFrameWidth: 0, totalSamplesReceived: 0, totalAudioEnergy: 0, receivedAudioLevel: 0,
        rtt: 0, packetLoss: 0, videoLoss: 0, audioLevel: 0, localCandidateType: null, remoteCandidateType: null, candidatePair: null,
        outgoingKbps: null,
        iceConnectionState: peer.pc.iceConnectionState,
      };
      const screenSenders = new Set(peer.senders.screen ? [peer.senders.screen.track?.id] : []);
      let pair = null;
      for (const stat of report.values()) {
        if (stat.type === "inbound-rtp") {
          const kind = stat.kind === "video" && screens.has(stat.mid) ? "screen" : stat.kind;
          entry.bytesReceived[kind] += stat.bytesReceived ?? 0;
          if (stat.kind === "video") {
            entry.framesDecoded[kind] += stat.framesDecoded ?? 0;
            entry.frameWidth[kind] = stat.frameWidth ?? entry.frameWidth[kind];
            entry.frameHeight[kind] = stat.frameHeight ?? entry.frameHeight[kind];
          } else {
            entry.totalSamplesReceived += stat.totalSamplesReceived ?? 0;
            entry.totalAudioEnergy += stat.totalAudioEnergy ?? 0;
            entry.receivedAudioLevel = Math.max(entry.receivedAudioLevel, Math.round((stat.audioLevel ?? 0) * 100));
          }
        }
        if (stat.type === "outbound-rtp") {
          const source = report.get(stat.mediaSourceId);
          const kind = stat.kind === "video" && source && screenSenders.has(source.trackIdentifier) ? "screen" : stat.kind;
          entry.bytesSent[kind] += stat.bytesSent ?? 0;
          if (kind === "video") entry.sentFrameWidth = stat.frameWidth ?? entry.sentFrameWidth;
        }
        if (stat.type === "remote-inbound-rtp" && stat.kind === "audio") {
          entry.packetLoss = Math.max(0, (stat.fractionLost ?? 0) * 100);
        }
        if (stat.type === "remote-inbound-rtp" && stat.kind === "video" && stat.localId && report.get(stat.localId)?.mediaSourceId) {
          const source = report.get(report.get(stat.localId).mediaSourceId);
          if (!source || !screenSenders.has(source.trackIdentifier)) entry.videoLoss = Math.max(0, stat.fractionLost ?? 0);
        }
        if (stat.type === "media-source" && stat.kind === "audio") entry.audioLevel = Math.round((stat.audioLevel ?? 0) * 100);
        if (stat.type === "transport" && stat.selectedCandidatePairId) pair = report.get(stat.selectedCandidatePairId);
      }
      if (!pair) {
        for (const stat of report.values()) {
          if (stat.type === "candidate-pair" && stat.nominated && stat.state === "succeeded") pair = stat;
        }
      }
      if (pair) {
        entry.rtt = Math.round((pair.currentRoundTripTime ?? 0) * 1000);
        entry.localCandidateType = report.get(pair.localCandidateId)?.candidateType ?? null;
        entry.remoteCandidateType = report.get(pair.remoteCandidateId)?.candidateType ?? null;
        entry.candidatePair = pair.id;
        entry.outgoingKbps = pair.availableOutgoingBitrate === undefined ? null : Math.round(pair.availableOutgoingBitrate / 1000);
      }
      result[id] = entry;
    }
    return result;
  }

  /** This member's figures for its status report: the worst loss and round trip over the
   * connections, the bytes sent on all of them, the microphone's level. Each connection gets the
   * same statistics, read at `now` (ms), for its video gate. */
  async status(now = Date.now()) {
    const byPeer = await this.stats();
    for (const [id, entry] of Object.entries(byPeer)) {
      this.peers.get(id)?.watchLink(now, entry.outgoingKbps, entry.framesDecoded.video);
    }
    const entries = Object.values(byPeer);
    if (!entries.length) return null;
    return {
      // The video's loss counts too: a link that drops only the large packets loses the camera
      // while the microphone's small ones pass.
      packetLoss: Math.max(...entries.map((e) => Math.max(e.packetLoss, e.videoLoss * 100))),
      rtt: Math.max(...entries.map((e) => e.rtt)),
      bytesSent: entries.reduce((sum, e) => sum + e.bytesSent.audio + e.bytesSent.video + e.bytesSent.screen, 0),
      audioLevel: Math.max(...entries.map((e) => e.audioLevel)),
      received: receivedByPeer(byPeer),
    };
  }

  /** Whether no new frame of `peer`'s video came for a while (their camera may be on). */
  videoStalled(peer, now = Date.now()) {
    return this.peers.get(peer)?.videoStalled(now) ?? false;
  }

  /** Where this page's video stands, the worst over its connections: "paused" (a link out too
   * narrow), "trial" (sent again to see) or "open". */
  get videoGate() {
    const phases = [...this.peers.values()].map((peer) => peer.videoGate);
    return phases.includes("paused") ? "paused" : phases.includes("trial") ? "trial" : "open";
  }

  close() {
    this.closed = true;
    for (const peer of this.peers.values()) peer.close();
    this.peers.clear();
    for (const track of this.localStream.getTracks()) track.stop();
    this.screenTrack?.stop();
  }
}

/** Everything received from each peer so far (bytes of audio, video and screen), by peer id. */
export function receivedByPeer(byPeer) {
  return Object.fromEntries(
    Object.entries(byPeer).map(([id, e]) => [id, e.bytesReceived.audio + e.bytesReceived.video + e.bytesReceived.screen]));
}
