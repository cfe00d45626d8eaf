#if GStreamer
import CGStreamer
import Foundation
import Logging
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol

/// How the engine's peer connections use ICE.
struct IcePolicy: Sendable {
    var servers: [IceServer]
    /// Only relayed candidates (TURN), as `iceTransportPolicy: "relay"`.
    var relayOnly: Bool
    /// Host candidates on 127.0.0.1 only, and only loopback candidates from peers (tests).
    var loopbackOnly: Bool
}

/// One WebRTC peer connection (a `webrtcbin`) inside the call's pipeline: to one other member
/// (a mesh), or one of the two connections with the SFU (its ``ConnectionRole``). A branch from
/// each local track's tee into it, a receiving chain for each track it gets (named after the
/// member the role says it is from), the negotiation steps the SDK asks for, and its statistics.
///
/// webrtcbin cannot restart ICE (its offers reuse the ICE credentials) nor roll back an offer,
/// so the engine replaces the whole connection where WebRTC would do either (see
/// ``GStreamerMediaEngine``).
final class PeerConnection: @unchecked Sendable {
    /// A local track this connection sends: its webrtcbin pad and transceiver, and the branch from
    /// the track's tee while the track exists.
    private struct Sender {
        var pad: Pad
        var transceiver: OpaqueObject
        var payloadType: Int
        var ssrc: UInt32
        /// The local track's tee.
        var tee: Element
        /// The queue and payloader from the tee to the pad, once connected.
        var branch: Branch?
    }

    private struct Branch: Sendable {
        var bin: Element
        var teePad: Pad
    }

    private struct State {
        var senders: [TrackKind: Sender] = [:]
        var tracks: [(pad: Int, track: ReceivedTrack)] = []
        var localSDP: SessionDescriptionText?
        var localText: String?
        var remoteSDP: SessionDescriptionText?
        var closed = false
        var handlers: [gulong] = []
        var output = (volume: 100, muted: false)
        /// This side's DTLS role once negotiated (`active` or `passive`): later offers must name it.
        var dtlsRole: String?
        /// This connection stands in for one whose offer crossed the peer's (see
        /// ``answerInPlaceOfRolledBackOffer()``) and has not answered yet.
        var standsInForRollback = false
        /// Frames decoded by tracks that ended (a screen that stopped, a camera removed), per member.
        var endedFrames: [UserID: [TrackKind: Int]] = [:]
        /// The mids of sections a receive-only transceiver was made for (``prepare(for:)``): a
        /// later offer with the same section must not get a second one.
        var receivingMids: Set<String> = []
        /// Tracks being ended (``replaceEnded(_:)``), so that the two signals of an end, webrtcbin's
        /// end of stream and the peer's description, end a track once.
        var ending: Set<ObjectIdentifier> = []
        /// The number the next receiving chain (or drain) is named with: taken and counted up in
        /// one step, so that two tracks arriving together never share a name (the level router
        /// routes each `level` message by its element's name). It was `tracks.count`, read before
        /// the track was appended: two pads added at once got the same chain name, and one
        /// member's level showed at 0 or under another member's name.
        var nextTrackNumber = 0

        mutating func takeTrackNumber() -> Int {
            defer { nextTrackNumber += 1 }
            return nextTrackNumber
        }
        /// Video (camera and screen) is not sent on this connection: its link is too narrow
        /// (``VideoGate``). Branches made later start so too.
        var videoPaused = false
    }

    /// Default payload types of our offers (the peer's offer decides when it offers first).
    static let opusPayloadType = 96
    static let vp8PayloadType = 97

    /// Who the connection is with, for logs and events: the member, or `sfu-publish` and
    /// `sfu-subscribe`.
    let peer: UserID
    let role: ConnectionRole
    let webrtc: Element
    private let pipeline: Element
    private let events: PeerConnectionEvents
    private let ice: IcePolicy
    private let router: LevelRouter
    private let recordDirectory: URL?
    private let playback: String?
    /// The webrtcbin's name in the pipeline (`peer-<user>-<generation>`).
    let name: String
    private let logger: Logger
    private let emit: @Sendable (MediaEvent) -> Void
    private let blocking: BlockingCalls
    private let state = NIOLockedValueBox(State())

    init(
        peer: UserID, role: ConnectionRole, name: String, pipeline: Element, ice: IcePolicy, events: PeerConnectionEvents, router: LevelRouter,
        recordDirectory: URL?, playback: String?, blocking: BlockingCalls, logger: Logger,
        emit: @escaping @Sendable (MediaEvent) -> Void
    ) throws {
        self.peer = peer
        self.role = role
        self.blocking = blocking
        self.emit = emit
        self.name = name
        self.pipeline = pipeline
        self.events = events
        self.ice = ice
        self.router = router
        self.recordDirectory = recordDirectory
        self.playback = playback
        self.logger = logger
        webrtc = try Element.make("webrtcbin", name: name)
        webrtc.set("bundle-policy", "max-bundle")
        // The jitter buffer: webrtcbin's 200 ms, 50 on loopback where nothing arrives late.
        webrtc.set("latency", UInt32(ice.loopbackOnly ? 50 : 200))
        if ice.relayOnly { webrtc.set("ice-transport-policy", "relay") }
        for server in ice.servers {
            for url in server.urls {
                if url.hasPrefix("stun:") {
                    webrtc.set("stun-server", "stun://" + url.dropFirst("stun:".count))
                } else if let uri = Self.turnURI(url, username: server.username, credential: server.credential) {
                    if sb_webrtc_add_turn_server(webrtc.pointer, uri) == 0 {
                        logger.warning("webrtcbin refused a TURN server", metadata: ["url": "\(url)"])
                    }
                }
            }
        }
        try pipeline.add(webrtc)
        if sb_webrtc_configure_agent(webrtc.pointer, ice.loopbackOnly ? "127.0.0.1" : nil) == 0 {
            logger.warning("could not set up the ICE agent", metadata: ["loopbackOnly": "\(ice.loopbackOnly)"])
        }
        connectSignals()
        webrtc.syncStateWithParent()
    }

