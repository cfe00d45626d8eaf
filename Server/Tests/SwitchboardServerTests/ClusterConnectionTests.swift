import Foundation
import Logging
import PostgresNIO
import SwitchboardTestServers
import Testing

@testable import SwitchboardServer

/// The connections a cluster node opens of its own (the leader's lock), on a real PostgreSQL server.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable)) struct ClusterConnectionTests {
    /// A statement for a connection that has closed fails (postgres-nio, asked directly, never
    /// answers it: the bus and the leader's lock would wait forever).
    @Test(.timeLimit(.minutes(1))) func aStatementForAClosedConnectionFails() async throws {
        let logger = Logger(label: "test.cluster")
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

    /// Every connection a node opens (the pool's and the leader's lock connection) runs with one plan per
    /// prepared statement (``PostgresStorage/Location/startupParameters``).
    @Test func everyConnectionKeepsOnePlanPerStatement() async throws {
        let logger = Logger(label: "test.cluster")
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
}
