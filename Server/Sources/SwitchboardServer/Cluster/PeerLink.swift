import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import WSClient

/// This node's link to one other node: a WebSocket to that node's link listener (``NodeLinks``),
/// and the messages for it.
///
/// Each message gets the next number of this link. It stays in the link until the other node says
/// it handled it (an acknowledgement: the number of the last message it handled), so a connection
/// lost with messages in flight loses none: the next connection starts with the other node's
/// greeting (the last number it handled from this node) and sends everything after it again, in
/// order. The other node handles each number once, in order (``NodeLinks``).
///
/// Bounded: at most ``maxMessages`` wait (the other node is slow, or unreachable for a while);
/// beyond that the oldest are dropped and counted as undelivered. A link to a node that left the
/// table (it left, or was taken for dead) is closed, and what it held is counted as undelivered.
final class PeerLink: Sendable {
    static let maxMessages = 100_000
    /// The largest message (a frame for clients is far smaller: ``ConnectionLimits``).
    static let maxFrame = 8 << 20

    let target: String
    /// This link's own id: its numbers start at 1, so the other node keeps what it handled per
    /// link, not per sender (a link made again after one was closed starts afresh).
    let id = randomHex(bytes: 8)
    private let from: String
    private let secret: String
    private let logger: Logger
    private let undelivered: @Sendable (Int, String) -> Void
    /// Where a node listens, from the node table (nil: it is not there), for a link that was
    /// not told yet.
    private let resolve: @Sendable (String) async throws -> String?

    private struct Pending {
        var number: UInt64
        var body: String
    }

    private enum Next {
        case batch([Pending])
        case over
        case wait
    }

    private struct State {
        var address: String?
        /// Messages not acknowledged yet, oldest first, from ``head`` on.
        var pending: [Pending] = []
        var head = 0
        var nextNumber: UInt64 = 1
        /// The last number written on the current connection (what follows is to be written).
        var written: UInt64 = 0
        /// The connection greeted last, while it lasts; connections are counted from 1, one at a
        /// time.
        var current: UInt64?
        var connections: UInt64 = 0
        /// The last connection that ended.
        var lastEnded: UInt64 = 0
        /// The writer waits here for something to write (or for its connection to end).
        var writer: CheckedContinuation<Void, Never>?
        var drainWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextDrainWaiter: UInt64 = 0
        var stopped = false
        /// Failed attempts in a row (for the log: the first, then every 50th).
        var failures = 0
        /// Messages dropped at the bound so far (for the log: the first, then every 1,000th).
        var dropped = 0

        var count: Int { pending.count - head }

        mutating func acknowledge(_ number: UInt64) {
            var index = head
            while index < pending.count, pending[index].number <= number { index += 1 }
            head = index
            if head > 1024, head * 2 > pending.count {
                pending.removeFirst(head)
                head = 0
            }
        }

        mutating func takeWriter() -> CheckedContinuation<Void, Never>? {
            defer { writer = nil }
            return writer
        }

        /// What the writer of `connection` does next: write a batch (noted as written), wait, or
        /// stop (the connection ended, or the link).
        mutating func next(for connection: UInt64) -> Next {
            if stopped || lastEnded >= connection { return .over }
            guard current == connection else { return .wait }
            var index = head
            while index < pending.count, pending[index].number <= written { index += 1 }
            guard index < pending.count else { return .wait }
            var end = index
            var bytes = 0
            repeat {
                bytes += pending[end].body.utf8.count
                end += 1
            } while end < pending.count && bytes < LinkFrame.bodyBytes && end - index < 1024
            let batch = Array(pending[index..<end])
            written = batch[batch.count - 1].number
            return .batch(batch)
        }

        mutating func takeDrainWaiters() -> [CheckedContinuation<Void, Never>] {
            guard count == 0 || stopped else { return [] }
            defer { drainWaiters.removeAll() }
            return Array(drainWaiters.values)
        }
    }

    private let state = NIOLockedValueBox(State())
    private let runner = NIOLockedValueBox<Task<Void, Never>?>(nil)

    init(
        target: String, from: String, secret: String, logger: Logger,
        resolve: @escaping @Sendable (String) async throws -> String?, undelivered: @escaping @Sendable (Int, String) -> Void
    ) {
        self.resolve = resolve
        self.target = target
        self.from = from
        self.secret = secret
        self.logger = logger
        self.undelivered = undelivered
        let task = Task { [weak self] in
            guard let self else { return }
            await self.run()
        }
        runner.withLockedValue { $0 = task }
    }

