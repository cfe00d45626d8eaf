import Foundation
import Logging
import NIOCore
import PostgresNIO
import SwitchboardProtocol

/// The schema: the migrations, each applied once under an advisory lock.
extension PostgresStorage {
    /// Each step once, in order, under an advisory lock so that nodes starting together do not race.
    static let migrations: [(name: String, statements: [String])] = [
        (
            "v1",
            statements(
                """
            CREATE TABLE apps (
                sdk_app_id BIGINT PRIMARY KEY,
                secret_key TEXT NOT NULL,
                busy_policy TEXT NOT NULL,
                max_participants INTEGER NOT NULL,
                blocked_caller_sees TEXT NOT NULL DEFAULT 'reject',
                is_development BOOLEAN NOT NULL,
                created_at BIGINT NOT NULL
            );
            CREATE TABLE profiles (
                sdk_app_id BIGINT NOT NULL,
                user_id TEXT NOT NULL,
                nickname TEXT,
                avatar_url TEXT,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (sdk_app_id, user_id)
            );
            CREATE TABLE call_records (
                sdk_app_id BIGINT NOT NULL,
                user_id TEXT NOT NULL,
                call_id TEXT NOT NULL,
                sync_time BIGINT NOT NULL,
                room_id TEXT NOT NULL,
                call_type TEXT NOT NULL,
                media_type TEXT NOT NULL,
                caller_id TEXT NOT NULL,
                inviter_id TEXT NOT NULL,
                participant_ids TEXT[] NOT NULL,
                chat_group_id TEXT,
                direction TEXT NOT NULL,
                result TEXT NOT NULL,
                start_time BIGINT,
                end_time BIGINT NOT NULL,
                duration INTEGER NOT NULL,
                end_reason TEXT NOT NULL,
                PRIMARY KEY (sdk_app_id, user_id, call_id)
            );
            CREATE UNIQUE INDEX call_records_by_sync_time ON call_records (sdk_app_id, user_id, sync_time);
            CREATE TABLE call_journal (
                call_id TEXT PRIMARY KEY,
                sdk_app_id BIGINT NOT NULL,
                state BYTEA NOT NULL,
                updated_at BIGINT NOT NULL
            );
            CREATE TABLE node_state (
                key TEXT PRIMARY KEY,
                value BIGINT NOT NULL
            );
            CREATE TABLE blocks (
                sdk_app_id BIGINT NOT NULL,
                user_id TEXT NOT NULL,
                blocked_id TEXT NOT NULL,
                PRIMARY KEY (sdk_app_id, user_id, blocked_id)
            );
            CREATE INDEX blocks_by_blocked ON blocks (sdk_app_id, blocked_id);
            CREATE TABLE push_tokens (
                token TEXT PRIMARY KEY,
                sdk_app_id BIGINT NOT NULL,
                user_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                environment TEXT NOT NULL,
                bundle_id TEXT NOT NULL,
                updated_at BIGINT NOT NULL,
                UNIQUE (sdk_app_id, user_id, device_id)
            );
            CREATE TABLE chat_group_members (
                sdk_app_id BIGINT NOT NULL,
                group_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                PRIMARY KEY (sdk_app_id, group_id, user_id)
            );
            """)
        ),
        (
            // The cluster: its nodes and their heartbeats, which device is on which node, the
            // leader's term (the fence of the journal and records), and the messages between nodes
            // (unlogged: they only matter while the nodes that sent them run).
            "v2-cluster",
            statements(
                """
            CREATE TABLE switchboard_nodes (
                node_id TEXT PRIMARY KEY,
                started_at BIGINT NOT NULL,
                heartbeat_at BIGINT NOT NULL
            );
            CREATE TABLE switchboard_devices (
                sdk_app_id BIGINT NOT NULL,
                user_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                node_id TEXT NOT NULL,
                platform TEXT,
                PRIMARY KEY (sdk_app_id, user_id, device_id)
            );
            CREATE INDEX switchboard_devices_by_node ON switchboard_devices (node_id);
            CREATE TABLE switchboard_leader (
                key TEXT PRIMARY KEY,
                node_id TEXT NOT NULL,
                term BIGINT NOT NULL
            );
            CREATE UNLOGGED TABLE switchboard_messages (
                id BIGSERIAL PRIMARY KEY,
                target TEXT NOT NULL,
                body TEXT NOT NULL
            );
            CREATE INDEX switchboard_messages_by_target ON switchboard_messages (target, id);
            """)
        ),
        (
            // A device may hold a VoIP token and an alert token: one per kind.
            "v3-push-token-kinds",
            statements(
                """
            ALTER TABLE push_tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'voip';
            ALTER TABLE push_tokens DROP CONSTRAINT push_tokens_sdk_app_id_user_id_device_id_key;
            ALTER TABLE push_tokens ADD CONSTRAINT push_tokens_one_per_kind UNIQUE (sdk_app_id, user_id, device_id, kind);
            """)
        ),
        (
            // The writer's batch in one statement, so one round trip (``PostgresStatements/Commit``).
            "v4-commit-function", [PostgresStatements.Commit.functionWithoutEvents]
        ),
        (
            // Web Push subscriptions, FCM tokens, sealed pushes and ringing without CallKit.
            "v5-push-token-details",
            statements(
                """
            ALTER TABLE push_tokens ADD COLUMN web_p256dh TEXT;
            ALTER TABLE push_tokens ADD COLUMN web_auth TEXT;
            ALTER TABLE push_tokens ADD COLUMN sealing_key TEXT;
            ALTER TABLE push_tokens ADD COLUMN alert_ringing BOOLEAN NOT NULL DEFAULT FALSE;
            """)
        ),
        (
            // Each app's own APNs key, VAPID key pair and FCM service account, as JSON.
            "v6-app-push-credentials",
            statements(
                """
            CREATE TABLE app_push_credentials (
                sdk_app_id BIGINT PRIMARY KEY,
                credentials TEXT NOT NULL,
                updated_at BIGINT NOT NULL
            );
            """)
        ),
        (
            // The webhook outbox and its endpoints, the records' retention per app and an index for
            // the admin API's record queries; the writer's batch with its events
            // (``PostgresStatements/Commit``: a new overload, so nodes of the version before, which
            // call the old one, keep working during a rolling deploy).
            "webhooks-v1",
            statements(webhookTables) + [outboxFunction, PostgresStatements.Commit.function]
        ),
        (
            // Deliveries' due times read per ordering key, claims in (due, seq) order: see
            // ``SQLiteStorage/webhookIndexMigration``.
            "webhooks-v2-indexes",
            statements(SQLiteStorage.webhookIndexMigration)
        ),
        (
            // The backlog's bound at every write (issue 48): ``PostgresStorage/pendingMigration``.
            "webhooks-v3-pending",
            pendingMigration
        ),
        (
            // Whether a user's device may take a call without an offer (``AppSettings/callPull``).
            "v7-call-pull",
            statements(SQLiteStorage.callPullMigration)
        ),
        (
            // Server-side recording: ``SQLiteStorage/recordingMigration``.
            "v8-recording",
            statements(SQLiteStorage.recordingMigration)
        ),
        (
            // Direct links between nodes (``NodeLinks``): where each node listens, the secret the
            // links are opened with; the message table of the bus they replace goes.
            "v9-node-links",
            statements(
                """
            ALTER TABLE switchboard_nodes ADD COLUMN address TEXT NOT NULL DEFAULT '';
            CREATE TABLE switchboard_cluster (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            DROP TABLE IF EXISTS switchboard_messages;
            """)
        ),
    ]

    /// The statements of a script whose statements each end with `;` and contain no other.
    static func statements(_ script: String) -> [String] {
        script.split(separator: ";").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
    }

    func migrate() async throws {
        try await transaction { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(7419001)", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS switchboard_migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)",
                logger: logger)
            var applied = Set<String>()
            for try await name in try await connection.query("SELECT name FROM switchboard_migrations", logger: logger)
                .decode(String.self)
            {
                applied.insert(name)
            }
            for (name, statements) in Self.migrations where !applied.contains(name) {
                // One statement per query (the extended protocol takes no more).
                for statement in statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                try await connection.query(
                    "INSERT INTO switchboard_migrations (name, applied_at) VALUES (\(name), \(now))", logger: logger)
            }
        }
    }
}
