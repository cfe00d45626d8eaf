import Foundation
import NIOCore
import PostgresNIO
import SwitchboardProtocol

/// The webhook outbox and its endpoints on PostgreSQL, shared by
/// every node of a cluster: any node may claim deliveries, and `FOR UPDATE SKIP LOCKED` with a
/// lease gives each to one node at a time.
extension PostgresStorage {
    /// The tables (migration `webhooks-v1`); as on SQLite (``SQLiteStorage/webhookMigration``).
    static let webhookTables = """
        CREATE TABLE webhook_endpoints (
            id TEXT PRIMARY KEY,
            sdk_app_id BIGINT NOT NULL,
            url TEXT NOT NULL,
            event_types TEXT[],
            description TEXT,
            secret TEXT NOT NULL,
            previous_secret TEXT,
            previous_secret_until BIGINT,
            paused BOOLEAN NOT NULL DEFAULT FALSE,
            paused_reason TEXT,
            full_since BIGINT,
            gaps TEXT NOT NULL DEFAULT '[]',
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL
        );
        CREATE INDEX webhook_endpoints_by_app ON webhook_endpoints (sdk_app_id);
        CREATE TABLE webhook_events (
            seq BIGSERIAL PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            sdk_app_id BIGINT NOT NULL,
            type TEXT NOT NULL,
            ordering_key TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            payload BYTEA NOT NULL
        );
        CREATE INDEX webhook_events_by_time ON webhook_events (created_at);
        CREATE INDEX webhook_events_by_app_time ON webhook_events (sdk_app_id, created_at);
        CREATE TABLE webhook_deliveries (
            endpoint_id TEXT NOT NULL,
            event_seq BIGINT NOT NULL,
            ordering_key TEXT NOT NULL,
            state TEXT NOT NULL,
            due_at BIGINT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            first_attempt_at BIGINT,
            last_attempt_at BIGINT,
            last_status INTEGER,
            last_error TEXT,
            claimed_by TEXT,
            claimed_until BIGINT,
            PRIMARY KEY (endpoint_id, event_seq)
        );
        CREATE INDEX webhook_deliveries_pending_by_key ON webhook_deliveries (endpoint_id, ordering_key, event_seq)
            WHERE state = 'pending';
        CREATE INDEX webhook_deliveries_pending_by_due ON webhook_deliveries (endpoint_id, due_at) WHERE state = 'pending';
        CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_seq);
        ALTER TABLE apps ADD COLUMN record_retention_days INTEGER;
        CREATE INDEX call_records_by_app_end ON call_records (sdk_app_id, end_time);
        """

    /// Stores events and queues their deliveries, in the caller's transaction: the rules of
    /// ``SQLiteStorage/insert(_:_:)``. Sequence numbers are taken in the events' order.
    static let outboxFunction = """
        CREATE OR REPLACE FUNCTION switchboard_outbox(
            p_ids text[], p_apps bigint[], p_types text[], p_keys text[], p_times bigint[], p_payloads bytea[]
        ) RETURNS void LANGUAGE sql AS $outbox$
            WITH inserted AS (
                INSERT INTO webhook_events (id, sdk_app_id, type, ordering_key, created_at, payload)
                SELECT e.id, e.app, e.type, e.key, e.at, e.payload
                FROM unnest(p_ids, p_apps, p_types, p_keys, p_times, p_payloads)
                    WITH ORDINALITY AS e(id, app, type, key, at, payload, n)
                ORDER BY e.n
                ON CONFLICT (id) DO NOTHING
                RETURNING seq, sdk_app_id, type, ordering_key, created_at
            )
            INSERT INTO webhook_deliveries (endpoint_id, event_seq, ordering_key, state, due_at)
            SELECT ep.id, i.seq, i.ordering_key, 'pending',
                GREATEST(i.created_at, COALESCE((SELECT max(p.due_at) FROM webhook_deliveries p
                    WHERE p.endpoint_id = ep.id AND p.ordering_key = i.ordering_key AND p.state = 'pending'), 0))
            FROM inserted i JOIN webhook_endpoints ep ON ep.sdk_app_id = i.sdk_app_id AND ep.full_since IS NULL
                AND (ep.event_types IS NULL OR i.type = ANY(ep.event_types))
        $outbox$
        """

