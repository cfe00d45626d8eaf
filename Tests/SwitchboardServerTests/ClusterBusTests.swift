import Foundation
import Logging
import NIOConcurrencyHelpers
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

    /// Every message taken leaves a dead row; the bus vacuums them away as it goes, so the table
    /// holds about what is in flight, not everything that ever went through it. Without the vacuum,
    /// 15,000 small messages leave the table (with its indexes) at about 1.8 MB here, and each take
    /// visits every dead row of its target again; with it, 180–280 KB (the vacuum runs in the
    /// background, so how far the table grows between two depends on the machine's load: the bound
    /// is well above that and well below the table without it).
    @Test(.timeLimit(.minutes(1))) func theMessageTableStaysTheSizeOfWhatIsInFlight() async throws {
        let logger = Logger(label: "test.bus")
        let url = try await PostgresTestDatabase.create()
        let location = try #require(PostgresStorage.Location(url: url))
        let storage = try await PostgresStorage(location, logger: logger)
        let sender = ClusterBus(node: "a", client: storage.client, location: location, logger: logger)
        let receiver = ClusterBus(node: "b", client: storage.client, location: location, logger: logger)
        let inbox = Inbox()
        receiver.start { inbox.take($0) }

        let rounds = 30
        let perRound = ClusterBus.vacuumEvery
        for round in 1...rounds {
            for _ in 0..<perRound { sender.send(.appsChanged, to: "b") }
            await inbox.wait(for: round * perRound)
        }
        #expect(inbox.messages.count == rounds * perRound)
        #expect(inbox.messages.allSatisfy { $0 == .appsChanged })

        let bytes = try await Self.tableSize(storage)
        print("message table after \(rounds * perRound) messages: \(bytes) bytes")
        #expect(bytes <= 768 * 1024, "the message table holds \(bytes) bytes after \(rounds * perRound) messages")
        await receiver.stop()
        await storage.shutdown()
    }

    /// Messages sent while the database drops every connection (the receiver's `LISTEN`
    /// connection, which also takes its messages, and the pool's) arrive once the receiver is back,
    /// each once and in the order sent: nothing relies on a notification that was lost with its
    /// connection.
    @Test(.timeLimit(.minutes(1))) func messagesSentWhileTheConnectionsDropArriveOnceAndInOrder() async throws {
        let logger = Logger(label: "test.bus")
        let url = try await PostgresTestDatabase.create()
        let location = try #require(PostgresStorage.Location(url: url))
        let storage = try await PostgresStorage(location, logger: logger)
        let sender = ClusterBus(node: "a", client: storage.client, location: location, logger: logger)
        let receiver = ClusterBus(node: "b", client: storage.client, location: location, logger: logger)
        let inbox = Inbox()
        receiver.start { inbox.take($0) }
        func message(_ number: Int) -> BusMessage { .reply(token: UInt64(number), reply: .ok) }

        for number in 1...50 { sender.send(message(number), to: "b") }
        await inbox.wait(for: 50)
        let dropped = try await Self.dropConnections(storage)
        #expect(dropped >= 1, "no connection of the bus was dropped")
        for number in 51...100 { sender.send(message(number), to: "b") }
        await inbox.wait(for: 100)
        // A later message, so that a duplicate of any of the first hundred would be in by now.
        sender.send(.appsChanged, to: "b")
        await inbox.wait(for: 101)

        #expect(inbox.messages == (1...100).map(message) + [.appsChanged])
        await receiver.stop()
        await storage.shutdown()
    }

    /// Ends every other session on the test's database; returns how many.
    static func dropConnections(_ storage: PostgresStorage) async throws -> Int {
        let rows = try await storage.client.query(
            """
            SELECT count(pg_terminate_backend(pid))::bigint FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
            """, logger: Logger(label: "test.bus"))
        for try await count in rows.decode(Int64.self) { return Int(count) }
        throw CancellationError()
    }

    static func tableSize(_ storage: PostgresStorage) async throws -> Int64 {
        let rows = try await storage.client.query(
            "SELECT pg_total_relation_size('switchboard_messages')::bigint", logger: Logger(label: "test.bus"))
        for try await size in rows.decode(Int64.self) { return size }
        throw CancellationError()
    }
}
