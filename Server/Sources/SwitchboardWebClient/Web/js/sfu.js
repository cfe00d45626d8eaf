// WebRTC for a group call whose media goes through the server's SFU (docs/PROTOCOL.md, "Group
// calls through the SFU"): the same interface as media.js's MediaSession, with two connections
// instead of one per member.
//
// - Each `sfuSession` starts over: the connections of the session before are closed, a publish
//   connection sends the microphone, the camera (in two simulcast layers, highest first, as the
//   SFU expects) and a shared screen, each once whatever the number of members; the page offers,
//   the SFU answers.
// - The subscribe connection receives the other members' tracks; the SFU offers (with `tracks`:
//   whose each section is), the page answers, and every track is handed to its member's stream
//   (microphone and camera) or screen stream.
// - Signals of another session than the current one are dropped. ICE failing on either
//   connection asks the server for a new session (`restart`).
// - Which layer of each member's camera to receive follows the layout (`setLayers`); a choice is
//   sent once and holds for the rest of the call.

/** The camera's simulcast layers, highest first (Janus reads rids in that order). */
export const CAMERA_LAYERS = [{ rid: "h" }, { rid: "l", scaleResolutionDownBy: 2 }];

export class SFUSession {
  constructor({ me, callId, mediaType, iceServers, relayOnly, loopbackOnly, capture, send, sendLayer, onRemoteStream, onCaptureFailed }) {
    this.route = "sfu";
    this.me = me;
    this.callId = callId;
    this.mediaType = mediaType;
    this.iceServers = [];
    this.relayOnly = relayOnly;
    this.loopbackOnly = loopbackOnly;
    this.sendSignal = send;
    this.sendLayer = sendLayer;
    this.onRemoteStream = onRemoteStream;
    this.onCaptureFailed = onCaptureFailed;
    this.session = null;
    this.publisher = null;
    this.subscriber = null;
    /** The subscribe connection's sections: mid → {userId, source}. */
    this.tracks = new Map();
    /** Each member's streams: userId → {stream, screen}. */
    this.remote = new Map();
    /** The layer asked for each member's camera. */
    this.layers = new Map();
    this.localStream = new MediaStream();
    this.screenStream = null;
    this.screenTrack = null;
    this.enabled = { audio: true, video: mediaType === "video" };
    this.closed = false;
    this.chain = Promise.resolve();
    const video = mediaType === "video" ? { width: capture?.width ?? 640, height: capture?.height ?? 360, frameRate: capture?.frameRate ?? 30 } : false;
    this.ready = Promise.all([
      iceServers,
      navigator.mediaDevices.getUserMedia({ audio: true, video }),
    ]).then(([servers, stream]) => {
      this.iceServers = servers;
      this.localStream = stream;
      if (this.closed) stream.getTracks().forEach((track) => track.stop());
    }, (error) => {
      if (!this.closed) onCaptureFailed?.(error, mediaType === "video" ? "camera" : "microphone");
    });
  }

  /** Runs `step` after capture and the steps queued before it. */
  serially(step) {
    this.chain = this.chain.then(() => this.ready).then(() => (this.closed ? undefined : step())).catch((error) => {
      console.warn("sfu", error);
    });
    return this.chain;
  }

  /** Members come and go through the SFU's offers: nothing to do per member here. */
  setPeers() {}

  /** The signaling connection came back: the server starts a new session at the login. */
  reconnected() {}

  connection(kind) {
    const pc = new RTCPeerConnection({ iceServers: this.iceServers, iceTransportPolicy: this.relayOnly ? "relay" : "all" });
    const session = this.session;
    pc.onicecandidate = ({ candidate }) => {
      if (candidate && !this.keepCandidate(candidate)) return;
      const init = candidate ? compact(candidate.toJSON()) : { candidate: "" };
      this.send({ session, connection: kind, kind: "candidate", candidate: init });
    };
    pc.oniceconnectionstatechange = () => {
      if (pc.iceConnectionState === "failed" && this.session === session) {
        this.send({ session, connection: kind, kind: "restart" });
      }
    };
    return pc;
  }

