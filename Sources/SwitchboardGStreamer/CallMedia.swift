#if GStreamer
import CGStreamer
import Foundation
import Logging
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol

/// A local track: a source and its encoder in one bin, feeding a tee that every peer connection
/// takes a branch from (one encoding for the whole mesh).
final class CaptureChain: @unchecked Sendable {
    let kind: TrackKind
    private(set) var bin: Element
    let tee: Element

    init(kind: TrackKind, description: String, pipeline: Element) throws {
        self.kind = kind
        bin = try Self.make(description)
        tee = try Element.make("tee", name: "\(kind.rawValue)-tee")
        tee.set("allow-not-linked", true)
        try pipeline.add(bin)
        try pipeline.add(tee)
        try bin.link(to: tee)
        tee.syncStateWithParent()
        bin.syncStateWithParent()
    }

    func child(_ name: String) -> Element? { bin.child(name) }

    /// Thins the audio encoder or makes it full (``AudioThinning/encoding(thin:)``); false when
    /// this chain has no audio encoder. The change comes between two frames: opusenc sizes a frame from
    /// `frame-size` when it encodes one its base class cut to the size before, and aborts the
    /// process on a 60 ms frame taken for 20 ms (`g_assert (size == bytes)`, GStreamer 1.22).
    /// So it is made while the pad that feeds the encoder is idle (an idle probe on the pushing
    /// side: GStreamer counts a push there until the encoder has encoded it; on the encoder's
    /// own sink pad it does not): no frame in the encoder, and none let in until both
    /// properties are set.
    func encodeAudio(thin: Bool) -> Bool {
        guard kind == .audio, let encoder = child("encoder"), let feed = encoder.staticPad("sink")?.peer else {
            return false
        }
        let (kbps, frame) = AudioThinning.encoding(thin: thin)
        feed.whenIdle {
            encoder.set("bitrate", Int32(kbps * 1000))
            encoder.set("frame-size", "\(frame)")
        }
        return true
    }

    /// The source-and-encoder bin. A file source is not live: starting it in the running call's
    /// pipeline is an asynchronous state change, which the bin keeps to itself (otherwise the
    /// whole pipeline would wait in PAUSED for a preroll its network elements never give).
    private static func make(_ description: String) throws -> Element {
        let bin = try Element.bin(description, output: "encoder")
        bin.set("async-handling", true)
        return bin
    }

    /// Swaps the source and encoder bin (front and back camera); the tee and the peers' branches stay.
    func replace(with description: String, in pipeline: Element) throws {
        let next = try Self.make(description)
        bin.setState(GST_STATE_NULL)
        if let output = bin.staticPad("src"), let input = output.peer { output.unlink(from: input) }
        pipeline.remove(bin)
        try pipeline.add(next)
        try next.link(to: tee)
        next.syncStateWithParent()
        bin = next
    }

    /// Asks the encoder for a key frame (after the camera comes back, for a new receiver).
    func requestKeyFrame() {
        guard kind.isVideo, let output = bin.child("encoder")?.staticPad("src") else { return }
        _ = output.send(sb_force_key_unit_event())
    }

    func remove(from pipeline: Element) {
        bin.setState(GST_STATE_NULL)
        tee.setState(GST_STATE_NULL)
        pipeline.remove(bin)
        pipeline.remove(tee)
    }

    static func audio(_ source: AudioSource) -> String {
        "\(source.launchDescription) ! audioconvert ! audioresample ! audio/x-raw,rate=48000,channels=1 ! "
            + "volume name=volume ! level name=capture-level interval=100000000 post-messages=true ! "
            + "valve name=gate drop=true ! opusenc name=encoder "
            + "bitrate=\(AudioThinning.encoding(thin: false).kbps * 1000) "
            + "frame-size=\(AudioThinning.encoding(thin: false).frameMilliseconds)"
    }

