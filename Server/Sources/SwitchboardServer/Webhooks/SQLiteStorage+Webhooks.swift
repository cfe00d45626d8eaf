import Foundation
import GRDB
import SwitchboardProtocol

/// The webhook outbox and its endpoints on SQLite. A single node
/// (SQLite serves no cluster) is the only one to claim deliveries, so claims only guard against
/// its own dispatcher taking one twice.
extension SQLiteStorage {
    static let webhookMigration = """
        CREATE TABLE webhook_endpoints (
            id TEXT PRIMARY KEY,
            sdk_app_id INTEGER NOT NULL,
            url TEXT NOT NULL,
            event_types TEXT,
            description TEXT,
            secret TEXT NOT NULL,
            previous_secret TEXT,
            previous_secret_until INTEGER,
            paused INTEGER NOT NULL DEFAULT 0,
            paused_reason TEXT,
            full_since INTEGER,
            gaps TEXT NOT NULL DEFAULT '[]',
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        );
        CREATE INDEX webhook_endpoints_by_app ON webhook_endpoints (sdk_app_id);
        CREATE TABLE webhook_events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            sdk_app_id INTEGER NOT NULL,
            type TEXT NOT NULL,
            ordering_key TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            payload BLOB NOT NULL
        );
        CREATE INDEX webhook_events_by_time ON webhook_events (created_at);
        CREATE INDEX webhook_events_by_app_time ON webhook_events (sdk_app_id, created_at);
        CREATE TABLE webhook_deliveries (
            endpoint_id TEXT NOT NULL,
            event_seq INTEGER NOT NULL,
            ordering_key TEXT NOT NULL,
            state TEXT NOT NULL,
            due_at INTEGER NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            first_attempt_at INTEGER,
            last_attempt_at INTEGER,
            last_status INTEGER,
            last_error TEXT,
            claimed_by TEXT,
            claimed_until INTEGER,
            PRIMARY KEY (endpoint_id, event_seq)
        );
        CREATE INDEX webhook_deliveries_pending_by_key ON webhook_deliveries (endpoint_id, ordering_key, event_seq)
            WHERE state = 'pending';
        CREATE INDEX webhook_deliveries_pending_by_due ON webhook_deliveries (endpoint_id, due_at) WHERE state = 'pending';
        CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_seq);
        ALTER TABLE apps ADD COLUMN record_retention_days INTEGER;
        CREATE INDEX call_records_by_app_end ON call_records (sdk_app_id, end_time);
        """

    /// Indexes that keep each event's insert and each claim independent of the backlog: a new
    /// delivery's due time reads the last pending one of its ordering key (it had been read
    /// through the due-time index, a walk over every pending delivery of the endpoint, so a
    /// backlog made each insert slower: 6,800 records were late at 500 calls/s), and claims walk
    /// pending deliveries in (due, seq) order without a sort. The same on PostgreSQL.
    static let webhookIndexMigration = """
        CREATE INDEX webhook_deliveries_pending_key_due ON webhook_deliveries (endpoint_id, ordering_key, due_at)
            WHERE state = 'pending';
        DROP INDEX webhook_deliveries_pending_by_due;
        CREATE INDEX webhook_deliveries_pending_due_seq ON webhook_deliveries (endpoint_id, due_at, event_seq)
            WHERE state = 'pending';
        """

