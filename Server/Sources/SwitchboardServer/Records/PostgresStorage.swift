import Foundation
import Logging
import NIOCore
import PostgresNIO
import SwitchboardProtocol

/// The production store: PostgreSQL through postgres-nio, shared by every node of a cluster.
///
/// The tables are the ones SQLite has (``SQLiteStorage``), with the same rules; what differs is
/// what a shared database needs: migrations take an advisory lock (nodes may start together),
/// nothing is cached in this process that another node could change (who blocks whom is asked of
/// the database), and the record writer's batches are one transaction each, as in SQLite.
/// Durability is PostgreSQL's (`synchronous_commit = on` by default): a commit is on disk before
/// the server sends `callRecord`.
final class PostgresStorage: SwitchboardStorage {
    /// Where to connect: `postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|require]`.
    struct Location: Sendable, Equatable {
        var host: String
        var port: Int
        var user: String
        var password: String?
        var database: String
        var requireTLS: Bool

        /// Parses a `postgresql://` (or `postgres://`) URL; nil for anything else.
        init?(url text: String) {
            guard let components = URLComponents(string: text),
                components.scheme == "postgresql" || components.scheme == "postgres",
                let host = components.host, !host.isEmpty, let user = components.user, !user.isEmpty
            else { return nil }
            let database = String(components.path.drop(while: { $0 == "/" }))
            guard !database.isEmpty, !database.contains("/") else { return nil }
            self.host = host
            self.port = components.port ?? 5432
            self.user = user.removingPercentEncoding ?? user
            self.password = components.password.map { $0.removingPercentEncoding ?? $0 }
            self.database = database
            switch components.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "disable" {
            case "disable", "prefer", "allow": requireTLS = false
            case "require", "verify-ca", "verify-full": requireTLS = true
            default: return nil
            }
        }

        var configuration: PostgresClient.Configuration {
            var configuration = PostgresClient.Configuration(
                host: host, port: port, username: user, password: password, database: database,
                tls: requireTLS ? .require(.makeClientConfiguration()) : .disable)
            configuration.options.maximumConnections = 16
            configuration.options.additionalStartupParameters = Self.startupParameters
            return configuration
        }

        /// Set on every connection: each prepared statement (``PostgresStatements``) keeps one plan.
        /// Left to choose, PostgreSQL planned the statements over arrays (`= ANY($1)`, `unnest`)
        /// again at every run, their custom plans looking cheaper than the generic one (the
        /// records' insert: 0.19 ms of planning for each run). Every statement the server runs is a
        /// lookup by key, which one plan serves.
        static let startupParameters = [("plan_cache_mode", "force_generic_plan")]

        /// The URL without its password, for logs and banners.
        var description: String { "postgresql://\(user)@\(host):\(port)/\(database)" }
    }

    let location: Location
    let client: PostgresClient
    private let runner: Task<Void, Never>
    let logger: Logger

    /// Connects and migrates the schema; throws if the database cannot be reached.
    init(_ location: Location, logger: Logger) async throws {
        self.location = location
        self.logger = logger
        let client = PostgresClient(configuration: location.configuration, backgroundLogger: logger)
        self.client = client
        runner = Task { await client.run() }
        do {
            try await migrate()
        } catch {
            runner.cancel()
            throw error
        }
    }

    /// Stops the connection pool.
    func shutdown() async {
        runner.cancel()
        _ = await runner.value
    }

    // MARK: - apps

    func loadApps() async throws -> [AppRecord] {
        var apps: [AppRecord] = []
        let rows = try await client.query(
            """
            SELECT sdk_app_id, secret_key, busy_policy, max_participants, blocked_caller_sees, record_retention_days,
                is_development, created_at, app_push_credentials.credentials, call_pull, recording
            FROM apps LEFT JOIN app_push_credentials USING (sdk_app_id) ORDER BY sdk_app_id
            """, logger: logger)
        for try await (id, secret, busy, max, sees, retention, development, created, push, pull, recording) in rows.decode(
            (Int64, String, String, Int32, String, Int32?, Bool, Int64, String?, Bool, String?).self)
        {
            apps.append(
                AppRecord(
                    sdkAppID: SdkAppID(id), secretKey: secret,
                    settings: AppSettings(
                        busyPolicy: BusyPolicy(rawValue: busy) ?? .reject, maxParticipants: Int(max),
                        blockedCallerSees: BlockedCallerSees(rawValue: sees) ?? .reject,
                        recordRetentionDays: retention.map(Int.init), callPull: pull,
                        recording: RecordingSettings.stored(recording)),
                    isDevelopment: development, createdAt: created, push: try AppPushCredentials.stored(push)))
        }
        return apps
    }