    static func video(_ source: VideoSource, width: Int, height: Int, frameRate: Int, bitrateKbps: Int) -> String {
        "\(source.launchDescription) ! videoconvert ! videoscale ! videorate ! "
            + "capsfilter name=caps caps=\"\(rawVideoCaps(width: width, height: height, frameRate: frameRate))\" ! "
            + "valve name=gate drop=false ! "
            + "vp8enc name=encoder deadline=1 cpu-used=8 end-usage=cbr target-bitrate=\(bitrateKbps * 1000) "
            + "keyframe-max-dist=60 lag-in-frames=0 error-resilient=default threads=2 "
            // Rate control for a real-time link, as WebRTC's own VP8 encoder sets it: a buffer of
            // 1 s (libvpx's default, 6 s, lets the rate run over its target for seconds), and a key
            // frame at most 3 frames' worth of bits. Without the cap a key frame at 23 kbps was
            // many times a second's budget: through a 64 kbit/s link's buffer it never passed, and
            // a receiver that needed one never decoded again.
            + "buffer-size=1000 buffer-initial-size=500 buffer-optimal-size=600 undershoot=100 overshoot=15 "
            + "max-intra-bitrate=300"
    }

    static func rawVideoCaps(width: Int, height: Int, frameRate: Int) -> String {
        "video/x-raw,format=I420,width=\(width),height=\(height),framerate=\(frameRate)/1,pixel-aspect-ratio=1/1"
    }
}