    /// Where the other node listens (`host:port`), from the node table (until it is told, the link
    /// looks it up itself before each attempt).
    func setAddress(_ address: String) {
        state.withLockedValue { $0.address = address }
    }

    /// Queues a message (its body as ``NodeMessage/body()`` writes it); never waits.
    func send(_ body: String) {
        let outcome = state.withLockedValue { state -> (writer: CheckedContinuation<Void, Never>?, dropped: Int, log: Bool)? in
            guard !state.stopped else { return nil }
            state.pending.append(Pending(number: state.nextNumber, body: body))
            state.nextNumber += 1
            var dropped = 0
            if state.count > Self.maxMessages {
                dropped = state.count - Self.maxMessages
                state.head += dropped
                state.dropped += dropped
            }
            return (state.takeWriter(), dropped, dropped > 0 && (state.dropped == 1 || state.dropped % 1000 == 0))
        }
        guard let outcome else {
            logger.error("a cluster message for a closed link dropped", metadata: ["node": "\(target)"])
            return undelivered(1, "closed")
        }
        if outcome.dropped > 0 { undelivered(outcome.dropped, "full") }
        if outcome.log {
            logger.error(
                "cluster messages dropped: the link holds too many", metadata: ["node": "\(target)", "so far": "\(state.withLockedValue { $0.dropped })"])
        }
        outcome.writer?.resume()
    }

    /// How many messages wait to be acknowledged.
    var waiting: Int { state.withLockedValue { $0.count } }

    /// Returns once every message queued so far is acknowledged, or after `bound` of real time.
    func drained(within bound: Duration) async {
        let timer = NIOLockedValueBox<Task<Void, Never>?>(nil)
        await withCheckedContinuation { continuation in
            let id = state.withLockedValue { state -> UInt64? in
                guard state.count > 0, !state.stopped else { return nil }
                defer { state.nextDrainWaiter += 1 }
                state.drainWaiters[state.nextDrainWaiter] = continuation
                return state.nextDrainWaiter
            }
            guard let id else { return continuation.resume() }
            timer.withLockedValue {
                $0 = Task {
                    try? await Task.sleep(for: bound)
                    self.state.withLockedValue { $0.drainWaiters.removeValue(forKey: id) }?.resume()
                }
            }
        }
        timer.withLockedValue { $0 }?.cancel()
    }

    /// Closes the link for good; what it still held is counted as undelivered with `reason`.
    func stop(reason: String) async {
        let (left, waiters, writer) = state.withLockedValue { state in
            state.stopped = true
            let left = state.count
            state.head = state.pending.count
            return (left, state.takeDrainWaiters(), state.takeWriter())
        }
        if left > 0 {
            logger.error(
                "cluster messages not delivered", metadata: ["node": "\(target)", "count": "\(left)", "reason": "\(reason)"])
            undelivered(left, reason)
        }
        for waiter in waiters { waiter.resume() }
        writer?.resume()
        let task = runner.withLockedValue { $0 }
        task?.cancel()
        await task?.value
    }

    // MARK: - the connection