    /// `turn:host:port?transport=udp` with coturn REST credentials as webrtcbin's
    /// `turn://user:pass@host:port?transport=udp` (user and password percent-escaped: the user
    /// name has a colon, the password base64 characters).
    static func turnURI(_ url: String, username: String?, credential: String?) -> String? {
        let scheme: String
        if url.hasPrefix("turns:") {
            scheme = "turns"
        } else if url.hasPrefix("turn:") {
            scheme = "turn"
        } else {
            return nil
        }
        let rest = url.dropFirst(scheme.count + 1)
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        func escape(_ value: String?) -> String {
            value?.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        }
        return "\(scheme)://\(escape(username)):\(escape(credential))@\(rest)"
    }

    // MARK: - signals

    /// What the signal handlers reach: the connection, weakly (its element may outlive it briefly).
    private final class Handlers: @unchecked Sendable {
        weak var connection: PeerConnection?
        init(_ connection: PeerConnection) { self.connection = connection }
    }

    private func connectSignals() {
        let release: GClosureNotify = { data, _ in Unmanaged<Handlers>.fromOpaque(data!).release() }
        func box() -> UnsafeMutableRawPointer { Unmanaged.passRetained(Handlers(self)).toOpaque() }
        let handlers = [
            sb_connect_element(
                webrtc.raw, "on-negotiation-needed",
                { _, data in Unmanaged<Handlers>.fromOpaque(data!).takeUnretainedValue().connection?.negotiationNeeded() },
                box(), release),
            sb_connect_candidate(
                webrtc.raw,
                { _, mline, candidate, data in
                    guard let candidate else { return }
                    Unmanaged<Handlers>.fromOpaque(data!).takeUnretainedValue().connection?
                        .localCandidate(mline: Int(mline), String(cString: candidate))
                }, box(), release),
            sb_connect_notify(
                webrtc.raw, "notify::ice-connection-state",
                { _, _, data in Unmanaged<Handlers>.fromOpaque(data!).takeUnretainedValue().connection?.iceStateChanged() },
                box(), release),
            sb_connect_pad(
                webrtc.raw, "pad-added",
                { _, pad, data in
                    guard let pad else { return }
                    Unmanaged<Handlers>.fromOpaque(data!).takeUnretainedValue().connection?.padAdded(pad)
                }, box(), release),
            sb_connect_pad(
                webrtc.raw, "pad-removed",
                { _, pad, data in
                    guard let pad else { return }
                    Unmanaged<Handlers>.fromOpaque(data!).takeUnretainedValue().connection?.padRemoved(pad)
                }, box(), release),
        ]
        state.withLockedValue { $0.handlers = handlers }
    }

    private func negotiationNeeded() {
        guard !state.withLockedValue({ $0.closed }) else { return }
        events.negotiationNeeded()
    }

    private func localCandidate(mline: Int, _ line: String) {
        if ice.loopbackOnly, CandidateLine(line)?.isLoopback != true { return }
        let (mid, ufrag, closed) = state.withLockedValue { state in
            let media = state.localSDP?.media
            return (media.flatMap { mline < $0.count ? $0[mline].mid : nil }, state.localSDP?.ufrag, state.closed)
        }
        guard !closed else { return }
        events.localCandidate(IceCandidate(candidate: line, sdpMid: mid, sdpMLineIndex: mline, usernameFragment: ufrag))
    }

    private func iceStateChanged() {
        let value = GstWebRTCICEConnectionState(rawValue: UInt32(webrtc.enumValue("ice-connection-state")))
        guard !state.withLockedValue({ $0.closed }) else { return }
        let names: [UInt32: String] = [
            GST_WEBRTC_ICE_CONNECTION_STATE_NEW.rawValue: "new", GST_WEBRTC_ICE_CONNECTION_STATE_CHECKING.rawValue: "checking",
            GST_WEBRTC_ICE_CONNECTION_STATE_CONNECTED.rawValue: "connected",
            GST_WEBRTC_ICE_CONNECTION_STATE_COMPLETED.rawValue: "completed",
            GST_WEBRTC_ICE_CONNECTION_STATE_FAILED.rawValue: "failed",
            GST_WEBRTC_ICE_CONNECTION_STATE_DISCONNECTED.rawValue: "disconnected",
            GST_WEBRTC_ICE_CONNECTION_STATE_CLOSED.rawValue: "closed",
        ]
        emit(.connectionState(peer, names[value.rawValue] ?? "\(value.rawValue)"))
        switch value {
        case GST_WEBRTC_ICE_CONNECTION_STATE_FAILED: events.iceFailed()
        case GST_WEBRTC_ICE_CONNECTION_STATE_CONNECTED, GST_WEBRTC_ICE_CONNECTION_STATE_COMPLETED: events.iceConnected()
        default: break
        }
    }