    /// The backlog's bound at every write (migration `webhooks-v3-pending`, issue 48): as on
    /// SQLite (``SQLiteStorage/webhookPendingMigration``), a count of each endpoint's deliveries
    /// waiting, kept by triggers, and the bound as a setting. Here the triggers are per statement
    /// (one change of each endpoint's row per statement, not one per delivery), and every
    /// statement that changes counts locks the endpoints' rows in the order of their ids first:
    /// transactions of several nodes that change the counts of the same endpoints wait for each
    /// other, and never deadlock.
    static let pendingMigration: [String] = [
        "ALTER TABLE webhook_endpoints ADD COLUMN pending BIGINT NOT NULL DEFAULT 0",
        """
        UPDATE webhook_endpoints ep SET pending = (SELECT count(*) FROM webhook_deliveries d
            WHERE d.endpoint_id = ep.id AND d.state = 'pending')
        """,
        "CREATE TABLE IF NOT EXISTS switchboard_settings (key TEXT PRIMARY KEY, value BIGINT NOT NULL)",
        """
        CREATE OR REPLACE FUNCTION switchboard_count_pending() RETURNS trigger LANGUAGE plpgsql AS $count$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                PERFORM 1 FROM webhook_endpoints WHERE id IN (SELECT endpoint_id FROM new_rows WHERE state = 'pending')
                    ORDER BY id FOR UPDATE;
                UPDATE webhook_endpoints ep SET pending = ep.pending + c.n
                FROM (SELECT endpoint_id, count(*) AS n FROM new_rows WHERE state = 'pending' GROUP BY endpoint_id) c
                WHERE ep.id = c.endpoint_id;
            ELSIF TG_OP = 'UPDATE' THEN
                PERFORM 1 FROM webhook_endpoints WHERE id IN (
                    SELECT n.endpoint_id FROM new_rows n JOIN old_rows o
                        ON o.endpoint_id = n.endpoint_id AND o.event_seq = n.event_seq
                    WHERE (n.state = 'pending') <> (o.state = 'pending')
                ) ORDER BY id FOR UPDATE;
                UPDATE webhook_endpoints ep SET pending = ep.pending + c.n
                FROM (
                    SELECT n.endpoint_id, sum((n.state = 'pending')::int - (o.state = 'pending')::int) AS n
                    FROM new_rows n JOIN old_rows o ON o.endpoint_id = n.endpoint_id AND o.event_seq = n.event_seq
                    WHERE (n.state = 'pending') <> (o.state = 'pending') GROUP BY n.endpoint_id
                ) c
                WHERE ep.id = c.endpoint_id;
            ELSE
                PERFORM 1 FROM webhook_endpoints WHERE id IN (SELECT endpoint_id FROM old_rows WHERE state = 'pending')
                    ORDER BY id FOR UPDATE;
                UPDATE webhook_endpoints ep SET pending = ep.pending - c.n
                FROM (SELECT endpoint_id, count(*) AS n FROM old_rows WHERE state = 'pending' GROUP BY endpoint_id) c
                WHERE ep.id = c.endpoint_id;
            END IF;
            RETURN NULL;
        END
        $count$
        """,
        """
        CREATE TRIGGER webhook_pending_queued AFTER INSERT ON webhook_deliveries
            REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION switchboard_count_pending()
        """,
        """
        CREATE TRIGGER webhook_pending_changed AFTER UPDATE ON webhook_deliveries
            REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
            EXECUTE FUNCTION switchboard_count_pending()
        """,
        """
        CREATE TRIGGER webhook_pending_removed AFTER DELETE ON webhook_deliveries
            REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION switchboard_count_pending()
        """,
        outboxFunctionWithBound,
    ]