    private func run() async {
        var delay: Duration = .milliseconds(50)
        var failed = false
        while !Task.isCancelled, !state.withLockedValue({ $0.stopped }) {
            var address = state.withLockedValue { $0.address }
            // Not told yet, or the last attempt failed: the table may know better (the node
            // restarted on another port, or this node's last read was before it joined).
            if address == nil || failed, let found = await lookUp(), !found.isEmpty {
                setAddress(found)
                address = found
            }
            failed = true
            if let address, await connectOnce(to: address) {
                delay = .milliseconds(50)
                failed = false
            }
            if state.withLockedValue({ $0.stopped }) { return }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(2))
        }
    }

    /// The other node's address as the table has it now, or nil after 2 s of real time: a node
    /// cut off from its database (its queries wait, they do not fail, nor end when cancelled) goes
    /// on with the address it knew. The query that did not answer is left to finish by itself.
    private func lookUp() async -> String? {
        let waiter = NIOLockedValueBox<CheckedContinuation<String?, Never>?>(nil)
        @Sendable func settle(_ value: String?) {
            waiter.withLockedValue { waiter in
                defer { waiter = nil }
                return waiter
            }?.resume(returning: value)
        }
        return await withCheckedContinuation { continuation in
            waiter.withLockedValue { $0 = continuation }
            let (resolve, target) = (self.resolve, self.target)
            Task { settle(try? await resolve(target)) }
            Task {
                try? await Task.sleep(for: .seconds(2))
                settle(nil)
            }
        }
    }

    /// One connection, until it fails or the link stops; returns whether the other node greeted it.
    private func connectOnce(to address: String) async -> Bool {
        var headers = HTTPFields()
        headers[.authorization] = "Bearer " + secret
        headers[NodeLinks.nodeHeader] = from
        headers[NodeLinks.linkHeader] = id
        let greeted = NIOLockedValueBox(false)
        do {
            try await WebSocketClient.connect(
                url: "ws://\(address)\(NodeLinks.path)",
                configuration: WebSocketClientConfiguration(
                    maxFrameSize: Self.maxFrame, additionalHeaders: headers, closeTimeout: .seconds(1),
                    autoPing: .enabled(timePeriod: .seconds(5))),
                logger: logger
            ) { inbound, outbound, _ in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    let connection = self.state.withLockedValue { state -> UInt64 in
                        state.connections += 1
                        return state.connections
                    }
                    group.addTask {
                        // However the reading ends (the connection closed, or failed), the writer
                        // stops waiting for it.
                        defer { self.ended(connection) }
                        // The greeting (the last number the other node handled from this one),
                        // then its acknowledgements.
                        for try await message in inbound.messages(maxSize: 64) {
                            guard case .text(let text) = message, let number = UInt64(text) else {
                                throw NodeLinkError.unreadable
                            }
                            if greeted.withLockedValue({ $0 }) {
                                self.acknowledged(number)
                            } else {
                                greeted.withLockedValue { $0 = true }
                                self.greeted(number, connection: connection)
                            }
                        }
                    }
                    while let batch = await self.nextBatch(connection: connection) {
                        try await outbound.write(.text(LinkFrame.encode(batch.map { ($0.number, $0.body) })))
                    }
                    // The link stopped, or the connection ended: close it (the other node answers the
                    // close, which ends the reading; one that does not gets 1 s).
                    try? await outbound.close(.goingAway, reason: nil)
                    group.cancelAll()
                    self.ended(connection)
                }
            }
        } catch {
            let count = state.withLockedValue { state -> Int in
                state.failures += 1
                return state.failures
            }
            if count == 1 || count % 50 == 0 {
                logger.warning(
                    "cluster link to a node failed", metadata: ["node": "\(target)", "error": "\(error)", "attempts": "\(count)"])
            }
        }
        if greeted.withLockedValue({ $0 }) { state.withLockedValue { $0.failures = 0 } }
        return greeted.withLockedValue { $0 }
    }

    private func greeted(_ number: UInt64, connection: UInt64) {
        let (waiters, writer) = state.withLockedValue { state in
            state.acknowledge(number)
            // Everything after what the other node handled is written (again) on this connection.
            state.written = number
            state.current = connection
            return (state.takeDrainWaiters(), state.takeWriter())
        }
        for waiter in waiters { waiter.resume() }
        writer?.resume()
    }

    private func acknowledged(_ number: UInt64) {
        let waiters = state.withLockedValue { state in
            state.acknowledge(number)
            return state.takeDrainWaiters()
        }
        for waiter in waiters { waiter.resume() }
    }

    private func ended(_ connection: UInt64) {
        let writer = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            state.lastEnded = max(state.lastEnded, connection)
            if state.current == connection { state.current = nil }
            return state.takeWriter()
        }
        writer?.resume()
    }

    /// What to write next on `connection`: the messages after the last written, once it is
    /// greeted; nil once it ended or the link stopped.
    private func nextBatch(connection: UInt64) async -> [Pending]? {
        while true {
            var next = Next.wait
            await withCheckedContinuation { continuation in
                next = state.withLockedValue { state in
                    let next = state.next(for: connection)
                    if case .wait = next { state.writer = continuation }
                    return next
                }
                if case .wait = next { return }
                continuation.resume()
            }
            switch next {
            case .batch(let batch): return batch
            case .over: return nil
            case .wait: continue
            }
        }
    }
}

enum NodeLinkError: Error {
    /// The other end sent what a link does not carry.
    case unreadable
}
