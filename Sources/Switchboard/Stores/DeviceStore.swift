import SwitchboardProtocol

/// Where call audio plays (``AudioRoutePolicy`` decides).
public enum AudioRoute: String, Codable, Sendable, CaseIterable {
    case speaker
    case earpiece
    /// A Bluetooth headset or car kit.
    case bluetooth
    /// Wired headphones or headset.
    case headset
}

/// Capture quality of the local camera: resolution, frame rate and the encoder's target bitrate.
public enum VideoQuality: String, Codable, Sendable, CaseIterable {
    case p360
    case p540
    case p720
    case p1080

    public var width: Int {
        switch self {
        case .p360: 640
        case .p540: 960
        case .p720: 1280
        case .p1080: 1920
        }
    }

    public var height: Int { width * 9 / 16 }

    /// Frames per second (TRTC's call presets use 15).
    public var frameRate: Int { 15 }

    /// Target bitrate, kbps.
    public var bitrateKbps: Int {
        switch self {
        case .p360: 500
        case .p540: 900
        case .p720: 1_500
        case .p1080: 2_500
        }
    }
}

/// The local microphone, camera, playback and screen sharing. Every setting reaches the media
/// engine; while you are in a call, microphone, camera and screen-sharing changes reach the other
/// members as remote-device events. `DeviceStore.shared` is the store of
/// ``SwitchboardClient/shared``.
public final class DeviceStore: Sendable {
    public struct State: Equatable, Sendable {
        public var microphoneStatus: DeviceSwitch = .off
        /// Capture volume, 0–100.
        public var microphoneVolume = 100
        public var cameraStatus: DeviceSwitch = .off
        public var isFrontCamera = true
        public var videoQuality: VideoQuality = .p720
        /// Where call audio plays now.
        public var audioRoute: AudioRoute = .earpiece
        /// The route you chose for the call (``setAudioRoute(_:)``), while it holds.
        public var chosenAudioRoute: AudioRoute?
        /// Playback volume of the other members, 0–100.
        public var audioPlayoutVolume = 100
        /// Every other member is silenced here (they still hear you).
        public var remoteAudioMuted = false
        /// What this device shares as its screen; nil when it does not share.
        public var screenShare: ScreenShareSource?
        /// Which layer of each other member's camera to receive in a group call through the SFU
        /// (CallPlus's `isTiny`); a member without an entry gets the small one.
        public var remoteVideoLayers: [UserID: VideoLayer] = [:]

        public init() {}

        /// How remote audio plays, as the media engine gets it.
        public var audioOutput: AudioOutput {
            AudioOutput(route: audioRoute, volume: audioPlayoutVolume, remoteAudioMuted: remoteAudioMuted)
        }
    }

    /// The store of the shared client.
    public static var shared: DeviceStore { SwitchboardClient.shared.deviceStore }

    let cell = StateCell(State())

    init() {}

    /// The current state.
    public var state: State { cell.value }

    /// The current state, then every change.
    public var stateUpdates: AsyncStream<State> { cell.subscribe() }

    public func openLocalMicrophone() {
        cell.update { $0.microphoneStatus = .on }
    }

    public func closeLocalMicrophone() {
        cell.update { $0.microphoneStatus = .off }
    }

    /// Sets the capture volume, clamped to 0–100.
    public func setMicrophoneVolume(_ volume: Int) {
        cell.update { $0.microphoneVolume = min(100, max(0, volume)) }
    }

    public func openLocalCamera(isFront: Bool = true) {
        cell.update { state in
            state.cameraStatus = .on
            state.isFrontCamera = isFront
        }
    }

    public func closeLocalCamera() {
        cell.update { $0.cameraStatus = .off }
    }

    public func switchCamera(isFront: Bool) {
        cell.update { $0.isFrontCamera = isFront }
    }

    public func setVideoQuality(_ quality: VideoQuality) {
        cell.update { $0.videoQuality = quality }
    }

    /// Chooses where call audio plays; kept for the call (see ``AudioRoutePolicy``).
    public func setAudioRoute(_ route: AudioRoute) {
        cell.update { $0.chosenAudioRoute = route }
    }

    /// Where the policy sends audio, and the choice it keeps.
    func routeAudio(_ route: AudioRoute, choice: AudioRoute?) {
        cell.update { state in
            state.audioRoute = route
            state.chosenAudioRoute = choice
        }
    }

    /// Sets how loud the other members play, clamped to 0–100.
    public func setAudioPlayoutVolume(_ volume: Int) {
        cell.update { $0.audioPlayoutVolume = min(100, max(0, volume)) }
    }

    /// Silences every other member here, or plays them again.
    public func muteAllRemoteAudio(_ mute: Bool) {
        cell.update { $0.remoteAudioMuted = mute }
    }

    /// Shares `source` as a second video track in the call; the other members see who shares.
    public func startScreenShare(_ source: ScreenShareSource = .screen) {
        cell.update { $0.screenShare = source }
    }

    public func stopScreenShare() {
        cell.update { $0.screenShare = nil }
    }

    /// The most members ``State/remoteVideoLayers`` holds (the largest call an app may allow);
    /// a choice for a member beyond it is not kept.
    public static let remoteVideoLayerLimit = 1000

    /// Asks for the small or the big layer of `userId`'s camera (CallPlus's `isTiny`: small for a
    /// thumbnail, big for an enlarged tile). In a group call through the SFU the choice goes to
    /// the server and holds for the rest of the call; peer-to-peer calls send one size.
    public func setRemoteVideoLayer(_ layer: VideoLayer, for userId: UserID) {
        cell.update { state in
            guard state.remoteVideoLayers[userId] != nil
                || state.remoteVideoLayers.count < Self.remoteVideoLayerLimit
            else { return }
            state.remoteVideoLayers[userId] = layer
        }
    }

    /// Sets the layers the call view needs, as ``CallViewLayout/videoLayers(for:)`` gives them.
    public func setRemoteVideoLayers(_ layers: [UserID: VideoLayer]) {
        for (userId, layer) in layers.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            setRemoteVideoLayer(layer, for: userId)
        }
    }

    /// Back to the defaults (after a logout).
    func reset() {
        cell.update { $0 = State() }
    }
}
