import Foundation
import Logging
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// How the SDK reaches its server.
public struct SwitchboardConfiguration: Sendable {
    /// The server's WebSocket endpoint, e.g. `ws://127.0.0.1:8080/v1/ws`.
    public var serverURL: URL
    /// Other nodes of the same cluster, tried in turn when ``serverURL`` does not answer or goes
    /// away (a deploy, a node lost). One address behind a load balancer needs none.
    public var fallbackServerURLs: [URL] = []
    /// This device's stable id; logging in again with it resumes its calls. Keep it across launches
    /// (the SDK makes a random one per client when nil).
    public var deviceId: DeviceID?
    /// Shown in the server's online list, e.g. `ios`.
    public var platform: String
    /// How long a request may wait for its response (also while reconnecting).
    public var requestTimeout: Duration
    /// How the client comes back after a drop.
    public var reconnectPolicy: ReconnectPolicy
    /// The time source of every SDK timer; tests pass a test clock.
    public var clock: any SwitchboardClock
    /// How the client reaches the server (a WebSocket by default).
    public var transport: any SignalingTransport
    /// The media engine the SDK drives (WebRTC, or another RTC engine); nil for signaling only.
    public var mediaEngine: (any MediaEngine)?
    /// Tells the client when the device's network path changes, so it reconnects (and the calls
    /// restart ICE) at once instead of waiting for the heartbeat; nil: only the heartbeat notices.
    /// The default follows the platform (`NWPathMonitor` on Apple platforms, netlink on Linux).
    public var networkPathMonitor: (any NetworkPathMonitor)?
    public var logger: Logger

    public init(
        serverURL: URL = URL(string: "ws://127.0.0.1:8080/v1/ws")!, fallbackServerURLs: [URL] = [],
        deviceId: DeviceID? = nil,
        platform: String = SwitchboardConfiguration.defaultPlatform, requestTimeout: Duration = .seconds(10),
        reconnectPolicy: ReconnectPolicy = ReconnectPolicy(),
        clock: any SwitchboardClock = SystemClock(), transport: any SignalingTransport = WebSocketTransport(),
        mediaEngine: (any MediaEngine)? = nil,
        networkPathMonitor: (any NetworkPathMonitor)? = SystemNetworkPathMonitor(),
        logger: Logger = Logger(label: "switchboard")
    ) {
        self.networkPathMonitor = networkPathMonitor
        self.serverURL = serverURL
        self.fallbackServerURLs = fallbackServerURLs
        self.deviceId = deviceId
        self.platform = platform
        self.requestTimeout = requestTimeout
        self.reconnectPolicy = reconnectPolicy
        self.clock = clock
        self.transport = transport
        self.mediaEngine = mediaEngine
        self.logger = logger
    }

    public static var defaultPlatform: String {
        #if os(iOS)
        "ios"
        #elseif os(macOS)
        "macos"
        #else
        "linux"
        #endif
    }
}

/// One SDK session: a user on this device, with its ``LoginStore``, ``CallStore`` and
/// ``DeviceStore``. Apps use ``shared`` (as `LoginStore.shared`, `CallStore.shared`…); tests and
/// tools may make several.
///
/// The stores live as long as the client, so whatever holds them (a view, the CallKit bridge)
/// keeps working across ``configure(_:)``: configuring replaces what the stores run with, not the
/// stores.
public final class SwitchboardClient: Sendable {
    /// The client behind the stores' `shared` properties, made with the default configuration on
    /// first use. Give it yours with ``configure(_:)`` before logging in (or at the latest before the
    /// next login).
    public static let shared = SwitchboardClient()

    public let loginStore: LoginStore
    public let callStore: CallStore
    public let deviceStore: DeviceStore
    let signaling: SignalingClient
    private let audioRoutes: AudioRouteController
    private let settings: NIOLockedValueBox<SwitchboardConfiguration>
    private let mediaBox: NIOLockedValueBox<Media>
    /// The media coordinator now (a new configuration brings a new one).
    var media: MediaCoordinator { mediaBox.withLockedValue { $0.coordinator } }

    /// The media coordinator for the configuration it was made from, and what it must know again
    /// when it is replaced.
    private struct Media {
        var coordinator: MediaCoordinator
        /// The configuration's generation the coordinator was made for.
        var generation: Int
        var control = AudioSessionControl.automatic
        var sessionActive = false
    }

    /// Bumped by every ``configure(_:)``.
    private let generation = NIOLockedValueBox(0)

