import NIOSSL
import PostgresNIO

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
