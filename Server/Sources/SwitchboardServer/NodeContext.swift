import Logging
import SwitchboardProtocol

/// The parts of one running server node, made once where the node is built. Its sessions and its
/// admin API are handed what they use (``sessions``, ``admin``), not this whole.
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
    let outboxes = PerEventLoop { LoopOutbox(eventLoop: $0) }
    /// What sessions run on: their connection's loop.
    let executors = PerEventLoop { EventLoopTaskExecutor($0) }
    let connections = NodeConnections()
    let metrics: ServerMetrics
    let push: PushService
    /// The SFU's rooms, when group calls go through one.
    let sfu: SFURooms?
    /// The recordings' conversion, when the server records calls.
    let recorder: RecordingWorker?
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

    init(
        configuration: ServerConfiguration, storage: any SwitchboardStorage, apps: AppDirectory,
        profiles: ProfileDirectory, registry: ConnectionRegistry, engine: CallEngine, cluster: ClusterNode?,
        limiter: RateLimiter, writer: PersistenceWriter, metrics: ServerMetrics, push: PushService,
        pushCredentials: PushCredentials, webPushEndpoints: WebPushEndpointPolicy,
        webhooks: WebhookDirectory, webhookDispatcher: WebhookDispatcher, webhookPolicy: WebhookAddressPolicy,
        sfu: SFURooms? = nil, recorder: RecordingWorker? = nil, clock: any SwitchboardClock, logger: Logger
    ) {
        self.sfu = sfu
        self.recorder = recorder
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
        self.view = cluster ?? SingleNode(registry: registry) as any ClusterView
        self.sessions = SessionServices(
            configuration: configuration, storage: storage, apps: apps, profiles: profiles, registry: registry,
            calls: calls, cluster: view, ledger: ledger, limiter: limiter, gate: gate, deadlines: deadlines,
            connections: connections, metrics: metrics, webPushEndpoints: webPushEndpoints,
            webhooks: webhooks, webhookDispatcher: webhookDispatcher, clock: clock)
    }

    /// The cluster as sessions and the admin API see it (``SingleNode`` without one).
    private let view: any ClusterView

    /// What each signaling session is handed: one for the node, which every session refers to.
    let sessions: SessionServices

    /// What the channel that accepts connections is handed.
    var channel: ChannelServices {
        ChannelServices(
            limits: configuration.connections, heartbeatInterval: configuration.heartbeatInterval,
            connections: connections, gate: gate, deadlines: deadlines, outboxes: outboxes, executors: executors,
            metrics: metrics,
            sessions: sessions)
    }

    /// What the admin API is handed.
    var admin: AdminServices {
        AdminServices(
            configuration: configuration, storage: storage, apps: apps, registry: registry, calls: calls,
            cluster: view, metrics: metrics, pushCredentials: pushCredentials, webhooks: webhooks,
            webhookDispatcher: webhookDispatcher, webhookPolicy: webhookPolicy, recorder: recorder, clock: clock)
    }
}