    public init(configuration: SwitchboardConfiguration = SwitchboardConfiguration()) {
        var configuration = configuration
        if configuration.deviceId == nil { configuration.deviceId = .random() }
        let settings = NIOLockedValueBox(configuration)
        let signaling = SignalingClient(settings: SignalingClient.Settings(configuration))
        let deviceStore = DeviceStore()
        let callStore = CallStore(signaling: signaling, configuration: settings, devices: deviceStore)
        self.settings = settings
        self.signaling = signaling
        self.deviceStore = deviceStore
        self.callStore = callStore
        self.audioRoutes = AudioRouteController(callStore: callStore, deviceStore: deviceStore)
        self.mediaBox = NIOLockedValueBox(
            Media(
                coordinator: Self.mediaCoordinator(configuration, signaling, callStore, deviceStore), generation: 0))
        self.loginStore = LoginStore(signaling: signaling, callStore: callStore, configuration: settings)
        let media = self.mediaBox
        loginStore.beforeLogin = { [weak self] in self?.applyConfiguration() }
        signaling.handlers.withLockedValue { handlers in
            handlers.event = { event in
                callStore.handle(event)
                // After the state changes the event caused, in the order the media hears of them.
                let coordinator = media.withLockedValue { $0.coordinator }
                callStore.afterChanges { coordinator.handle(event) }
            }
            handlers.connection = { [loginStore] event in
                loginStore.connectionChanged(event)
                switch event {
                case .sessionLost: callStore.reset()
                // After a network drop the peer connections restart ICE (the path may have
                // changed); after a server restart the media path never went away.
                case .reconnected(_, let afterRestart):
                    if !afterRestart { media.withLockedValue { $0.coordinator }.reconnected() }
                default: break
                }
            }
        }
    }

    private static func mediaCoordinator(
        _ configuration: SwitchboardConfiguration, _ signaling: SignalingClient, _ callStore: CallStore,
        _ deviceStore: DeviceStore
    ) -> MediaCoordinator {
        MediaCoordinator(
            engine: configuration.mediaEngine, signaling: signaling, clock: configuration.clock, callStore: callStore,
            deviceStore: deviceStore, logger: configuration.logger)
    }

    /// Who decides when call audio may start: `.automatic` (the default) starts it when a call
    /// connects; the CallKit bridge sets `.external`, so audio waits for the system's activation.
    public var audioSessionControl: AudioSessionControl {
        get { mediaBox.withLockedValue { $0.control } }
        set {
            mediaBox.withLockedValue { media in
                media.control = newValue
                media.coordinator.control = newValue
            }
        }
    }

    /// The system activated the audio session (CallKit's `provider(_:didActivate:)`): call audio
    /// may start. Only matters with ``AudioSessionControl/external``.
    public func audioSessionActivated() {
        audioSession(active: true)
    }

    /// The system deactivated the audio session: call audio stops.
    public func audioSessionDeactivated() {
        audioSession(active: false)
    }

    private func audioSession(active: Bool) {
        mediaBox.withLockedValue { media in
            media.sessionActive = active
            media.coordinator.audioSession(active: active)
        }
    }

    /// The headsets connected now (`.bluetooth`, `.headset`), as the platform reports them (the
    /// CallKit bridge does, from the audio session): call audio moves to the newest one (see
    /// ``AudioRoutePolicy``).
    public func audioHeadsetsChanged(_ headsets: Set<AudioRoute>) {
        audioRoutes.headsetsChanged(headsets)
    }

    /// The configuration in use (or to be used from the next login).
    public var configuration: SwitchboardConfiguration { settings.withLockedValue { $0 } }

    /// Replaces every setting: the server URL, device id, platform, timeouts, reconnect policy,
    /// clock, transport, media engine and logger.
    ///
    /// Logged out, everything applies at once; logged in (or reconnecting), at the next login, since
    /// the session and a call in progress keep what they started with. A `deviceId` left nil keeps
    /// the client's current one.
    public func configure(_ configuration: SwitchboardConfiguration) {
        settings.withLockedValue { current in
            let deviceId = current.deviceId
            current = configuration
            if current.deviceId == nil { current.deviceId = deviceId }
        }
        generation.withLockedValue { $0 += 1 }
        if loginStore.state.loginStatus == .loggedOut { applyConfiguration() }
    }

    /// Gives media the configured engine, clock and logger if the configuration changed since it
    /// was made; the connection takes its settings at each login.
    private func applyConfiguration() {
        let configuration = settings.withLockedValue { $0 }
        let wanted = generation.withLockedValue { $0 }
        let replaced = mediaBox.withLockedValue { media -> MediaCoordinator? in
            guard media.generation != wanted else { return nil }
            let old = media.coordinator
            media.coordinator = Self.mediaCoordinator(configuration, signaling, callStore, deviceStore)
            media.coordinator.control = media.control
            media.coordinator.audioSession(active: media.sessionActive)
            media.generation = wanted
            return old
        }
        // Released outside the lock: its watchers stop with it.
        _ = replaced
    }
}
