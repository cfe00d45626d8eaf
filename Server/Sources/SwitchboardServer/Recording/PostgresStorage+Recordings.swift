import Foundation
import Logging
import PostgresNIO
import SwitchboardProtocol

/// The recordings on PostgreSQL (``RecordingStore``): every node of a cluster claims from the same
/// table, so each recording is converted by one node (`FOR UPDATE SKIP LOCKED`).
extension PostgresStorage {
    private static let columns = "detail, state, attempts, updated_at"

    private static func recordings(_ rows: PostgresRowSequence) async throws -> [StoredRecording] {
        var result: [StoredRecording] = []
        for try await (detail, state, attempts, updated) in rows.decode((String, String, Int32, Int64).self) {
            result.append(try StoredRecording(detailText: detail, state: state, attempts: Int(attempts), updatedAt: updated))
        }
        return result
    }

    func insertRecordings(_ takes: [RecordingTake]) async throws {
        for take in takes {
            let detail = try StoredRecording.detailText(StoredRecording.Detail(take: take, files: [], failure: nil))
            try await client.query(
                """
                INSERT INTO recordings (recording_id, sdk_app_id, call_id, take, started_at, stopped_at, state, attempts,
                    detail, updated_at)
                VALUES (\(take.id), \(take.app.rawValue), \(take.callId.rawValue), \(Int32(clamping: take.take)),
                    \(take.startedAt), \(take.stoppedAt), 'pending', 0, \(detail), \(take.stoppedAt))
                ON CONFLICT (recording_id) DO NOTHING
                """, logger: logger)
        }
    }

    func claimRecordings(now: Int64, staleBefore: Int64, limit: Int) async throws -> [StoredRecording] {
        let rows = try await client.query(
            """
            UPDATE recordings SET state = 'converting', claimed_at = \(now), attempts = attempts + 1, updated_at = \(now)
            WHERE recording_id IN (
                SELECT recording_id FROM recordings
                WHERE state = 'pending' OR (state = 'converting' AND claimed_at < \(staleBefore))
                ORDER BY updated_at LIMIT \(Int32(clamping: limit)) FOR UPDATE SKIP LOCKED)
            RETURNING \(unescaped: Self.columns)
            """, logger: logger)
        return try await Self.recordings(rows)
    }

    func finishRecording(id: String, _ outcome: RecordingOutcome, now: Int64, event: OutboxEvent?) async throws {
        let logger = self.logger
        try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                "SELECT \(unescaped: Self.columns) FROM recordings WHERE recording_id = \(id) FOR UPDATE", logger: logger)
            guard var recording = try await Self.recordings(rows).first else { return }
            let state = recording.record(outcome)
            let detail = try StoredRecording.detailText(recording.detail)
            try await connection.query(
                """
                UPDATE recordings SET state = \(state.rawValue), detail = \(detail), claimed_at = NULL, updated_at = \(now)
                WHERE recording_id = \(id)
                """, logger: logger)
            if let event {
                var bindings = PostgresBindings()
                Self.appendOutbox([event], to: &bindings)
                try await connection.query(
                    PostgresQuery(unsafeSQL: "SELECT switchboard_outbox($1, $2, $3, $4, $5, $6)", binds: bindings),
                    logger: logger)
            }
        }
    }

    func recordings(app: SdkAppID, callId: CallID?, limit: Int) async throws -> [StoredRecording] {
        let rows =
            if let callId {
                try await client.query(
                    """
                    SELECT \(unescaped: Self.columns) FROM recordings WHERE sdk_app_id = \(app.rawValue)
                        AND call_id = \(callId.rawValue) ORDER BY started_at DESC, take DESC LIMIT \(Int32(clamping: limit))
                    """, logger: logger)
            } else {
                try await client.query(
                    """
                    SELECT \(unescaped: Self.columns) FROM recordings WHERE sdk_app_id = \(app.rawValue)
                    ORDER BY started_at DESC, take DESC LIMIT \(Int32(clamping: limit))
                    """, logger: logger)
            }
        return try await Self.recordings(rows)
    }

    func recording(app: SdkAppID, id: String) async throws -> StoredRecording? {
        let rows = try await client.query(
            """
            SELECT \(unescaped: Self.columns) FROM recordings WHERE sdk_app_id = \(app.rawValue) AND recording_id = \(id)
            """, logger: logger)
        return try await Self.recordings(rows).first
    }

    func deleteRecording(app: SdkAppID, id: String, event: @Sendable (StoredRecording) -> OutboxEvent?) async throws
        -> StoredRecording?
    {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                DELETE FROM recordings WHERE sdk_app_id = \(app.rawValue) AND recording_id = \(id)
                RETURNING \(unescaped: Self.columns)
                """, logger: logger)
            guard let recording = try await Self.recordings(rows).first else { return nil }
            if let outbox = event(recording) {
                var bindings = PostgresBindings()
                Self.appendOutbox([outbox], to: &bindings)
                try await connection.query(
                    PostgresQuery(unsafeSQL: "SELECT switchboard_outbox($1, $2, $3, $4, $5, $6)", binds: bindings),
                    logger: logger)
            }
            return recording
        }
    }

    func expiredRecordings(app: SdkAppID, before: Int64, limit: Int) async throws -> [StoredRecording] {
        let rows = try await client.query(
            """
            SELECT \(unescaped: Self.columns) FROM recordings WHERE sdk_app_id = \(app.rawValue)
                AND state IN ('ready', 'failed') AND stopped_at < \(before) ORDER BY stopped_at LIMIT \(Int32(clamping: limit))
            """, logger: logger)
        return try await Self.recordings(rows)
    }

    func unconvertedRecordings() async throws -> Int {
        let rows = try await client.query(
            "SELECT count(*) FROM recordings WHERE state IN ('pending', 'converting')", logger: logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }
}
