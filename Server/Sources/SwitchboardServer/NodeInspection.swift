import SwitchboardProtocol

/// What tests may look at inside a running node (through `@testable import`): the stores and the
/// parts whose state a test observes or drives. The node's own code never uses it: each part is
/// handed only what it uses (``SessionServices``, ``ChannelServices``, ``AdminServices``,
/// ``SignalingShutdown``), and the node's whole ``NodeContext`` stays private to it.
struct NodeInspection {
    let storage: any SwitchboardStorage
    let apps: AppDirectory
    let profiles: ProfileDirectory
    let registry: ConnectionRegistry
    let engine: CallEngine
    let cluster: ClusterNode?
    let ledger: RequestLedger
    let gate: ConnectionGate
    let deadlines: ConnectionDeadlines
    let metrics: ServerMetrics
    let push: PushService
    let sfu: SFURooms?

    init(_ context: NodeContext) {
        storage = context.storage
        apps = context.apps
        profiles = context.profiles
        registry = context.registry
        engine = context.engine
        cluster = context.cluster
        ledger = context.ledger
        gate = context.gate
        deadlines = context.deadlines
        metrics = context.metrics
        push = context.push
        sfu = context.sfu
    }
}
