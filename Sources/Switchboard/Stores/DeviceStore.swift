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

/// Capture quality of the local camera.
public enum VideoQuality: String, Codable, Sendable, CaseIterable {
    case p360
    case p540
    case p720
    case p1080
}

/// The local microphone, camera and audio route. While you are in a call, microphone and camera
/// changes reach the other members as remote-device events. `DeviceStore.shared` is the store of
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

        public init() {}
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

    /// Back to the defaults (after a logout).
    func reset() {
        cell.update { $0 = State() }
    }
}
