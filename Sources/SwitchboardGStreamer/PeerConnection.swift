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
    struct Sender {
        var pad: Pad
        var transceiver: OpaqueObject
        var payloadType: Int
        var ssrc: UInt32
        /// The local track's tee.
        var tee: Element
        /// The queue and payloader from the tee to the pad, once connected.
        var branch: Branch?
    }

    struct Branch: Sendable {
        var bin: Element
        var teePad: Pad
    }

    struct State {
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
    let pipeline: Element
    let events: PeerConnectionEvents
    let ice: IcePolicy
    let router: LevelRouter
    let recordDirectory: URL?
    let playback: String?
    /// The webrtcbin's name in the pipeline (`peer-<user>-<generation>`).
    let name: String
    let logger: Logger
    let emit: @Sendable (MediaEvent) -> Void
    private let blocking: BlockingCalls
    let state = NIOLockedValueBox(State())

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
    final class Handlers: @unchecked Sendable {
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
    func connectSenders() throws {
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
    static func unlink(_ branch: Branch, from tee: Element) async {
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