  keepCandidate(candidate) {
    if (!this.loopbackOnly || candidate.type !== "host") return true;
    return (candidate.address ?? "").startsWith("127.");
  }

  send(signal) {
    if (!this.closed) this.sendSignal({ callId: this.callId, ...signal });
  }

  /** A new session: everything of the one before goes, the publish connection offers. */
  startSession(session) {
    return this.serially(async () => {
      if (this.session !== null && session <= this.session) return;
      this.session = session;
      this.publisher?.close();
      this.subscriber?.close();
      this.subscriber = null;
      this.tracks.clear();
      this.publisher = this.connection("publish");
      this.senders = {};
      const stream = this.localStream;
      for (const track of stream.getAudioTracks()) {
        this.senders.audio = this.publisher.addTransceiver(track, { direction: "sendonly", streams: [stream] }).sender;
      }
      for (const track of stream.getVideoTracks()) {
        this.senders.video = this.publisher.addTransceiver(track, {
          direction: "sendonly", streams: [stream], sendEncodings: CAMERA_LAYERS.map((layer) => ({ ...layer })),
        }).sender;
      }
      if (this.screenTrack) {
        this.senders.screen = this.publisher.addTransceiver(this.screenTrack, { direction: "sendonly", streams: [this.screenStream] }).sender;
      }
      if (!this.enabled.audio) this.senders.audio?.replaceTrack(null);
      if (!this.enabled.video) this.senders.video?.replaceTrack(null);
      const publisher = this.publisher;
      publisher.onnegotiationneeded = () => this.serially(() => this.offer(publisher, session));
      await this.offer(publisher, session);
      this.forgetRemote(new Set());
    });
  }

  async offer(pc, session) {
    if (pc !== this.publisher || session !== this.session || pc.signalingState !== "stable") return;
    await pc.setLocalDescription();
    this.send({ session, connection: "publish", kind: "offer", sdp: pc.localDescription.sdp });
  }

  handleSession(data) {
    this.startSession(data.session);
  }

  handleSignal(data) {
    return this.serially(async () => {
      if (data.session !== this.session) return;
      if (data.connection === "publish") {
        if (data.kind === "answer" && this.publisher?.signalingState === "have-local-offer") {
          await this.publisher.setRemoteDescription({ type: "answer", sdp: data.sdp });
        } else if (data.kind === "candidate") {
          await this.publisher?.addIceCandidate(data.candidate).catch(() => {});
        }
        return;
      }
      if (data.kind === "offer") {
        this.subscriber ??= this.connection("subscribe");
        this.tracks = new Map((data.tracks ?? []).map((t) => [t.mid, t]));
        await this.subscriber.setRemoteDescription({ type: "offer", sdp: data.sdp });
        await this.subscriber.setLocalDescription();
        this.send({ session: this.session, connection: "subscribe", kind: "answer", sdp: this.subscriber.localDescription.sdp });
        this.collectTracks();
      } else if (data.kind === "candidate") {
        await this.subscriber?.addIceCandidate(data.candidate).catch(() => {});
      }
    });
  }

  /** Hands every received track to its member's streams, as the SFU's last offer says. */
  collectTracks() {
    const byUser = new Map();
    for (const transceiver of this.subscriber.getTransceivers()) {
      const owner = this.tracks.get(transceiver.mid);
      const track = transceiver.receiver.track;
      if (!owner || !track || transceiver.currentDirection === "inactive" || transceiver.stopped) continue;
      if (!byUser.has(owner.userId)) byUser.set(owner.userId, { camera: [], screen: [] });
      byUser.get(owner.userId)[owner.source === "screen" ? "screen" : "camera"].push(track);
    }
    for (const [userId, found] of byUser) {
      let entry = this.remote.get(userId);
      if (!entry) {
        entry = { stream: new MediaStream(), screen: new MediaStream() };
        this.remote.set(userId, entry);
      }
      let changed = false;
      for (const [stream, tracks] of [[entry.stream, found.camera], [entry.screen, found.screen]]) {
        for (const track of stream.getTracks()) {
          if (!tracks.includes(track)) {
            stream.removeTrack(track);
            changed = true;
          }
        }
        for (const track of tracks) {
          if (!stream.getTracks().includes(track)) {
            stream.addTrack(track);
            changed = true;
          }
        }
      }
      if (changed) this.onRemoteStream(userId, entry.stream, entry.screen);
    }
    this.forgetRemote(new Set(byUser.keys()));
  }

