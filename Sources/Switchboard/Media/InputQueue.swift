import Logging
import NIOConcurrencyHelpers

/// The inputs of one connection's task, in order: the peer's signals, relayed by the server, and
/// the engine's own events (candidates, negotiation needs, ICE states) and the SDK's (a network
/// change). At most ``limit`` of the peer's signals wait: a task stuck in its engine, or a peer
/// sending faster than the engine takes it, would otherwise hold them all. Beyond the bound a
/// signal is dropped and logged. The engine's and the SDK's inputs have ``limit`` more places of
/// their own (they come a few per negotiation), so a restart asked after a flood still happens;
/// only a task stuck through thousands of them drops those too, also logged. A negotiation that
/// missed a dropped step ends in ICE failure, whose restart negotiates afresh.
struct InputQueue<Input: Sendable>: Sendable {
    /// The peer's signals waiting at most: a whole negotiation (two descriptions and their
    /// candidates) is a few dozen.
    static var limit: Int { 4096 }

    let stream: AsyncStream<Input>
    private let continuation: AsyncStream<Input>.Continuation
    private let counts = NIOLockedValueBox((waiting: 0, dropped: 0))
    private let logger: Logger
    private let name: String

    init(_ name: String, logger: Logger) {
        (stream, continuation) = AsyncStream<Input>.makeStream(bufferingPolicy: .bufferingOldest(2 * Self.limit))
        self.logger = logger
        self.name = name
    }

    /// An input of the engine or the SDK: queued while the stream has room.
    func yield(_ input: Input) {
        if case .dropped = continuation.yield(input) { countDropped() }
    }

    /// A signal from the peer: queued unless ``limit`` wait already. The task calls
    /// ``signalTaken()`` for each one it takes.
    func yieldSignal(_ input: Input) {
        let room = counts.withLockedValue { counts -> Bool in
            guard counts.waiting < Self.limit else { return false }
            counts.waiting += 1
            return true
        }
        guard room else { return countDropped() }
        if case .dropped = continuation.yield(input) {
            signalTaken()
            countDropped()
        }
    }

    private func countDropped() {
        let dropped = counts.withLockedValue { counts -> Int in
            counts.dropped += 1
            return counts.dropped
        }
        // Once, then every thousandth: a flood must not become a flood of log lines.
        if dropped == 1 || dropped % 1000 == 0 {
            logger.warning("a connection's inputs are full: dropped", metadata: ["connection": "\(name)", "dropped": "\(dropped)"])
        }
    }

    /// The task took a signal off the queue.
    func signalTaken() {
        counts.withLockedValue { $0.waiting = max(0, $0.waiting - 1) }
    }

    func finish() { continuation.finish() }

    /// Inputs dropped so far (tests).
    var droppedCount: Int { counts.withLockedValue { $0.dropped } }
}
