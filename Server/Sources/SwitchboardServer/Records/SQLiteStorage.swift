import Foundation
import GRDB
import SwitchboardProtocol

/// The embedded store: one SQLite file in WAL mode, through GRDB.
///
/// `synchronous = FULL`: a commit is on disk before the server tells anyone about it, so a
/// `callRecord` event means the record survives a crash or a power cut. Record writes are
/// batched by ``PersistenceWriter``, so the fsync is paid once per batch, not per record.
///
/// What the tests prove of this: the `kill -9` test shows that no acknowledged record is lost
/// when the process dies (the commit reached the operating system before the event left); it
/// keeps the page cache, so it would pass with `synchronous = OFF` too. Surviving a power cut
/// rests on SQLite's fsync of the WAL at each commit under `FULL` (SQLiteDurabilityTests checks
/// the setting on every connection) and on a disk that honours fsync.
final class SQLiteStorage: SwitchboardStorage {
    let pool: DatabasePool

    init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        // The pool switches its writer to WAL mode after `prepareDatabase`, and with it to
        // `synchronous = NORMAL` (no fsync at commit): set FULL again on the writer, which the pool
        // keeps for its life.
        try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
        try Self.migrator.migrate(pool)
    }

    /// Opens (or creates) the database at `path` as ``init(path:)`` does; when it cannot, the error
    /// names the file, why, and what to do (SQLite alone says `unable to open database file`).
    static func open(_ path: String) throws -> SQLiteStorage {
        do {
            return try SQLiteStorage(path: path)
        } catch let error as DatabaseError {
            throw StartupError(.databaseUnavailable, openingProblem(path: path, error))
        }
    }

    /// What keeps `path` from being opened: the cause and the fix, in one sentence.
    static func openingProblem(path: String, _ error: DatabaseError) -> String {
        let files = FileManager.default
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        let fix = "pass --database with a file the server may create and write (or a postgresql:// URL)"
        if files.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            return "cannot open the database \(path): it is a directory. Name a file in it, e.g. --database \(url.appendingPathComponent("switchboard.sqlite").path)."
        }
        if !files.fileExists(atPath: folder, isDirectory: &isDirectory) || !isDirectory.boolValue {
            return "cannot open the database \(path): the directory \(folder) does not exist. Create it, or \(fix)."
        }
        if error.resultCode == .SQLITE_NOTADB {
            return "cannot open the database \(path): the file is not an SQLite database. Move it away, or \(fix)."
        }
        if !files.isWritableFile(atPath: files.fileExists(atPath: path) ? path : folder) {
            return "cannot open the database \(path): permission denied. Run as a user who may write there, or \(fix)."
        }
        return "cannot open the database \(path): \(error.message ?? "SQLite error \(error.resultCode.rawValue)"). Check the file and its directory, or \(fix)."
    }

    /// Nothing to do: GRDB closes the file when the pool goes.
    func shutdown() async {}

    // MARK: apps

    func loadApps() async throws -> [AppRecord] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT apps.*, app_push_credentials.credentials AS push_credentials FROM apps
                    LEFT JOIN app_push_credentials USING (sdk_app_id) ORDER BY sdk_app_id
                    """
            ).map { row in
                AppRecord(
                    sdkAppID: SdkAppID(row["sdk_app_id"] as Int64),
                    secretKey: row["secret_key"],
                    settings: AppSettings(
                        busyPolicy: BusyPolicy(rawValue: row["busy_policy"]) ?? .reject,
                        maxParticipants: row["max_participants"],
                        blockedCallerSees: BlockedCallerSees(rawValue: row["blocked_caller_sees"]) ?? .reject,
                        recordRetentionDays: row["record_retention_days"], callPull: row["call_pull"],
                        recording: RecordingSettings.stored(row["recording"])),
                    isDevelopment: row["is_development"],
                    createdAt: row["created_at"],
                    push: try AppPushCredentials.stored(row["push_credentials"]))
            }
        }
    }

    func addPushCredentials(app: SdkAppID, _ credentials: AppPushCredentials, now: Int64) async throws {
        let text = try credentials.storedText()
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO app_push_credentials (sdk_app_id, credentials, updated_at) VALUES (?, ?, ?)
                    ON CONFLICT (sdk_app_id) DO NOTHING
                    """,
                arguments: [app.rawValue, text, now])
        }
    }

    func savePushCredentials(app: SdkAppID, _ credentials: AppPushCredentials, now: Int64) async throws {
        let text = try credentials.storedText()
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO app_push_credentials (sdk_app_id, credentials, updated_at) VALUES (?, ?, ?)
                    ON CONFLICT (sdk_app_id) DO UPDATE SET credentials = excluded.credentials, updated_at = excluded.updated_at
                    """,
                arguments: [app.rawValue, text, now])
        }
    }

    func saveApp(_ app: AppRecord) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO apps (sdk_app_id, secret_key, busy_policy, max_participants, blocked_caller_sees,
                        record_retention_days, is_development, created_at, call_pull, recording)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (sdk_app_id) DO UPDATE SET secret_key = excluded.secret_key,
                        busy_policy = excluded.busy_policy, max_participants = excluded.max_participants,
                        blocked_caller_sees = excluded.blocked_caller_sees,
                        record_retention_days = excluded.record_retention_days, is_development = excluded.is_development,
                        call_pull = excluded.call_pull, recording = excluded.recording
                    """,
                arguments: [
                    app.sdkAppID.rawValue, app.secretKey, app.settings.busyPolicy.rawValue, app.settings.maxParticipants,
                    app.settings.blockedCallerSees.rawValue, app.settings.recordRetentionDays, app.isDevelopment,
                    app.createdAt, app.settings.callPull, app.settings.recording.storedText,
                ])
        }
    }

    // MARK: profiles

    func loadProfiles(app: SdkAppID, users: [UserID]) async throws -> [UserProfile] {
        guard !users.isEmpty else { return [] }
        return try await pool.read { db in
            let placeholders = databaseQuestionMarks(count: users.count)
            let arguments = StatementArguments([app.rawValue] as [any DatabaseValueConvertible])
                + StatementArguments(users.map(\.rawValue))
            return try Row.fetchAll(
                db,
                sql: "SELECT user_id, nickname, avatar_url FROM profiles WHERE sdk_app_id = ? AND user_id IN (\(placeholders))",
                arguments: arguments
            ).map { row in
                UserProfile(userId: UserID(rawValue: row["user_id"]), nickname: row["nickname"], avatarURL: row["avatar_url"])
            }
        }
    }

    func saveProfile(app: SdkAppID, _ profile: UserProfile, now: Int64) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO profiles (sdk_app_id, user_id, nickname, avatar_url, updated_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (sdk_app_id, user_id) DO UPDATE SET nickname = excluded.nickname,
                        avatar_url = excluded.avatar_url, updated_at = excluded.updated_at
                    """,
                arguments: [app.rawValue, profile.userId.rawValue, profile.nickname, profile.avatarURL, now])
        }
    }

    // MARK: push tokens

    func registerPushToken(_ token: PushToken, move: Bool) async throws {
        try await pool.write { db in
            if let holder = try Row.fetchOne(
                db, sql: "SELECT sdk_app_id, user_id, device_id FROM push_tokens WHERE token = ?", arguments: [token.token])
            {
                let app: Int64 = holder["sdk_app_id"]
                let user: String = holder["user_id"]
                let device: String = holder["device_id"]
                let mine =
                    app == token.user.app.rawValue && user == token.user.user.rawValue && device == token.device.rawValue
                guard mine || (move && app == token.user.app.rawValue) else {
                    throw SwitchboardError(.pushTokenInUse)
                }
            }
            try db.execute(
                sql: """
                    DELETE FROM push_tokens
                    WHERE token = ? OR (sdk_app_id = ? AND user_id = ? AND device_id = ? AND kind = ?)
                    """,
                arguments: [
                    token.token, token.user.app.rawValue, token.user.user.rawValue, token.device.rawValue,
                    token.kind.rawValue,
                ])
            try db.execute(
                sql: """
                    INSERT INTO push_tokens (token, sdk_app_id, user_id, device_id, kind, environment, bundle_id, updated_at,
                        web_p256dh, web_auth, sealing_key, alert_ringing)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    token.token, token.user.app.rawValue, token.user.user.rawValue, token.device.rawValue,
                    token.kind.rawValue, token.environment.rawValue, token.bundleId, token.updatedAt,
                    token.webPush?.p256dh, token.webPush?.auth, token.sealingKey, token.alertRinging,
                ])
        }
    }

    func unregisterPushToken(user: UserKey, device: DeviceID, kind: PushTokenKind?) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    DELETE FROM push_tokens WHERE sdk_app_id = ? AND user_id = ? AND device_id = ?
                    AND (? IS NULL OR kind = ?)
                    """,
                arguments: [user.app.rawValue, user.user.rawValue, device.rawValue, kind?.rawValue, kind?.rawValue])
        }
    }

    func pushTokens(app: SdkAppID, users: [UserID]) async throws -> [UserID: [PushToken]] {
        guard !users.isEmpty else { return [:] }
        return try await pool.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM push_tokens WHERE sdk_app_id = ? AND user_id IN (\(databaseQuestionMarks(count: users.count)))
                    ORDER BY updated_at
                    """,
                arguments: StatementArguments([app.rawValue] as [any DatabaseValueConvertible])
                    + StatementArguments(users.map(\.rawValue)))
            var tokens: [UserID: [PushToken]] = [:]
            for row in rows {
                let user = UserID(rawValue: row["user_id"])
                tokens[user, default: []].append(
                    PushToken(
                        token: row["token"], user: UserKey(app: app, user: user), device: DeviceID(rawValue: row["device_id"]),
                        kind: PushTokenKind(rawValue: row["kind"]) ?? .voip,
                        environment: PushEnvironment(rawValue: row["environment"]) ?? .production,
                        bundleId: row["bundle_id"], updatedAt: row["updated_at"],
                        webPush: WebPushKeys.stored(p256dh: row["web_p256dh"], auth: row["web_auth"]),
                        sealingKey: row["sealing_key"], alertRinging: row["alert_ringing"]))
            }
            return tokens
        }
    }

    func removePushToken(_ token: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM push_tokens WHERE token = ?", arguments: [token])
        }
    }

    func ringingPushDevices() async throws -> [(UserKey, DeviceID)] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT DISTINCT sdk_app_id, user_id, device_id FROM push_tokens WHERE \(PushToken.ringsWhere)")
                .map { row in
                    (UserKey(app: SdkAppID(row["sdk_app_id"] as Int64), user: UserID(rawValue: row["user_id"])),
                     DeviceID(rawValue: row["device_id"]))
                }
        }
    }

    // MARK: blocks

    func blockedUsers(app: SdkAppID, user: UserID) async throws -> [UserID] {
        try await pool.read { db in
            try String.fetchAll(
                db, sql: "SELECT blocked_id FROM blocks WHERE sdk_app_id = ? AND user_id = ? ORDER BY blocked_id",
                arguments: [app.rawValue, user.rawValue]
            ).map(UserID.init(rawValue:))
        }
    }

    func usersBlocking(_ caller: UserID, among users: [UserID], app: SdkAppID) async throws -> Set<UserID> {
        guard !users.isEmpty else { return [] }
        return try await pool.read { db in
            Set(
                try String.fetchAll(
                    db.cachedStatement(
                        sql: """
                            SELECT user_id FROM blocks WHERE sdk_app_id = ? AND blocked_id = ?
                            AND user_id IN (\(databaseQuestionMarks(count: users.count)))
                            """),
                    arguments: StatementArguments([app.rawValue, caller.rawValue] as [any DatabaseValueConvertible])
                        + StatementArguments(users.map(\.rawValue))
                ).map(UserID.init(rawValue:)))
        }
    }

    func blockers() async throws -> [UserKey] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT DISTINCT sdk_app_id, user_id FROM blocks").map { row in
                UserKey(app: SdkAppID(row["sdk_app_id"] as Int64), user: UserID(rawValue: row["user_id"]))
            }
        }
    }

    // MARK: chat groups

    func setChatGroupMembers(app: SdkAppID, group: ChatGroupID, members: [UserID]) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "DELETE FROM chat_group_members WHERE sdk_app_id = ? AND group_id = ?",
                arguments: [app.rawValue, group.rawValue])
            for member in Set(members) {
                try db.execute(
                    sql: "INSERT INTO chat_group_members (sdk_app_id, group_id, user_id) VALUES (?, ?, ?)",
                    arguments: [app.rawValue, group.rawValue, member.rawValue])
            }
        }
    }

    func chatGroupMembers(app: SdkAppID, group: ChatGroupID) async throws -> [UserID] {
        try await pool.read { db in
            try String.fetchAll(
                db, sql: "SELECT user_id FROM chat_group_members WHERE sdk_app_id = ? AND group_id = ? ORDER BY user_id",
                arguments: [app.rawValue, group.rawValue]
            ).map(UserID.init(rawValue:))
        }
    }

    func isChatGroupMember(app: SdkAppID, group: ChatGroupID, user: UserID) async throws -> Bool {
        try await pool.read { db in
            try Bool.fetchOne(
                db,
                sql: "SELECT EXISTS (SELECT 1 FROM chat_group_members WHERE sdk_app_id = ? AND group_id = ? AND user_id = ?)",
                arguments: [app.rawValue, group.rawValue, user.rawValue]) ?? false
        }
    }

    // MARK: records

    /// A batch that only saves calls in progress commits with `synchronous = NORMAL`: in WAL mode
    /// that commit survives the process dying (`kill -9`, a crash, a deploy), which is what the
    /// journal is for, and only a power cut or a kernel crash can take its last moments back (the
    /// call is then restored as it stood a moment earlier, or not at all). Nobody is told of a
    /// journal save. A batch that ends calls is promised with `callRecord` events, so it commits
    /// with `FULL` (its fsync also covers the saves before it). At 1,000 calls/s this halves the
    /// fsyncs: a call is saved when it rings and when it connects, and ended once
    /// (docs/BENCHMARKS.md).
    func commit(_ batch: PersistenceBatch) async throws -> [StoredRecord] {
        try await pool.writeWithoutTransaction { try Self.commit(batch, $0) }
    }

    /// On the pool's writer queue; `completion` runs there too, so the writer's next batch follows
    /// on the same thread.
    func commit(_ batch: PersistenceBatch, completion: @escaping @Sendable (Result<[StoredRecord], any Error>) -> Void) {
        pool.asyncWriteWithoutTransaction { db in
            completion(Result { try Self.commit(batch, db) })
        }
    }

    func onWriter(_ work: @escaping @Sendable () -> Void) {
        pool.asyncWriteWithoutTransaction { _ in work() }
    }

    static func commit(_ batch: PersistenceBatch, _ db: Database) throws -> [StoredRecord] {
        guard !batch.journal.isEmpty || !batch.ended.isEmpty || !batch.events.isEmpty || !batch.recordings.isEmpty
        else { return [] }
        // Webhook events and recordings are promised too: one sent must never be taken back by a power cut.
        let promised = !batch.ended.isEmpty || !batch.events.isEmpty || !batch.recordings.isEmpty
        if !promised { try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        defer { if !promised { try? db.execute(sql: "PRAGMA synchronous = FULL") } }
        var stored: [StoredRecord] = []
        try db.inTransaction {
            stored = try write(batch, db)
            return .commit
        }
        return stored
    }

    static func write(_ batch: PersistenceBatch, _ db: Database) throws -> [StoredRecord] {
        try insertRecordings(batch.recordings, db)
        // Cached statements: parsed once per connection, not once per call.
        for entry in batch.journal {
            try db.cachedStatement(
                sql: """
                    INSERT INTO call_journal (call_id, sdk_app_id, state, updated_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (call_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at
                    """
            ).execute(arguments: [entry.callId.rawValue, entry.app.rawValue, entry.state, entry.updatedAt])
        }
        var stored: [StoredRecord] = []
        for ended in batch.ended {
            if let callId = ended.callId {
                try db.cachedStatement(sql: "DELETE FROM call_journal WHERE call_id = ?").execute(arguments: [callId.rawValue])
            }
            stored += try Self.insert(ended.records, db)
        }
        try Self.insert(batch.events, db)
        return stored
    }

    func loadJournal() async throws -> [JournalEntry] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM call_journal ORDER BY updated_at").map { row in
                JournalEntry(
                    callId: CallID(rawValue: row["call_id"]), app: SdkAppID(row["sdk_app_id"] as Int64),
                    state: row["state"], updatedAt: row["updated_at"])
            }
        }
    }

    func markAlive(at time: Int64) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO node_state (key, value) VALUES ('alive_at', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                arguments: [time])
        }
    }

    func lastAlive() async throws -> Int64? {
        try await pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT value FROM node_state WHERE key = 'alive_at'")
        }
    }

    static func insert(_ drafts: [RecordDraft], _ db: Database) throws -> [StoredRecord] {
        try drafts.map { draft in
                var record = draft.record
                let participants = try SwitchboardJSON.encodeString(record.participantIds.map(\.rawValue))
                let inserted = try Int64.fetchOne(
                    db.cachedStatement(
                        sql: """
                        INSERT OR IGNORE INTO call_records (sdk_app_id, user_id, call_id, sync_time, room_id, call_type,
                            media_type, caller_id, inviter_id, participant_ids, chat_group_id, direction, result,
                            start_time, end_time, duration, end_reason)
                        VALUES (?, ?, ?,
                            max(?, coalesce((SELECT max(sync_time) FROM call_records WHERE sdk_app_id = ? AND user_id = ?), -1) + 1),
                            ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        RETURNING sync_time
                        """),
                    arguments: [
                        draft.owner.app.rawValue, draft.owner.user.rawValue, record.callId.rawValue, record.endTime,
                        draft.owner.app.rawValue, draft.owner.user.rawValue, record.roomId.rawValue,
                        record.callType.rawValue, record.mediaType.rawValue, record.callerId.rawValue,
                        record.inviterId.rawValue, participants, record.chatGroupId?.rawValue, record.direction.rawValue,
                        record.result.rawValue, record.startTime, record.endTime, record.duration,
                        record.endReason.rawValue,
                    ])
                if let inserted {
                    record.syncTime = inserted
                    return StoredRecord(owner: draft.owner, record: record)
                }
                // Already stored (a retry after a crash): return what is there.
                let row = try Row.fetchOne(
                    db, sql: "SELECT * FROM call_records WHERE sdk_app_id = ? AND user_id = ? AND call_id = ?",
                    arguments: [draft.owner.app.rawValue, draft.owner.user.rawValue, record.callId.rawValue])
                return StoredRecord(owner: draft.owner, record: try row.map(Self.record) ?? record)
        }
    }

    func queryRecords(owner: UserKey, syncTime: Int64, count: Int, order: RecordOrder) async throws
        -> QueryRecordsResponse
    {
        try await pool.read { db in
            let descending = order == .descending
            let bound = syncTime == -1 ? (descending ? Int64.max : -1) : syncTime
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM call_records WHERE sdk_app_id = ? AND user_id = ? AND sync_time \(descending ? "<" : ">") ?
                    ORDER BY sync_time \(descending ? "DESC" : "ASC") LIMIT ?
                    """,
                arguments: [owner.app.rawValue, owner.user.rawValue, bound, count + 1])
            let records = try rows.prefix(count).map(Self.record)
            return QueryRecordsResponse(
                records: records, hasMore: rows.count > count, syncTime: records.last?.syncTime ?? syncTime)
        }
    }

    func deleteRecords(owner: UserKey, callIds: [CallID]) async throws -> Int {
        guard !callIds.isEmpty else { return 0 }
        return try await pool.write { db in
            try db.execute(
                sql: """
                    DELETE FROM call_records WHERE sdk_app_id = ? AND user_id = ?
                    AND call_id IN (\(databaseQuestionMarks(count: callIds.count)))
                    """,
                arguments: StatementArguments([owner.app.rawValue, owner.user.rawValue] as [any DatabaseValueConvertible])
                    + StatementArguments(callIds.map(\.rawValue)))
            return db.changesCount
        }
    }

    func deleteAllRecords(owner: UserKey) async throws -> Int {
        try await pool.write { db in
            try db.execute(
                sql: "DELETE FROM call_records WHERE sdk_app_id = ? AND user_id = ?",
                arguments: [owner.app.rawValue, owner.user.rawValue])
            return db.changesCount
        }
    }

    static func record(_ row: Row) throws -> CallRecord {
        let participants = try JSONDecoder().decode([String].self, from: Data((row["participant_ids"] as String).utf8))
        return CallRecord(
            callId: CallID(rawValue: row["call_id"]), roomId: RoomID(rawValue: row["room_id"]),
            callType: CallType(rawValue: row["call_type"]) ?? .oneToOne,
            mediaType: CallMediaType(rawValue: row["media_type"]) ?? .audio,
            callerId: UserID(rawValue: row["caller_id"]), inviterId: UserID(rawValue: row["inviter_id"]),
            participantIds: participants.map(UserID.init(rawValue:)),
            chatGroupId: (row["chat_group_id"] as String?).map(ChatGroupID.init(rawValue:)),
            direction: CallDirection(rawValue: row["direction"]) ?? .incoming,
            result: CallRecordResult(rawValue: row["result"]) ?? .unknown, startTime: row["start_time"],
            endTime: row["end_time"], duration: row["duration"],
            endReason: CallEndReason(rawValue: row["end_reason"]) ?? .unknown, syncTime: row["sync_time"])
    }
}