    func addPushCredentials(app: SdkAppID, _ credentials: AppPushCredentials, now: Int64) async throws {
        let text = try credentials.storedText()
        try await client.query(
            """
            INSERT INTO app_push_credentials (sdk_app_id, credentials, updated_at) VALUES (\(app.rawValue), \(text), \(now))
            ON CONFLICT (sdk_app_id) DO NOTHING
            """, logger: logger)
    }

    func savePushCredentials(app: SdkAppID, _ credentials: AppPushCredentials, now: Int64) async throws {
        let text = try credentials.storedText()
        try await client.query(
            """
            INSERT INTO app_push_credentials (sdk_app_id, credentials, updated_at) VALUES (\(app.rawValue), \(text), \(now))
            ON CONFLICT (sdk_app_id) DO UPDATE SET credentials = excluded.credentials, updated_at = excluded.updated_at
            """, logger: logger)
    }

    func saveApp(_ app: AppRecord) async throws {
        try await client.query(
            """
            INSERT INTO apps (sdk_app_id, secret_key, busy_policy, max_participants, blocked_caller_sees,
                record_retention_days, is_development, created_at, call_pull, recording)
            VALUES (\(app.sdkAppID.rawValue), \(app.secretKey), \(app.settings.busyPolicy.rawValue),
                \(Int32(clamping: app.settings.maxParticipants)), \(app.settings.blockedCallerSees.rawValue),
                \(app.settings.recordRetentionDays.map { Int32(clamping: $0) }), \(app.isDevelopment), \(app.createdAt),
                \(app.settings.callPull), \(app.settings.recording.storedText))
            ON CONFLICT (sdk_app_id) DO UPDATE SET secret_key = excluded.secret_key,
                busy_policy = excluded.busy_policy, max_participants = excluded.max_participants,
                blocked_caller_sees = excluded.blocked_caller_sees,
                record_retention_days = excluded.record_retention_days, is_development = excluded.is_development,
                call_pull = excluded.call_pull, recording = excluded.recording
            """, logger: logger)
    }

    // MARK: - profiles

    func loadProfiles(app: SdkAppID, users: [UserID]) async throws -> [UserProfile] {
        guard !users.isEmpty else { return [] }
        var profiles: [UserProfile] = []
        let rows = try await client.query(
            """
            SELECT user_id, nickname, avatar_url FROM profiles
            WHERE sdk_app_id = \(app.rawValue) AND user_id = ANY(\(users.map(\.rawValue)))
            """, logger: logger)
        for try await (user, nickname, avatar) in rows.decode((String, String?, String?).self) {
            profiles.append(UserProfile(userId: UserID(rawValue: user), nickname: nickname, avatarURL: avatar))
        }
        return profiles
    }

    func saveProfile(app: SdkAppID, _ profile: UserProfile, now: Int64) async throws {
        try await client.query(
            """
            INSERT INTO profiles (sdk_app_id, user_id, nickname, avatar_url, updated_at)
            VALUES (\(app.rawValue), \(profile.userId.rawValue), \(profile.nickname), \(profile.avatarURL), \(now))
            ON CONFLICT (sdk_app_id, user_id) DO UPDATE SET nickname = excluded.nickname,
                avatar_url = excluded.avatar_url, updated_at = excluded.updated_at
            """, logger: logger)
    }

    // MARK: - push tokens

