import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOPosix
import NIOSSL
import PostgresNIO
import SwitchboardProtocol

/// Messages between the nodes of a cluster, through PostgreSQL: a message is a row of the unlogged
/// table `switchboard_messages` for its target node (a row per node for a message to every other
/// node), and a `NOTIFY` on the target's channel (`sb_<node>`) wakes the target, which takes
/// (deletes) every row for it, oldest first. So the payload has no size limit (PostgreSQL's notifications hold 8,000 bytes), and nothing relies on a
/// notification arriving: a node also looks every second, and again each time its `LISTEN`
/// connection comes back, for rows it was not woken for.
///
/// Order: one node's messages to one target are inserted in the order they were sent, by one task,
/// and taken in id order, one batch at a time; so they are handled in the order they were sent.
///
/// Bounded: at most ``maxOutbox`` messages wait to be written (while the database does not answer);
/// beyond that the oldest are dropped and logged (clients resynchronise on their next login).
///
/// Clean: every message taken leaves a dead row, which each later take of its target would visit
/// again until the table is vacuumed (a take cost 1.5 ms instead of 0.05 ms after 20 s at 300
/// calls/s, far more than everything else the cluster asks of PostgreSQL, and autovacuum looks
/// only once a minute). So a node vacuums the table after every ``vacuumEvery`` messages it took.
final class ClusterBus: Sendable {
    let node: String
    let channel: String
    private let client: PostgresClient
    private let location: PostgresStorage.Location
    private let logger: Logger
    static let maxOutbox = 100_000
    static let vacuumEvery = 500

    private struct Outbox {
        var messages: [(target: String, body: String)] = []
        var flushing = false
        var dropped = 0
        /// Who waits for the messages queued so far to be written (``drained(within:)``), by a
        /// number of their own; each is resumed once, when the outbox empties or its bound passes
        /// (so there are never more than the callers waiting at once).
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
        /// The bus stopped: what is still queued is dropped, and nothing is written any more.
        var stopped = false
    }

    private struct Inbox {
        var draining = false
        var again = false
        var handler: (@Sendable ([BusMessage]) async -> Void)?
        var listener: Task<Void, Never>?
        var stopped = false
        /// Messages taken since the last vacuum started.
        var takenSinceVacuum = 0
        var vacuuming = false
        /// The `LISTEN` connection while it is up, and its event loop's executor (see ``listen()``).
        var connection: PostgresConnection?
        var executor: EventLoopTaskExecutor?
    }

    private let outbox = NIOLockedValueBox(Outbox())
    private let inbox = NIOLockedValueBox(Inbox())

    init(node: String, client: PostgresClient, location: PostgresStorage.Location, logger: Logger) {
        self.node = node
        self.channel = Self.channel(of: node)
        self.client = client
        self.location = location
        self.logger = logger
    }

    /// The notification channel of a node (node ids are letters, digits and `-`); the statement
    /// that sends messages names it the same way.
    static func channel(of node: String) -> String { "sb_" + node.replacingOccurrences(of: "-", with: "_") }

    // MARK: - sending

    /// Returns once every message queued so far is written (the outbox is empty), or after
    /// `bound` of real time (a node that leaves without its database must not wait for it, and a
    /// test clock would never move).
    func drained(within bound: Duration) async {
        let timer = NIOLockedValueBox<Task<Void, Never>?>(nil)
        await withCheckedContinuation { continuation in
            let id = outbox.withLockedValue { outbox -> UInt64? in
                guard !outbox.messages.isEmpty else { return nil }
                defer { outbox.nextWaiter += 1 }
                outbox.waiters[outbox.nextWaiter] = continuation
                return outbox.nextWaiter
            }
            guard let id else { return continuation.resume() }
            timer.withLockedValue {
                $0 = Task {
                    try? await Task.sleep(for: bound)
                    self.resumeWaiter(id)
                }
            }
        }
        timer.withLockedValue { $0 }?.cancel()
    }

    private func resumeWaiter(_ id: UInt64) {
        outbox.withLockedValue { $0.waiters.removeValue(forKey: id) }?.resume()
    }

    /// Queues a message for `target`; never waits.
    func send(_ message: BusMessage, to target: String) {
        queue(message, to: target)
    }

    /// Queues a message for every other node in the table when it is written, not the nodes this
    /// one knew when it sent it: a node that joined since this one last looked gets it too
    /// (``PostgresStatements/SendMessagesToEveryNode``). Never waits.
    func sendToEveryOtherNode(_ message: BusMessage) {
        queue(message, to: Self.everyOtherNode)
    }

    /// The target of a message for every other node (node ids are never empty).
    private static let everyOtherNode = ""

