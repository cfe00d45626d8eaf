import Foundation
import Logging
import PostgresNIO

/// Fresh PostgreSQL databases for tests, on the server scripts/test starts: it exports
/// `SWITCHBOARD_TEST_POSTGRES` (a URL of a database the tests may create others from). Without
/// it, PostgreSQL tests are skipped (`swift test` alone runs the SQLite half).
public enum PostgresTestDatabase {
    /// The server's URL, when one is there.
    public static var serverURL: String? {
        ProcessInfo.processInfo.environment["SWITCHBOARD_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Whether PostgreSQL tests can run.
    public static var isAvailable: Bool { serverURL != nil }

    /// Creates an empty database and returns its URL.
    public static func create() async throws -> String {
        guard let base = serverURL, var components = URLComponents(string: base) else { throw Unavailable() }
        let name = "sbtest_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let connection = try await connect(base)
        // Identifiers cannot be bound; the name is made of hex digits only.
        try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
        try await connection.close()
        components.path = "/" + name
        return components.string ?? base
    }

    /// Takes PostgreSQL's advisory lock `key` in database `url` on a connection of its own (as a
    /// cluster's leader does) and keeps it until ``LockHolder/release()``.
    public static func holdLock(_ key: Int64, in url: String) async throws -> LockHolder {
        let connection = try await connect(url)
        try await connection.query("SELECT pg_advisory_lock(\(key))", logger: logger)
        return LockHolder(connection: connection, key: key)
    }

    /// The journal's entry for a call in database `url` as text (the `Call` value's JSON), nil
    /// when it has none: what a node that takes over would restore.
    public static func journalEntry(of callId: String, in url: String) async throws -> String? {
        let connection = try await connect(url)
        do {
            var entry: String?
            let rows = try await connection.query("SELECT state FROM call_journal WHERE call_id = \(callId)", logger: logger)
            for try await state in rows.decode(ByteBuffer.self) { entry = String(buffer: state) }
            try await connection.close()
            return entry
        } catch {
            try? await connection.close()
            throw error
        }
    }

    static let logger = Logger(label: "switchboard.test-postgres")

    /// A connection of its own to database `url`.
    static func connect(_ url: String) async throws -> PostgresConnection {
        guard let components = URLComponents(string: url), let host = components.host, let user = components.user else {
            throw Unavailable()
        }
        return try await PostgresConnection.connect(
            configuration: .init(
                host: host, port: components.port ?? 5432, username: user, password: components.password,
                database: String(components.path.dropFirst()), tls: .disable),
            id: 1, logger: logger)
    }

    public struct LockHolder: Sendable {
        let connection: PostgresConnection
        let key: Int64

        /// Lets go of the lock, then closes its connection. The unlock is answered once the lock
        /// is free; a close alone returns before the server has ended the session, and a node
        /// that tried the lock at once could still find it held (seen in a loaded run).
        public func release() async throws {
            try await connection.query("SELECT pg_advisory_unlock(\(key))", logger: PostgresTestDatabase.logger)
            try await connection.close()
        }
    }

    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String { "no PostgreSQL server for tests (SWITCHBOARD_TEST_POSTGRES is not set)" }
    }
}
