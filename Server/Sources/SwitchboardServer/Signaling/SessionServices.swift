import Foundation
import SwitchboardProtocol

/// What a signaling session is handed: the parts of its node it uses, and nothing else. Not the
/// engine, the persistence writer, the push service, the SFU or the cluster's bus: a session
/// reaches calls only through ``calls`` (the engine on a single node, the leader in a cluster),
/// which answers each request, and the other nodes only through ``cluster`` (a ``ClusterView``:
/// whether this node can write, and what to tell the others). The channel that accepts the
/// connection has its own (``ChannelServices``).
///
/// A class, made once per node: every connection's session holds a reference to it. As a struct
/// each session held its own copy of all of it, the configuration included (about 2.7 KiB per
/// held connection, docs/BENCHMARKS.md "The cost of a call and of a connection").
final class SessionServices: Sendable {
    let configuration: ServerConfiguration
    let storage: any SwitchboardStorage
    let apps: AppDirectory
    let profiles: ProfileDirectory
    let registry: ConnectionRegistry
    /// Where call requests go: the engine, or the cluster's leader.
    let calls: any CallRouter
    /// The node's place in its cluster (``SingleNode`` without one).
    let cluster: any ClusterView
    let ledger: RequestLedger
    let limiter: RateLimiter
    let gate: ConnectionGate
    let deadlines: ConnectionDeadlines
    let connections: NodeConnections
    let metrics: ServerMetrics
    let webPushEndpoints: WebPushEndpointPolicy
    let webhooks: WebhookDirectory
    let webhookDispatcher: WebhookDispatcher
    let clock: any SwitchboardClock

    init(
        configuration: ServerConfiguration, storage: any SwitchboardStorage, apps: AppDirectory,
        profiles: ProfileDirectory, registry: ConnectionRegistry, calls: any CallRouter, cluster: any ClusterView,
        ledger: RequestLedger, limiter: RateLimiter, gate: ConnectionGate, deadlines: ConnectionDeadlines,
        connections: NodeConnections, metrics: ServerMetrics,
        webPushEndpoints: WebPushEndpointPolicy, webhooks: WebhookDirectory, webhookDispatcher: WebhookDispatcher,
        clock: any SwitchboardClock
    ) {
        self.configuration = configuration
        self.storage = storage
        self.apps = apps
        self.profiles = profiles
        self.registry = registry
        self.calls = calls
        self.cluster = cluster
        self.ledger = ledger
        self.limiter = limiter
        self.gate = gate
        self.deadlines = deadlines
        self.connections = connections
        self.metrics = metrics
        self.webPushEndpoints = webPushEndpoints
        self.webhooks = webhooks
        self.webhookDispatcher = webhookDispatcher
        self.clock = clock
    }

    /// Set once graceful shutdown began: logins are refused from then on.
    var isShuttingDown: Bool { connections.isShuttingDown }
}