/// The media of one connected call: one pipeline with the local tracks and one
/// ``PeerConnection`` per other member, or (through the SFU) a publish and a subscribe
/// connection. Used from the engine's job queue, one job at a time.
actor CallMedia {
    struct Slot {
        var connection: PeerConnection
        var events: PeerConnectionEvents
        var ice: IcePolicy
        var generation: Int
        /// What replaced connections of this peer counted, added to the current one's numbers.
        var carried: PeerStatistics
    }

    let pipeline: Element
    let router = LevelRouter()
    private let bus: BusWatch
    private let configuration: GStreamerMediaEngine.Configuration
    private let logger: Logger
    private(set) var chains: [TrackKind: CaptureChain] = [:]
    private(set) var slots: [UserID: Slot] = [:]
    /// The current SFU session's connections (`CallMedia+SFU.swift`).
    var sfu: [SFUConnection: SFUSlot] = [:]
    /// Whose each section of the subscribe connection is, as the SDK last said.
    let sfuTracks = SFUTrackTable()
    /// What earlier SFU sessions' subscribe connections received, per member, added to the
    /// current one's numbers (bounded by the call's members).
    var sfuCarried: [UserID: PeerStatistics] = [:]
    /// What earlier SFU sessions' publish connections sent; nil until the call's first session.
    var sfuPublishedCarried: PeerStatistics?
    /// SFU connections opened in this call, to name each webrtcbin apart.
    var sfuOpened = 0
    private let localLevel = LockedLevel()
    private let transportFailures = TransportFailures()
    /// Connections whose transport failed and that were reported as failed (once each).
    private var failed: Set<String> = []

    private let emit: @Sendable (MediaEvent) -> Void
    private let blocking: BlockingCalls

    init(
        configuration: GStreamerMediaEngine.Configuration, logger: Logger,
        emit: @escaping @Sendable (MediaEvent) -> Void
    ) throws {
        self.configuration = configuration
        self.logger = logger
        self.emit = emit
        blocking = BlockingCalls(clock: configuration.clock, limit: configuration.stallLimit)
        pipeline = try Element.make("pipeline", name: "switchboard-call")
        let router = self.router
        let transportFailures = self.transportFailures
        bus = BusWatch(pipeline: pipeline) { [logger] message in
            switch message {
            case .level(let source, let rms): router.deliver(source: source, rms: rms)
            case .error(let text, let source, let path):
                logger.error("GStreamer", metadata: ["element": "\(source)", "error": "\(text)"])
                transportFailures.report(path)
            case .warning(let text, let source):
                logger.debug("GStreamer warning", metadata: ["element": "\(source)", "warning": "\(text)"])
            }
        }
        router.route("capture-level") { [localLevel] level in localLevel.set(level) }
        pipeline.setState(GST_STATE_PLAYING)
        transportFailures.handler = { [weak self] path in Task { await self?.elementFailed(at: path) } }
    }

    /// An element failed. One inside a connection's webrtcbin (its ICE transport, DTLS, RTP
    /// session: seen when a flow error stopped `nicesrc` during a renegotiation under load) leaves
    /// that connection without media for good: it counts as failed, as when ICE fails, and the
    /// SDK restarts ICE, for which this engine builds a new connection.
    private func elementFailed(at path: String) {
        for (connection, events) in allConnections {
            let bin = "/GstWebRTCBin:\(connection.name)"
            guard path.hasSuffix(bin) || path.contains(bin + "/"), failed.insert(connection.name).inserted else { continue }
            logger.warning("a connection's transport failed: restarting it", metadata: ["peer": "\(connection.peer)"])
            events.iceFailed()
        }
    }

    /// Every connection open: the mesh's and the SFU session's.
    private var allConnections: [(PeerConnection, PeerConnectionEvents)] {
        slots.values.map { ($0.connection, $0.events) } + sfu.values.map { ($0.connection, $0.events) }
    }

    /// The connections that send the local tracks: the mesh's, and the SFU's publish connection.
    private var sendingConnections: [(PeerConnection, PeerConnectionEvents)] {
        allConnections.filter { !$0.0.role.receivesOnly }
    }

    /// The microphone's level as sent (0 while muted or before audio starts).
    nonisolated var localAudioLevel: Int { localLevel.value }

    // MARK: - local tracks

    func chain(_ kind: TrackKind) -> CaptureChain? { chains[kind] }

    /// Starts a local track and sends it to every peer.
    func addTrack(_ kind: TrackKind, description: String) throws {
        guard chains[kind] == nil else { return }
        let chain = try CaptureChain(kind: kind, description: description, pipeline: pipeline)
        chains[kind] = chain
        for (connection, events) in sendingConnections {
            try connection.attach(kind, tee: chain.tee)
            events.negotiationNeeded()
        }
    }

    /// Stops a local track: every peer stops sending it (and renegotiates).
    func removeTrack(_ kind: TrackKind) async {
        guard let chain = chains.removeValue(forKey: kind) else { return }
        for (connection, events) in sendingConnections {
            await connection.detach(kind)
            events.negotiationNeeded()
        }
        chain.remove(from: pipeline)
    }

    /// Each peer sent video, with the latest round trip to it (``PeerConnection/videoRoundTrip()``;
    /// nil while its current connection has had no report).
    func videoRoundTrips() async -> [UserID: Double?] {
        var trips: [UserID: Double?] = [:]
        for (peer, slot) in slots where slot.connection.sendsVideo {
            trips.updateValue(await slot.connection.videoRoundTrip(), forKey: peer)
        }
        // Through the SFU, the SFU is the one receiver of the camera.
        if let publish = sfu[.publish]?.connection, publish.sendsVideo {
            trips.updateValue(await publish.videoRoundTrip(), forKey: publish.peer)
        }
        return trips
    }

    /// Stops or starts sending video to a member (to the SFU, whose member the publish connection
    /// names, for everyone).
    func sendVideo(to peer: UserID, _ on: Bool) {
        if let slot = slots[peer] { slot.connection.sendVideo(on) }
        if let publish = sfu[.publish]?.connection, publish.peer == peer { publish.sendVideo(on) }
    }

    // MARK: - peers

    func connection(_ peer: UserID) throws -> PeerConnection {
        guard let slot = slots[peer] else { throw GStreamerError("no connection to \(peer)") }
        return slot.connection
    }

    func openPeer(_ peer: UserID, ice: IcePolicy, events: PeerConnectionEvents) throws {
        guard slots[peer] == nil else { return }
        let connection = try makeConnection(peer, generation: 1, ice: ice, events: events)
        slots[peer] = Slot(connection: connection, events: events, ice: ice, generation: 1, carried: PeerStatistics())
    }

    private func makeConnection(
        _ peer: UserID, generation: Int, ice: IcePolicy, events: PeerConnectionEvents
    ) throws -> PeerConnection {
        try makeConnection(peer, role: .peer(peer), name: "peer-\(peer.rawValue)-\(generation)", ice: ice, events: events)
    }

    /// A connection in the pipeline, sending the local tracks unless its role only receives.
    func makeConnection(
        _ peer: UserID, role: ConnectionRole, name: String, ice: IcePolicy, events: PeerConnectionEvents
    ) throws -> PeerConnection {
        let connection = try PeerConnection(
            peer: peer, role: role, name: name, pipeline: pipeline, ice: ice, events: events,
            router: router, recordDirectory: configuration.recordDirectory, playback: configuration.playback,
            blocking: blocking, logger: logger, emit: emit)
        guard !role.receivesOnly else { return connection }
        for kind in TrackKind.allCases {
            if let chain = chains[kind] { try connection.attach(kind, tee: chain.tee) }
        }
        return connection
    }

    /// A fresh connection to `peer` in place of the current one: what webrtcbin needs where
    /// WebRTC restarts ICE (new ICE credentials and, here, a new DTLS session too).
    func replaceConnection(_ peer: UserID) async throws -> PeerConnection {
        guard var slot = slots[peer] else { throw GStreamerError("no connection to \(peer)") }
        let old = slot.connection
        slot.carried = slot.carried.adding(await old.statistics()[peer] ?? PeerStatistics())
        slot.generation += 1
        slot.connection = try makeConnection(peer, generation: slot.generation, ice: slot.ice, events: slot.events)
        slots[peer] = slot
        logger.debug("replaced the connection", metadata: ["peer": "\(peer)", "generation": "\(slot.generation)"])
        await old.close()
        return slot.connection
    }

    /// Makes the transport of the connection to `peer` fail as webrtcbin's elements do: an error
    /// posted on the bus from inside its webrtcbin (for tests of what follows).
    func failTransport(of peer: UserID) throws {
        guard let slot = slots[peer] else { throw GStreamerError("no connection to \(peer)") }
        slot.connection.failForTest()
    }

    func closePeer(_ peer: UserID) async {
        guard let slot = slots.removeValue(forKey: peer) else { return }
        await slot.connection.close()
    }

    func setOutput(volume: Int, muted: Bool) {
        for (connection, _) in allConnections { connection.setOutput(volume: volume, muted: muted) }
    }

    func statistics() async -> MediaStatistics {
        var peers: [UserID: PeerStatistics] = [:]
        for (peer, slot) in slots {
            peers[peer] = slot.carried.adding(await slot.connection.statistics()[peer] ?? PeerStatistics())
        }
        // One look at the publish connection: what it sent, and the path every member's numbers use.
        let published = await sfuPublished()
        for (member, statistics) in await sfuStatistics(published: published) { peers[member] = statistics }
        return MediaStatistics(localAudioLevel: localAudioLevel, peers: peers, published: published)
    }

    /// Ends the call's media: every connection closes (recordings get their ends), then the pipeline.
    func close() async {
        for peer in Array(slots.keys) { await closePeer(peer) }
        for connection in SFUConnection.allCases { await closeSFU(connection) }
        let pipeline = self.pipeline
        if await !blocking.run({ pipeline.setState(GST_STATE_NULL) }) {
            logger.error("the call's pipeline did not stop in time: left behind")
            emit(.teardownStalled(nil, "pipeline"))
        }
        await bus.stop()
    }
}

