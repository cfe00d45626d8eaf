#if GStreamer
import CGStreamer
import Foundation
import Logging
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol

/// A WebRTC media engine for Linux (and macOS with Homebrew's GStreamer) on GStreamer's
/// `webrtcbin`: Opus audio and VP8 video, ICE with the server's STUN/TURN servers and trickled
/// candidates, a shared screen as a second video track. Sources are a tone, a file, a test
/// pattern, or a microphone, camera or X display where one exists; every received track is
/// measured (level, frames decoded, size) and may be recorded (WAV, WebM).
///
/// Plug it into the SDK: `SwitchboardConfiguration(mediaEngine: GStreamerMediaEngine())`; the SDK
/// runs the negotiation (``PeerLink``'s rules) and reports the statistics. Group calls on a server
/// with an SFU go through it (``SFUMediaEngine``, `GStreamerMediaEngine+SFU.swift`): every local
/// track is sent once, on one connection, and the members' tracks arrive on another.
///
/// Where webrtcbin 1.22 falls short of the `PeerMediaEngine` contract, the engine bridges:
/// - ICE restart: webrtcbin reuses its ICE credentials, so a restart (asked by the SDK, or a
///   remote offer with new credentials) replaces the peer's whole connection, which renegotiates
///   ICE and DTLS; its statistics carry on from the old one.
/// - Rollback (offers crossed, this side polite): webrtcbin refuses rollback descriptions, so a
///   fresh connection answers, and then reports ICE failed: the peer's connection keeps its DTLS
///   session, which never starts again with a new partner, so the SDK's ICE restart (driven by
///   the offerer) renews both ends. The SDK keeps crossings rare: after a media-type change the
///   polite side waits for the offerer's offer, which carries both new cameras.
/// - Payload types: webrtcbin answers with the offer's but sends its payloaders', so before
///   answering, the engine sets them to the offer's.
///
/// All work on the pipeline runs in one ordered job queue; GStreamer's threads only touch the
/// thread-safe parts (receiving chains, counters) and hand events to the SDK. A teardown step that
/// could block that queue (an element whose thread webrtcbin holds) is waited for at most
/// ``Configuration/stallLimit`` and then left behind, reported as ``MediaEvent/teardownStalled(_:_:)``.
public final class GStreamerMediaEngine: PeerMediaEngine {
    public struct Configuration: Sendable {
        /// What the microphone sends.
        public var audioSource: AudioSource
        /// What the (front) camera sends.
        public var videoSource: VideoSource
        /// The back camera for `switchCamera(isFront: false)`; the front one when nil.
        public var backCameraSource: VideoSource?
        /// Received tracks are written here as `<user>-audio.wav`, `<user>-video.webm` and
        /// `<user>-screen.webm` (numbered `-2`, `-3`, … in the order later tracks of the same
        /// kind start carrying media; a track that carries nothing leaves no file); nil records
        /// nothing.
        public var recordDirectory: URL?
        /// A gst-launch sink for received audio (`autoaudiosink`, `pulsesink device=…`); nil
        /// measures it and drops it (bots, servers without sound). On Linux both audio routes
        /// play here: there is no earpiece.
        public var playback: String?
        /// Relayed (TURN) candidates only, as `iceTransportPolicy: "relay"`.
        public var relayOnly: Bool
        /// ICE on 127.0.0.1 only, and only loopback candidates from peers (tests keep traffic there).
        public var loopbackOnly: Bool
        /// Frame size, rate and bitrate of a shared screen.
        public var screenQuality: (width: Int, height: Int, frameRate: Int, bitrateKbps: Int)
        /// The longest the engine waits for one step of a teardown (an element stopping). A step
        /// that takes longer is left to finish on its own thread and reported
        /// (``MediaEvent/teardownStalled(_:_:)``): the engine's next steps never wait behind it.
        public var stallLimit: Duration
        /// The clock of ``stallLimit``.
        public var clock: any SwitchboardClock

