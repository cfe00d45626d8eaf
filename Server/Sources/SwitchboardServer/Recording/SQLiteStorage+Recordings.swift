import Foundation
import GRDB
import SwitchboardProtocol

/// The recordings on SQLite (``RecordingStore``).
extension SQLiteStorage {
    static func insertRecordings(_ takes: [RecordingTake], _ db: Database) throws {
        for take in takes {
            let detail = try StoredRecording.detailText(StoredRecording.Detail(take: take, files: [], failure: nil))
            try db.cachedStatement(
                sql: """
                    INSERT INTO recordings (recording_id, sdk_app_id, call_id, take, started_at, stopped_at, state,
                        attempts, detail, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?) ON CONFLICT (recording_id) DO NOTHING
                    """
            ).execute(arguments: [
                take.id, take.app.rawValue, take.callId.rawValue, take.take, take.startedAt, take.stoppedAt, detail,
                take.stoppedAt,
            ])
        }
    }

    private static func recording(_ row: Row) throws -> StoredRecording {
        try StoredRecording(
            detailText: row["detail"], state: row["state"], attempts: row["attempts"], updatedAt: row["updated_at"])
    }

    func claimRecordings(now: Int64, staleBefore: Int64, limit: Int) async throws -> [StoredRecording] {
        try await pool.write { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM recordings WHERE state = 'pending' OR (state = 'converting' AND claimed_at < ?)
                    ORDER BY updated_at LIMIT ?
                    """, arguments: [staleBefore, limit])
            var claimed: [StoredRecording] = []
            for row in rows {
                var recording = try Self.recording(row)
                try db.execute(
                    sql: """
                        UPDATE recordings SET state = 'converting', claimed_at = ?, attempts = attempts + 1, updated_at = ?
                        WHERE recording_id = ?
                        """, arguments: [now, now, recording.take.id])
                recording.state = .converting
                recording.attempts += 1
                claimed.append(recording)
            }
            return claimed
        }
    }

    func finishRecording(id: String, _ outcome: RecordingOutcome, now: Int64, event: OutboxEvent?) async throws {
        try await pool.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM recordings WHERE recording_id = ?", arguments: [id])
            else { return }
            var recording = try Self.recording(row)
            let state = recording.record(outcome)
            try db.execute(
                sql: "UPDATE recordings SET state = ?, detail = ?, claimed_at = NULL, updated_at = ? WHERE recording_id = ?",
                arguments: [state.rawValue, try StoredRecording.detailText(recording.detail), now, id])
            if let event { try Self.insert([event], db) }
        }
    }

    func recordings(app: SdkAppID, callId: CallID?, limit: Int) async throws -> [StoredRecording] {
        try await pool.read { db in
            let rows =
                if let callId {
                    try Row.fetchAll(
                        db,
                        sql: "SELECT * FROM recordings WHERE sdk_app_id = ? AND call_id = ? ORDER BY started_at DESC, take DESC LIMIT ?",
                        arguments: [app.rawValue, callId.rawValue, limit])
                } else {
                    try Row.fetchAll(
                        db, sql: "SELECT * FROM recordings WHERE sdk_app_id = ? ORDER BY started_at DESC, take DESC LIMIT ?",
                        arguments: [app.rawValue, limit])
                }
            return try rows.map(Self.recording)
        }
    }

    func recording(app: SdkAppID, id: String) async throws -> StoredRecording? {
        try await pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT * FROM recordings WHERE sdk_app_id = ? AND recording_id = ?", arguments: [app.rawValue, id]
            ).map(Self.recording)
        }
    }

    func deleteRecording(app: SdkAppID, id: String, event: @Sendable (StoredRecording) -> OutboxEvent?) async throws
        -> StoredRecording?
    {
        try await pool.write { db in
            guard
                let recording = try Row.fetchOne(
                    db, sql: "SELECT * FROM recordings WHERE sdk_app_id = ? AND recording_id = ?",
                    arguments: [app.rawValue, id]
                ).map(Self.recording)
            else { return nil }
            try db.execute(sql: "DELETE FROM recordings WHERE recording_id = ?", arguments: [id])
            if let event = event(recording) { try Self.insert([event], db) }
            return recording
        }
    }

    func expiredRecordings(app: SdkAppID, before: Int64, limit: Int) async throws -> [StoredRecording] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM recordings WHERE sdk_app_id = ? AND state IN ('ready', 'failed') AND stopped_at < ?
                    ORDER BY stopped_at LIMIT ?
                    """, arguments: [app.rawValue, before, limit]
            ).map(Self.recording)
        }
    }

    func unconvertedRecordings() async throws -> Int {
        try await pool.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM recordings WHERE state IN ('pending', 'converting')") ?? 0
        }
    }
}