  forgetRemote(keep) {
    for (const userId of [...this.remote.keys()]) {
      if (keep.has(userId)) continue;
      this.remote.delete(userId);
      this.onPeerReset?.(userId);
    }
  }

  /** Which layer of each member's camera to receive: `{userId: "small" | "big"}`. */
  setLayers(wanted) {
    for (const [userId, layer] of Object.entries(wanted)) {
      if (this.layers.get(userId) === layer) continue;
      this.layers.set(userId, layer);
      this.sendLayer(userId, layer);
    }
  }

  /** SFU calls take no media-type changes (one-to-one only). */
  setMediaType() {
    return Promise.resolve();
  }

  async startScreenShare() {
    await this.ready;
    if (this.screenTrack) return;
    const stream = await navigator.mediaDevices.getDisplayMedia({ video: true, audio: false });
    this.screenStream = stream;
    this.screenTrack = stream.getVideoTracks()[0];
    this.screenTrack.addEventListener("ended", () => this.onScreenShareEnded?.());
    if (!this.publisher) return;
    // A screen shared again goes out in the section the last one left inactive: a new section
    // each time would soon pass the SFU's limit of sections per publish offer (7006).
    const transceiver = this.publisher.getTransceivers().find((t) => t.sender === this.senders.screen);
    if (transceiver) {
      await transceiver.sender.replaceTrack(this.screenTrack);
      transceiver.sender.setStreams(stream);
      transceiver.direction = "sendonly";
    } else {
      this.senders.screen = this.publisher.addTransceiver(this.screenTrack, { direction: "sendonly", streams: [stream] }).sender;
    }
  }

  stopScreenShare() {
    if (!this.screenTrack) return;
    // The section stays, inactive, for the next share (the SFU then stops forwarding it).
    const transceiver = this.publisher?.getTransceivers().find((t) => t.sender === this.senders?.screen);
    if (transceiver && !transceiver.stopped) {
      transceiver.direction = "inactive";
      transceiver.sender.replaceTrack(null);
    }
    this.screenTrack.stop();
    this.screenTrack = null;
    this.screenStream = null;
  }

  /** Muted audio or a camera off sends nothing, without renegotiating. */
  async setEnabled(kind, on) {
    this.enabled[kind] = on;
    await this.ready;
    const track = this.localStream.getTracks().find((t) => t.kind === kind) ?? null;
    if (track) track.enabled = on;
    await this.senders?.[kind]?.replaceTrack(on ? track : null);
  }