        public init(
            audioSource: AudioSource = .tone(), videoSource: VideoSource = .pattern(),
            backCameraSource: VideoSource? = nil, recordDirectory: URL? = nil, playback: String? = nil,
            relayOnly: Bool = false, loopbackOnly: Bool = false,
            screenQuality: (width: Int, height: Int, frameRate: Int, bitrateKbps: Int) = (960, 540, 10, 800),
            stallLimit: Duration = .seconds(3), clock: any SwitchboardClock = SystemClock()
        ) {
            self.stallLimit = stallLimit
            self.clock = clock
            self.audioSource = audioSource
            self.videoSource = videoSource
            self.backCameraSource = backCameraSource
            self.recordDirectory = recordDirectory
            self.playback = playback
            self.relayOnly = relayOnly
            self.loopbackOnly = loopbackOnly
            self.screenQuality = screenQuality
        }
    }

    /// The settings the SDK handed over, applied to whatever call is running.
    struct Settings: Sendable {
        var microphoneOn = false
        var microphoneVolume = 100
        var cameraOn = false
        var frontCamera = true
        var quality = VideoQuality.p720
        var output = AudioOutput()
        var screen: ScreenShareSource?
        var audioRunning = false
        var mediaType = CallMediaType.audio
    }

    public let configuration: Configuration
    private let logger: Logger
    private let jobs: JobQueue
    private let core: Core
    private let broadcaster = EventBroadcaster()
    /// The settings the app asked for last, and whether a job to apply them waits. A change queues
    /// a job only when none waits, and that job applies the latest settings: a burst of changes
    /// while the engine is busy (a pipeline being built) is one job, not one per change.
    private let latest = NIOLockedValueBox((settings: Settings(), queued: false))
    /// Loading the plugins, in the background from the start (``shutdown()`` waits for it).
    private let preload: Task<Void, Never>

    public init(configuration: Configuration = Configuration(), logger: Logger = Logger(label: "switchboard.gstreamer")) {
        _ = GStreamer.initialized
        self.configuration = configuration
        self.logger = logger
        self.jobs = JobQueue()
        self.core = Core(configuration: configuration, logger: logger, emit: { [broadcaster] in broadcaster.publish($0) })
        // Loading webrtcbin's and the codecs' plugins takes a few hundred milliseconds the first
        // time; done now, in the background, the first call does not wait for it.
        preload = Task.detached(priority: .utility) { _ = GStreamer.preloaded }
        adaptSendRatesEverySecond()
    }

    /// Returns once the engine does nothing in the background any more: the plugins it loads at
    /// start are loaded, and the jobs queued before this call (a call's end) have run. For a
    /// process about to exit: loading the DTLS plugin initialises OpenSSL on another thread, and a
    /// process whose exit handlers ran meanwhile crashed there (`switchboard call` refused at
    /// once, issue 48).
    public func shutdown() async {
        await preload.value
        try? await perform { _ in }
    }

    /// Once a second on the engine's clock, a job adapts the video send rates (nothing to do
    /// outside a call or without video). A tick finds the previous one still queued on a busy
    /// engine and skips, so ticks never pile up. Ends with the engine.
    private func adaptSendRatesEverySecond() {
        let pending = NIOLockedValueBox(false)
        Task { [weak self, clock = configuration.clock] in
            while (try? await clock.sleep(for: .seconds(1))) != nil {
                guard let self else { return }
                let queue = pending.withLockedValue { pending in
                    defer { pending = true }
                    return !pending
                }
                guard queue else { continue }
                run { core in
                    await core.adaptSendRates()
                    pending.withLockedValue { $0 = false }
                }
            }
        }
    }

    /// What the engine observes from now on (tracks starting and ending, sizes, levels, ICE).
    public var events: AsyncStream<MediaEvent> { broadcaster.subscribe() }

    /// Whether this machine has what the engine needs (webrtcbin, its ICE and DTLS elements, the
    /// Opus and VP8 elements); the missing element names otherwise.
    public static func missingElements() -> [String] {
        _ = GStreamer.initialized
        let needed = [
            "webrtcbin", "nicesrc", "nicesink", "dtlssrtpenc", "opusenc", "opusdec", "rtpopuspay", "rtpopusdepay",
            "vp8enc", "vp8dec", "rtpvp8pay", "rtpvp8depay", "audiotestsrc", "videotestsrc", "level", "volume", "valve",
            "wavenc", "webmmux",
        ]
        return needed.filter { name in
            guard let factory = gst_element_factory_find(name) else { return true }
            gst_object_unref(UnsafeMutableRawPointer(factory))
            return false
        }
    }