    private func queue(_ message: BusMessage, to target: String) {
        guard let body = try? message.body() else {
            logger.error("a cluster message could not be encoded")
            return
        }
        let start = outbox.withLockedValue { outbox -> Bool in
            guard !outbox.stopped else { return false }
            outbox.messages.append((target, body))
            if outbox.messages.count > Self.maxOutbox {
                outbox.messages.removeFirst(outbox.messages.count - Self.maxOutbox)
                outbox.dropped += 1
            }
            guard !outbox.flushing else { return false }
            outbox.flushing = true
            return true
        }
        // The writing task runs where its statements are written: on the `LISTEN` connection's
        // event loop (``run(_:)``), or, without it, on the sender's event loop if it has one
        // (that thread is awake, another may not be).
        guard start else { return }
        let executor =
            inbox.withLockedValue { $0.executor } ?? MultiThreadedEventLoopGroup.currentEventLoop.map(EventLoopTaskExecutor.init)
        Task(executorPreference: executor) { await self.flushLoop() }
    }

    private func flushLoop() async {
        var delay: Duration = .milliseconds(50)
        while true {
            // Stopped (``stop()`` dropped what was queued): a write that was under way is done.
            let stopped = outbox.withLockedValue { outbox in
                if outbox.stopped { outbox.flushing = false }
                return outbox.stopped
            }
            if stopped { return }
            let (batch, dropped) = outbox.withLockedValue { outbox -> ([(target: String, body: String)], Int) in
                defer { outbox.dropped = 0 }
                return (Array(outbox.messages.prefix(2_000)), outbox.dropped)
            }
            if dropped > 0 { logger.error("cluster messages dropped: the database did not take them", metadata: ["count": "\(dropped)"]) }
            guard !batch.isEmpty else {
                let waiters = outbox.withLockedValue { outbox -> [CheckedContinuation<Void, Never>]? in
                    guard outbox.messages.isEmpty else { return nil }
                    outbox.flushing = false
                    defer { outbox.waiters.removeAll() }
                    return Array(outbox.waiters.values)
                }
                guard let waiters else { continue }
                for waiter in waiters { waiter.resume() }
                return
            }
            do {
                try await write(batch)
                outbox.withLockedValue { $0.messages.removeFirst(min(batch.count, $0.messages.count)) }
                delay = .milliseconds(50)
            } catch {
                logger.warning("cluster messages not written yet", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(2))
            }
        }
    }

    /// One statement: the rows, then a notification per target (delivered at its commit, when the
    /// rows are there to read). A transaction that writes only the unlogged table writes no WAL,
    /// so its commit does not wait for the disk.
    ///
    /// Written on the `LISTEN` connection while it is up, as the takes are: no lease from the
    /// pool, and that connection's backend and event loop are the ones already awake (a thirteenth
    /// less CPU on a node that does not lead, and a quarter off the invitation's median at 300
    /// calls/s: docs/BENCHMARKS.md, "Cluster"). Without it, a connection from the pool.
    private func write(_ batch: [(target: String, body: String)]) async throws {
        let targets = batch.map(\.target)
        if targets.contains(Self.everyOtherNode) {
            _ = try await run(PostgresStatements.SendMessagesToEveryNode(targets: targets, bodies: batch.map(\.body), sender: node))
        } else {
            let statement = PostgresStatements.SendMessages(
                targets: targets, bodies: batch.map(\.body), channels: Array(Set(targets)).map(Self.channel(of:)))
            _ = try await run(statement)
        }
    }

    /// Runs `statement` on the `LISTEN` connection while it is up, on a pool connection otherwise.
    private func run<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [Statement.Row]
    where Statement.Row: Sendable {
        let (connection, executor) = inbox.withLockedValue { ($0.connection, $0.executor) }
        guard let connection, let executor else {
            return try await client.execute(statement, logger: logger).collect()
        }
        return try await connection.whileOpen(on: executor) { try await $0.execute(statement, logger: self.logger).collect() }
    }

    // MARK: - receiving

    /// Starts listening; `handler` gets this node's messages in order, one batch at a time.
    func start(_ handler: @escaping @Sendable ([BusMessage]) async -> Void) {
        inbox.withLockedValue { $0.handler = handler }
        let listener = Task { await self.listen() }
        inbox.withLockedValue { $0.listener = listener }
    }

    /// Stops listening, and writing: a flush that waits for the database gives up, and what it
    /// still held is dropped (a node that stops has given the bus its moment in ``drained(within:)``).
    func stop() async {
        let (left, waiters) = outbox.withLockedValue { outbox in
            outbox.stopped = true
            defer {
                outbox.messages.removeAll()
                outbox.waiters.removeAll()
            }
            return (outbox.messages.count, Array(outbox.waiters.values))
        }
        if left > 0 { logger.warning("cluster messages dropped: the bus stopped", metadata: ["count": "\(left)"]) }
        for waiter in waiters { waiter.resume() }
        let listener = inbox.withLockedValue { inbox -> Task<Void, Never>? in
            inbox.stopped = true
            return inbox.listener
        }
        listener?.cancel()
        await listener?.value
    }

