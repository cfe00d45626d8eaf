import Foundation
import GRDB
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
}
