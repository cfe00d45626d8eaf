/// Whether a cluster node still reaches its database, judged from its heartbeats alone
/// (docs/ARCHITECTURE.md, "Failures").
///
/// The heartbeat is a query: while the database is cut off without a word (packets dropped, not
/// refused) it neither succeeds nor fails, it waits. So a node cannot learn from its heartbeat that
/// the leader is about to take it for dead; it learns it from the clock. Once no heartbeat has
/// reached the database for ``timeout`` (the cluster's `nodeTimeout`, after which the leader takes
/// a node for dead and starts the reconnect grace of its devices) the node is **cut off**: it
/// closes its connections, so its clients go to another node within the grace, and refuses what
/// needs the database until a heartbeat gets through again.
struct DatabaseWatch: Equatable {
    enum Phase: Equatable {
        case reachable
        case cutOff
    }

    /// What the node does on a transition.
    enum Action: Equatable {
        /// Close every connection (`sessionEnded` `shuttingDown`, close 1012: come back, here or
        /// elsewhere) and refuse the requests waiting for the leader.
        case closeConnections
        /// A heartbeat got through after a cut: serve again.
        case serve
    }

    let timeout: Int64
    private(set) var phase: Phase = .reachable
    /// When the last heartbeat reached the database (Unix ms).
    private(set) var lastHeartbeat: Int64

    /// A node that starts counts its start as a heartbeat: its first one may hang too.
    init(timeout: Int64, startedAt: Int64) {
        self.timeout = timeout
        self.lastHeartbeat = startedAt
    }

    var isCutOff: Bool { phase == .cutOff }

    /// A heartbeat, written at `at`, reached the database.
    mutating func heartbeatSucceeded(at: Int64) -> Action? {
        lastHeartbeat = max(lastHeartbeat, at)
        guard phase == .cutOff else { return nil }
        phase = .reachable
        return .serve
    }

    /// The watchdog's look at `now`: cut off once the last heartbeat is `timeout` old. The leader
    /// takes the node for dead when its heartbeat is *older* than that, so the node closes its
    /// connections no later than the leader starts their grace.
    mutating func check(now: Int64) -> Action? {
        guard phase == .reachable, now - lastHeartbeat >= timeout else { return nil }
        phase = .cutOff
        return .closeConnections
    }
}