    /// A track arrives: decode it, measure it, record it. Runs on webrtcbin's thread, and links
    /// before returning so no data meets an unlinked pad.
    private func padAdded(_ raw: UnsafeMutablePointer<GstPad>) {
        guard gst_pad_get_direction(raw) == GST_PAD_SRC else { return }
        let pad = Pad(adopting: UnsafeMutablePointer(OpaquePointer(gst_object_ref(UnsafeMutableRawPointer(raw)))))
        let transceiver = sb_get_object(pad.raw, "transceiver").map(OpaqueObject.init(adopting:))
        let mid = transceiver?.string("mid")
        let (remote, count, output) = state.withLockedValue { ($0.remoteSDP, $0.takeTrackNumber(), $0.output) }
        // The transceiver knows audio from video (its codec preferences say); the peer's
        // description tells a screen from the camera. (webrtcbin may add the pads of an offer's
        // own transceivers before the answer came: then it is the camera, as a screen always
        // comes in a section of its own.)
        let transceiverKind = transceiver.map { GstWebRTCKind(rawValue: UInt32($0.enumValue("kind"))) }
        let section = mid.flatMap { remote?.media(mid: $0) }
        var kind: TrackKind =
            transceiverKind == GST_WEBRTC_KIND_AUDIO || (transceiverKind != GST_WEBRTC_KIND_VIDEO && section?.kind == "audio")
            ? .audio : .video
        if kind == .video, let mid, remote?.isScreen(mid: mid) == true { kind = .screen }
        do {
            guard let (owner, named) = role.name(mid: mid, detected: kind) else {
                logger.warning("a track nobody was named for: dropped", metadata: ["peer": "\(peer)", "mid": "\(mid ?? "?")"])
                try discard(pad, number: count)
                return
            }
            let track = try receiver(named, from: owner, pad: pad, mid: mid, number: count, output: output)
            try pad.link(to: try input(of: track))
            state.withLockedValue { $0.tracks.append((Int(bitPattern: raw), track)) }
            logger.debug(
                "receiving", metadata: ["peer": "\(peer)", "from": "\(owner)", "kind": "\(named)", "mid": "\(mid ?? "?")"])
        } catch {
            logger.error("could not receive a track", metadata: ["peer": "\(peer)", "error": "\(error)"])
        }
    }

    /// A receiving chain for `pad` carrying `owner`'s track, in the pipeline and started, not yet linked.
    private func receiver(
        _ kind: TrackKind, from owner: UserID, pad: Pad, mid: String?, number: Int, output: (volume: Int, muted: Bool)
    ) throws -> ReceivedTrack {
        let recording = recordDirectory.map { RecordingFile(directory: $0, peer: owner, kind: kind) }
        let track = try ReceivedTrack(
            peer: owner, kind: kind, source: pad, mid: mid, name: "\(name)-in\(number)", recording: recording,
            playback: playback, router: router, emit: emit)
        track.setOutput(volume: output.volume, muted: output.muted)
        try pipeline.add(track.bin)
        track.bin.syncStateWithParent()
        track.whenEnded { [weak self, weak track] in
            guard let self, let track else { return }
            Task { await self.replaceEnded(track) }
        }
        return track
    }

    /// A pad whose track nobody owns still needs a sink (data on an unlinked pad stops webrtcbin's
    /// whole stream): it drains into a fakesink, counted by nothing. Its pad's removal or the
    /// connection's end stops it with the pipeline.
    private func discard(_ pad: Pad, number: Int) throws {
        let bin = try Element.bin("queue leaky=downstream ! fakesink name=\(name)-drop\(number) sync=false async=false")
        try pipeline.add(bin)
        bin.syncStateWithParent()
        guard let input = bin.staticPad("sink") else { throw GStreamerError("a drain without input") }
        try pad.link(to: input)
    }

    private func input(of track: ReceivedTrack) throws -> Pad {
        guard let input = track.bin.staticPad("sink") else { throw GStreamerError("a receiving chain without input") }
        return input
    }

    /// Received tracks that the peer's new description no longer sends (its section `recvonly`,
    /// `inactive` or rejected: a shared screen it stopped, a member who left the SFU) end now, and
    /// so do tracks whose section the role now names for someone else (the SFU gave a member's
    /// old section to another). webrtcbin also ends their stream when their transceiver goes
    /// inactive, but not always: a browser's stopped screen was seen to go on as a track that
    /// decoded nothing. A track that never decoded a frame is left as it is (nothing of it was
    /// shown, and its chain is already a fresh one).
    private func endTracksThePeerStopped(_ sdp: SessionDescriptionText) {
        let role = self.role
        let stopped = state.withLockedValue { state in
            state.tracks.compactMap { entry -> ReceivedTrack? in
                guard let mid = entry.track.mid, let section = sdp.media(mid: mid) else { return nil }
                let named = role.name(mid: mid, detected: entry.track.kind)
                let stopped =
                    section.rejected || section.direction == "recvonly" || section.direction == "inactive" || named == nil
                // A chain named for someone else is replaced even if it decoded nothing yet: what
                // it decodes next is the new member's.
                let renamed = named.map { $0.owner != entry.track.peer || $0.kind != entry.track.kind } ?? false
                return (stopped && entry.track.snapshot.firstFrame != nil) || renamed ? entry.track : nil
            }
        }
        for track in stopped { Task { await self.replaceEnded(track) } }
    }

