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
//
// This module holds the call's capture and its connections (MediaSession); each connection is a
// peer.js Peer, which carries out the rules above; levels.js turns the statistics into the
// levels of the status reports.

import { Peer, screenMids } from "./peer.js";

/** The DTLS certificate fingerprint a description carries (the first one), or null. */
export function fingerprint(sdp) {
  return sdp?.match(/^a=fingerprint:(.+)$/m)?.[1].trim() ?? null;
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
        this.restartPeer(signal.from);
      }
      this.peer(signal.from)?.serially(() => this.peers.get(signal.from)?.receive(signal));
    });
  }

  /** The member is in the call on another of their devices now: their connection starts over
   * (by the usual rules: the side whose user id sorts first offers). */
  memberMoved(id) {
    this.whenReady(() => {
      if (this.peers.has(id)) this.restartPeer(id);
    });
  }

  /** Closes the connection to `id` and opens a new one. */
  restartPeer(id) {
    this.peers.get(id).close();
    this.peers.delete(id);
    this.onPeerReset?.(id);
    this.peer(id, false);
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
