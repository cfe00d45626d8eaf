import Foundation
import NIOCore
import PostgresNIO
import SwitchboardProtocol

/// An app's call records for the admin API: filtered, paged by cursor, and swept after the app's retention.
extension PostgresStorage {
    // MARK: records for the admin API

    func queryAppRecords(app: SdkAppID, filter: AppRecordFilter, after: AppRecordCursor?, limit: Int) async throws
        -> AppRecordPage
    {
        var bindings = PostgresBindings()
        bindings.append(app.rawValue)
        var conditions = ["sdk_app_id = $1"]
        func add(_ condition: (Int) -> String, _ values: [any PostgresDynamicTypeEncodable]) {
            var numbers: [Int] = []
            for value in values {
                bindings.append(value)
                numbers.append(bindings.count)
            }
            conditions.append(condition(numbers[0]))
        }
        if let user = filter.user { add({ "user_id = $\($0)" }, [user.rawValue]) }
        if let from = filter.from { add({ "end_time >= $\($0)" }, [from]) }
        if let to = filter.to { add({ "end_time < $\($0)" }, [to]) }
        if let result = filter.result { add({ "result = $\($0)" }, [result.rawValue]) }
        if let media = filter.mediaType { add({ "media_type = $\($0)" }, [media.rawValue]) }
        if let after {
            add({ "(end_time, user_id, call_id) < ($\($0), $\($0 + 1), $\($0 + 2))" }, [after.endTime, after.user, after.call])
        }
        bindings.append(Int64(limit + 1))
        let rows = try await client.query(
            PostgresQuery(
                unsafeSQL: """
                    SELECT user_id, \(Self.recordColumns) FROM call_records WHERE \(conditions.joined(separator: " AND "))
                    ORDER BY end_time DESC, user_id DESC, call_id DESC LIMIT $\(bindings.count)
                    """, binds: bindings), logger: logger)
        var records: [StoredRecord] = []
        for try await (user, call, room, type, media, caller, inviter, participants, group, direction, result, start, end,
            duration, reason, sync) in rows.decode(
                (
                    String, String, String, String, String, String, String, [String], String?, String, String, Int64?,
                    Int64, Int32, String, Int64
                ).self)
        {
            let record = Self.record(
                (
                    call, room, type, media, caller, inviter, participants, group, direction, result, start, end, duration,
                    reason, sync
                ))
            records.append(StoredRecord(owner: UserKey(app: app, user: UserID(rawValue: user)), record: record))
        }
        let page = Array(records.prefix(limit))
        let next = records.count > limit ? page.last.map {
            AppRecordCursor(endTime: $0.record.endTime, user: $0.owner.user.rawValue, call: $0.record.callId.rawValue)
        } : nil
        return AppRecordPage(records: page, next: next)
    }

    func sweepRecords(app: SdkAppID, before cutoff: Int64, limit: Int) async throws -> Int {
        try await client.query(
            """
            DELETE FROM call_records WHERE ctid = ANY(ARRAY(SELECT ctid FROM call_records
                WHERE sdk_app_id = \(app.rawValue) AND end_time < \(cutoff) ORDER BY end_time LIMIT \(Int64(limit))))
            RETURNING call_id
            """, logger: logger
        ).decode(String.self).collect().count
    }
}
