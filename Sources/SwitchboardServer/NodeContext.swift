import Logging
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// The parts of one running server node, shared by its connections and HTTP handlers.
final class NodeContext: Sendable {
    /// Frames above this size close the connection (protection against memory exhaustion);
    /// frames between the 64 KiB message limit and this get a `messageTooLarge` error.
    static let hardMessageLimit = 1 << 20

    let configuration: ServerConfiguration
    let storage: any SwitchboardStorage
    let apps: AppDirectory
    let profiles: ProfileDirectory
    let registry: ConnectionRegistry
    let engine: CallEngine
    let writer: PersistenceWriter
    let ledger = RequestLedger()
    let limiter: RateLimiter
    /// Who is connected and who may connect (``ConnectionLimits``).
    let gate: ConnectionGate
    /// Head, request, idle and login deadlines of connections, on ``clock``.
    let deadlines: ConnectionDeadlines
    let metrics: ServerMetrics
    let push: PushService
    let clock: any SwitchboardClock
    let logger: Logger
    private let counters = NIOLockedValueBox<(connections: UInt64, shuttingDown: Bool)>((0, false))

    init(
        configuration: ServerConfiguration, storage: any SwitchboardStorage, apps: AppDirectory,
        registry: ConnectionRegistry, writer: PersistenceWriter, metrics: ServerMetrics, push: PushService,
        clock: any SwitchboardClock, logger: Logger
    ) {
        self.configuration = configuration
        self.storage = storage
        self.apps = apps
        self.profiles = ProfileDirectory(store: storage)
        self.registry = registry
        self.writer = writer
        self.metrics = metrics
        self.push = push
        self.limiter = RateLimiter(disabled: configuration.rateLimits.disabled)
        self.gate = ConnectionGate(limits: configuration.connections)
        self.deadlines = ConnectionDeadlines(clock: clock)
        self.clock = clock
        self.logger = logger
        self.engine = CallEngine(
            configuration: CallStateMachine.Configuration(reconnectGrace: configuration.reconnectGrace.milliseconds),
            registry: registry, storage: storage, writer: writer, push: push, metrics: metrics, clock: clock,
            logger: logger)
    }

    /// Ends a call with `endByServer` (admin API, operators).
    func endCall(_ callId: CallID) async -> Result<Void, SwitchboardError> {
        switch await engine.handle(.endByServer(callId)) {
        case .failure(let error): .failure(error)
        default: .success(())
        }
    }

    func nextConnectionID() -> UInt64 {
        counters.withLockedValue { counters in
            counters.connections += 1
            return counters.connections
        }
    }

    /// Set once graceful shutdown began: logins are refused from then on.
    var isShuttingDown: Bool { counters.withLockedValue { $0.shuttingDown } }

    func beginShutdown() { counters.withLockedValue { $0.shuttingDown = true } }
}