    func run(_ job: @escaping @Sendable (Core) async -> Void) {
        jobs.enqueue { [core] in await job(core) }
    }

    func perform<Value: Sendable>(_ job: @escaping @Sendable (Core) async throws -> Value) async throws -> Value {
        try await jobs.perform { [core] in try await job(core) }
    }

    private func update(_ change: @escaping @Sendable (inout Settings) -> Void) {
        let queue = latest.withLockedValue { latest -> Bool in
            change(&latest.settings)
            defer { latest.queued = true }
            return !latest.queued
        }
        guard queue else { return }
        run { [latest] core in
            let settings = latest.withLockedValue { latest in
                latest.queued = false
                return latest.settings
            }
            await core.use(settings)
        }
    }

    /// Jobs waiting to run (tests: what a burst of settings queues).
    var waitingJobs: Int { jobs.waiting }

    /// The settings the engine last took from the app (tests).
    func appliedSettings() async throws -> Settings {
        try await perform { await $0.settings }
    }

    /// Runs `body` as one of the engine's jobs (tests: an engine busy with a long step).
    func runAsJob(_ body: @escaping @Sendable () async -> Void) async throws {
        try await jobs.perform { await body() }
    }

    // MARK: - MediaEngine

    public func callConnected(callId: CallID, roomId: RoomID, mediaType: CallMediaType) {
        // The media type is a setting like the others: the job that applies the settings runs
        // before the start, which builds the call with them.
        update { $0.mediaType = mediaType }
        run { await $0.start(callId: callId) }
    }

    public func callEnded(callId: CallID) { run { await $0.stop(callId: callId) } }

    /// Ends the call's media now, as ``callEnded(callId:)`` does, and returns once it has ended:
    /// its connections closed, its recordings complete. For a process about to exit: the SDK tells
    /// the engine of the end on its own, but asynchronously, and a recording whose end never came
    /// loses what its file sink still held. Nothing happens for a call whose media already ended
    /// (the SDK's own ``callEnded(callId:)`` after it is a no-op).
    public func endCall(_ callId: CallID) async {
        try? await perform { await $0.stop(callId: callId) }
    }
    public func startAudio() { update { $0.audioRunning = true } }
    public func stopAudio() { update { $0.audioRunning = false } }
    public func setMicrophone(on: Bool) { update { $0.microphoneOn = on } }
    public func setMicrophoneVolume(_ volume: Int) { update { $0.microphoneVolume = volume } }
    public func setVideoQuality(_ quality: VideoQuality) { update { $0.quality = quality } }
    public func setAudioOutput(_ output: AudioOutput) { update { $0.output = output } }
    public func setScreenShare(_ source: ScreenShareSource?) { update { $0.screen = source } }

    public func setCamera(on: Bool, front: Bool) {
        update { settings in
            settings.cameraOn = on
            settings.frontCamera = front
        }
    }

    public func callMediaTypeChanged(callId: CallID, mediaType: CallMediaType) {
        update { $0.mediaType = mediaType }
    }

    public func statistics() async -> MediaStatistics {
        (try? await perform { await $0.statistics() }) ?? MediaStatistics()
    }

    /// Makes the transport of the connection to `peer` fail (tests: what an engine does when
    /// webrtcbin's transport stops).
    func failTransport(of peer: UserID) async throws {
        try await perform { try await $0.failTransport(of: peer) }
    }

    /// Stops or starts video to one member as the ``VideoGate`` does (for tests of the valve).
    func sendVideo(to peer: UserID, _ on: Bool) async throws {
        try await perform { try await $0.sendVideo(to: peer, on) }
    }

    /// Thins the audio encoder or makes it full, as ``AudioThinning`` does (for tests of the change).
    func thinAudio(_ thin: Bool) async throws {
        try await perform { try await $0.thinAudio(thin) }
    }

    /// When the first audio frame from `peer` was decoded in the current call (for latency measurements).
    public func firstAudioFrame(from peer: UserID) async -> ContinuousClock.Instant? {
        try? await perform { await $0.firstAudioFrame(from: peer) }
    }

    // MARK: - PeerMediaEngine

