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

    static func tableSize(_ storage: PostgresStorage) async throws -> Int64 {
        let rows = try await storage.client.query(
            "SELECT pg_total_relation_size('switchboard_messages')::bigint", logger: Logger(label: "test.bus"))
        for try await size in rows.decode(Int64.self) { return size }
        throw CancellationError()
    }
}
