import NIOCore
import PostgresNIO
import SwitchboardProtocol

/// The statements a call runs on PostgreSQL, prepared once per connection.
///
/// A plain query is parsed and planned by PostgreSQL every time it runs; these run several times
/// per call (the bus's sends and takes, the leader's checks and writes), and planning alone was a
/// fifth of PostgreSQL's CPU per call (`pg_stat_statements` with `track_planning`, docs/BENCHMARKS.md,
/// "Cluster"). postgres-nio prepares a statement on a connection the first time it runs there
/// (by ``PostgresPreparedStatement/name``) and afterwards sends only its parameters; PostgreSQL
/// keeps one plan for it. A connection through a pooler must keep prepared statements (PgBouncer
/// in session mode, or transaction mode with `max_prepared_statements`): docs/OPERATIONS.md.
enum PostgresStatements {
    /// Inserts messages for other nodes and wakes each target (``ClusterBus``).
    struct SendMessages: PostgresPreparedStatement {
        static let name = "sb_send_messages"
        static let sql = """
            WITH inserted AS (
                INSERT INTO switchboard_messages (target, body) SELECT * FROM unnest($1::text[], $2::text[])
            )
            SELECT pg_notify(c, '') FROM unnest($3::text[]) AS c
            """
        typealias Row = Void

        var targets: [String]
        var bodies: [String]
        var channels: [String]

        func makeBindings() -> PostgresBindings {
            PostgresBindings(targets, bodies, channels)
        }

    }

    /// Takes (deletes and returns) every message for a node.
    struct TakeMessages: PostgresPreparedStatement {
        static let name = "sb_take_messages"
        static let sql = "DELETE FROM switchboard_messages WHERE target = $1 RETURNING id, body"
        typealias Row = (Int64, String)

        var target: String

        func makeBindings() -> PostgresBindings {
            PostgresBindings(target)
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// Which of `users` block `caller` (asked when a call is placed).
    struct UsersBlocking: PostgresPreparedStatement {
        static let name = "sb_users_blocking"
        static let sql = "SELECT user_id FROM blocks WHERE sdk_app_id = $1 AND blocked_id = $2 AND user_id = ANY($3::text[])"
        typealias Row = String

        var app: Int64
        var caller: String
        var users: [String]

        func makeBindings() -> PostgresBindings {
            PostgresBindings(app, caller, users)
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(String.self) }
    }

    /// The leader's term, locked against change until the transaction ends (the writer's fence).
    struct LeaderTerm: PostgresPreparedStatement {
        static let name = "sb_leader_term"
        static let sql = "SELECT term FROM switchboard_leader WHERE key = 'leader' FOR SHARE"
        typealias Row = Int64

        func makeBindings() -> PostgresBindings { PostgresBindings() }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int64.self) }
    }

    /// Saves calls in progress (one row per call; the newest state wins).
    struct SaveJournal: PostgresPreparedStatement {
        static let name = "sb_save_journal"
        static let sql = """
            INSERT INTO call_journal (call_id, sdk_app_id, state, updated_at)
            SELECT * FROM unnest($1::text[], $2::bigint[], $3::bytea[], $4::bigint[])
            ON CONFLICT (call_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at
            """
        typealias Row = Void

        var entries: [JournalEntry]

        func makeBindings() -> PostgresBindings {
            PostgresBindings(
                entries.map(\.callId.rawValue), entries.map(\.app.rawValue), entries.map { ByteBuffer(bytes: $0.state) },
                entries.map(\.updatedAt))
        }

    }

    /// Removes ended calls from the journal.
    struct DeleteJournal: PostgresPreparedStatement {
        static let name = "sb_delete_journal"
        static let sql = "DELETE FROM call_journal WHERE call_id = ANY($1::text[])"
        typealias Row = Void

        var calls: [String]

        func makeBindings() -> PostgresBindings {
            PostgresBindings(calls)
        }

    }

    /// Records of different owners in one statement. syncTime: the end time, moved past the
    /// owner's newest record so that it is unique and rising (which is why a statement holds at
    /// most one record per owner: its own rows are not visible to it). Arrays cannot hold arrays or
    /// NULLs here, so participants travel as JSON and the optional columns with a flag.
    struct InsertRecords: PostgresPreparedStatement {
        static let name = "sb_insert_records"
        static let sql = """
            INSERT INTO call_records (sdk_app_id, user_id, call_id, sync_time, room_id, call_type, media_type, caller_id,
                inviter_id, participant_ids, chat_group_id, direction, result, start_time, end_time, duration, end_reason)
            SELECT r.app, r.usr, r.call,
                GREATEST(r.end_time,
                    COALESCE((SELECT max(c.sync_time) FROM call_records c WHERE c.sdk_app_id = r.app AND c.user_id = r.usr), -1) + 1),
                r.room, r.call_type, r.media_type, r.caller, r.inviter,
                ARRAY(SELECT jsonb_array_elements_text(r.participants::jsonb)),
                CASE WHEN r.has_group THEN r.chat_group END, r.direction, r.result,
                CASE WHEN r.has_start THEN r.start_time END, r.end_time, r.duration, r.end_reason
            FROM unnest(
                $1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                $9::text[], $10::bool[], $11::text[], $12::text[], $13::text[], $14::bool[], $15::bigint[],
                $16::bigint[], $17::int[], $18::text[]
            ) AS r(app, usr, call, room, call_type, media_type, caller, inviter, participants, has_group, chat_group,
                direction, result, has_start, start_time, end_time, duration, end_reason)
            ON CONFLICT (sdk_app_id, user_id, call_id) DO NOTHING
            RETURNING sdk_app_id, user_id, call_id, sync_time
            """
        typealias Row = (Int64, String, String, Int64)

        var drafts: [RecordDraft]

        func makeBindings() -> PostgresBindings {
            let records = drafts.map(\.record)
            let participants = records.map { (try? SwitchboardJSON.encodeString($0.participantIds.map(\.rawValue))) ?? "[]" }
            return PostgresBindings(
                drafts.map(\.owner.app.rawValue), drafts.map(\.owner.user.rawValue), records.map(\.callId.rawValue),
                records.map(\.roomId.rawValue), records.map(\.callType.rawValue), records.map(\.mediaType.rawValue),
                records.map(\.callerId.rawValue), records.map(\.inviterId.rawValue), participants,
                records.map { $0.chatGroupId != nil }, records.map { $0.chatGroupId?.rawValue ?? "" },
                records.map(\.direction.rawValue), records.map(\.result.rawValue), records.map { $0.startTime != nil },
                records.map { $0.startTime ?? 0 }, records.map(\.endTime), records.map { Int32(clamping: $0.duration) },
                records.map(\.endReason.rawValue))
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }
}

extension PostgresBindings {
    /// Binds these values to `$1`, `$2`, … in order.
    init(_ values: any PostgresDynamicTypeEncodable...) {
        self.init(capacity: values.count)
        for value in values { append(value) }
    }
}

extension PostgresPreparedStatement where Row == Void {
    /// A statement whose rows (if any) say nothing.
    func decodeRow(_ row: PostgresRow) throws {}
}

extension AsyncSequence {
    /// Reads a statement's rows to the end (a pooled connection returns to its pool then).
    func drain() async throws {
        for try await _ in self {}
    }
}
