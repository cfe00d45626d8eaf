import Foundation
import GRDB
import NIOConcurrencyHelpers
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

/// What the durability of records rests on beyond what `kill -9` can show: the kill -9 test
/// (ServerProcessTests) proves a record acknowledged before the process died is in the file, that
/// is, the commit reached the operating system first. A power cut also loses the page cache; that
/// a commit is on the disk by then is SQLite's promise under `synchronous = FULL` in WAL mode (the
/// WAL is fsynced at every commit), on every connection, reading and writing.
struct SQLiteDurabilityTests {
    @Test func everyConnectionSyncsEachCommit() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-sync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try SQLiteStorage(path: directory.appendingPathComponent("db.sqlite").path)
        // 2 is FULL.
        #expect(try storage.pool.write { try Int.fetchOne($0, sql: "PRAGMA synchronous") } == 2)
        #expect(try storage.pool.read { try Int.fetchOne($0, sql: "PRAGMA synchronous") } == 2)
        #expect(try storage.pool.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "wal")
    }

    /// The journal of calls in progress commits without an fsync (in WAL mode such a commit still
    /// survives the process dying); a batch that ends calls, whose records are then promised to
    /// their owners, commits with one. Read from the statements the writer runs: the level in force
    /// at each COMMIT.
    @Test func onlyJournalSavesCommitWithoutAnFsync() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-sync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try SQLiteStorage(path: directory.appendingPathComponent("db.sqlite").path)
        let statements = NIOLockedValueBox<[String]>([])
        try await storage.pool.writeWithoutTransaction { db in
            db.trace { event in statements.withLockedValue { $0.append(event.description) } }
        }
        /// The `synchronous` level at each COMMIT among the statements run since the last call.
        func levelsAtCommit() -> [String] {
            var level = "FULL"
            var levels: [String] = []
            for statement in statements.withLockedValue({ all in defer { all = [] }; return all }) {
                if statement.hasPrefix("PRAGMA synchronous = ") { level = String(statement.dropFirst(21)) }
                if statement == "COMMIT TRANSACTION" || statement == "COMMIT" { levels.append(level) }
            }
            return levels
        }
        let app = SdkAppID(1_400_000_001)
        let call = CallID(rawValue: "call-1")
        let save = JournalEntry(callId: call, app: app, state: Data("{}".utf8), updatedAt: 1)

        _ = try await storage.commit(PersistenceBatch(journal: [save]))
        #expect(levelsAtCommit() == ["NORMAL"])
        _ = try await storage.commit(PersistenceBatch(journal: [save], ended: [EndedCallWrite(callId: call, records: [])]))
        #expect(levelsAtCommit() == ["FULL"])
        // The writer is left as every other connection is.
        #expect(try await storage.pool.write { try Int.fetchOne($0, sql: "PRAGMA synchronous") } == 2)
    }
}