    func registerPushToken(_ token: PushToken, move: Bool) async throws {
        let logger = self.logger
        try await transaction { connection in
            let holder = try await connection.query(
                "SELECT sdk_app_id, user_id, device_id FROM push_tokens WHERE token = \(token.token) FOR UPDATE",
                logger: logger
            ).decode((Int64, String, String).self).first { _ in true }
            if let (app, user, device) = holder {
                let mine =
                    app == token.user.app.rawValue && user == token.user.user.rawValue && device == token.device.rawValue
                guard mine || (move && app == token.user.app.rawValue) else {
                    throw SwitchboardError(.pushTokenInUse)
                }
            }
            try await connection.query(
                """
                DELETE FROM push_tokens WHERE token = \(token.token) OR (sdk_app_id = \(token.user.app.rawValue)
                    AND user_id = \(token.user.user.rawValue) AND device_id = \(token.device.rawValue)
                    AND kind = \(token.kind.rawValue))
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO push_tokens (token, sdk_app_id, user_id, device_id, kind, environment, bundle_id, updated_at,
                    web_p256dh, web_auth, sealing_key, alert_ringing)
                VALUES (\(token.token), \(token.user.app.rawValue), \(token.user.user.rawValue),
                    \(token.device.rawValue), \(token.kind.rawValue), \(token.environment.rawValue), \(token.bundleId),
                    \(token.updatedAt), \(token.webPush?.p256dh), \(token.webPush?.auth), \(token.sealingKey),
                    \(token.alertRinging))
                """, logger: logger)
        }
    }

    func unregisterPushToken(user: UserKey, device: DeviceID, kind: PushTokenKind?) async throws {
        try await client.query(
            """
            DELETE FROM push_tokens
            WHERE sdk_app_id = \(user.app.rawValue) AND user_id = \(user.user.rawValue) AND device_id = \(device.rawValue)
            AND (\(kind?.rawValue)::TEXT IS NULL OR kind = \(kind?.rawValue))
            """, logger: logger)
    }

    func pushTokens(app: SdkAppID, users: [UserID]) async throws -> [UserID: [PushToken]] {
        guard !users.isEmpty else { return [:] }
        var tokens: [UserID: [PushToken]] = [:]
        let rows = try await client.query(
            """
            SELECT token, user_id, device_id, kind, environment, bundle_id, updated_at, web_p256dh, web_auth, sealing_key,
                alert_ringing
            FROM push_tokens
            WHERE sdk_app_id = \(app.rawValue) AND user_id = ANY(\(users.map(\.rawValue))) ORDER BY updated_at
            """, logger: logger)
        for try await (token, user, device, kind, environment, bundle, updated, p256dh, auth, sealingKey, alertRinging)
            in rows.decode((String, String, String, String, String, String, Int64, String?, String?, String?, Bool).self)
        {
            let id = UserID(rawValue: user)
            tokens[id, default: []].append(
                PushToken(
                    token: token, user: UserKey(app: app, user: id), device: DeviceID(rawValue: device),
                    kind: PushTokenKind(rawValue: kind) ?? .voip,
                    environment: PushEnvironment(rawValue: environment) ?? .production, bundleId: bundle,
                    updatedAt: updated, webPush: WebPushKeys.stored(p256dh: p256dh, auth: auth), sealingKey: sealingKey,
                    alertRinging: alertRinging))
        }
        return tokens
    }

    func removePushToken(_ token: String) async throws {
        try await client.query("DELETE FROM push_tokens WHERE token = \(token)", logger: logger)
    }

    func ringingPushDevices() async throws -> [(UserKey, DeviceID)] {
        var devices: [(UserKey, DeviceID)] = []
        let rows = try await client.query(
            PostgresQuery(unsafeSQL: "SELECT DISTINCT sdk_app_id, user_id, device_id FROM push_tokens WHERE \(PushToken.ringsWhere)"),
            logger: logger)
        for try await (app, user, device) in rows.decode((Int64, String, String).self) {
            devices.append((UserKey(app: SdkAppID(app), user: UserID(rawValue: user)), DeviceID(rawValue: device)))
        }
        return devices
    }

    // MARK: - blocks

    func blockedUsers(app: SdkAppID, user: UserID) async throws -> [UserID] {
        try await strings(
            """
            SELECT blocked_id FROM blocks WHERE sdk_app_id = \(app.rawValue) AND user_id = \(user.rawValue)
            ORDER BY blocked_id
            """
        ).map(UserID.init(rawValue:))
    }

    func usersBlocking(_ caller: UserID, among users: [UserID], app: SdkAppID) async throws -> Set<UserID> {
        guard !users.isEmpty else { return [] }
        let statement = PostgresStatements.UsersBlocking(app: app.rawValue, caller: caller.rawValue, users: users.map(\.rawValue))
        return Set(try await client.execute(statement, logger: logger).collect().map(UserID.init(rawValue:)))
    }

