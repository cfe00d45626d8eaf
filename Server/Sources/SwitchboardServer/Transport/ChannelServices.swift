/// What accepting a connection needs (``SignalingChannel``): ids, the gate, the deadlines, the
/// event loops' outboxes, the limits and the heartbeat, the metrics; and what each session on it
/// is handed (``sessions``).
struct ChannelServices: Sendable {
    let limits: ConnectionLimits
    /// Seconds between pings (``ServerConfiguration/heartbeatInterval``).
    let heartbeatInterval: Int
    let connections: NodeConnections
    let gate: ConnectionGate
    let deadlines: ConnectionDeadlines
    let outboxes: PerEventLoop<LoopOutbox>
    let executors: PerEventLoop<EventLoopTaskExecutor>
    let metrics: ServerMetrics
    let sessions: SessionServices
}