    /// The count of each endpoint's deliveries waiting, kept by triggers in the transaction that
    /// changes one (queued, delivered, failed for good, replayed, swept), so that the write of an
    /// event reads its endpoints' backlogs at the cost of a row each (counting them would read the
    /// whole backlog at every event). The bound itself is a setting (``setWebhookMaxBacklog(_:)``).
    static let webhookPendingMigration = """
        ALTER TABLE webhook_endpoints ADD COLUMN pending INTEGER NOT NULL DEFAULT 0;
        UPDATE webhook_endpoints SET pending = (SELECT count(*) FROM webhook_deliveries d
            WHERE d.endpoint_id = webhook_endpoints.id AND d.state = 'pending');
        CREATE TABLE switchboard_settings (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
        CREATE TRIGGER webhook_pending_queued AFTER INSERT ON webhook_deliveries WHEN NEW.state = 'pending'
        BEGIN
            UPDATE webhook_endpoints SET pending = pending + 1 WHERE id = NEW.endpoint_id;
        END;
        CREATE TRIGGER webhook_pending_changed AFTER UPDATE OF state ON webhook_deliveries
            WHEN (OLD.state = 'pending') <> (NEW.state = 'pending')
        BEGIN
            UPDATE webhook_endpoints SET pending = pending + (CASE WHEN NEW.state = 'pending' THEN 1 ELSE -1 END)
            WHERE id = NEW.endpoint_id;
        END;
        CREATE TRIGGER webhook_pending_removed AFTER DELETE ON webhook_deliveries WHEN OLD.state = 'pending'
        BEGIN
            UPDATE webhook_endpoints SET pending = pending - 1 WHERE id = OLD.endpoint_id;
        END;
        """

    /// The bound of an endpoint's backlog as the statements read it (the default until a server
    /// sets it: ``WebhookConfiguration/maxBacklog``).
    static let maxBacklogSQL = "coalesce((SELECT value FROM switchboard_settings WHERE key = 'webhook_max_backlog'), 100000)"

    /// The endpoints of an event's app that are at their bound become full with that event
    /// (arguments: its time, its app): the event and those after it are not queued for them.
    static let fullAtBound = """
        UPDATE webhook_endpoints SET full_since = ?
        WHERE sdk_app_id = ? AND full_since IS NULL AND pending >= \(maxBacklogSQL)
        """

