import Foundation
import SwitchboardProtocol

/// What a signaling session (and the channel that accepts its connection) is handed: the parts of
/// its node it uses, and nothing else. Not the engine, the persistence writer, the push service
/// or the SFU: a session reaches calls only through ``calls`` (the engine on a single node, the
/// leader in a cluster), which answers each request.
struct SessionServices: Sendable {
    let configuration: ServerConfiguration
    let storage: any SwitchboardStorage
    let apps: AppDirectory
    let profiles: ProfileDirectory
    let registry: ConnectionRegistry
    /// Where call requests go: the engine, or the cluster's leader.
    let calls: any CallRouter
    /// The node's place in its cluster; nil for a single node.
    let cluster: ClusterNode?
    let ledger: RequestLedger
    let limiter: RateLimiter
    let gate: ConnectionGate
    let deadlines: ConnectionDeadlines
    let outboxes: LoopOutboxes
    let connections: NodeConnections
    let metrics: ServerMetrics
    let webPushEndpoints: WebPushEndpointPolicy
    let webhooks: WebhookDirectory
    let webhookDispatcher: WebhookDispatcher
    let clock: any SwitchboardClock

    /// Set once graceful shutdown began: logins are refused from then on.
    var isShuttingDown: Bool { connections.isShuttingDown }
}
