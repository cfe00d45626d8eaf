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
    /// This node's call engine: it runs the calls on a single node, or on the cluster's leader.
    let engine: CallEngine
    /// Where the sessions send call requests: the engine, or the cluster's leader.
    let calls: any CallRouter
    /// The node's place in its cluster (PostgreSQL); nil for a single node (SQLite).
    let cluster: ClusterNode?
    let writer: PersistenceWriter
    let ledger = RequestLedger()
    let limiter: RateLimiter
    /// Who is connected and who may connect (``ConnectionLimits``).
    let gate: ConnectionGate
    /// Head, request, idle and login deadlines of connections, on ``clock``.
    let deadlines: ConnectionDeadlines
    /// Frames for connections, gathered per event loop.
    let outboxes = LoopOutboxes()
    let metrics: ServerMetrics
    let push: PushService
    /// The SFU's rooms, when group calls go through one.
    let sfu: SFURooms?
    let clock: any SwitchboardClock
    let logger: Logger
    private let counters = NIOLockedValueBox<(connections: UInt64, shuttingDown: Bool)>((0, false))

    init(
        configuration: ServerConfiguration, storage: any SwitchboardStorage, apps: AppDirectory,
        profiles: ProfileDirectory, registry: ConnectionRegistry, engine: CallEngine, cluster: ClusterNode?,
        limiter: RateLimiter, writer: PersistenceWriter, metrics: ServerMetrics, push: PushService, sfu: SFURooms? = nil,
        clock: any SwitchboardClock, logger: Logger
    ) {
        self.sfu = sfu
        self.configuration = configuration
        self.storage = storage
        self.apps = apps
        self.profiles = profiles
        self.registry = registry
        self.engine = engine
        self.cluster = cluster
        self.calls = cluster ?? LocalCallRouter(engine: engine) as any CallRouter
        self.writer = writer
        self.metrics = metrics
        self.push = push
        self.limiter = limiter
        self.gate = ConnectionGate(limits: configuration.connections)
        self.deadlines = ConnectionDeadlines(clock: clock)
        self.clock = clock
        self.logger = logger
    }

    /// Ends a call with `endByServer` (admin API, operators).
    func endCall(_ callId: CallID) async -> Result<Void, SwitchboardError> {
        switch await calls.handle(.endByServer(callId), reply: nil) {
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
