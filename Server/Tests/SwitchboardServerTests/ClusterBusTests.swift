import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import SwitchboardTestServers
import Testing

@testable import SwitchboardServer

/// The cluster's message bus on a real PostgreSQL server.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable)) struct ClusterBusTests {
    /// What a node received, in order, with a way to wait for a count.
    final class Inbox: Sendable {
        private let received = NIOLockedValueBox<[BusMessage]>([])
        private let waiters = NIOLockedValueBox<[(Int, CheckedContinuation<Void, Never>)]>([])

        func take(_ messages: [BusMessage]) {
            let count = received.withLockedValue { received -> Int in
                received += messages
                return received.count
            }
            let ready = waiters.withLockedValue { waiters -> [CheckedContinuation<Void, Never>] in
                let ready = waiters.filter { $0.0 <= count }.map(\.1)
                waiters.removeAll { $0.0 <= count }
                return ready
            }
            ready.forEach { $0.resume() }
        }

        var messages: [BusMessage] { received.withLockedValue { $0 } }

        func wait(for count: Int) async {
            await withCheckedContinuation { continuation in
                let now = received.withLockedValue { $0.count }
                if now >= count {
                    continuation.resume()
                } else {
                    waiters.withLockedValue { $0.append((count, continuation)) }
                }
            }
        }
    }

    /// Two buses on a fresh database, "a" sending to "b", which hands what it receives to `inbox`.
    /// `listenAt` changes where "b"'s own `LISTEN` connection goes (its pool is the database's).
    struct Pair {
        let storage: PostgresStorage
        let sender: ClusterBus
        let receiver: ClusterBus
        let inbox = Inbox()

        /// - Parameter senderListens: the sender runs too, so it writes on its own `LISTEN`
        ///   connection (once that is up) rather than the pool's.
        init(listenAt change: (inout PostgresStorage.Location) -> Void = { _ in }, senderListens: Bool = false) async throws {
            let logger = Logger(label: "test.bus")
            let location = try #require(PostgresStorage.Location(url: try await PostgresTestDatabase.create()))
            storage = try await PostgresStorage(location, logger: logger)
            var listening = location
            change(&listening)
            sender = ClusterBus(node: "a", client: storage.client, location: location, logger: logger)
            receiver = ClusterBus(node: "b", client: storage.client, location: listening, logger: logger)
            receiver.start { [inbox] in inbox.take($0) }
            if senderListens {
                sender.start { _ in }
                while !sender.isListening { await Task.yield() }
            }
        }

        func stop() async {
            await sender.stop()
            await receiver.stop()
            await storage.shutdown()
        }
    }

    static func message(_ number: Int) -> BusMessage { .reply(token: UInt64(number), reply: .ok) }

    /// Every message taken leaves a dead row; the bus vacuums them away as it goes, so the table
    /// holds about what is in flight, not everything that ever went through it. Without the vacuum,
    /// 15,000 small messages leave the table (with its indexes) at about 1.8 MB here, and each take
    /// visits every dead row of its target again; with it, 180–280 KB (the vacuum runs in the
    /// background, so how far the table grows between two depends on the machine's load: the bound
    /// is well above that and well below the table without it).
    @Test(.timeLimit(.minutes(1))) func theMessageTableStaysTheSizeOfWhatIsInFlight() async throws {
        let pair = try await Pair()
        let (sender, inbox) = (pair.sender, pair.inbox)

        let rounds = 30
        let perRound = ClusterBus.vacuumEvery
        for round in 1...rounds {
            for _ in 0..<perRound { sender.send(.appsChanged, to: "b") }
            await inbox.wait(for: round * perRound)
        }
        #expect(inbox.messages.count == rounds * perRound)
        #expect(inbox.messages.allSatisfy { $0 == .appsChanged })

        let bytes = try await Self.tableSize(pair.storage)
        print("message table after \(rounds * perRound) messages: \(bytes) bytes")
        #expect(bytes <= 768 * 1024, "the message table holds \(bytes) bytes after \(rounds * perRound) messages")
        await pair.stop()
    }

    /// Messages sent while the database drops every connection (the receiver's `LISTEN`
    /// connection, which also takes its messages, the pool's, and the sender's `LISTEN` connection
    /// it writes on when it runs) arrive once the receiver is back, each once and in the order
    /// sent: nothing relies on a notification that was lost with its connection.
    @Test(.timeLimit(.minutes(1)), arguments: [false, true])
    func messagesSentWhileTheConnectionsDropArriveOnceAndInOrder(senderListens: Bool) async throws {
        let pair = try await Pair(senderListens: senderListens)
        let (sender, inbox) = (pair.sender, pair.inbox)
        for number in 1...50 { sender.send(Self.message(number), to: "b") }
        await inbox.wait(for: 50)
        let dropped = try await Self.dropConnections(pair.storage)
        #expect(dropped >= 1, "no connection of the bus was dropped")
        for number in 51...100 { sender.send(Self.message(number), to: "b") }
        await inbox.wait(for: 100)
        // A later message, so that a duplicate of any of the first hundred would be in by now.
        sender.send(.appsChanged, to: "b")
        await inbox.wait(for: 101)

        #expect(inbox.messages == (1...100).map(Self.message) + [.appsChanged])
        await pair.stop()
    }

    /// A message for every other node goes to the nodes in the table when it is written, not the
    /// ones the sender knew: "b" and "c" registered without the sender ever looking. Each gets it
    /// once, in its place among the messages sent to it alone; the sender gets none.
    @Test(.timeLimit(.minutes(1))) func aMessageForEveryNodeReachesTheNodesInTheTableWhenWritten() async throws {
        let pair = try await Pair()
        let store = ClusterStore(client: pair.storage.client, logger: Logger(label: "test.bus"))
        for node in ["a", "b", "c"] { #expect(try await store.heartbeat(node, startedAt: 1, now: 1) == .joined) }
        #expect(try await store.heartbeat("b", startedAt: 1, now: 2) == .present)
        pair.sender.send(Self.message(1), to: "b")
        pair.sender.sendToEveryOtherNode(.appsChanged)
        pair.sender.send(Self.message(2), to: "b")
        await pair.inbox.wait(for: 3)
        #expect(pair.inbox.messages == [Self.message(1), .appsChanged, Self.message(2)])
        // "c" does not run: its message waits in the table, the only row left.
        while try await Self.rowCount(pair.storage) > 1 { await Task.yield() }
        let left = try await Self.scalar(pair.storage, "SELECT count(*)::bigint FROM switchboard_messages WHERE target = 'c'")
        #expect(left == 1)
        await pair.stop()
    }

    /// A node that leaves waits for what it queued to be written (`drained`), and not past the
    /// bound when the database cannot take it.
    @Test(.timeLimit(.minutes(1))) func drainedReturnsOnceTheQueuedMessagesAreWritten() async throws {
        let pair = try await Pair()
        // To a node that does not run: every row stays in the table.
        for number in 1...200 { pair.sender.send(Self.message(number), to: "z") }
        await pair.sender.drained(within: .seconds(60))
        #expect(try await Self.rowCount(pair.storage) == 200)
        await pair.sender.drained(within: .seconds(60))  // nothing queued: at once

        // A bus whose database refuses every connection keeps its messages; drained ends at its bound.
        let logger = Logger(label: "test.bus")
        var nowhere = try #require(PostgresStorage.Location(url: try await PostgresTestDatabase.create()))
        nowhere.port = 1
        let client = PostgresClient(configuration: nowhere.configuration, backgroundLogger: logger)
        let runner = Task { await client.run() }
        let stranded = ClusterBus(node: "x", client: client, location: nowhere, logger: logger)
        stranded.send(Self.message(1), to: "b")
        await stranded.drained(within: .milliseconds(50))
        // Stopped, it gives up on the message instead of retrying for good.
        await stranded.stop()
        await stranded.drained(within: .seconds(60))
        runner.cancel()
        await runner.value
        await pair.stop()
    }

    /// Without its `LISTEN` connection (here it cannot connect at all), a node still gets its
    /// messages when it looks (as every heartbeat does): the take borrows a pool connection.
    @Test(.timeLimit(.minutes(1))) func withoutItsListenConnectionANodeTakesFromThePool() async throws {
        // Nothing listens on port 1: the receiver's LISTEN connection is refused, again and again.
        let pair = try await Pair(listenAt: { $0.port = 1 })
        for number in 1...3 { pair.sender.send(Self.message(number), to: "b") }
        while try await Self.rowCount(pair.storage) < 3 { await Task.yield() }
        pair.receiver.drainSoon()
        await pair.inbox.wait(for: 3)
        #expect(pair.inbox.messages == (1...3).map(Self.message))
        #expect(try await Self.rowCount(pair.storage) == 0)
        await pair.stop()
    }

    /// A statement for a connection that has closed fails (postgres-nio, asked directly, never
    /// answers it: the bus and the leader's lock would wait forever).
    @Test(.timeLimit(.minutes(1))) func aStatementForAClosedConnectionFails() async throws {
        let logger = Logger(label: "test.bus")
        let location = try #require(PostgresStorage.Location(url: try await PostgresTestDatabase.create()))
        let connection = try await PostgresConnection.connect(configuration: try location.connectionConfiguration(), id: 9, logger: logger)
        let executor = EventLoopTaskExecutor(connection.eventLoop)
        @Sendable func one(_ connection: PostgresConnection) async throws -> Int {
            try await connection.query("SELECT 1", logger: logger).decode(Int.self).collect().first ?? 0
        }
        let open = try? await connection.whileOpen(on: executor, one)
        try await connection.close()
        #expect(open == 1)
        await #expect(throws: ClusterError.connectionClosed) { try await connection.whileOpen(on: executor, one) }
    }

    /// Every connection a node opens (the pool's and the bus's own) runs with one plan per
    /// prepared statement (``PostgresStorage/Location/startupParameters``).
    @Test func everyConnectionKeepsOnePlanPerStatement() async throws {
        let logger = Logger(label: "test.bus")
        let location = try #require(PostgresStorage.Location(url: try await PostgresTestDatabase.create()))
        let storage = try await PostgresStorage(location, logger: logger)
        let pooled = try await storage.client.query("SHOW plan_cache_mode", logger: logger).decode(String.self)
        #expect(try await pooled.first { _ in true } == "force_generic_plan")
        let own = try await PostgresConnection.connect(configuration: try location.connectionConfiguration(), id: 9, logger: logger)
        let shown = try await own.query("SHOW plan_cache_mode", logger: logger).decode(String.self)
        #expect(try await shown.first { _ in true } == "force_generic_plan")
        try await own.close()
        await storage.shutdown()
    }

    static func rowCount(_ storage: PostgresStorage) async throws -> Int64 {
        try await scalar(storage, "SELECT count(*)::bigint FROM switchboard_messages")
    }

    /// Ends every other session on the test's database; returns how many.
    static func dropConnections(_ storage: PostgresStorage) async throws -> Int {
        Int(
            try await scalar(
                storage,
                """
                SELECT count(pg_terminate_backend(pid))::bigint FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid()
                """))
    }

    static func tableSize(_ storage: PostgresStorage) async throws -> Int64 {
        try await scalar(storage, "SELECT pg_total_relation_size('switchboard_messages')::bigint")
    }

    /// The one number a query returns.
    static func scalar(_ storage: PostgresStorage, _ sql: PostgresQuery) async throws -> Int64 {
        let rows = try await storage.client.query(sql, logger: Logger(label: "test.bus"))
        return try #require(try await rows.decode(Int64.self).first { _ in true })
    }
}