    /// ``outboxFunction`` with the backlog's bound: the endpoints of the batch's apps are locked
    /// first, in the order of their ids (see ``pendingMigration``); an endpoint gets deliveries
    /// until it has the bound's count waiting, and the first event left out marks it full (the
    /// gap starts there). Same signature: nodes of the version before call it too.
    static let outboxFunctionWithBound = """
        CREATE OR REPLACE FUNCTION switchboard_outbox(
            p_ids text[], p_apps bigint[], p_types text[], p_keys text[], p_times bigint[], p_payloads bytea[]
        ) RETURNS void LANGUAGE plpgsql AS $outbox$
        DECLARE
            bound bigint := coalesce((SELECT value FROM switchboard_settings WHERE key = 'webhook_max_backlog'), 100000);
        BEGIN
            IF coalesce(array_length(p_ids, 1), 0) = 0 THEN
                RETURN;
            END IF;
            PERFORM 1 FROM webhook_endpoints WHERE sdk_app_id = ANY(p_apps) ORDER BY id FOR UPDATE;
            WITH inserted AS (
                INSERT INTO webhook_events (id, sdk_app_id, type, ordering_key, created_at, payload)
                SELECT e.id, e.app, e.type, e.key, e.at, e.payload
                FROM unnest(p_ids, p_apps, p_types, p_keys, p_times, p_payloads)
                    WITH ORDINALITY AS e(id, app, type, key, at, payload, n)
                ORDER BY e.n
                ON CONFLICT (id) DO NOTHING
                RETURNING seq, sdk_app_id, type, ordering_key, created_at
            ), wanted AS (
                SELECT ep.id AS endpoint_id, ep.pending, i.seq, i.ordering_key, i.created_at,
                    row_number() OVER (PARTITION BY ep.id ORDER BY i.seq) AS nth
                FROM inserted i JOIN webhook_endpoints ep ON ep.sdk_app_id = i.sdk_app_id AND ep.full_since IS NULL
                    AND (ep.event_types IS NULL OR i.type = ANY(ep.event_types))
            ), queued AS (
                INSERT INTO webhook_deliveries (endpoint_id, event_seq, ordering_key, state, due_at)
                SELECT w.endpoint_id, w.seq, w.ordering_key, 'pending',
                    GREATEST(w.created_at, COALESCE((SELECT max(p.due_at) FROM webhook_deliveries p
                        WHERE p.endpoint_id = w.endpoint_id AND p.ordering_key = w.ordering_key AND p.state = 'pending'), 0))
                FROM wanted w WHERE w.pending + w.nth <= bound
                RETURNING endpoint_id
            )
            UPDATE webhook_endpoints ep SET full_since = f.at
            FROM (SELECT endpoint_id, min(created_at) AS at FROM wanted WHERE pending + nth > bound GROUP BY endpoint_id) f
            WHERE ep.id = f.endpoint_id;
        END
        $outbox$
        """

    func setWebhookMaxBacklog(_ bound: Int) async throws {
        try await client.query(
            """
            INSERT INTO switchboard_settings (key, value) VALUES ('webhook_max_backlog', \(Int64(bound)))
            ON CONFLICT (key) DO UPDATE SET value = excluded.value
            """, logger: logger)
    }

    /// The bindings of ``outboxFunction``'s arrays, in its order.
    static func appendOutbox(_ events: [OutboxEvent], to bindings: inout PostgresBindings) {
        bindings.append(events.map(\.id))
        bindings.append(events.map(\.app.rawValue))
        bindings.append(events.map(\.type.rawValue))
        bindings.append(events.map(\.orderingKey))
        bindings.append(events.map(\.time))
        bindings.append(events.map { ByteBuffer(bytes: $0.payload) })
    }

    // MARK: blocks with their events

