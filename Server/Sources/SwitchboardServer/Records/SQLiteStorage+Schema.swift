import Foundation
import GRDB
import SwitchboardProtocol

/// The schema: GRDB's migrations, each applied once, in order.
extension SQLiteStorage {
    /// The app setting `callPull`; the same on PostgreSQL.
    static let callPullMigration = "ALTER TABLE apps ADD COLUMN call_pull BOOLEAN NOT NULL DEFAULT FALSE;"

    /// Server-side recording: the apps' recording settings (JSON, ``RecordingSettings``; null: off)
    /// and the recordings, one row per take of a call (``StoredRecording``); the same on PostgreSQL.
    static let recordingMigration = """
        ALTER TABLE apps ADD COLUMN recording TEXT;
        CREATE TABLE recordings (
            recording_id TEXT PRIMARY KEY,
            sdk_app_id BIGINT NOT NULL,
            call_id TEXT NOT NULL,
            take INTEGER NOT NULL,
            started_at BIGINT NOT NULL,
            stopped_at BIGINT NOT NULL,
            state TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            claimed_at BIGINT,
            detail TEXT NOT NULL,
            updated_at BIGINT NOT NULL
        );
        CREATE INDEX recordings_by_app ON recordings (sdk_app_id, started_at);
        CREATE INDEX recordings_by_call ON recordings (sdk_app_id, call_id);
        CREATE INDEX recordings_by_state ON recordings (state, updated_at);
        """

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE apps (
                        sdk_app_id INTEGER PRIMARY KEY,
                        secret_key TEXT NOT NULL,
                        busy_policy TEXT NOT NULL,
                        max_participants INTEGER NOT NULL,
                        is_development INTEGER NOT NULL,
                        created_at INTEGER NOT NULL
                    );
                    CREATE TABLE profiles (
                        sdk_app_id INTEGER NOT NULL,
                        user_id TEXT NOT NULL,
                        nickname TEXT,
                        avatar_url TEXT,
                        updated_at INTEGER NOT NULL,
                        PRIMARY KEY (sdk_app_id, user_id)
                    );
                    CREATE TABLE call_records (
                        sdk_app_id INTEGER NOT NULL,
                        user_id TEXT NOT NULL,
                        call_id TEXT NOT NULL,
                        sync_time INTEGER NOT NULL,
                        room_id TEXT NOT NULL,
                        call_type TEXT NOT NULL,
                        media_type TEXT NOT NULL,
                        caller_id TEXT NOT NULL,
                        inviter_id TEXT NOT NULL,
                        participant_ids TEXT NOT NULL,
                        chat_group_id TEXT,
                        direction TEXT NOT NULL,
                        result TEXT NOT NULL,
                        start_time INTEGER,
                        end_time INTEGER NOT NULL,
                        duration INTEGER NOT NULL,
                        end_reason TEXT NOT NULL,
                        PRIMARY KEY (sdk_app_id, user_id, call_id)
                    );
                    CREATE UNIQUE INDEX call_records_by_sync_time ON call_records (sdk_app_id, user_id, sync_time);
                    """)
        }
        migrator.registerMigration("v3-journal") { db in
            try db.execute(
                sql: """
                    CREATE TABLE call_journal (
                        call_id TEXT PRIMARY KEY,
                        sdk_app_id INTEGER NOT NULL,
                        state BLOB NOT NULL,
                        updated_at INTEGER NOT NULL
                    );
                    CREATE TABLE node_state (
                        key TEXT PRIMARY KEY,
                        value INTEGER NOT NULL
                    );
                    """)
        }
        migrator.registerMigration("v4-blocks") { db in
            try db.execute(
                sql: """
                    CREATE TABLE blocks (
                        sdk_app_id INTEGER NOT NULL,
                        user_id TEXT NOT NULL,
                        blocked_id TEXT NOT NULL,
                        PRIMARY KEY (sdk_app_id, user_id, blocked_id)
                    );
                    CREATE INDEX blocks_by_blocked ON blocks (sdk_app_id, blocked_id);
                    ALTER TABLE apps ADD COLUMN blocked_caller_sees TEXT NOT NULL DEFAULT 'reject';
                    """)
        }
        migrator.registerMigration("v5-push-tokens") { db in
            try db.execute(
                sql: """
                    CREATE TABLE push_tokens (
                        token TEXT PRIMARY KEY,
                        sdk_app_id INTEGER NOT NULL,
                        user_id TEXT NOT NULL,
                        device_id TEXT NOT NULL,
                        environment TEXT NOT NULL,
                        bundle_id TEXT NOT NULL,
                        updated_at INTEGER NOT NULL,
                        UNIQUE (sdk_app_id, user_id, device_id)
                    );
                    """)
        }
        migrator.registerMigration("v2-chat-groups") { db in
            try db.execute(
                sql: """
                    CREATE TABLE chat_group_members (
                        sdk_app_id INTEGER NOT NULL,
                        group_id TEXT NOT NULL,
                        user_id TEXT NOT NULL,
                        PRIMARY KEY (sdk_app_id, group_id, user_id)
                    );
                    """)
        }
        migrator.registerMigration("v6-push-token-kinds") { db in
            // A device may hold a VoIP token and an alert token: one per kind.
            try db.execute(
                sql: """
                    CREATE TABLE push_tokens_by_kind (
                        token TEXT PRIMARY KEY,
                        sdk_app_id INTEGER NOT NULL,
                        user_id TEXT NOT NULL,
                        device_id TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        environment TEXT NOT NULL,
                        bundle_id TEXT NOT NULL,
                        updated_at INTEGER NOT NULL,
                        UNIQUE (sdk_app_id, user_id, device_id, kind)
                    );
                    INSERT INTO push_tokens_by_kind
                        SELECT token, sdk_app_id, user_id, device_id, 'voip', environment, bundle_id, updated_at
                        FROM push_tokens;
                    DROP TABLE push_tokens;
                    ALTER TABLE push_tokens_by_kind RENAME TO push_tokens;
                    """)
        }
        migrator.registerMigration("v7-push-token-details") { db in
            // Web Push subscriptions, FCM tokens, sealed pushes and ringing without CallKit.
            try db.execute(
                sql: """
                    ALTER TABLE push_tokens ADD COLUMN web_p256dh TEXT;
                    ALTER TABLE push_tokens ADD COLUMN web_auth TEXT;
                    ALTER TABLE push_tokens ADD COLUMN sealing_key TEXT;
                    ALTER TABLE push_tokens ADD COLUMN alert_ringing INTEGER NOT NULL DEFAULT 0;
                    """)
        }
        migrator.registerMigration("v8-app-push-credentials") { db in
            // Each app's own APNs key, VAPID key pair and FCM service account, as JSON.
            try db.execute(
                sql: """
                    CREATE TABLE app_push_credentials (
                        sdk_app_id INTEGER PRIMARY KEY,
                        credentials TEXT NOT NULL,
                        updated_at INTEGER NOT NULL
                    );
                    """)
        }
        migrator.registerMigration("webhooks-v1") { db in
            // The webhook outbox and its endpoints, the records' retention per app, and an index
            // for the admin API's record queries (docs/WEBHOOKS.md).
            try db.execute(sql: Self.webhookMigration)
        }
        migrator.registerMigration("webhooks-v2-indexes") { db in
            try db.execute(sql: Self.webhookIndexMigration)
        }
        migrator.registerMigration("webhooks-v3-pending") { db in
            // The backlog's bound at every write (issue 48): a count per endpoint kept by triggers.
            try db.execute(sql: Self.webhookPendingMigration)
        }
        migrator.registerMigration("v9-call-pull") { db in
            // Whether a user's device may take a call without an offer (``AppSettings/callPull``).
            try db.execute(sql: Self.callPullMigration)
        }
        migrator.registerMigration("v10-recording") { db in
            try db.execute(sql: Self.recordingMigration)
        }
        return migrator
    }
}