    public func openPeer(_ peer: UserID, iceServers: [IceServer], events: PeerConnectionEvents) {
        run { await $0.openPeer(peer, iceServers: iceServers, events: events) }
    }

    public func closePeer(_ peer: UserID) { run { await $0.closePeer(peer) } }

    public func setLocalDescription(peer: UserID, iceRestart: Bool) async throws -> SessionDescription {
        try await perform { try await $0.setLocalDescription(peer: peer, iceRestart: iceRestart) }
    }

    public func setRemoteDescription(_ description: SessionDescription, peer: UserID) async throws {
        try await perform { try await $0.setRemoteDescription(description, peer: peer) }
    }

    public func addRemoteCandidate(_ candidate: IceCandidate, peer: UserID) async throws {
        try await perform { try await $0.addRemoteCandidate(candidate, peer: peer) }
    }

    public func signalingState(peer: UserID) async -> PeerSignalingState {
        (try? await perform { await $0.signalingState(peer: peer) }) ?? .closed
    }
}

extension GStreamerMediaEngine {
    /// The engine's state; reached only through the job queue, one job at a time.
    actor Core {
        let configuration: Configuration
        let logger: Logger
        private(set) var settings = Settings()
        private var callId: CallID?
        private(set) var media: CallMedia?
        private let emit: @Sendable (MediaEvent) -> Void
        /// The send rate towards each member sent video, following the round trip to it.
        private var rates: [UserID: SendRateController] = [:]
        /// The rate each video track's encoder was last given by ``adaptSendRates()``.
        private var sentKbps: [TrackKind: Int] = [:]
        /// Whether video may go to each member sent it (``VideoGate``).
        private var gates: [UserID: VideoGate] = [:]
        /// The call's audio goes out thinned (``AudioThinning``).
        private var audioThin = false
        /// Ticks of ``adaptSendRates()`` in this call: the gates' seconds.
        private var second = 0

        init(configuration: Configuration, logger: Logger, emit: @escaping @Sendable (MediaEvent) -> Void) {
            self.configuration = configuration
            self.logger = logger
            self.emit = emit
        }

        func start(callId: CallID) async {
            if let media { await media.close() }
            self.callId = callId
            resetAdaptation()
            do {
                let media = try CallMedia(configuration: configuration, logger: logger, emit: emit)
                self.media = media
                try await media.addTrack(.audio, description: CaptureChain.audio(configuration.audioSource))
                try await apply(to: media, previous: nil)
            } catch {
                logger.error("could not start the call's media", metadata: ["callId": "\(callId)", "error": "\(error)"])
            }
        }

        func stop(callId: CallID) async {
            guard self.callId == callId else { return }
            self.callId = nil
            resetAdaptation()
            await media?.close()
            media = nil
        }

        /// Takes the app's latest settings and applies what changed to the running call.
        func use(_ new: Settings) async {
            let previous = settings
            settings = new
            guard let media else { return }
            do {
                try await apply(to: media, previous: previous)
            } catch {
                logger.error("could not apply a media setting", metadata: ["error": "\(error)"])
            }
            // A new quality or a new chain starts the encoder at the full bitrate: set it again.
            for key in rates.keys { rates[key]?.setMaximum(new.quality.bitrateKbps) }
            sentKbps = [:]
            await applySendRate()
        }

        /// Brings the pipeline in line with the settings (all of them when `previous` is nil).
        private func apply(to media: CallMedia, previous: Settings?) async throws {
            let settings = self.settings
            if let audio = await media.chain(.audio) {
                audio.child("volume")?.set("volume", Double(max(0, min(100, settings.microphoneVolume))) / 100)
                audio.child("volume")?.set("mute", !settings.microphoneOn)
                audio.child("gate")?.set("drop", !settings.audioRunning)
            }
            await media.setOutput(
                volume: settings.output.volume, muted: settings.output.remoteAudioMuted || !settings.audioRunning)

            // The camera track exists in video calls; the camera switch only gates it.
            let camera = cameraDescription(settings)
            let video = await media.chain(.video)
            if settings.mediaType == .video {
                if video == nil {
                    try await media.addTrack(.video, description: camera)
                } else if let previous {
                    if previous.frontCamera != settings.frontCamera, configuration.backCameraSource != nil {
                        try video?.replace(with: camera, in: media.pipeline)
                    } else if previous.quality != settings.quality {
                        setQuality(settings.quality, on: video)
                    }
                }
                let wasOn = previous.map { $0.cameraOn && $0.mediaType == .video } ?? false
                let chain = await media.chain(.video)
                chain?.child("gate")?.set("drop", !settings.cameraOn)
                if settings.cameraOn && !wasOn { chain?.requestKeyFrame() }
            } else if video != nil {
                await media.removeTrack(.video)
            }

            if settings.screen != previous?.screen || previous == nil {
                if await media.chain(.screen) != nil { await media.removeTrack(.screen) }
                if let screen = settings.screen {
                    let quality = configuration.screenQuality
                    try await media.addTrack(
                        .screen,
                        description: CaptureChain.video(
                            VideoSource(screen), width: quality.width, height: quality.height,
                            frameRate: quality.frameRate,
                            bitrateKbps: SendRateController.startKbps(maximum: quality.bitrateKbps)))
                }
            }
        }

        private func cameraDescription(_ settings: Settings) -> String {
            let source = settings.frontCamera ? configuration.videoSource : configuration.backCameraSource ?? configuration.videoSource
            let quality = settings.quality
            return CaptureChain.video(
                source, width: quality.width, height: quality.height, frameRate: quality.frameRate,
                bitrateKbps: SendRateController.startKbps(maximum: quality.bitrateKbps))
        }

        /// A new size and rate through the caps filter (the encoder follows) and a new bitrate: the
        /// start rate, until ``applySendRate()`` gives what the links allow.
        private func setQuality(_ quality: VideoQuality, on chain: CaptureChain?) {
            chain?.child("caps")?.set(
                "caps",
                caps: CaptureChain.rawVideoCaps(width: quality.width, height: quality.height, frameRate: quality.frameRate))
            chain?.child("encoder")?.set("target-bitrate", Int32(SendRateController.startKbps(maximum: quality.bitrateKbps) * 1000))
        }

        private func resetAdaptation() {
            rates = [:]
            sentKbps = [:]
            gates = [:]
            audioThin = false
            second = 0
        }

        /// One second passed: the rate towards each member follows the round trip its latest
        /// receiver report gave (``SendRateController``), video to a member whose link cannot
        /// carry it even at the lowest rate pauses and is tried again (``VideoGate``), and the
        /// audio thins while a link is that narrow (``AudioThinning``).
        func adaptSendRates() async {
            guard let media else { return }
            second += 1
            let trips = await media.videoRoundTrips()
            rates = rates.filter { trips[$0.key] != nil }
            for (peer, gate) in gates where trips[peer] == nil {
                // Nothing more to gate (video removed, the member gone): what comes later starts sent.
                if !gate.isOpen { await media.sendVideo(to: peer, true) }
                gates[peer] = nil
            }
            // A member's rate and gate outlive a connection that replaced theirs (an ICE restart,
            // a reconnect): the link is the same, and a new controller's first report, taken on a
            // link that is still full, would hide the queue from every later one.
            for (peer, trip) in trips {
                var controller = rates[peer] ?? SendRateController(maximumKbps: settings.quality.bitrateKbps)
                controller.setMaximum(settings.quality.bitrateKbps)
                let starved = trip.flatMap { controller.observe(roundTrip: $0) ?? controller.observeSilence() }
                var gate = gates[peer] ?? VideoGate()
                // The report first: one made while paused is the audio's alone, and the tick may
                // begin a trial.
                let reported = starved.flatMap { gate.report(starved: $0, now: second) }
                let ticked = gate.tick(now: second)
                for change in [reported, ticked].compactMap({ $0 }) {
                    logger.info("video gate", metadata: ["peer": "\(peer)", "change": "\(change)"])
                    switch change {
                    case .pause: emit(.videoSending(peer, .paused))
                    case .trial:
                        controller.restartAtFloor()
                        await media.sendVideo(to: peer, true)
                        emit(.videoSending(peer, .trial))
                    case .open: emit(.videoSending(peer, .on))
                    }
                }
                rates[peer] = controller
                gates[peer] = gate
                // Every second while paused, so that a connection that replaced the member's (an
                // ICE restart) is paused too; a no-op when nothing changed.
                if gate.paused { await media.sendVideo(to: peer, false) }
            }
            await applySendRate()
            await applyAudioThinning()
        }

        /// The audio encoder thinned or full again, as ``AudioThinning`` says.
        private func applyAudioThinning() async {
            let thin = AudioThinning.thin(
                was: audioThin, anyGateShut: gates.values.contains { !$0.isOpen }, lowestKbps: lowestSendKbps)
            guard thin != audioThin, let audio = await media?.chain(.audio), audio.encodeAudio(thin: thin) else { return }
            audioThin = thin
            emit(.sendRate(.audio, kbps: AudioThinning.encoding(thin: thin).kbps))
        }

        /// The lowest rate a member whose video is not paused allows (nil: none gets video).
        private var lowestSendKbps: Int? {
            rates.filter { gates[$0.key]?.paused != true }.values.map(\.kbps).min()
        }

        /// Gives each video encoder the lowest rate the connected members allow (its own ceiling
        /// at most; members whose video is paused allow any), and says so when it changes.
        private func applySendRate() async {
            guard let media else { return }
            let kbps = lowestSendKbps
            // Video paused to every member: nothing goes out, the encoders keep their rate.
            if kbps == nil, !rates.isEmpty { return }
            for kind in [TrackKind.video, .screen] {
                guard let chain = await media.chain(kind) else {
                    sentKbps[kind] = nil
                    continue
                }
                let maximum = kind == .video ? settings.quality.bitrateKbps : configuration.screenQuality.bitrateKbps
                let rate = min(maximum, kbps ?? SendRateController.startKbps(maximum: maximum))
                guard sentKbps[kind] != rate, kbps != nil || sentKbps[kind] != nil else { continue }
                logger.debug("video send rate", metadata: ["kind": "\(kind)", "kbps": "\(rate)"])
                emit(.sendRate(kind, kbps: rate))
                sentKbps[kind] = rate
                chain.child("encoder")?.set("target-bitrate", Int32(rate * 1000))
            }
        }

        func statistics() async -> MediaStatistics {
            guard let media else { return MediaStatistics() }
            var statistics = await media.statistics()
            if !settings.microphoneOn || !settings.audioRunning { statistics.localAudioLevel = 0 }
            return statistics
        }

        func failTransport(of peer: UserID) async throws {
            guard let media else { throw GStreamerError("no call") }
            try await media.failTransport(of: peer)
        }

        func sendVideo(to peer: UserID, _ on: Bool) async throws {
            guard let media else { throw GStreamerError("no call") }
            await media.sendVideo(to: peer, on)
        }

        func thinAudio(_ thin: Bool) async throws {
            guard let audio = await media?.chain(.audio), audio.encodeAudio(thin: thin) else {
                throw GStreamerError("no audio encoder")
            }
        }

        func firstAudioFrame(from peer: UserID) async -> ContinuousClock.Instant? {
            try? await media?.connection(peer).firstAudioFrame
        }

        func openPeer(_ peer: UserID, iceServers: [IceServer], events: PeerConnectionEvents) async {
            guard let media else {
                logger.warning("a peer connection outside a call", metadata: ["peer": "\(peer)"])
                return
            }
            let ice = IcePolicy(servers: iceServers, relayOnly: configuration.relayOnly, loopbackOnly: configuration.loopbackOnly)
            do {
                try await media.openPeer(peer, ice: ice, events: events)
            } catch {
                logger.error("could not open a peer connection", metadata: ["peer": "\(peer)", "error": "\(error)"])
            }
        }

        func closePeer(_ peer: UserID) async {
            await media?.closePeer(peer)
            // The member who left no longer holds the rate down.
            if rates.removeValue(forKey: peer) != nil { await applySendRate() }
        }

        func setLocalDescription(peer: UserID, iceRestart: Bool) async throws -> SessionDescription {
            guard let media else { throw GStreamerError("no call") }
            var connection = try await media.connection(peer)
            if iceRestart, connection.signalingState != .haveRemoteOffer {
                connection = try await media.replaceConnection(peer)
            }
            switch connection.signalingState {
            case .haveRemoteOffer:
                return SessionDescription(kind: .answer, sdp: try await connection.createAndSetLocal(GST_WEBRTC_SDP_TYPE_ANSWER))
            case .stable:
                return SessionDescription(kind: .offer, sdp: try await connection.createAndSetLocal(GST_WEBRTC_SDP_TYPE_OFFER))
            case .haveLocalOffer:
                return SessionDescription(kind: .offer, sdp: connection.pendingOffer ?? "")
            case .closed:
                throw GStreamerError("the connection to \(peer) is closed")
            }
        }

        func setRemoteDescription(_ description: SessionDescription, peer: UserID) async throws {
            guard let media else { throw GStreamerError("no call") }
            var connection = try await media.connection(peer)
            guard description.kind == .offer else {
                try await connection.setRemote(GST_WEBRTC_SDP_TYPE_ANSWER, description.sdp)
                return
            }
            // Offers crossed and this side is polite: WebRTC rolls its own offer back, which
            // webrtcbin cannot (no version accepts a rollback description); a fresh connection
            // answers instead and then asks for an ICE restart, which renews both ends.
            if connection.signalingState == .haveLocalOffer {
                logger.info("offers crossed: a new connection answers", metadata: ["peer": "\(peer)"])
                connection = try await media.replaceConnection(peer)
                connection.answerInPlaceOfRolledBackOffer()
            }
            // New ICE credentials in the offer: the peer restarts ICE, which webrtcbin cannot
            // follow on its connection; a fresh one answers.
            let offered = SessionDescriptionText(description.sdp).ufrag
            if let current = connection.remoteUfrag, let offered, current != offered {
                connection = try await media.replaceConnection(peer)
            }
            try await connection.setRemote(GST_WEBRTC_SDP_TYPE_OFFER, description.sdp)
        }

        func addRemoteCandidate(_ candidate: IceCandidate, peer: UserID) async throws {
            guard let media else { throw GStreamerError("no call") }
            try await media.connection(peer).addRemoteCandidate(candidate)
        }

        func signalingState(peer: UserID) async -> PeerSignalingState {
            (try? await media?.connection(peer).signalingState) ?? .closed
        }
    }
}