    func blockers() async throws -> [UserKey] {
        var blockers: [UserKey] = []
        let rows = try await client.query("SELECT DISTINCT sdk_app_id, user_id FROM blocks", logger: logger)
        for try await (app, user) in rows.decode((Int64, String).self) {
            blockers.append(UserKey(app: SdkAppID(app), user: UserID(rawValue: user)))
        }
        return blockers
    }

    // MARK: - chat groups

    func setChatGroupMembers(app: SdkAppID, group: ChatGroupID, members: [UserID]) async throws {
        let logger = self.logger
        try await transaction { connection in
            try await connection.query(
                "DELETE FROM chat_group_members WHERE sdk_app_id = \(app.rawValue) AND group_id = \(group.rawValue)",
                logger: logger)
            guard !members.isEmpty else { return }
            try await connection.query(
                """
                INSERT INTO chat_group_members (sdk_app_id, group_id, user_id)
                SELECT \(app.rawValue), \(group.rawValue), unnest(\(Array(Set(members.map(\.rawValue)))))
                """, logger: logger)
        }
    }

    func chatGroupMembers(app: SdkAppID, group: ChatGroupID) async throws -> [UserID] {
        try await strings(
            """
            SELECT user_id FROM chat_group_members WHERE sdk_app_id = \(app.rawValue) AND group_id = \(group.rawValue)
            ORDER BY user_id
            """
        ).map(UserID.init(rawValue:))
    }

    func isChatGroupMember(app: SdkAppID, group: ChatGroupID, user: UserID) async throws -> Bool {
        try await !strings(
            """
            SELECT user_id FROM chat_group_members
            WHERE sdk_app_id = \(app.rawValue) AND group_id = \(group.rawValue) AND user_id = \(user.rawValue)
            """
        ).isEmpty
    }

    // MARK: - records and the journal

