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
    /// Which push credentials each app uses (its own, else the server's).
    let pushCredentials: PushCredentials
    /// Which Web Push endpoints may be registered.
    let webPushEndpoints: WebPushEndpointPolicy
    /// The webhook endpoints as this node knows them (the engine's filter, the dispatcher's list).
    let webhooks: WebhookDirectory
    let webhookDispatcher: WebhookDispatcher
    let webhookPolicy: WebhookAddressPolicy
    let clock: any SwitchboardClock
    let logger: Logger
    private let counters = NIOLockedValueBox<(connections: UInt64, shuttingDown: Bool)>((0, false))

    init(
        configuration: ServerConfiguration, storage: any SwitchboardStorage, apps: AppDirectory,
        profiles: ProfileDirectory, registry: ConnectionRegistry, engine: CallEngine, cluster: ClusterNode?,
        limiter: RateLimiter, writer: PersistenceWriter, metrics: ServerMetrics, push: PushService,
        pushCredentials: PushCredentials, webPushEndpoints: WebPushEndpointPolicy,
        webhooks: WebhookDirectory, webhookDispatcher: WebhookDispatcher, webhookPolicy: WebhookAddressPolicy,
        sfu: SFURooms? = nil, clock: any SwitchboardClock, logger: Logger
    ) {
        self.sfu = sfu
        self.pushCredentials = pushCredentials
        self.webPushEndpoints = webPushEndpoints
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
        self.webhooks = webhooks
        self.webhookDispatcher = webhookDispatcher
        self.webhookPolicy = webhookPolicy
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

    /// An endpoint changed here: this node reads them again at once, the other nodes of a cluster
    /// are told to, and the dispatcher looks for work.
    func webhookEndpointsChanged() async {
        if let endpoints = try? await storage.webhookEndpoints(app: nil) { webhooks.replace(with: endpoints) }
        cluster?.broadcast(.appsChanged)
        webhookDispatcher.wake()
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
