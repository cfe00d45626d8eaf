import NIOCore
import PostgresNIO
import SwitchboardProtocol

/// The statements a call runs on PostgreSQL, prepared once per connection.
///
/// A plain query is parsed and planned by PostgreSQL every time it runs; these run several times
/// per call (the leader's checks and writes), and planning alone was a
/// fifth of PostgreSQL's CPU per call (`pg_stat_statements` with `track_planning`, docs/BENCHMARKS.md,
/// "Cluster"). postgres-nio prepares a statement on a connection the first time it runs there
/// (by ``PostgresPreparedStatement/name``) and afterwards sends only its parameters; PostgreSQL
/// keeps one plan for it. A connection through a pooler must keep prepared statements (PgBouncer
/// in session mode, or transaction mode with `max_prepared_statements`): docs/OPERATIONS.md.
enum PostgresStatements {
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

    /// The writer's batch, in one round trip: the fence, the journal's saves, the ended calls'
    /// removal from it and their records, in that order and in one transaction, by the function
    /// ``function`` (migration `v4-commit-function`). Before, each was a statement of its own
    /// between `BEGIN` and `COMMIT`: six round trips per batch.
    ///
    /// - The fence: with a term, the leader's row is locked against a new term until the commit,
    ///   and the batch is refused (SQLSTATE ``fencedState``) when another term began.
    /// - syncTime: the end time, moved past the owner's newest record so that it is unique and
    ///   rising; records are inserted one by one, so an owner's second record in a batch sees the
    ///   first. Records already stored (a retry after a crash) are left as they are and not
    ///   returned.
    /// - Arrays cannot hold arrays or NULLs here, so participants travel as JSON and the optional
    ///   columns with a flag.
    /// - Webhook events last: stored with their deliveries in the same transaction (docs/WEBHOOKS.md).
    struct Commit: PostgresPreparedStatement {
        static let name = "sb_commit_outbox"
        static let sql = """
            SELECT stored_app, stored_user, stored_call, stored_sync FROM switchboard_commit(
                $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
                $23, $24, $25, $26, $27, $28, $29, $30, $31)
            """
        typealias Row = (Int64, String, String, Int64)
        /// The SQLSTATE of a batch refused by its fence.
        static let fencedState = "SBF01"

        var fence: Int64?
        var journal: [JournalEntry]
        var ended: [String]
        var drafts: [RecordDraft]
        var events: [OutboxEvent] = []

        func makeBindings() -> PostgresBindings {
            let records = drafts.map(\.record)
            let participants = records.map { (try? SwitchboardJSON.encodeString($0.participantIds.map(\.rawValue))) ?? "[]" }
            var bindings = PostgresBindings(
                fence != nil, fence ?? 0,
                journal.map(\.callId.rawValue), journal.map(\.app.rawValue), journal.map { ByteBuffer(bytes: $0.state) },
                journal.map(\.updatedAt), ended,
                drafts.map(\.owner.app.rawValue), drafts.map(\.owner.user.rawValue), records.map(\.callId.rawValue),
                records.map(\.roomId.rawValue), records.map(\.callType.rawValue), records.map(\.mediaType.rawValue),
                records.map(\.callerId.rawValue), records.map(\.inviterId.rawValue), participants,
                records.map { $0.chatGroupId != nil }, records.map { $0.chatGroupId?.rawValue ?? "" },
                records.map(\.direction.rawValue), records.map(\.result.rawValue), records.map { $0.startTime != nil },
                records.map { $0.startTime ?? 0 }, records.map(\.endTime), records.map { Int32(clamping: $0.duration) },
                records.map(\.endReason.rawValue))
            PostgresStorage.appendOutbox(events, to: &bindings)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }

        /// The function the statement calls (created by migration `webhooks-v1`): the one before it
        /// (``functionWithoutEvents``) and then the batch's webhook events, by ``PostgresStorage/outboxFunction``.
        static let function = """
            CREATE OR REPLACE FUNCTION switchboard_commit(
                p_fenced boolean, p_term bigint,
                p_journal_calls text[], p_journal_apps bigint[], p_journal_states bytea[], p_journal_times bigint[],
                p_ended text[],
                p_apps bigint[], p_users text[], p_calls text[], p_rooms text[], p_call_types text[],
                p_media_types text[], p_callers text[], p_inviters text[], p_participants text[],
                p_has_group boolean[], p_groups text[], p_directions text[], p_results text[],
                p_has_start boolean[], p_starts bigint[], p_ends bigint[], p_durations integer[], p_reasons text[],
                p_event_ids text[], p_event_apps bigint[], p_event_types text[], p_event_keys text[],
                p_event_times bigint[], p_event_payloads bytea[]
            ) RETURNS TABLE (stored_app bigint, stored_user text, stored_call text, stored_sync bigint)
            LANGUAGE plpgsql AS $commit$
            DECLARE
                i integer;
                assigned bigint;
            BEGIN
                IF p_fenced THEN
                    PERFORM 1 FROM switchboard_leader WHERE key = 'leader' AND term = p_term FOR SHARE;
                    IF NOT FOUND THEN
                        RAISE EXCEPTION 'another leader''s term began' USING ERRCODE = '\(fencedState)';
                    END IF;
                END IF;
                INSERT INTO call_journal (call_id, sdk_app_id, state, updated_at)
                SELECT * FROM unnest(p_journal_calls, p_journal_apps, p_journal_states, p_journal_times)
                ON CONFLICT (call_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at;
                DELETE FROM call_journal WHERE call_id = ANY(p_ended);
                FOR i IN 1 .. coalesce(array_length(p_apps, 1), 0) LOOP
                    INSERT INTO call_records (sdk_app_id, user_id, call_id, sync_time, room_id, call_type, media_type,
                        caller_id, inviter_id, participant_ids, chat_group_id, direction, result, start_time, end_time,
                        duration, end_reason)
                    VALUES (p_apps[i], p_users[i], p_calls[i],
                        GREATEST(p_ends[i], COALESCE((SELECT max(c.sync_time) FROM call_records c
                            WHERE c.sdk_app_id = p_apps[i] AND c.user_id = p_users[i]), -1) + 1),
                        p_rooms[i], p_call_types[i], p_media_types[i], p_callers[i], p_inviters[i],
                        ARRAY(SELECT jsonb_array_elements_text(p_participants[i]::jsonb)),
                        CASE WHEN p_has_group[i] THEN p_groups[i] END, p_directions[i], p_results[i],
                        CASE WHEN p_has_start[i] THEN p_starts[i] END, p_ends[i], p_durations[i], p_reasons[i])
                    ON CONFLICT (sdk_app_id, user_id, call_id) DO NOTHING
                    RETURNING sync_time INTO assigned;
                    IF FOUND THEN
                        stored_app := p_apps[i];
                        stored_user := p_users[i];
                        stored_call := p_calls[i];
                        stored_sync := assigned;
                        RETURN NEXT;
                    END IF;
                END LOOP;
                PERFORM switchboard_outbox(p_event_ids, p_event_apps, p_event_types, p_event_keys, p_event_times,
                    p_event_payloads);
            END
            $commit$
            """

        /// The function of migration `v4-commit-function`, as it was created then (nodes of the
        /// versions before webhooks still call it during a rolling deploy).
        static let functionWithoutEvents = """
            CREATE OR REPLACE FUNCTION switchboard_commit(
                p_fenced boolean, p_term bigint,
                p_journal_calls text[], p_journal_apps bigint[], p_journal_states bytea[], p_journal_times bigint[],
                p_ended text[],
                p_apps bigint[], p_users text[], p_calls text[], p_rooms text[], p_call_types text[],
                p_media_types text[], p_callers text[], p_inviters text[], p_participants text[],
                p_has_group boolean[], p_groups text[], p_directions text[], p_results text[],
                p_has_start boolean[], p_starts bigint[], p_ends bigint[], p_durations integer[], p_reasons text[]
            ) RETURNS TABLE (stored_app bigint, stored_user text, stored_call text, stored_sync bigint)
            LANGUAGE plpgsql AS $commit$
            DECLARE
                i integer;
                assigned bigint;
            BEGIN
                IF p_fenced THEN
                    PERFORM 1 FROM switchboard_leader WHERE key = 'leader' AND term = p_term FOR SHARE;
                    IF NOT FOUND THEN
                        RAISE EXCEPTION 'another leader''s term began' USING ERRCODE = '\(fencedState)';
                    END IF;
                END IF;
                INSERT INTO call_journal (call_id, sdk_app_id, state, updated_at)
                SELECT * FROM unnest(p_journal_calls, p_journal_apps, p_journal_states, p_journal_times)
                ON CONFLICT (call_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at;
                DELETE FROM call_journal WHERE call_id = ANY(p_ended);
                FOR i IN 1 .. coalesce(array_length(p_apps, 1), 0) LOOP
                    INSERT INTO call_records (sdk_app_id, user_id, call_id, sync_time, room_id, call_type, media_type,
                        caller_id, inviter_id, participant_ids, chat_group_id, direction, result, start_time, end_time,
                        duration, end_reason)
                    VALUES (p_apps[i], p_users[i], p_calls[i],
                        GREATEST(p_ends[i], COALESCE((SELECT max(c.sync_time) FROM call_records c
                            WHERE c.sdk_app_id = p_apps[i] AND c.user_id = p_users[i]), -1) + 1),
                        p_rooms[i], p_call_types[i], p_media_types[i], p_callers[i], p_inviters[i],
                        ARRAY(SELECT jsonb_array_elements_text(p_participants[i]::jsonb)),
                        CASE WHEN p_has_group[i] THEN p_groups[i] END, p_directions[i], p_results[i],
                        CASE WHEN p_has_start[i] THEN p_starts[i] END, p_ends[i], p_durations[i], p_reasons[i])
                    ON CONFLICT (sdk_app_id, user_id, call_id) DO NOTHING
                    RETURNING sync_time INTO assigned;
                    IF FOUND THEN
                        stored_app := p_apps[i];
                        stored_user := p_users[i];
                        stored_call := p_calls[i];
                        stored_sync := assigned;
                        RETURN NEXT;
                    END IF;
                END LOOP;
            END
            $commit$
            """
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
    /// A statement's rows, read to the end (a pooled connection returns to its pool then).
    func collect() async throws -> [Element] {
        var elements: [Element] = []
        for try await element in self { elements.append(element) }
        return elements
    }
}