    func commit(_ batch: PersistenceBatch) async throws -> [StoredRecord] {
        guard !batch.journal.isEmpty || !batch.ended.isEmpty || !batch.events.isEmpty || !batch.recordings.isEmpty
        else { return [] }
        // Takes first, in a statement of their own: committed before the end or save that follows
        // them (a take stored twice keeps the first), never lost between the two.
        try await insertRecordings(batch.recordings)
        // The last save of a call wins.
        var latest: [CallID: JournalEntry] = [:]
        for entry in batch.journal { latest[entry.callId] = entry }
        let drafts = batch.ended.flatMap(\.records)
        var syncTimes: [RecordKey: Int64] = [:]
        do {
            let commit = PostgresStatements.Commit(
                fence: batch.fence, journal: Array(latest.values), ended: batch.ended.compactMap(\.callId?.rawValue), drafts: drafts,
                events: batch.events)
            for try await (app, user, call, syncTime) in try await client.execute(commit, logger: logger) {
                syncTimes[RecordKey(app: app, user: user, call: call)] = syncTime
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == PostgresStatements.Commit.fencedState {
            throw ClusterError.fenced
        }
        var stored: [StoredRecord] = []
        stored.reserveCapacity(drafts.count)
        for draft in drafts {
            var record = draft.record
            let key = RecordKey(app: draft.owner.app.rawValue, user: draft.owner.user.rawValue, call: record.callId.rawValue)
            if let syncTime = syncTimes.removeValue(forKey: key) {
                record.syncTime = syncTime
                stored.append(StoredRecord(owner: draft.owner, record: record))
                continue
            }
            // Already stored (a retry after a crash): return what is there.
            let existing = try await client.query(
                """
                SELECT \(unescaped: Self.recordColumns) FROM call_records
                WHERE sdk_app_id = \(key.app) AND user_id = \(key.user) AND call_id = \(key.call)
                """, logger: logger
            ).decode(RecordRow.self).first { _ in true }
            stored.append(StoredRecord(owner: draft.owner, record: existing.map(Self.record) ?? record))
        }
        return stored
    }

    struct RecordKey: Hashable {
        var app: Int64
        var user: String
        var call: String
    }

    func loadJournal() async throws -> [JournalEntry] {
        var entries: [JournalEntry] = []
        let rows = try await client.query(
            "SELECT call_id, sdk_app_id, state, updated_at FROM call_journal ORDER BY updated_at", logger: logger)
        for try await (call, app, state, updated) in rows.decode((String, Int64, ByteBuffer, Int64).self) {
            entries.append(
                JournalEntry(
                    callId: CallID(rawValue: call), app: SdkAppID(app), state: Data(state.readableBytesView),
                    updatedAt: updated))
        }
        return entries
    }

    func markAlive(at time: Int64) async throws {
        try await client.query(
            """
            INSERT INTO node_state (key, value) VALUES ('alive_at', \(time))
            ON CONFLICT (key) DO UPDATE SET value = GREATEST(node_state.value, excluded.value)
            """, logger: logger)
    }

    func lastAlive() async throws -> Int64? {
        try await client.query("SELECT value FROM node_state WHERE key = 'alive_at'", logger: logger)
            .decode(Int64.self).first { _ in true }
    }

    static let recordColumns = """
        call_id, room_id, call_type, media_type, caller_id, inviter_id, participant_ids, chat_group_id, direction,
        result, start_time, end_time, duration, end_reason, sync_time
        """

    typealias RecordRow = (
        String, String, String, String, String, String, [String], String?, String, String, Int64?, Int64, Int32, String,
        Int64
    )

    static func record(_ row: RecordRow) -> CallRecord {
        let (call, room, type, media, caller, inviter, participants, group, direction, result, start, end, duration, reason, sync) =
            row
        return CallRecord(
            callId: CallID(rawValue: call), roomId: RoomID(rawValue: room), callType: CallType(rawValue: type) ?? .oneToOne,
            mediaType: CallMediaType(rawValue: media) ?? .audio, callerId: UserID(rawValue: caller),
            inviterId: UserID(rawValue: inviter), participantIds: participants.map(UserID.init(rawValue:)),
            chatGroupId: group.map(ChatGroupID.init(rawValue:)), direction: CallDirection(rawValue: direction) ?? .incoming,
            result: CallRecordResult(rawValue: result) ?? .unknown, startTime: start, endTime: end, duration: Int(duration),
            endReason: CallEndReason(rawValue: reason) ?? .unknown, syncTime: sync)
    }

    func queryRecords(owner: UserKey, syncTime: Int64, count: Int, order: RecordOrder) async throws
        -> QueryRecordsResponse
    {
        let descending = order == .descending
        let bound = syncTime == -1 ? (descending ? Int64.max : -1) : syncTime
        let rows = try await client.query(
            """
            SELECT \(unescaped: Self.recordColumns) FROM call_records
            WHERE sdk_app_id = \(owner.app.rawValue) AND user_id = \(owner.user.rawValue)
                AND sync_time \(unescaped: descending ? "<" : ">") \(bound)
            ORDER BY sync_time \(unescaped: descending ? "DESC" : "ASC") LIMIT \(Int64(count + 1))
            """, logger: logger)
        var records: [CallRecord] = []
        for try await row in rows.decode(RecordRow.self) { records.append(Self.record(row)) }
        let page = Array(records.prefix(count))
        return QueryRecordsResponse(records: page, hasMore: records.count > count, syncTime: page.last?.syncTime ?? syncTime)
    }

    func deleteRecords(owner: UserKey, callIds: [CallID]) async throws -> Int {
        guard !callIds.isEmpty else { return 0 }
        return try await strings(
            """
            DELETE FROM call_records WHERE sdk_app_id = \(owner.app.rawValue) AND user_id = \(owner.user.rawValue)
                AND call_id = ANY(\(callIds.map(\.rawValue)))
            RETURNING call_id
            """
        ).count
    }

    func deleteAllRecords(owner: UserKey) async throws -> Int {
        try await strings(
            """
            DELETE FROM call_records WHERE sdk_app_id = \(owner.app.rawValue) AND user_id = \(owner.user.rawValue)
            RETURNING call_id
            """
        ).count
    }

    /// Runs `body` in a transaction; an error of ours thrown inside comes out as it was thrown.
    func transaction<Result>(
        _ body: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        do {
            return try await client.withTransaction(logger: logger, body)
        } catch let error as PostgresTransactionError {
            if let ours = error.closureError as? SwitchboardError { throw ours }
            throw error
        }
    }

    /// The first column of every row, as strings.
    private func strings(_ query: PostgresQuery) async throws -> [String] {
        try await client.query(query, logger: logger).decode(String.self).collect()
    }
}
