import Foundation
import GRDB
import SwitchboardProtocol

/// An app's call records for the admin API: filtered, paged by cursor, and swept after the app's retention.
extension SQLiteStorage {
    // MARK: records for the admin API

    func queryAppRecords(app: SdkAppID, filter: AppRecordFilter, after: AppRecordCursor?, limit: Int) async throws
        -> AppRecordPage
    {
        try await pool.read { db in
            var conditions = ["sdk_app_id = ?"]
            var arguments: [any DatabaseValueConvertible] = [app.rawValue]
            if let user = filter.user {
                conditions.append("user_id = ?")
                arguments.append(user.rawValue)
            }
            if let from = filter.from {
                conditions.append("end_time >= ?")
                arguments.append(from)
            }
            if let to = filter.to {
                conditions.append("end_time < ?")
                arguments.append(to)
            }
            if let result = filter.result {
                conditions.append("result = ?")
                arguments.append(result.rawValue)
            }
            if let media = filter.mediaType {
                conditions.append("media_type = ?")
                arguments.append(media.rawValue)
            }
            if let after {
                conditions.append("(end_time, user_id, call_id) < (?, ?, ?)")
                arguments += [after.endTime, after.user, after.call]
            }
            arguments.append(limit + 1)
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM call_records WHERE \(conditions.joined(separator: " AND "))
                    ORDER BY end_time DESC, user_id DESC, call_id DESC LIMIT ?
                    """, arguments: StatementArguments(arguments))
            let records = try rows.prefix(limit).map { row in
                StoredRecord(owner: UserKey(app: app, user: UserID(rawValue: row["user_id"])), record: try Self.record(row))
            }
            let next = rows.count > limit ? records.last.map {
                AppRecordCursor(endTime: $0.record.endTime, user: $0.owner.user.rawValue, call: $0.record.callId.rawValue)
            } : nil
            return AppRecordPage(records: records, next: next)
        }
    }

    func sweepRecords(app: SdkAppID, before cutoff: Int64, limit: Int) async throws -> Int {
        try await pool.write { db in
            try db.execute(
                sql: """
                    DELETE FROM call_records WHERE rowid IN (SELECT rowid FROM call_records
                        WHERE sdk_app_id = ? AND end_time < ? ORDER BY end_time LIMIT ?)
                    """, arguments: [app.rawValue, cutoff, limit])
            return db.changesCount
        }
    }
}
