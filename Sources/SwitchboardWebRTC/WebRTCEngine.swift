#if canImport(WebRTC) && canImport(UIKit)
import AVFoundation
import Foundation
import Switchboard
import SwitchboardProtocol
@preconcurrency import WebRTC

/// The iOS media engine: Google's WebRTC framework (`WebRTC.framework`, unified plan) behind
/// ``PeerMediaEngine``, one `RTCPeerConnection` per other member, as docs/IOS.md section 8 maps it;
/// and behind ``SFUMediaEngine``, two for a group call through the server's SFU (`WebRTCEngine+SFU`).
///
/// Audio starts only when ``startAudio()`` says so: `RTCAudioSession.useManualAudio` is set, so
/// nothing plays or records before CallKit activated the audio session (the CallKit bridge calls
/// `startAudio` from `provider(_:didActivate:)`). Apps without CallKit set
/// ``Configuration/managesAudioSession``: the engine then activates and routes the session itself.
///
/// Every step runs on one serial queue, in the order it was asked; WebRTC's own calls are never
/// made while a lock is held (they block on WebRTC's signaling thread, which calls the delegates).
public final class WebRTCEngine: PeerMediaEngine, @unchecked Sendable {
    public struct Configuration: Sendable {
        /// The engine activates, configures and routes `AVAudioSession` itself (apps without
        /// CallKit). With CallKit leave it false: the bridge's `CallAudioSession` does that.
        public var managesAudioSession: Bool
        /// Camera capture (off: audio-only apps never ask for camera access).
        public var cameraEnabled: Bool

        public init(managesAudioSession: Bool = false, cameraEnabled: Bool = true) {
            self.managesAudioSession = managesAudioSession
            self.cameraEnabled = cameraEnabled
        }
    }

    /// The stream of the microphone and the camera; the screen goes in ``screenStreamId``, which
    /// is how receivers tell the two videos apart (``ReceivedVideoRole``).
    public static let streamId = "switchboard"
    public static let screenStreamId = "switchboard-screen"

    public let configuration: Configuration
    let queue = DispatchQueue(label: "switchboard.webrtc")
    let factory: RTCPeerConnectionFactory
    let media: LocalMedia
    let audio: AudioSessionDriver
    // Confined to `queue`.
    /// One per other member, or the two of the SFU session.
    var connections: [PeerConnection.Role: PeerConnection] = [:]
    var callMediaType: CallMediaType?
    var settings = Settings()
    /// Local tracks and remote video tracks for the views, read from the main thread.
    let videoTracks = VideoTrackDirectory()

