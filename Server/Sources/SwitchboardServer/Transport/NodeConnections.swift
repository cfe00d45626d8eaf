import NIOConcurrencyHelpers

/// The node's connections as a count: each accepted connection's number, and whether the node
/// began to shut down (logins are refused from then on).
final class NodeConnections: Sendable {
    private let state = NIOLockedValueBox<(last: UInt64, shuttingDown: Bool)>((0, false))

    /// The next connection's number (from 1).
    func nextID() -> UInt64 {
        state.withLockedValue { state in
            state.last += 1
            return state.last
        }
    }

    var isShuttingDown: Bool { state.withLockedValue { $0.shuttingDown } }

    func beginShutdown() { state.withLockedValue { $0.shuttingDown = true } }
}