  /**
   * Per other member, what arrived through the subscribe connection (the same fields as
   * MediaSession's); the publish connection's figures are in publishStats().
   */
  async stats() {
    const result = {};
    if (!this.subscriber) return result;
    const report = await this.subscriber.getStats();
    const entry = () => ({
      bytesReceived: { audio: 0, video: 0, screen: 0 }, bytesSent: { audio: 0, video: 0, screen: 0 },
      framesDecoded: { video: 0, screen: 0 }, frameWidth: { video: 0, screen: 0 }, frameHeight: { video: 0, screen: 0 },
      sentFrameWidth: 0, totalSamplesReceived: 0, totalAudioEnergy: 0, receivedAudioLevel: 0,
      rtt: 0, packetLoss: 0, audioLevel: 0, localCandidateType: null, remoteCandidateType: null, candidatePair: null,
      iceConnectionState: this.subscriber.iceConnectionState,
    });
    let pair = null;
    for (const stat of report.values()) {
      if (stat.type === "transport" && stat.selectedCandidatePairId) pair = report.get(stat.selectedCandidatePairId);
      if (stat.type !== "inbound-rtp") continue;
      const owner = this.tracks.get(stat.mid);
      if (!owner) continue;
      result[owner.userId] ??= entry();
      const e = result[owner.userId];
      const kind = owner.source === "screen" ? "screen" : stat.kind;
      e.bytesReceived[kind] += stat.bytesReceived ?? 0;
      if (stat.kind === "video") {
        e.framesDecoded[kind] += stat.framesDecoded ?? 0;
        e.frameWidth[kind] = stat.frameWidth ?? e.frameWidth[kind];
        e.frameHeight[kind] = stat.frameHeight ?? e.frameHeight[kind];
      } else {
        e.totalSamplesReceived += stat.totalSamplesReceived ?? 0;
        e.totalAudioEnergy += stat.totalAudioEnergy ?? 0;
        e.receivedAudioLevel = Math.max(e.receivedAudioLevel, Math.round((stat.audioLevel ?? 0) * 100));
      }
    }
    for (const e of Object.values(result)) {
      if (pair) {
        e.rtt = Math.round((pair.currentRoundTripTime ?? 0) * 1000);
        e.localCandidateType = report.get(pair.localCandidateId)?.candidateType ?? null;
        e.remoteCandidateType = report.get(pair.remoteCandidateId)?.candidateType ?? null;
        e.candidatePair = pair.id;
      }
    }
    return result;
  }

  /**
   * What this member sends: one entry per RTP stream of the publish connection (a simulcast
   * camera has one per layer), with its source, layer (rid) and size, how many connections
   * send at all, and how many media sections the publish connection has.
   */
  async publishStats() {
    const out = { connections: this.publisher ? 1 : 0, streams: [], rtt: 0, packetLoss: 0, audioLevel: 0, bytesSent: 0,
      iceConnectionState: this.publisher?.iceConnectionState ?? null, sections: this.publisher?.getTransceivers().length ?? 0 };
    if (!this.publisher) return out;
    const report = await this.publisher.getStats();
    const screenId = this.screenTrack?.id;
    for (const stat of report.values()) {
      if (stat.type === "outbound-rtp") {
        const source = report.get(stat.mediaSourceId);
        const kind = stat.kind === "audio" ? "microphone" : source?.trackIdentifier === screenId ? "screen" : "camera";
        out.streams.push({ source: kind, rid: stat.rid ?? null, track: source?.trackIdentifier ?? null,
          frameWidth: stat.frameWidth ?? 0, frameHeight: stat.frameHeight ?? 0, bytesSent: stat.bytesSent ?? 0,
          active: stat.active ?? true });
        out.bytesSent += stat.bytesSent ?? 0;
      }
      if (stat.type === "remote-inbound-rtp" && stat.kind === "audio") out.packetLoss = Math.max(0, (stat.fractionLost ?? 0) * 100);
      if (stat.type === "media-source" && stat.kind === "audio") out.audioLevel = Math.round((stat.audioLevel ?? 0) * 100);
      if (stat.type === "transport" && stat.selectedCandidatePairId) {
        out.rtt = Math.round((report.get(stat.selectedCandidatePairId)?.currentRoundTripTime ?? 0) * 1000);
      }
    }
    return out;
  }

  /** This member's figures for its status report: loss, round trip, bytes sent, microphone level. */
  async status() {
    const sent = await this.publishStats();
    const byPeer = await this.stats();
    const received = Object.values(byPeer);
    return {
      packetLoss: sent.packetLoss,
      rtt: Math.max(sent.rtt, ...received.map((e) => e.rtt)),
      bytesSent: sent.bytesSent,
      audioLevel: sent.audioLevel,
      received: receivedByPeer(byPeer),
    };
  }

  close() {
    this.closed = true;
    this.publisher?.close();
    this.subscriber?.close();
    for (const track of this.localStream.getTracks()) track.stop();
    this.screenTrack?.stop();
  }
}

function compact(object) {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== null && value !== undefined));
}