    func block(app: SdkAppID, user: UserID, blocked: [UserID], notify: @Sendable ([UserID]) -> OutboxEvent?) async throws {
        guard !blocked.isEmpty else { return }
        try await changeBlocks(
            """
            INSERT INTO blocks (sdk_app_id, user_id, blocked_id)
            SELECT \(app.rawValue), \(user.rawValue), unnest(\(Array(Set(blocked.map(\.rawValue)))))
            ON CONFLICT DO NOTHING RETURNING blocked_id
            """, notify: notify)
    }

    func unblock(app: SdkAppID, user: UserID, blocked: [UserID], notify: @Sendable ([UserID]) -> OutboxEvent?) async throws {
        guard !blocked.isEmpty else { return }
        try await changeBlocks(
            """
            DELETE FROM blocks WHERE sdk_app_id = \(app.rawValue) AND user_id = \(user.rawValue)
                AND blocked_id = ANY(\(blocked.map(\.rawValue))) RETURNING blocked_id
            """, notify: notify)
    }

    /// Runs a change of blocks that returns the users it changed and writes its event with it.
    func changeBlocks(_ change: PostgresQuery, notify: @Sendable ([UserID]) -> OutboxEvent?) async throws {
        let logger = self.logger
        try await client.withTransaction(logger: logger) { connection in
            var changed: [UserID] = []
            for try await user in try await connection.query(change, logger: logger).decode(String.self) {
                changed.append(UserID(rawValue: user))
            }
            guard let event = notify(changed) else { return }
            var bindings = PostgresBindings()
            Self.appendOutbox([event], to: &bindings)
            try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT switchboard_outbox($1, $2, $3, $4, $5, $6)", binds: bindings),
                logger: logger)
        }
    }

    // MARK: endpoints

    func saveWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws {
        let types = endpoint.events.map { $0.map(\.rawValue).sorted() }
        try await client.query(
            """
            INSERT INTO webhook_endpoints (id, sdk_app_id, url, event_types, description, secret, previous_secret,
                previous_secret_until, paused, paused_reason, created_at, updated_at)
            VALUES (\(endpoint.id), \(endpoint.app.rawValue), \(endpoint.url), \(types), \(endpoint.description),
                \(endpoint.secret), \(endpoint.previousSecret), \(endpoint.previousSecretUntil), \(endpoint.paused),
                \(endpoint.pausedReason), \(endpoint.createdAt), \(endpoint.updatedAt))
            ON CONFLICT (id) DO UPDATE SET url = excluded.url, event_types = excluded.event_types,
                description = excluded.description, secret = excluded.secret,
                previous_secret = excluded.previous_secret, previous_secret_until = excluded.previous_secret_until,
                paused = excluded.paused, paused_reason = excluded.paused_reason, updated_at = excluded.updated_at
            """, logger: logger)
    }

    func webhookEndpoints(app: SdkAppID?) async throws -> [WebhookEndpoint] {
        let filter = app.map { "WHERE sdk_app_id = \($0.rawValue)" } ?? ""
        let rows = try await client.query(
            """
            SELECT id, sdk_app_id, url, event_types, description, secret, previous_secret, previous_secret_until, paused,
                paused_reason, full_since, gaps, created_at, updated_at
            FROM webhook_endpoints \(unescaped: filter) ORDER BY created_at, id
            """, logger: logger)
        var endpoints: [WebhookEndpoint] = []
        for try await (id, app, url, types, description, secret, previous, until, paused, reason, full, gaps, created, updated)
            in rows.decode(
                (
                    String, Int64, String, [String]?, String?, String, String?, Int64?, Bool, String?, Int64?, String,
                    Int64, Int64
                ).self)
        {
            endpoints.append(
                WebhookEndpoint(
                    id: id, app: SdkAppID(app), url: url, events: types.map { Set($0.compactMap(WebhookEventType.init)) },
                    description: description, secret: secret, previousSecret: previous, previousSecretUntil: until,
                    paused: paused, pausedReason: reason, fullSince: full,
                    gaps: (try? SwitchboardJSON.decode([WebhookGap].self, from: Data(gaps.utf8))) ?? [],
                    createdAt: created, updatedAt: updated))
        }
        return endpoints
    }

    func deleteWebhookEndpoint(app: SdkAppID, id: String) async throws -> Bool {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            let deleted = try await connection.query(
                "DELETE FROM webhook_endpoints WHERE id = \(id) AND sdk_app_id = \(app.rawValue) RETURNING id",
                logger: logger
            ).decode(String.self).collect()
            guard !deleted.isEmpty else { return false }
            try await connection.query("DELETE FROM webhook_deliveries WHERE endpoint_id = \(id)", logger: logger)
            return true
        }
    }

    func setWebhookFull(endpoint: String, full: Bool, now: Int64) async throws {
        let logger = self.logger
        try await client.withTransaction(logger: logger) { connection in
            let row = try await connection.query(
                "SELECT full_since, gaps FROM webhook_endpoints WHERE id = \(endpoint) FOR UPDATE", logger: logger
            ).decode((Int64?, String).self).collect().first
            guard let (since, gapsText) = row else { return }
            if full {
                guard since == nil else { return }
                try await connection.query(
                    "UPDATE webhook_endpoints SET full_since = \(now) WHERE id = \(endpoint)", logger: logger)
            } else {
                guard let since else { return }
                var gaps = (try? SwitchboardJSON.decode([WebhookGap].self, from: Data(gapsText.utf8))) ?? []
                gaps.append(WebhookGap(from: since, to: now))
                let kept = try SwitchboardJSON.encodeString(Array(gaps.suffix(WebhookEndpoint.maxGaps)))
                try await connection.query(
                    "UPDATE webhook_endpoints SET full_since = NULL, gaps = \(kept) WHERE id = \(endpoint)", logger: logger)
            }
        }
    }

    // MARK: deliveries

    func claimWebhookDeliveries(endpoint: String, node: String, now: Int64, leaseUntil: Int64, limit: Int) async throws
        -> [ClaimedDelivery]
    {
        let rows = try await client.query(
            """
            UPDATE webhook_deliveries d SET claimed_by = \(node), claimed_until = \(leaseUntil)
            FROM webhook_events e
            WHERE e.seq = d.event_seq AND (d.endpoint_id, d.event_seq) IN (
                SELECT c.endpoint_id, c.event_seq FROM webhook_deliveries c
                WHERE c.endpoint_id = \(endpoint) AND c.state = 'pending' AND c.due_at <= \(now)
                    AND (c.claimed_until IS NULL OR c.claimed_until < \(now))
                    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p WHERE p.endpoint_id = c.endpoint_id
                        AND p.ordering_key = c.ordering_key AND p.state = 'pending' AND p.event_seq < c.event_seq)
                ORDER BY c.due_at, c.event_seq LIMIT \(Int64(limit))
                FOR UPDATE OF c SKIP LOCKED)
            RETURNING d.event_seq, d.ordering_key, d.attempts, d.first_attempt_at, e.id, e.type, e.created_at, e.payload
            """, logger: logger)
        var claimed: [ClaimedDelivery] = []
        for try await (seq, key, attempts, first, id, type, created, payload) in rows.decode(
            (Int64, String, Int32, Int64?, String, String, Int64, ByteBuffer).self)
        {
            claimed.append(
                ClaimedDelivery(
                    endpointId: endpoint, eventSeq: seq, eventId: id, type: WebhookEventType(rawValue: type),
                    orderingKey: key, eventTime: created, payload: Data(payload.readableBytesView),
                    attempts: Int(attempts), firstAttemptAt: first))
        }
        return claimed.sorted { $0.eventSeq < $1.eventSeq }
    }

    func finishWebhookDeliveries(_ results: [DeliveryResult]) async throws {
        guard !results.isEmpty else { return }
        let logger = self.logger
        try await client.withTransaction(logger: logger) { connection in
            // In the order of the endpoints' ids, as every statement that changes their counts of
            // deliveries waiting locks them (``pendingMigration``): never a deadlock with another node.
            let ordered = results.sorted { ($0.endpointId, $0.eventSeq) < ($1.endpointId, $1.eventSeq) }
            for result in ordered { try await Self.finish(result, connection, logger: logger) }
        }
    }

    static func finish(_ result: DeliveryResult, _ connection: PostgresConnection, logger: Logger) async throws {
        let (state, due): (String, Int64?) =
            switch result.next {
            case .delivered: ("delivered", nil)
            case .retry(let at): ("pending", at)
            case .failed: ("failed", nil)
            }
        let status = result.status.map { Int32(clamping: $0) }
        let updated = try await connection.query(
            """
            UPDATE webhook_deliveries SET state = \(state), attempts = attempts + 1,
                first_attempt_at = COALESCE(first_attempt_at, \(result.at)), last_attempt_at = \(result.at),
                last_status = \(status), last_error = \(result.error), due_at = COALESCE(\(due), due_at),
                claimed_by = NULL, claimed_until = NULL
            WHERE endpoint_id = \(result.endpointId) AND event_seq = \(result.eventSeq) AND claimed_by = \(result.node)
            RETURNING event_seq
            """, logger: logger
        ).decode(Int64.self).collect()
        guard !updated.isEmpty, let due else { return }
        try await connection.query(
            """
            UPDATE webhook_deliveries SET due_at = GREATEST(due_at, \(due))
            WHERE endpoint_id = \(result.endpointId) AND ordering_key = \(result.orderingKey) AND state = 'pending'
                AND event_seq > \(result.eventSeq)
            """, logger: logger)
    }

    func nextWebhookDue(endpoint: String, after now: Int64) async throws -> Int64? {
        try await client.query(
            """
            SELECT min(due_at) FROM webhook_deliveries WHERE endpoint_id = \(endpoint) AND state = 'pending'
                AND due_at > \(now)
            """, logger: logger
        ).decode(Int64?.self).collect().first ?? nil
    }

    /// A cluster's claims are each node's until their lease ends: another node's cannot be let go
    /// of here, and a node that restarts is a new member whose old claims lapse.
    func releaseWebhookClaims() async throws {}

    func webhookBacklogs() async throws -> [String: WebhookBacklog] {
        let rows = try await client.query(
            """
            SELECT d.endpoint_id, count(*), min(e.created_at)
            FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq
            WHERE d.state = 'pending' GROUP BY d.endpoint_id
            """, logger: logger)
        var backlogs: [String: WebhookBacklog] = [:]
        for try await (endpoint, count, oldest) in rows.decode((String, Int64, Int64?).self) {
            backlogs[endpoint] = WebhookBacklog(pending: Int(count), oldestEventTime: oldest)
        }
        return backlogs
    }

    func webhookDeliveries(endpoint: String, state: DeliveryInfo.State?, before: Int64?, limit: Int) async throws
        -> [DeliveryInfo]
    {
        var bindings = PostgresBindings()
        bindings.append(endpoint)
        var conditions = ["d.endpoint_id = $1"]
        if let state {
            bindings.append(state.rawValue)
            conditions.append("d.state = $\(bindings.count)")
        }
        if let before {
            bindings.append(before)
            conditions.append("d.event_seq < $\(bindings.count)")
        }
        bindings.append(Int64(limit))
        let rows = try await client.query(
            PostgresQuery(
                unsafeSQL: """
                    SELECT e.id, e.type, d.ordering_key, e.created_at, d.state, d.attempts, d.first_attempt_at,
                        d.last_attempt_at, d.last_status, d.last_error, d.due_at, d.event_seq,
                        be.id, b.attempts, b.last_status, b.last_error, b.due_at
                    FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq
                    \(SQLiteStorage.blockerJoin)
                    WHERE \(conditions.joined(separator: " AND ")) ORDER BY d.event_seq DESC LIMIT $\(bindings.count)
                    """, binds: bindings), logger: logger)
        var deliveries: [DeliveryInfo] = []
        for try await (
            id, type, key, created, stateText, attempts, first, last, status, error, due, seq, blocker, blockerAttempts,
            blockerStatus, blockerError, blockerDue
        ) in rows.decode(
            (
                String, String, String, Int64, String, Int32, Int64?, Int64?, Int32?, String?, Int64, Int64, String?, Int32?,
                Int32?, String?, Int64?
            ).self)
        {
            let state = DeliveryInfo.State(rawValue: stateText) ?? .pending
            deliveries.append(
                DeliveryInfo(
                    eventId: id, type: type, orderingKey: key, eventTime: created, state: state, attempts: Int(attempts),
                    firstAttemptAt: first, lastAttemptAt: last, lastStatus: status.map(Int.init), lastError: error,
                    nextAttemptAt: state == .pending ? due : nil,
                    waitingFor: blocker.map {
                        DeliveryInfo.Blocker(
                            eventId: $0, attempts: Int(blockerAttempts ?? 0), lastStatus: blockerStatus.map(Int.init),
                            lastError: blockerError, nextAttemptAt: blockerDue ?? 0)
                    }, seq: seq))
        }
        return deliveries
    }

    /// ``SQLiteStorage``'s rule: a pending delivery stays as it is, any other starts over.
    func requeue(_ connection: PostgresConnection, endpoint: String, seqs: [Int64], now: Int64) async throws {
        try await connection.query(
            """
            INSERT INTO webhook_deliveries (endpoint_id, event_seq, ordering_key, state, due_at)
            SELECT \(endpoint), e.seq, e.ordering_key, 'pending', \(now) FROM webhook_events e WHERE e.seq = ANY(\(seqs))
            ON CONFLICT (endpoint_id, event_seq) DO UPDATE SET state = 'pending', due_at = excluded.due_at, attempts = 0,
                first_attempt_at = NULL
            WHERE webhook_deliveries.state <> 'pending'
            """, logger: logger)
    }

    /// The events of the endpoint's app that it wants.
    static let endpointEvents = """
        FROM webhook_events e JOIN webhook_endpoints ep ON ep.sdk_app_id = e.sdk_app_id
            AND (ep.event_types IS NULL OR e.type = ANY(ep.event_types))
        """

    func replayWebhookEvent(endpoint: String, eventId: String, now: Int64) async throws -> Bool {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            let seqs = try await connection.query(
                "SELECT e.seq \(unescaped: Self.endpointEvents) WHERE ep.id = \(endpoint) AND e.id = \(eventId)",
                logger: logger
            ).decode(Int64.self).collect()
            guard !seqs.isEmpty else { return false }
            try await requeue(connection, endpoint: endpoint, seqs: seqs, now: now)
            return true
        }
    }

    func replayWebhookEvents(endpoint: String, from: Int64, to: Int64, limit: Int, now: Int64) async throws
        -> (queued: Int, continueFrom: Int64?)
    {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                SELECT e.seq, e.created_at \(unescaped: Self.endpointEvents)
                WHERE ep.id = \(endpoint) AND e.created_at >= \(from) AND e.created_at < \(to)
                ORDER BY e.seq LIMIT \(Int64(limit + 1))
                """, logger: logger
            ).decode((Int64, Int64).self).collect()
            let taken = rows.prefix(limit).map(\.0)
            if !taken.isEmpty { try await requeue(connection, endpoint: endpoint, seqs: Array(taken), now: now) }
            return (taken.count, rows.count > limit ? rows[limit].1 : nil)
        }
    }

    func sweepWebhookEvents(before cutoff: Int64, limit: Int) async throws -> Int {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            let seqs = try await connection.query(
                "SELECT seq FROM webhook_events WHERE created_at < \(cutoff) ORDER BY seq LIMIT \(Int64(limit))",
                logger: logger
            ).decode(Int64.self).collect()
            guard !seqs.isEmpty else { return 0 }
            try await connection.query("DELETE FROM webhook_deliveries WHERE event_seq = ANY(\(seqs))", logger: logger)
            try await connection.query("DELETE FROM webhook_events WHERE seq = ANY(\(seqs))", logger: logger)
            return seqs.count
        }
    }

}
