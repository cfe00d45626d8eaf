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
    public var transport: any SignalingTransport
    /// The media engine the SDK drives; nil for signaling only. Fixed when the client is made.
    public var mediaEngine: (any MediaEngine)?
    public var logger: Logger

    public init(
        serverURL: URL = URL(string: "ws://127.0.0.1:8080/v1/ws")!, fallbackServerURLs: [URL] = [],
        deviceId: DeviceID? = nil,
        platform: String = SwitchboardConfiguration.defaultPlatform, requestTimeout: Duration = .seconds(10),
        reconnectPolicy: ReconnectPolicy = ReconnectPolicy(),
        clock: any SwitchboardClock = SystemClock(), transport: any SignalingTransport = WebSocketTransport(),
        mediaEngine: (any MediaEngine)? = nil,
        logger: Logger = Logger(label: "switchboard")
    ) {
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
public final class SwitchboardClient: Sendable {
    /// The client behind the stores' `shared` properties. Call ``configure(_:)`` before logging in.
    public static let shared = SwitchboardClient()

    public let loginStore: LoginStore
    public let callStore: CallStore
    public let deviceStore: DeviceStore
    let signaling: SignalingClient
    let media: MediaCoordinator
    private let settings: NIOLockedValueBox<SwitchboardConfiguration>

    public init(configuration: SwitchboardConfiguration = SwitchboardConfiguration()) {
        var configuration = configuration
        if configuration.deviceId == nil { configuration.deviceId = .random() }
        let settings = NIOLockedValueBox(configuration)
        let signaling = SignalingClient(
            transport: configuration.transport, clock: configuration.clock,
            requestTimeout: configuration.requestTimeout, policy: configuration.reconnectPolicy,
            logger: configuration.logger)
        let deviceStore = DeviceStore()
        let callStore = CallStore(signaling: signaling, clock: configuration.clock, devices: deviceStore)
        let media = MediaCoordinator(
            engine: configuration.mediaEngine, signaling: signaling, clock: configuration.clock, callStore: callStore,
            deviceStore: deviceStore, logger: configuration.logger)
        let loginStore = LoginStore(signaling: signaling, callStore: callStore, configuration: settings)
        signaling.handlers.withLockedValue { handlers in
            handlers.event = { event in
                callStore.handle(event)
                media.handle(event)
            }
            handlers.connection = { event in
                loginStore.connectionChanged(event)
                switch event {
                case .sessionLost: callStore.reset()
                // After a network drop the peer connections restart ICE (the path may have
                // changed); after a server restart the media path never went away.
                case .reconnected(_, let afterRestart): if !afterRestart { media.reconnected() }
                default: break
                }
            }
        }
        self.settings = settings
        self.signaling = signaling
        self.deviceStore = deviceStore
        self.callStore = callStore
        self.loginStore = loginStore
        self.media = media
    }

    /// Who decides when call audio may start: `.automatic` (the default) starts it when a call
    /// connects; the CallKit bridge sets `.external`, so audio waits for the system's activation.
    public var audioSessionControl: AudioSessionControl {
        get { media.control }
        set { media.control = newValue }
    }

    /// The system activated the audio session (CallKit's `provider(_:didActivate:)`): call audio
    /// may start. Only matters with ``AudioSessionControl/external``.
    public func audioSessionActivated() {
        media.audioSession(active: true)
    }

    /// The system deactivated the audio session: call audio stops.
    public func audioSessionDeactivated() {
        media.audioSession(active: false)
    }

    /// The configuration in use.
    public var configuration: SwitchboardConfiguration { settings.withLockedValue { $0 } }

    /// Replaces the server URL and other settings; takes effect at the next login. The clock and
    /// transport are fixed when the client is made.
    public func configure(_ configuration: SwitchboardConfiguration) {
        settings.withLockedValue { current in
            let deviceId = current.deviceId
            current = configuration
            if current.deviceId == nil { current.deviceId = deviceId }
        }
    }
}
