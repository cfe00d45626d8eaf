// One connection of a mesh call (media.js): a peer connection to one other member, negotiated
// by the rules media.js describes (who offers, crossing offers, ICE restarts and their bound,
// a reloaded page), the video gate of its link (videogate.js), and the reading of which
// received sections carry a shared screen.

import { VideoGate } from "./videogate.js";

/** How long (ms) no new frame of a member whose camera is on may come before the page says their
 * video is paused (their picture, not a frozen frame). */
export const VIDEO_STALL = 3000;

/** Whether `me` makes the first offer to `peer` (byte order of the ids, ASCII for valid ids). */
export function isOfferer(me, peer) {
  return me < peer;
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

/** Restarts in a row that do not bring ICE back before a connection gives up (the SDK's PeerLinkRules). */
export const ICE_RESTART_LIMIT = 3;

/**
 * How long ICE may stay `disconnected` before it counts as failed. Chromium leaves a connection
 * whose every path is dead in `disconnected` for good, never `failed` (measured with the pages in
 * network namespaces: `checking` → `disconnected` 18 s after the answer when no path exists, and
 * 5 s after a connected path dies), so without this a dead path was never restarted.
 */
export const ICE_DISCONNECTED_LIMIT = 5000;

export class Peer {
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