/// Where the bus thread reports failed elements, once the call's media can hear of them.
private final class TransportFailures: Sendable {
    private let box = LockedCallback<(@Sendable (String) -> Void)?>(nil)

    var handler: (@Sendable (String) -> Void)? {
        get { box.function }
        set { box.function = newValue }
    }

    func report(_ path: String) { handler?(path) }
}

/// The microphone level, written by the bus thread.
private final class LockedLevel: Sendable {
    private let box = NIOLockedValueBox(0)
    func set(_ value: Int) { box.withLockedValue { $0 = value } }
    var value: Int { box.withLockedValue { $0 } }
}

extension PeerStatistics {
    /// The numbers of one kind of track.
    subscript(kind: TrackKind) -> TrackStatistics {
        get {
            switch kind {
            case .audio: audio
            case .video: video
            case .screen: screen
            }
        }
        set {
            switch kind {
            case .audio: audio = newValue
            case .video: video = newValue
            case .screen: screen = newValue
            }
        }
    }

    /// Counters summed (a replaced connection's and its successor's); the latest levels, sizes and times.
    func adding(_ later: PeerStatistics) -> PeerStatistics {
        PeerStatistics(
            audio: audio.adding(later.audio), video: video.adding(later.video), screen: screen.adding(later.screen),
            roundTripTimeMs: later.roundTripTimeMs ?? roundTripTimeMs,
            localCandidateType: later.localCandidateType ?? localCandidateType)
    }
}

extension TrackStatistics {
    func adding(_ later: TrackStatistics) -> TrackStatistics {
        TrackStatistics(
            packetsSent: packetsSent + later.packetsSent, bytesSent: bytesSent + later.bytesSent,
            packetsReceived: packetsReceived + later.packetsReceived, bytesReceived: bytesReceived + later.bytesReceived,
            packetsLost: packetsLost + later.packetsLost, jitterMs: later.jitterMs, codec: later.codec ?? codec,
            level: later.level, playoutLevel: later.playoutLevel, framesDecoded: framesDecoded + later.framesDecoded,
            frameWidth: later.frameWidth, frameHeight: later.frameHeight)
    }
}
#endif