    /// What the SDK set last, applied to every connection made later.
    struct Settings {
        var microphoneOn = false
        var microphoneVolume = 100
        var cameraOn = false
        var frontCamera = true
        var quality = VideoQuality.p720
        var output = AudioOutput()
        var screenShare: ScreenShareSource?
    }

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        RTCInitializeSSL()
        factory = RTCPeerConnectionFactory(
            encoderFactory: RTCDefaultVideoEncoderFactory(), decoderFactory: RTCDefaultVideoDecoderFactory())
        media = LocalMedia(factory: factory)
        audio = AudioSessionDriver(managesSession: configuration.managesAudioSession)
    }

    // MARK: - MediaEngine

    public func callConnected(callId: CallID, roomId: RoomID, mediaType: CallMediaType) {
        queue.async { [self] in
            callMediaType = mediaType
            media.makeMicrophone(on: settings.microphoneOn)
            if mediaType == .video, configuration.cameraEnabled {
                media.makeCamera()
                applyCamera()
            }
            videoTracks.setLocal(camera: media.cameraTrack, screen: media.screenTrack)
        }
    }

    public func callEnded(callId: CallID) {
        queue.async { [self] in
            for connection in connections.values { connection.close() }
            connections = [:]
            media.stopAll()
            callMediaType = nil
            videoTracks.removeAll()
            audio.stop()
        }
    }

    public func startAudio() {
        queue.async { [self] in audio.start(route: settings.output.route) }
    }

    public func stopAudio() {
        queue.async { [self] in audio.stop() }
    }

    public func setMicrophone(on: Bool) {
        queue.async { [self] in
            settings.microphoneOn = on
            media.microphoneTrack?.isEnabled = on && settings.microphoneVolume > 0
        }
    }

    public func setCamera(on: Bool, front: Bool) {
        queue.async { [self] in
            settings.cameraOn = on
            settings.frontCamera = front
            applyCamera()
        }
    }

    public func setMicrophoneVolume(_ volume: Int) {
        queue.async { [self] in
            settings.microphoneVolume = volume
            // WebRTC has no gain on a local source: 0 sends silence, the rest is the input gain.
            media.microphoneTrack?.isEnabled = settings.microphoneOn && volume > 0
            audio.setInputGain(volume)
        }
    }

    public func setVideoQuality(_ quality: VideoQuality) {
        queue.async { [self] in
            settings.quality = quality
            applyCamera()
            for connection in senders { connection.applyQuality(quality) }
        }
    }

    public func setAudioOutput(_ output: AudioOutput) {
        queue.async { [self] in
            settings.output = output
            audio.route(output.route)
            for connection in connections.values { connection.applyOutput(output) }
        }
    }

    public func setScreenShare(_ source: ScreenShareSource?) {
        queue.async { [self] in
            guard source != settings.screenShare else { return }
            settings.screenShare = source
            switch source {
            case nil:
                media.stopScreen()
                for connection in senders { connection.stopScreen() }
            case .screen?:
                media.startScreen()
                if let track = media.screenTrack {
                    for connection in senders { connection.sendScreen(track) }
                }
            case .display?, .file?, .testPattern?:
                // Only the app's own screen can be shared on iOS (ReplayKit); the SDK still
                // tells the others, who see no screen track.
                break
            }
            videoTracks.setLocal(camera: media.cameraTrack, screen: media.screenTrack)
        }
    }

    public func callMediaTypeChanged(callId: CallID, mediaType: CallMediaType) {
        queue.async { [self] in
            callMediaType = mediaType
            if mediaType == .video, configuration.cameraEnabled {
                media.makeCamera()
                if let track = media.cameraTrack {
                    for connection in senders { connection.sendCamera(track, quality: settings.quality) }
                }
            } else {
                for connection in senders { connection.stopCamera() }
                media.stopCamera()
            }
            applyCamera()
            videoTracks.setLocal(camera: media.cameraTrack, screen: media.screenTrack)
        }
    }

    /// Each member's connection is that member's entry; through the SFU, the subscribe
    /// connection's streams are split by member (by section), and the publish connection is what
    /// was published.
    public func statistics() async -> MediaStatistics {
        let (snapshot, localScreen, output) = await onQueue {
            (self.connections, self.media.screenTrack?.trackId, self.settings.output)
        }
        let playoutVolume = output.remoteAudioMuted ? 0 : output.volume
        var result = MediaStatistics()
        for (role, connection) in snapshot {
            let report = await connection.statistics()
            result.localAudioLevel = max(result.localAudioLevel, report.localAudioLevel)
            switch role {
            case .peer(let peer):
                var screens = await onQueue { connection.remoteScreenTrackIds() }
                if let localScreen { screens.insert(localScreen) }
                result.peers[peer] = report.peerStatistics(screenTrackIds: screens, playoutVolume: playoutVolume)
            case .sfu(.publish):
                result.published = report.peerStatistics(screenTrackIds: Set([localScreen].compactMap { $0 }))
            case .sfu(.subscribe):
                let members = report.memberStatistics(connection.sections, playoutVolume: playoutVolume)
                result.peers.merge(members) { _, throughSFU in throughSFU }
            }
        }
        return result
    }

    // MARK: - helpers

    /// Runs `body` on the queue and returns its result.
    func onQueue<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: body()) }
        }
    }

    /// Runs `body` on the queue; `body` finishes by calling `done` exactly once (WebRTC's
    /// completion handlers call it on their own thread).
    func onQueue<T: Sendable>(
        _ body: @escaping @Sendable (_ done: @escaping @Sendable (Result<T, any Error>) -> Void) -> Void
    ) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { body { continuation.resume(with: $0) } }
        }
    }

    /// The connections that send the local tracks: each member's, or the SFU's publish one (queue).
    var senders: [PeerConnection] {
        connections.values.filter(\.role.sends)
    }

    /// Starts, stops or re-aims the camera for the current settings (queue).
    func applyCamera() {
        let wanted = callMediaType == .video && settings.cameraOn && configuration.cameraEnabled
        media.setCamera(on: wanted, front: settings.frontCamera, quality: settings.quality)
    }
}
#endif
