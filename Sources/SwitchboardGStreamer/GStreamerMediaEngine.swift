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
        /// The clock of ``stallLimit`` and of the once-a-second adaptation of the send rates.
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
#endif