    /// The sender stopped a track (webrtcbin ended its stream, or its description says so): it
    /// ends here (its recording is complete), and a fresh chain takes the pad, so that the track
    /// may come back on the same transceiver and no data ever meets an unlinked pad.
    private func replaceEnded(_ ended: ReceivedTrack) async {
        let current = state.withLockedValue { state -> (Int, (volume: Int, muted: Bool))? in
            guard !state.closed, state.tracks.contains(where: { $0.track === ended }),
                state.ending.insert(ObjectIdentifier(ended)).inserted
            else { return nil }
            return (state.takeTrackNumber(), state.output)
        }
        guard let (count, output) = current else { return }
        // Whether this call ends `ended`: not when its pad's removal or the close took it out
        // meanwhile (they end it themselves).
        var ours = true
        do {
            // The fresh chain is named as the role names the section now; a section named for
            // nobody any more keeps the old name until it carries something again.
            let (owner, kind) = role.name(mid: ended.mid, detected: ended.kind) ?? (ended.peer, ended.kind)
            let next = try receiver(kind, from: owner, pad: ended.source, mid: ended.mid, number: count, output: output)
            let (oldInput, newInput) = (try input(of: ended), try input(of: next))
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                ended.source.whenIdle {
                    ended.source.unlink(from: oldInput)
                    try? ended.source.link(to: newInput)
                    continuation.resume()
                }
            }
            ours = state.withLockedValue { state in
                guard !state.closed, let index = state.tracks.firstIndex(where: { $0.track === ended }) else { return false }
                state.tracks[index].track = next
                return true
            }
            // Nobody else knows the fresh chain of a pad that went away or a connection that closed.
            if !ours {
                await next.finish()
                pipeline.remove(next.bin)
            }
        } catch {
            logger.error("could not renew a receiving chain", metadata: ["peer": "\(peer)", "error": "\(error)"])
        }
        state.withLockedValue { _ = $0.ending.remove(ObjectIdentifier(ended)) }
        guard ours else { return }
        let frames = ended.snapshot.framesDecoded
        state.withLockedValue { $0.endedFrames[ended.peer, default: [:]][ended.kind, default: 0] += frames }
        await ended.finish()
        pipeline.remove(ended.bin)
    }

    /// The peer stopped sending a track (a shared screen ended): its chain ends.
    private func padRemoved(_ raw: UnsafeMutablePointer<GstPad>) {
        let key = Int(bitPattern: raw)
        let removed = state.withLockedValue { state -> ReceivedTrack? in
            guard let index = state.tracks.firstIndex(where: { $0.pad == key }) else { return nil }
            return state.tracks.remove(at: index).track
        }
        guard let removed else { return }
        let pipeline = self.pipeline
        Task {
            await removed.finish()
            pipeline.remove(removed.bin)
        }
    }

    // MARK: - local tracks

    /// Sends a local track: a new webrtcbin pad and transceiver, fed from the track's tee once
    /// its payload type is settled (``connectSenders()``). (A track that comes back after
    /// ``detach(_:)`` gets a new transceiver too: webrtcbin cannot turn an inactive one active.)
    func attach(_ kind: TrackKind, tee: Element) throws {
        guard state.withLockedValue({ $0.senders[kind] }) == nil else { return }
        let payloadType = kind == .audio ? Self.opusPayloadType : Self.vp8PayloadType
        let ssrc = UInt32.random(in: 1...UInt32.max)
        let pad = try webrtc.requestPad("sink_%u", caps: Self.caps(kind, payloadType: payloadType))
        pad.set("msid", kind == .screen ? "switchboard-screen" : "switchboard")
        guard let raw = sb_get_object(pad.raw, "transceiver") else { throw GStreamerError("pad without a transceiver") }
        let transceiver = OpaqueObject(adopting: raw)
        // A screen only goes out: the peer's own screen comes in a section of its own. Nothing
        // comes back on the SFU's publish connection.
        if kind == .screen || role.sendsOnly { transceiver.set("direction", "sendonly") }
        transceiver.set("codec-preferences", caps: Self.caps(kind, payloadType: payloadType, ssrc: ssrc))
        let sender = Sender(pad: pad, transceiver: transceiver, payloadType: payloadType, ssrc: ssrc, tee: tee, branch: nil)
        state.withLockedValue { $0.senders[kind] = sender }
    }

    /// Feeds every sender not fed yet, with its payload type. webrtcbin checks the caps a pad
    /// carries against the transceiver's codec preferences, so a pad carries nothing until the
    /// payload type is the one negotiated: ours when offering, the offer's when answering.
    private func connectSenders() throws {
        let (waiting, videoPaused) = state.withLockedValue { ($0.senders.filter { $0.value.branch == nil }, $0.videoPaused) }
        for (kind, var sender) in waiting {
            let payloader = kind == .audio ? "rtpopuspay" : "rtpvp8pay"
            // Video passes a valve of its own: the link to this peer may be too narrow for it.
            let gate = kind.isVideo ? "valve name=gate drop=\(videoPaused) ! " : ""
            let bin = try Element.bin(
                "queue leaky=downstream max-size-buffers=0 max-size-bytes=0 max-size-time=500000000 ! "
                    + gate + "\(payloader) name=payloader pt=\(sender.payloadType) ssrc=\(sender.ssrc) mtu=1200")
            try pipeline.add(bin)
            guard let output = bin.staticPad("src"), let input = bin.staticPad("sink") else {
                throw GStreamerError("a send branch without pads")
            }
            try output.link(to: sender.pad)
            // Started before the tee feeds it: a buffer pushed into a branch that is not yet
            // playing is refused as "flushing", and the tee would pass that up to the source,
            // which then stops for every peer.
            bin.syncStateWithParent()
            let teePad = try sender.tee.requestPad("src_%u")
            try teePad.link(to: input)
            // A receiver that starts now needs a key frame to decode from.
            if kind.isVideo { _ = teePad.send(sb_force_key_unit_event()) }
            sender.branch = Branch(bin: bin, teePad: teePad)
            state.withLockedValue { $0.senders[kind] = sender }
        }
    }

    /// Stops or starts sending video (camera and screen) on this connection, with no
    /// renegotiation: the branches' valves drop what the shared encoders make. Video that starts
    /// again asks its encoder for a key frame, for the peer to decode from. Asking for what is
    /// already so changes nothing.
    func sendVideo(_ on: Bool) {
        let branches = state.withLockedValue { state -> [Branch] in
            guard state.videoPaused == on else { return [] }
            state.videoPaused = !on
            return state.senders.filter { $0.key.isVideo }.compactMap(\.value.branch)
        }
        for branch in branches {
            branch.bin.child("gate")?.set("drop", !on)
            if on { _ = branch.teePad.send(sb_force_key_unit_event()) }
        }
    }

    /// Stops sending a local track: its branch leaves the tee, its transceiver goes inactive for
    /// good, and the branch stops and its pad is released. The caller renegotiates.
    ///
    /// A branch feeding a transceiver that was never negotiated, or a connection whose DTLS never
    /// completed, has its streaming thread held inside webrtcbin; it cannot stop before the
    /// connection does. It is then left to stop on its own thread when the connection closes.
    func detach(_ kind: TrackKind) async {
        guard let sender = state.withLockedValue({ $0.senders.removeValue(forKey: kind) }) else { return }
        sender.transceiver.set("direction", "inactive")
        guard let branch = sender.branch else {
            webrtc.releaseRequestPad(sender.pad)
            return
        }
        await Self.unlink(branch, from: sender.tee)
        let (pipeline, webrtc) = (pipeline, webrtc)
        let stopped = await blocking.run {
            branch.bin.setState(GST_STATE_NULL)
            pipeline.remove(branch.bin)
            webrtc.releaseRequestPad(sender.pad)
        }
        if !stopped {
            logger.warning("a sending branch waits for its connection to close", metadata: ["peer": "\(peer)", "kind": "\(kind)"])
        }
    }

    /// Takes a sending branch off its track's tee, once no buffer is in flight there. First, always:
    /// the tee feeds every connection, and a branch that refuses data as flushing (its connection
    /// stopping) would make the tee stop the track's source for all of them. The branch's queue
    /// is leaky, so the tee's thread never waits in it and the pad goes idle at once.
    private static func unlink(_ branch: Branch, from tee: Element) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let input = branch.bin.staticPad("sink")
            branch.teePad.whenIdle { [teePad = branch.teePad] in
                if let input { teePad.unlink(from: input) }
                tee.releaseRequestPad(teePad)
                continuation.resume()
            }
        }
    }

    /// The RTP caps a track is offered with. With its SSRC, webrtcbin names the stream in
    /// `a=ssrc` lines, which is how the receiving side maps it to its section in a bundle.
    static func caps(_ kind: TrackKind, payloadType: Int, ssrc: UInt32? = nil) -> String {
        let base =
            kind == .audio
            ? "application/x-rtp,media=audio,encoding-name=OPUS,clock-rate=48000,encoding-params=(string)2,payload=\(payloadType)"
            : "application/x-rtp,media=video,encoding-name=VP8,clock-rate=90000,payload=\(payloadType),"
                + "rtcp-fb-nack-pli=(boolean)true,rtcp-fb-ccm-fir=(boolean)true"
        return base + (ssrc.map { ",ssrc=(uint)\($0)" } ?? "")
    }

    // MARK: - negotiation

    var signalingState: PeerSignalingState {
        switch GstWebRTCSignalingState(rawValue: UInt32(webrtc.enumValue("signaling-state"))) {
        case GST_WEBRTC_SIGNALING_STATE_STABLE: .stable
        case GST_WEBRTC_SIGNALING_STATE_HAVE_LOCAL_OFFER: .haveLocalOffer
        case GST_WEBRTC_SIGNALING_STATE_HAVE_REMOTE_OFFER: .haveRemoteOffer
        default: .closed
        }
    }

    /// The local offer in effect (have-local-offer), as sent.
    var pendingOffer: String? { state.withLockedValue { $0.localText } }

    /// Marks this fresh connection as the one that answers the peer's offer in place of a
    /// connection whose own offer crossed it (webrtcbin cannot roll an offer back). Its answer
    /// then reports ICE failed, which makes the SDK restart ICE from the offerer's side: the
    /// peer keeps its connection, whose DTLS session, once set up, never starts again, so
    /// without a restart of both ends no media would flow between this connection and it.
    func answerInPlaceOfRolledBackOffer() {
        state.withLockedValue { $0.standsInForRollback = true }
    }

    /// The peer's ICE username fragment of the current remote description.
    var remoteUfrag: String? { state.withLockedValue { $0.remoteSDP?.ufrag } }

    /// Creates an offer (or the answer to the remote offer), applies it and returns its text
    /// with `a=msid` lines added for browsers.
    func createAndSetLocal(_ type: GstWebRTCSDPType) async throws -> String {
        let field = type == GST_WEBRTC_SDP_TYPE_OFFER ? "offer" : "answer"
        if type == GST_WEBRTC_SDP_TYPE_OFFER { try connectSenders() }
        var text = try await awaitPromise(
            extract: { reply in
                if let error = replyError(reply) { throw error }
                guard let description = sb_reply_description(reply, field) else {
                    throw GStreamerError("webrtcbin made no \(field)")
                }
                defer { gst_webrtc_session_description_free(description) }
                return GStreamer.text(of: description)
            },
            start: { promise in
                if type == GST_WEBRTC_SDP_TYPE_OFFER {
                    sb_webrtc_create_offer(webrtc.pointer, promise)
                } else {
                    sb_webrtc_create_answer(webrtc.pointer, promise)
                }
            })
        // Answering an offer that leaves the DTLS role open, be the server: the offerer then
        // starts the handshake, which it can only once it has the answer, when this side is
        // ready for it. (An answering DTLS client may send its first message to an offerer that
        // still drops it, and wait a second or more to resend.) Later offers name the roles taken.
        if type == GST_WEBRTC_SDP_TYPE_ANSWER, state.withLockedValue({ $0.remoteSDP?.offersEitherDTLSRole }) == true {
            text = text.replacingOccurrences(of: "a=setup:active", with: "a=setup:passive")
        }
        // An offer after the first names the role negotiated then: browsers refuse anything else,
        // and webrtcbin copies a role from an earlier description (its own unchanged answer).
        if type == GST_WEBRTC_SDP_TYPE_OFFER, let role = state.withLockedValue({ $0.dtlsRole }) {
            for other in ["actpass", "active", "passive"] where other != role {
                text = text.replacingOccurrences(of: "a=setup:\(other)", with: "a=setup:\(role)")
            }
        }
        // Known before gathering starts, so that candidates carry their mid and ufrag.
        state.withLockedValue { $0.localSDP = SessionDescriptionText(text) }
        try await apply(type, text, local: true)
        if type == GST_WEBRTC_SDP_TYPE_ANSWER {
            let role = SessionDescriptionText(text).media.first?.setup
            let restart = state.withLockedValue { state in
                state.dtlsRole = role
                defer { state.standsInForRollback = false }
                return state.standsInForRollback
            }
            try connectSenders()
            if restart {
                logger.info("answered in place of a rolled-back offer: asking for an ICE restart", metadata: ["peer": "\(peer)"])
                events.iceFailed()
            }
        }
        // The camera and microphone share a stream, a screen has its own: how receivers tell
        // them apart.
        let streams = state.withLockedValue { state in
            state.senders.reduce(into: [UInt32: (stream: String, track: String)]()) { streams, sender in
                streams[sender.value.ssrc] = (
                    sender.key == .screen ? "switchboard-screen" : "switchboard", sender.key.rawValue
                )
            }
        }
        var sent = SessionDescriptionText.addingMsid(streams, to: text)
        if type == GST_WEBRTC_SDP_TYPE_ANSWER { sent = answeringInactive(sent) }
        logger.trace("local description", metadata: ["peer": "\(peer)", "sdp": "\(sent)"])
        state.withLockedValue { $0.localText = type == GST_WEBRTC_SDP_TYPE_OFFER ? sent : nil }
        return sent
    }

    /// Applies the peer's description. Before an offer, the transceivers are made to fit it: our
    /// tracks take the payload types it uses, and each section nothing of ours sends on gets a
    /// receive-only transceiver limited to Opus or VP8.
    func setRemote(_ type: GstWebRTCSDPType, _ text: String) async throws {
        // webrtcbin also takes the candidates written in a description: keep those on loopback only.
        let text = ice.loopbackOnly ? SessionDescriptionText.keepingLoopbackCandidates(text) : text
        let sdp = SessionDescriptionText(text)
        logger.trace("remote description", metadata: ["peer": "\(peer)", "sdp": "\(text)"])
        if type == GST_WEBRTC_SDP_TYPE_OFFER { prepare(for: sdp) }
        state.withLockedValue { $0.remoteSDP = sdp }
        try await apply(type, type == GST_WEBRTC_SDP_TYPE_OFFER ? keepingReceiving(text, sdp) : text, local: false)
        endTracksThePeerStopped(sdp)
        if type == GST_WEBRTC_SDP_TYPE_ANSWER {
            // The answerer took one role; this side has the other.
            let role = sdp.media.first?.setup.map { $0 == "active" ? "passive" : "active" }
            state.withLockedValue { state in
                state.localText = nil
                state.dtlsRole = role ?? state.dtlsRole
            }
        }
    }

    /// The SFU's offer as webrtcbin gets it on the subscribe connection: its inactive sections
    /// (a member who left, a screen stopped) are read as sending. webrtcbin 1.22 refuses any
    /// change of a negotiated transceiver's direction but to inactive ("transceiver direction
    /// changes are not implemented"), and Janus gives an inactive section to the next track of
    /// its kind (a member who comes back, a screen shared again): so its transceivers stay
    /// `recvonly` for good. The track's end is the engine's own, from the offer as sent
    /// (``endTracksThePeerStopped(_:)``), and the answer says `inactive` where the offer did
    /// (``answeringInactive(_:)``).
    private func keepingReceiving(_ text: String, _ sdp: SessionDescriptionText) -> String {
        guard role.receivesOnly else { return text }
        return SessionDescriptionText.settingDirection("sendonly", ofSections: Self.inactiveMids(sdp), in: text)
    }

    /// The answer as sent to the SFU: `inactive` for each section its offer made inactive
    /// (webrtcbin answered `recvonly`, see ``keepingReceiving(_:_:)``).
    private func answeringInactive(_ answer: String) -> String {
        guard role.receivesOnly, let offer = state.withLockedValue({ $0.remoteSDP }) else { return answer }
        return SessionDescriptionText.settingDirection("inactive", ofSections: Self.inactiveMids(offer), in: answer)
    }

    private static func inactiveMids(_ sdp: SessionDescriptionText) -> Set<String> {
        Set(sdp.media.filter { !$0.rejected && $0.direction == "inactive" }.compactMap(\.mid))
    }

    private func apply(_ type: GstWebRTCSDPType, _ text: String, local: Bool) async throws {
        let description = try GStreamer.description(type, sdp: text)
        defer { gst_webrtc_session_description_free(description) }
        try await awaitPromise(
            extract: { reply in if let error = replyError(reply) { throw error } },
            start: { sb_webrtc_set_description(webrtc.pointer, local ? 1 : 0, description, $0) })
        // Receiver reports every second instead of RTP's five (AVPF allows it; browsers report
        // as often): the send rate follows the round trip they carry (``SendRateController``).
        // The sessions exist once a description made them.
        _ = sb_webrtc_set_rtcp_interval(webrtc.pointer, 8, Self.rtcpInterval)
    }

    /// The shortest interval between RTCP reports, ns.
    static let rtcpInterval: guint64 = 1_000_000_000

    private func prepare(for offer: SessionDescriptionText) {
        let senders = state.withLockedValue { $0.senders }
        var claimed = Set(senders.values.compactMap { $0.transceiver.string("mid") })
        var unassigned = senders.filter { $0.value.transceiver.string("mid") == nil && $0.value.branch == nil }
        // Existing transceivers of ours that were made for receiving keep their sections too.
        claimed.formUnion(state.withLockedValue { $0.receivingMids.union($0.tracks.compactMap(\.track.mid)) })
        for section in offer.media where !section.rejected {
            guard let mid = section.mid, !claimed.contains(mid), section.kind == "audio" || section.kind == "video" else {
                continue
            }
            let encoding = section.kind == "audio" ? "OPUS" : "VP8"
            guard let payloadType = section.payloadTypes[encoding] else { continue }
            let wanted: [TrackKind] = section.kind == "audio" ? [.audio] : [.video, .screen]
            let canSend = section.direction == "sendrecv" || section.direction == "recvonly"
            if canSend, let kind = wanted.first(where: { unassigned[$0] != nil }), var sender = unassigned[kind] {
                // Our track answers this section, with its payload type (its pad carries
                // nothing yet: it is connected after the answer).
                unassigned[kind] = nil
                sender.payloadType = payloadType
                sender.transceiver.set("codec-preferences", caps: Self.caps(kind, payloadType: payloadType, ssrc: sender.ssrc))
                state.withLockedValue { $0.senders[kind] = sender }
            } else {
                let kind: TrackKind = section.kind == "audio" ? .audio : .video
                let caps = gst_caps_from_string(Self.caps(kind, payloadType: payloadType))
                if let transceiver = sb_webrtc_add_transceiver(
                    webrtc.pointer, GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_RECVONLY, caps)
                {
                    gst_object_unref(UnsafeMutableRawPointer(transceiver))
                }
                if let caps { gst_caps_unref(caps) }
                state.withLockedValue { _ = $0.receivingMids.insert(mid) }
            }
            claimed.insert(mid)
        }
    }

    func addRemoteCandidate(_ candidate: IceCandidate) {
        guard !candidate.candidate.isEmpty else { return }
        if ice.loopbackOnly, CandidateLine(candidate.candidate)?.isLoopback != true { return }
        let mline =
            candidate.sdpMLineIndex
            ?? candidate.sdpMid.flatMap { mid in
                state.withLockedValue { $0.remoteSDP?.media.firstIndex { $0.mid == mid } }
            } ?? 0
        sb_webrtc_add_ice_candidate(webrtc.pointer, guint(max(0, mline)), candidate.candidate)
    }

    // MARK: - playback and statistics

    func setOutput(volume: Int, muted: Bool) {
        let tracks = state.withLockedValue { state in
            state.output = (volume, muted)
            return state.tracks.map(\.track)
        }
        for track in tracks { track.setOutput(volume: volume, muted: muted) }
    }

    /// The statistics of this connection, plus the received tracks' own measurements, per member:
    /// the one a mesh connection is with (what it sends counts there too), or each member whose
    /// tracks the SFU's subscribe connection carries. The connection's round trip and candidate
    /// type go to every member it reports.
    func statistics() async -> [UserID: PeerStatistics] {
        let entries = await statsEntries()
        let (tracks, endedFrames) = state.withLockedValue { ($0.tracks.map(\.track), $0.endedFrames) }
        var members = Set(tracks.map(\.peer)).union(endedFrames.keys)
        let sent = role.sendsTo.map { peer in
            members.insert(peer)
            return sentStatistics(entries)
        }
        var results: [UserID: PeerStatistics] = [:]
        for member in members {
            var result = member == role.sendsTo ? sent ?? PeerStatistics() : PeerStatistics()
            for kind in TrackKind.allCases {
                var stats = result[kind]
                stats.framesDecoded += endedFrames[member]?[kind] ?? 0
                for track in tracks where track.kind == kind && track.peer == member {
                    let counters = track.snapshot
                    if let inbound = entries.first(GST_WEBRTC_STATS_INBOUND_RTP, ssrc: track.ssrc) {
                        stats.packetsReceived += inbound.packetsReceived
                        stats.bytesReceived += inbound.bytesReceived
                        stats.packetsLost += inbound.packetsLost
                        stats.jitterMs = max(stats.jitterMs, inbound.jitter * 1000)
                    }
                    stats.framesDecoded += counters.framesDecoded
                    stats.level = max(stats.level, counters.level)
                    stats.playoutLevel = max(stats.playoutLevel, counters.outputLevel)
                    if counters.width > 0 {
                        stats.frameWidth = counters.width
                        stats.frameHeight = counters.height
                    }
                }
                if stats.packetsSent > 0 || stats.packetsReceived > 0 || stats.framesDecoded > 0 {
                    stats.codec = kind == .audio ? "opus" : "VP8"
                }
                result[kind] = stats
            }
            result.roundTripTimeMs = Self.roundTripMs(entries)
            result.localCandidateType = entries.selectedLocalCandidateType
            results[member] = result
        }
        return results
    }

    /// What this connection sends, per kind, with the path's round trip and local candidate type:
    /// the SFU's publish connection's numbers (``MediaStatistics/published``).
    func sentStatistics() async -> PeerStatistics {
        sentStatistics(await statsEntries())
    }

    private func sentStatistics(_ entries: [WebRTCStatsEntry]) -> PeerStatistics {
        let senders = state.withLockedValue { $0.senders.mapValues(\.ssrc) }
        var result = PeerStatistics(
            roundTripTimeMs: Self.roundTripMs(entries), localCandidateType: entries.selectedLocalCandidateType)
        for (kind, ssrc) in senders {
            guard let outbound = entries.first(GST_WEBRTC_STATS_OUTBOUND_RTP, ssrc: ssrc) else { continue }
            result[kind].packetsSent = outbound.packetsSent
            result[kind].bytesSent = outbound.bytesSent
            if outbound.packetsSent > 0 { result[kind].codec = kind == .audio ? "opus" : "VP8" }
        }
        return result
    }

    /// The longest round trip (ms) the latest receiver reports of the sent streams gave; nil before any.
    private static func roundTripMs(_ entries: [WebRTCStatsEntry]) -> Int? {
        let seconds = entries.filter { $0.type == GST_WEBRTC_STATS_REMOTE_INBOUND_RTP }.compactMap(\.roundTripTime)
            .filter { $0 > 0 }.max()
        return seconds.map { Int(($0 * 1000).rounded()) }
    }

    /// webrtcbin's statistics now (none if it does not answer).
    private func statsEntries() async -> [WebRTCStatsEntry] {
        (try? await awaitPromise(
            extract: { WebRTCStatsEntry.parse($0) }, start: { sb_webrtc_get_stats(webrtc.pointer, $0) })) ?? []
    }

    /// The round trip to the peer the latest receiver report gave (the longest of its streams'),
    /// in seconds; nil before any, or when nothing video is sent (the send rate has nothing to adapt).
    /// Whether a local video track (camera or screen) is attached.
    var sendsVideo: Bool { state.withLockedValue { $0.senders.keys.contains { $0.isVideo } } }

    func videoRoundTrip() async -> Double? {
        guard state.withLockedValue({ $0.senders.contains { $0.key.isVideo && $0.value.branch != nil } }) else { return nil }
        let entries = await statsEntries()
        return entries.filter { $0.type == GST_WEBRTC_STATS_REMOTE_INBOUND_RTP }.compactMap(\.roundTripTime).max()
    }

    /// When the first audio frame from the peer was decoded.
    var firstAudioFrame: ContinuousClock.Instant? {
        state.withLockedValue { $0.tracks.map(\.track) }.filter { $0.kind == .audio }.compactMap { $0.snapshot.firstFrame }.min()
    }

    /// Posts an error from inside this connection's webrtcbin, as its transport's elements do
    /// when they fail (for tests of what follows).
    func failForTest() {
        sb_post_error(webrtc.pointer, "the transport failed (a test)")
    }

    // MARK: - closing

    /// Tears the connection down: local branches leave their tees, the webrtcbin stops, then the
    /// branches, and recordings get their ends; everything leaves the pipeline. In that order
    /// because a branch whose thread webrtcbin holds (an offer never answered, DTLS never done)
    /// can only stop once webrtcbin has: stopping it first waited forever (issue 28).
    ///
    /// Each stop that can block is waited for at most the engine's limit; one that takes longer
    /// is left to finish on its own thread and reported, and the teardown goes on.
    func close() async {
        let (branches, tracks, handlers) = state.withLockedValue { state in
            state.closed = true
            defer {
                state.tracks = []
                state.senders = [:]
                state.handlers = []
            }
            return (
                state.senders.values.compactMap { sender in sender.branch.map { ($0, sender.tee) } },
                state.tracks.map(\.track), state.handlers
            )
        }
        for handler in handlers { sb_disconnect(webrtc.raw, handler) }
        for (branch, tee) in branches { await Self.unlink(branch, from: tee) }
        // webrtcbin stops before the receiving chains too, so nothing pushes into chains that are
        // stopping; the recordings' ends are sent into the chains directly.
        let (pipeline, webrtc) = (pipeline, webrtc)
        await stop("webrtcbin") { webrtc.setState(GST_STATE_NULL) }
        for (branch, _) in branches {
            await stop("a sending branch") {
                branch.bin.setState(GST_STATE_NULL)
                pipeline.remove(branch.bin)
            }
        }
        for track in tracks { await track.finish() }
        for track in tracks { pipeline.remove(track.bin) }
        pipeline.remove(webrtc)
    }

    /// One step of the teardown that can block, within the engine's limit; reported if it did not finish.
    private func stop(_ part: String, _ body: @escaping @Sendable () -> Void) async {
        guard await !blocking.run(body) else { return }
        logger.error("a connection's teardown did not finish in time: left behind", metadata: ["peer": "\(peer)", "part": "\(part)"])
        emit(.teardownStalled(peer, part))
    }
}
#endif