    /// Keeps a `LISTEN` connection open (reconnecting after a failure), taking this node's
    /// messages whenever it is woken, and once after every (re)connection.
    ///
    /// The takes run on the same connection, and the tasks that wait for its notifications and
    /// take the messages prefer its event loop (so do the handlers they call, the leader's engine
    /// included, while they hold it): a notification, its take and the handling of what it
    /// brought need no other thread to wake, each of which costs a fraction of a millisecond on
    /// an idle machine (docs/BENCHMARKS.md, "Cluster"). Without the connection (it is down) a
    /// take borrows one from the pool.
    private func listen() async {
        var delay: Duration = .milliseconds(100)
        while !Task.isCancelled {
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: try location.connectionConfiguration(), id: 1, logger: logger)
                delay = .milliseconds(100)
                let executor = EventLoopTaskExecutor(connection.eventLoop)
                inbox.withLockedValue { inbox in
                    inbox.connection = connection
                    inbox.executor = executor
                }
                defer {
                    inbox.withLockedValue { inbox in
                        inbox.connection = nil
                        inbox.executor = nil
                    }
                    Task { try? await connection.close() }
                }
                try await withTaskExecutorPreference(executor) {
                    try await connection.listen(on: channel) { notifications in
                        // Whatever arrived while nobody listened.
                        self.drainSoon()
                        for try await _ in notifications { self.drainSoon() }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("cluster listener reconnecting", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(2))
            }
        }
    }

    /// Whether the `LISTEN` connection is up.
    var isListening: Bool { inbox.withLockedValue { $0.connection != nil } }

    /// Takes this node's messages now, or right after the batch being taken.
    func drainSoon() {
        let (start, executor) = inbox.withLockedValue { inbox -> (Bool, EventLoopTaskExecutor?) in
            guard !inbox.stopped else { return (false, nil) }
            if inbox.draining {
                inbox.again = true
                return (false, nil)
            }
            inbox.draining = true
            return (true, inbox.executor)
        }
        guard start else { return }
        Task(executorPreference: executor) {
            repeat {
                self.inbox.withLockedValue { $0.again = false }
                await self.drainOnce()
            } while self.inbox.withLockedValue({ inbox in
                if inbox.again && !inbox.stopped { return true }
                inbox.draining = false
                return false
            })
        }
    }

    private func drainOnce() async {
        guard let handler = inbox.withLockedValue({ $0.handler }) else { return }
        var rows: [(Int64, String)]
        do {
            rows = try await run(PostgresStatements.TakeMessages(target: node))
        } catch {
            logger.warning("cluster messages not read", metadata: ["error": "\(error)"])
            return
        }
        guard !rows.isEmpty else { return }
        vacuumIfDue(taken: rows.count)
        rows.sort { $0.0 < $1.0 }
        var messages: [BusMessage] = []
        messages.reserveCapacity(rows.count)
        for (_, body) in rows {
            do {
                messages.append(try BusMessage(body: body))
            } catch {
                logger.error("unreadable cluster message dropped", metadata: ["error": "\(error)"])
            }
        }
        await handler(messages)
    }
}

extension ClusterBus {
    /// Vacuums the message table in the background once enough messages were taken (one vacuum at
    /// a time here; one that another node or autovacuum is running is skipped).
    fileprivate func vacuumIfDue(taken: Int) {
        let start = inbox.withLockedValue { inbox -> Bool in
            inbox.takenSinceVacuum += taken
            guard inbox.takenSinceVacuum >= Self.vacuumEvery, !inbox.vacuuming, !inbox.stopped else { return false }
            inbox.takenSinceVacuum = 0
            inbox.vacuuming = true
            return true
        }
        guard start else { return }
        Task {
            do {
                try await client.query("VACUUM (SKIP_LOCKED) switchboard_messages", logger: logger)
            } catch {
                logger.warning("cluster message table not vacuumed", metadata: ["error": "\(error)"])
            }
            inbox.withLockedValue { $0.vacuuming = false }
        }
    }
}

extension PostgresConnection {
    /// Runs `body` on this connection unless it has closed, failing with
    /// ``ClusterError/connectionClosed`` then.
    ///
    /// postgres-nio loses a statement written to a connection that has closed (the write's failure
    /// is dropped, so the statement never answers, and whoever waits for it waits forever). So the
    /// check and the write happen on the connection's event loop (`executor`, one for that loop),
    /// where it cannot close in between; a connection that closes afterwards fails the statements
    /// it holds.
    func whileOpen<Result: Sendable>(
        on executor: EventLoopTaskExecutor, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withTaskExecutorPreference(executor) {
            guard !isClosed else { throw ClusterError.connectionClosed }
            return try await body(self)
        }
    }
}

extension PostgresStorage.Location {
    /// The same database, for one connection of its own (not from the pool).
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password, database: database,
            tls: requireTLS ? .require(try NIOSSLContext(configuration: .makeClientConfiguration())) : .disable)
        configuration.options.additionalStartupParameters = Self.startupParameters
        return configuration
    }
}