    func setWebhookMaxBacklog(_ bound: Int) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO switchboard_settings (key, value) VALUES ('webhook_max_backlog', ?)
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value
                    """,
                arguments: [bound])
        }
    }

    /// The event types as SQLite keeps them: `,call.created,call.ended,` (a type matches when
    /// `,type,` is in it), NULL for all.
    static func storedTypes(_ types: Set<WebhookEventType>?) -> String? {
        types.map { "," + $0.map(\.rawValue).sorted().joined(separator: ",") + "," }
    }

    static func parsedTypes(_ text: String?) -> Set<WebhookEventType>? {
        text.map { Set($0.split(separator: ",").compactMap { WebhookEventType(rawValue: String($0)) }) }
    }

    /// Stores events and queues a delivery of each for every endpoint of its app that wants its
    /// type and is not at its bound, in the caller's transaction: an endpoint with the bound's
    /// count of deliveries waiting is marked full by the event (``fullAtBound``). An event already stored (a batch
    /// retried after its commit's answer was lost) is left as it is. A delivery is due at once,
    /// or when the last one still pending for its ordering key is: a call whose delivery is
    /// waiting out a backoff holds its later events back anyway.
    /// Queues an event's deliveries (arguments: its seq, ordering key, time, ordering key, app,
    /// type). The due time reads only the event's own ordering key (`…_pending_key_due`).
    static let deliveryInsert = """
        INSERT INTO webhook_deliveries (endpoint_id, event_seq, ordering_key, state, due_at)
        SELECT ep.id, ?, ?, 'pending', max(?, coalesce((SELECT max(p.due_at) FROM webhook_deliveries p
            WHERE p.endpoint_id = ep.id AND p.ordering_key = ? AND p.state = 'pending'), 0))
        FROM webhook_endpoints ep
        WHERE ep.sdk_app_id = ? AND ep.full_since IS NULL
            AND (ep.event_types IS NULL OR instr(ep.event_types, ',' || ? || ',') > 0)
        """

    static func insert(_ events: [OutboxEvent], _ db: Database) throws {
        for event in events {
            guard
                let seq = try Int64.fetchOne(
                    db.cachedStatement(
                        sql: """
                            INSERT INTO webhook_events (id, sdk_app_id, type, ordering_key, created_at, payload)
                            VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING seq
                            """),
                    arguments: [
                        event.id, event.app.rawValue, event.type.rawValue, event.orderingKey, event.time, event.payload,
                    ])
            else { continue }
            try db.cachedStatement(sql: fullAtBound).execute(arguments: [event.time, event.app.rawValue])
            try db.cachedStatement(sql: deliveryInsert).execute(arguments: [
                seq, event.orderingKey, event.time, event.orderingKey, event.app.rawValue, event.type.rawValue,
            ])
        }
    }

    // MARK: blocks with their events

    func block(app: SdkAppID, user: UserID, blocked: [UserID], notify: @Sendable ([UserID]) -> OutboxEvent?) async throws {
        guard !blocked.isEmpty else { return }
        try await pool.write { db in
            var added: [UserID] = []
            for other in Set(blocked) {
                try db.execute(
                    sql: "INSERT OR IGNORE INTO blocks (sdk_app_id, user_id, blocked_id) VALUES (?, ?, ?)",
                    arguments: [app.rawValue, user.rawValue, other.rawValue])
                if db.changesCount > 0 { added.append(other) }
            }
            if let event = notify(added) { try Self.insert([event], db) }
        }
    }

    func unblock(app: SdkAppID, user: UserID, blocked: [UserID], notify: @Sendable ([UserID]) -> OutboxEvent?) async throws {
        try await pool.write { db in
            var removed: [UserID] = []
            for other in Set(blocked) {
                try db.execute(
                    sql: "DELETE FROM blocks WHERE sdk_app_id = ? AND user_id = ? AND blocked_id = ?",
                    arguments: [app.rawValue, user.rawValue, other.rawValue])
                if db.changesCount > 0 { removed.append(other) }
            }
            if let event = notify(removed) { try Self.insert([event], db) }
        }
    }

    // MARK: endpoints

    func saveWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO webhook_endpoints (id, sdk_app_id, url, event_types, description, secret, previous_secret,
                        previous_secret_until, paused, paused_reason, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET url = excluded.url, event_types = excluded.event_types,
                        description = excluded.description, secret = excluded.secret,
                        previous_secret = excluded.previous_secret, previous_secret_until = excluded.previous_secret_until,
                        paused = excluded.paused, paused_reason = excluded.paused_reason, updated_at = excluded.updated_at
                    """,
                arguments: [
                    endpoint.id, endpoint.app.rawValue, endpoint.url, Self.storedTypes(endpoint.events),
                    endpoint.description, endpoint.secret, endpoint.previousSecret, endpoint.previousSecretUntil,
                    endpoint.paused, endpoint.pausedReason, endpoint.createdAt, endpoint.updatedAt,
                ])
        }
    }

    func webhookEndpoints(app: SdkAppID?) async throws -> [WebhookEndpoint] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM webhook_endpoints WHERE ? IS NULL OR sdk_app_id = ? ORDER BY created_at, id",
                arguments: [app?.rawValue, app?.rawValue]
            ).map { row in
                WebhookEndpoint(
                    id: row["id"], app: SdkAppID(row["sdk_app_id"] as Int64), url: row["url"],
                    events: Self.parsedTypes(row["event_types"]), description: row["description"], secret: row["secret"],
                    previousSecret: row["previous_secret"], previousSecretUntil: row["previous_secret_until"],
                    paused: row["paused"], pausedReason: row["paused_reason"], fullSince: row["full_since"],
                    gaps: (try? SwitchboardJSON.decode([WebhookGap].self, from: Data((row["gaps"] as String).utf8))) ?? [],
                    createdAt: row["created_at"], updatedAt: row["updated_at"])
            }
        }
    }

    func deleteWebhookEndpoint(app: SdkAppID, id: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "DELETE FROM webhook_endpoints WHERE id = ? AND sdk_app_id = ?", arguments: [id, app.rawValue])
            guard db.changesCount > 0 else { return false }
            try db.execute(sql: "DELETE FROM webhook_deliveries WHERE endpoint_id = ?", arguments: [id])
            return true
        }
    }

    func setWebhookFull(endpoint: String, full: Bool, now: Int64) async throws {
        try await pool.write { db in
            guard let row = try Row.fetchOne(
                db, sql: "SELECT full_since, gaps FROM webhook_endpoints WHERE id = ?", arguments: [endpoint])
            else { return }
            let since: Int64? = row["full_since"]
            if full {
                guard since == nil else { return }
                try db.execute(sql: "UPDATE webhook_endpoints SET full_since = ? WHERE id = ?", arguments: [now, endpoint])
            } else {
                guard let since else { return }
                var gaps = (try? SwitchboardJSON.decode([WebhookGap].self, from: Data((row["gaps"] as String).utf8))) ?? []
                gaps.append(WebhookGap(from: since, to: now))
                let kept = Array(gaps.suffix(WebhookEndpoint.maxGaps))
                try db.execute(
                    sql: "UPDATE webhook_endpoints SET full_since = NULL, gaps = ? WHERE id = ?",
                    arguments: [try SwitchboardJSON.encodeString(kept), endpoint])
            }
        }
    }

    // MARK: deliveries

    /// The first pending delivery of each ordering key that is due and not claimed (arguments:
    /// endpoint, now, now, limit), walked in (due, seq) order on `…_pending_due_seq`.
    static let claimableDeliveries = """
        SELECT d.event_seq, d.ordering_key, d.attempts, d.first_attempt_at, e.id, e.type, e.created_at, e.payload
        FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq
        WHERE d.endpoint_id = ? AND d.state = 'pending' AND d.due_at <= ?
            AND (d.claimed_until IS NULL OR d.claimed_until < ?)
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p WHERE p.endpoint_id = d.endpoint_id
                AND p.ordering_key = d.ordering_key AND p.state = 'pending' AND p.event_seq < d.event_seq)
        ORDER BY d.due_at, d.event_seq LIMIT ?
        """

    func claimWebhookDeliveries(endpoint: String, node: String, now: Int64, leaseUntil: Int64, limit: Int) async throws
        -> [ClaimedDelivery]
    {
        try await pool.write { db in
            let rows = try Row.fetchAll(
                db.cachedStatement(sql: Self.claimableDeliveries), arguments: [endpoint, now, now, limit])
            var claimed: [ClaimedDelivery] = []
            for row in rows {
                let seq: Int64 = row["event_seq"]
                try db.cachedStatement(
                    sql: "UPDATE webhook_deliveries SET claimed_by = ?, claimed_until = ? WHERE endpoint_id = ? AND event_seq = ?"
                ).execute(arguments: [node, leaseUntil, endpoint, seq])
                claimed.append(
                    ClaimedDelivery(
                        endpointId: endpoint, eventSeq: seq, eventId: row["id"],
                        type: WebhookEventType(rawValue: row["type"]), orderingKey: row["ordering_key"],
                        eventTime: row["created_at"], payload: row["payload"], attempts: row["attempts"],
                        firstAttemptAt: row["first_attempt_at"]))
            }
            return claimed
        }
    }

    func finishWebhookDeliveries(_ results: [DeliveryResult]) async throws {
        guard !results.isEmpty else { return }
        try await pool.write { db in
            for result in results { try Self.finish(result, db) }
        }
    }

    static func finish(_ result: DeliveryResult, _ db: Database) throws {
        let (state, due): (String, Int64?) =
            switch result.next {
            case .delivered: ("delivered", nil)
            case .retry(let at): ("pending", at)
            case .failed: ("failed", nil)
            }
        try db.cachedStatement(
            sql: """
                UPDATE webhook_deliveries SET state = ?, attempts = attempts + 1,
                    first_attempt_at = coalesce(first_attempt_at, ?), last_attempt_at = ?, last_status = ?,
                    last_error = ?, due_at = coalesce(?, due_at), claimed_by = NULL, claimed_until = NULL
                WHERE endpoint_id = ? AND event_seq = ? AND claimed_by = ?
                """
        ).execute(arguments: [
            state, result.at, result.at, result.status, result.error, due, result.endpointId, result.eventSeq,
            result.node,
        ])
        guard db.changesCount > 0, let due else { return }
        // The call's later events wait behind this one: they are due no sooner.
        try db.cachedStatement(
            sql: """
                UPDATE webhook_deliveries SET due_at = max(due_at, ?)
                WHERE endpoint_id = ? AND ordering_key = ? AND state = 'pending' AND event_seq > ?
                """
        ).execute(arguments: [due, result.endpointId, result.orderingKey, result.eventSeq])
    }

    func nextWebhookDue(endpoint: String, after now: Int64) async throws -> Int64? {
        try await pool.read { db in
            try Int64.fetchOne(
                db,
                sql: "SELECT min(due_at) FROM webhook_deliveries WHERE endpoint_id = ? AND state = 'pending' AND due_at > ?",
                arguments: [endpoint, now])
        }
    }

    func releaseWebhookClaims() async throws {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE webhook_deliveries SET claimed_by = NULL, claimed_until = NULL WHERE claimed_by IS NOT NULL")
        }
    }

    func webhookBacklogs() async throws -> [String: WebhookBacklog] {
        try await pool.read { db in
            var backlogs: [String: WebhookBacklog] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT d.endpoint_id, count(*) AS pending, min(e.created_at) AS oldest
                    FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq
                    WHERE d.state = 'pending' GROUP BY d.endpoint_id
                    """)
            {
                backlogs[row["endpoint_id"]] = WebhookBacklog(pending: row["pending"], oldestEventTime: row["oldest"])
            }
            return backlogs
        }
    }

    func webhookDeliveries(endpoint: String, state: DeliveryInfo.State?, before: Int64?, limit: Int) async throws
        -> [DeliveryInfo]
    {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT d.*, e.id AS event_id, e.type, e.created_at, be.id AS b_event_id, b.attempts AS b_attempts,
                        b.last_status AS b_last_status, b.last_error AS b_last_error, b.due_at AS b_due_at
                    FROM webhook_deliveries d
                    JOIN webhook_events e ON e.seq = d.event_seq
                    \(Self.blockerJoin)
                    WHERE d.endpoint_id = ? AND (? IS NULL OR d.state = ?) AND (? IS NULL OR d.event_seq < ?)
                    ORDER BY d.event_seq DESC LIMIT ?
                    """,
                arguments: [endpoint, state?.rawValue, state?.rawValue, before, before, limit]
            ).map { row in
                let state = DeliveryInfo.State(rawValue: row["state"]) ?? .pending
                let blocker: String? = row["b_event_id"]
                return DeliveryInfo(
                    eventId: row["event_id"], type: row["type"], orderingKey: row["ordering_key"],
                    eventTime: row["created_at"], state: state, attempts: row["attempts"],
                    firstAttemptAt: row["first_attempt_at"], lastAttemptAt: row["last_attempt_at"],
                    lastStatus: row["last_status"], lastError: row["last_error"],
                    nextAttemptAt: state == .pending ? row["due_at"] : nil,
                    waitingFor: blocker.map {
                        DeliveryInfo.Blocker(
                            eventId: $0, attempts: row["b_attempts"], lastStatus: row["b_last_status"],
                            lastError: row["b_last_error"], nextAttemptAt: row["b_due_at"])
                    }, seq: row["event_seq"])
            }
        }
    }

    /// For a pending delivery `d`: the first pending delivery of its call (`b`, with its event
    /// `be`) when that is an earlier one, which holds `d` back. The same on PostgreSQL.
    static let blockerJoin = """
        LEFT JOIN webhook_deliveries b ON d.state = 'pending' AND b.endpoint_id = d.endpoint_id
            AND b.event_seq = (SELECT min(p.event_seq) FROM webhook_deliveries p WHERE p.endpoint_id = d.endpoint_id
                AND p.ordering_key = d.ordering_key AND p.state = 'pending')
            AND b.event_seq < d.event_seq
        LEFT JOIN webhook_events be ON be.seq = b.event_seq
        """

    /// Queues events again for an endpoint: a delivery that is pending stays as it is; any other
    /// starts over (its attempts and retry bound from zero), due at once.
    static let replaySQL = """
        INSERT INTO webhook_deliveries (endpoint_id, event_seq, ordering_key, state, due_at)
        SELECT ep.id, e.seq, e.ordering_key, 'pending', ? FROM webhook_events e
        JOIN webhook_endpoints ep ON ep.id = ? AND ep.sdk_app_id = e.sdk_app_id
            AND (ep.event_types IS NULL OR instr(ep.event_types, ',' || e.type || ',') > 0)
        WHERE e.seq IN (%@)
        ON CONFLICT (endpoint_id, event_seq) DO UPDATE SET state = 'pending', due_at = excluded.due_at, attempts = 0,
            first_attempt_at = NULL
        WHERE webhook_deliveries.state <> 'pending'
        """

    func replayWebhookEvent(endpoint: String, eventId: String, now: Int64) async throws -> Bool {
        try await pool.write { db in
            guard
                let seq = try Int64.fetchOne(
                    db,
                    sql: """
                        SELECT e.seq FROM webhook_events e JOIN webhook_endpoints ep ON ep.id = ?
                            AND ep.sdk_app_id = e.sdk_app_id
                            AND (ep.event_types IS NULL OR instr(ep.event_types, ',' || e.type || ',') > 0)
                        WHERE e.id = ?
                        """, arguments: [endpoint, eventId])
            else { return false }
            try db.execute(sql: Self.replaySQL.replacingOccurrences(of: "%@", with: "?"), arguments: [now, endpoint, seq])
            return true
        }
    }

    func replayWebhookEvents(endpoint: String, from: Int64, to: Int64, limit: Int, now: Int64) async throws
        -> (queued: Int, continueFrom: Int64?)
    {
        try await pool.write { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT e.seq, e.created_at FROM webhook_events e JOIN webhook_endpoints ep ON ep.id = ?
                        AND ep.sdk_app_id = e.sdk_app_id
                        AND (ep.event_types IS NULL OR instr(ep.event_types, ',' || e.type || ',') > 0)
                    WHERE e.sdk_app_id = ep.sdk_app_id AND e.created_at >= ? AND e.created_at < ?
                    ORDER BY e.seq LIMIT ?
                    """, arguments: [endpoint, from, to, limit + 1])
            let taken = rows.prefix(limit).map { $0["seq"] as Int64 }
            for chunk in stride(from: 0, to: taken.count, by: 500) {
                let seqs = Array(taken[chunk..<min(chunk + 500, taken.count)])
                try db.execute(
                    sql: Self.replaySQL.replacingOccurrences(of: "%@", with: databaseQuestionMarks(count: seqs.count)),
                    arguments: StatementArguments([now, endpoint] as [any DatabaseValueConvertible]) + StatementArguments(seqs))
            }
            return (taken.count, rows.count > limit ? rows[limit]["created_at"] as Int64 : nil)
        }
    }

    func sweepWebhookEvents(before cutoff: Int64, limit: Int) async throws -> Int {
        try await pool.write { db in
            let seqs = try Int64.fetchAll(
                db, sql: "SELECT seq FROM webhook_events WHERE created_at < ? ORDER BY seq LIMIT ?", arguments: [cutoff, limit])
            for chunk in stride(from: 0, to: seqs.count, by: 500) {
                let part = Array(seqs[chunk..<min(chunk + 500, seqs.count)])
                let marks = databaseQuestionMarks(count: part.count)
                try db.execute(sql: "DELETE FROM webhook_deliveries WHERE event_seq IN (\(marks))", arguments: StatementArguments(part))
                try db.execute(sql: "DELETE FROM webhook_events WHERE seq IN (\(marks))", arguments: StatementArguments(part))
            }
            return seqs.count
        }
    }

}