/// Hands each event to every subscriber (bounded: a subscriber that does not read loses the oldest).
final class EventBroadcaster: Sendable {
    private let subscribers = NIOLockedValueBox<(next: Int, continuations: [Int: AsyncStream<MediaEvent>.Continuation])>(
        (0, [:]))

    func subscribe() -> AsyncStream<MediaEvent> {
        let (stream, continuation) = AsyncStream<MediaEvent>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        let id = subscribers.withLockedValue { state in
            state.next += 1
            state.continuations[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [subscribers] _ in
            subscribers.withLockedValue { _ = $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    func publish(_ event: MediaEvent) {
        for continuation in subscribers.withLockedValue({ Array($0.continuations.values) }) { continuation.yield(event) }
    }
}

/// Runs jobs one after another, in the order they were enqueued, each to its end (awaits
/// included) before the next starts.
///
/// No bound of its own, on purpose: a job is never dropped (a lost description or connection step
/// would leave the call wrong). What bounds it is who can queue: every connection step the SDK
/// takes (a description, a candidate from the network) awaits its job, so each connection has at
/// most one of those waiting; the app's settings coalesce into at most one waiting job
/// (`GStreamerMediaEngine.update`), however fast they change; the rest are the SDK's start and end
/// of a call and opening and closing of connections, one per member and change of the call.
final class JobQueue: Sendable {
    private let continuation: AsyncStream<@Sendable () async -> Void>.Continuation
    private let worker: Task<Void, Never>
    private let count = NIOLockedValueBox(0)

    init() {
        let (stream, continuation) = AsyncStream<@Sendable () async -> Void>.makeStream()
        self.continuation = continuation
        worker = Task { [count] in
            for await job in stream {
                count.withLockedValue { $0 -= 1 }
                await job()
            }
        }
    }

    /// Jobs queued and not started.
    var waiting: Int { count.withLockedValue { $0 } }

    deinit {
        continuation.finish()
    }

    func enqueue(_ job: @escaping @Sendable () async -> Void) {
        count.withLockedValue { $0 += 1 }
        continuation.yield(job)
    }

    func perform<Value: Sendable>(_ job: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            enqueue {
                do {
                    continuation.resume(returning: try await job())
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
#endif
