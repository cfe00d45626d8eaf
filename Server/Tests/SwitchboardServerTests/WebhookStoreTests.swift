import Foundation
import GRDB
import Logging
import SwitchboardProtocol
import SwitchboardTestServers
import Testing

@testable import SwitchboardServer

/// The webhook outbox on every store: events commit with the change they report, each becomes a
/// delivery for the endpoints that want it, one call's deliveries go out one at a time in order,
/// two nodes never claim the same one, and the bound, replays and sweeps keep their rules.
struct WebhookStoreTests {
    typealias Kind = StorageTests.Kind
    static let app = StorageTests.app
    static let other: SdkAppID = 1_400_000_002

    static func endpoint(_ id: String, app: SdkAppID = app, events: Set<WebhookEventType>? = nil) -> WebhookEndpoint {
        WebhookEndpoint(
            id: id, app: app, url: "https://example.com/\(id)", events: events, secret: WebhookSignature.newSecret(),
            paused: false, gaps: [], createdAt: 1, updatedAt: 1)
    }

    static func event(_ call: String, _ sequence: Int, _ type: WebhookEventType, app: SdkAppID = app, time: Int64) -> OutboxEvent {
        OutboxEvent(
            id: "evt_\(call)_\(sequence)", app: app, type: type, orderingKey: call, time: time,
            payload: Data(#"{"id":"evt_\#(call)_\#(sequence)"}"#.utf8))
    }

    static func claim(_ store: any SwitchboardStorage, _ endpoint: String, node: String = "n1", now: Int64, limit: Int = 10)
        async throws -> [String]
    {
        try await store.claimWebhookDeliveries(endpoint: endpoint, node: node, now: now, leaseUntil: now + 30_000, limit: limit)
            .map(\.eventId)
    }

    static func finish(
        _ store: any SwitchboardStorage, _ endpoint: String, _ eventId: String, node: String = "n1", at: Int64,
        _ next: DeliveryResult.Next
    ) async throws {
        let parts = eventId.split(separator: "_")
        let delivery = try #require(
            try await store.webhookDeliveries(endpoint: endpoint, state: nil, before: nil, limit: 500)
                .first { $0.eventId == eventId })
        try await store.finishWebhookDeliveries([
            DeliveryResult(
                endpointId: endpoint, eventSeq: delivery.seq, orderingKey: String(parts[1]), node: node, at: at,
                status: next == .delivered ? 200 : 500, error: next == .delivered ? nil : "HTTP 500", next: next)
        ])
    }

    @Test(arguments: StorageTests.kinds) func eventsCommitWithTheirChangeAndGoToTheEndpointsThatWantThem(_ kind: Kind)
        async throws
    {
        let test = try await StorageTests.makeStore(kind)
        defer { Task { await test.close() } }
        let store = test.store
        try await store.saveWebhookEndpoint(Self.endpoint("ep_all"))
        try await store.saveWebhookEndpoint(Self.endpoint("ep_ends", events: [.callEnded]))
        try await store.saveWebhookEndpoint(Self.endpoint("ep_other", app: Self.other))

        let entry = JournalEntry(callId: "c1", app: Self.app, state: Data("one".utf8), updatedAt: 10)
        let created = Self.event("c1", 1, .callCreated, time: 10)
        let invited = Self.event("c1", 2, .memberInvited, time: 10)
        _ = try await store.commit(PersistenceBatch(journal: [entry], events: [created, invited]))
        let ended = Self.event("c1", 3, .callEnded, time: 20)
        _ = try await store.commit(
            PersistenceBatch(
                ended: [EndedCallWrite(callId: "c1", records: [StorageTests.draft(StorageTests.alice, call: "c1", end: 20)])],
                events: [ended]))
        // The same batch again (its commit's answer was lost): nothing doubles.
        _ = try await store.commit(PersistenceBatch(events: [ended]))

        let all = try await store.webhookDeliveries(endpoint: "ep_all", state: nil, before: nil, limit: 10)
        #expect(all.map(\.eventId) == ["evt_c1_3", "evt_c1_2", "evt_c1_1"])
        #expect(all.allSatisfy { $0.state == .pending && $0.attempts == 0 })
        let ends = try await store.webhookDeliveries(endpoint: "ep_ends", state: nil, before: nil, limit: 10)
        #expect(ends.map(\.eventId) == ["evt_c1_3"])
        #expect(try await store.webhookDeliveries(endpoint: "ep_other", state: nil, before: nil, limit: 10).isEmpty)
        let backlogs = try await store.webhookBacklogs()
        #expect(backlogs["ep_all"] == WebhookBacklog(pending: 3, oldestEventTime: 10))
        #expect(backlogs["ep_ends"]?.pending == 1)

        // After a restart the outbox is all there.
        let reopened = try await test.reopen()
        #expect(try await reopened.webhookBacklogs()["ep_all"]?.pending == 3)
        await reopened.shutdown()
    }

    /// The outbox's statements read per call, never the whole backlog (SQLite, as the server runs
    /// it: no ANALYZE): a new delivery's due time through `webhook_deliveries_pending_key_due`, and
    /// claims walk `…_pending_due_seq` in order with no sort. With the due-time index alone each
    /// insert walked every pending delivery of its endpoint, so a backlog slowed every commit: at
    /// 500 calls/s with one endpoint, calls failed and records were seconds late (BENCHMARKS.md).
    @Test func theOutboxReadsPerCallNotTheWholeBacklog() async throws {
        let test = try await StorageTests.makeStore(.sqlite)
        defer { Task { await test.close() } }
        let storage = try #require(test.store as? SQLiteStorage)
        try await storage.saveWebhookEndpoint(Self.endpoint("ep_all"))
        for call in 0..<200 {
            _ = try await storage.commit(
                PersistenceBatch(events: (1...10).map { Self.event("c\(call)", $0, .memberJoined, time: Int64(call)) }))
        }
        #expect(try await storage.webhookBacklogs()["ep_all"]?.pending == 2_000)
        let (insert, claim) = try await storage.pool.read { db in
            func plan(_ sql: String, _ arguments: StatementArguments) throws -> String {
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments)
                    .map { $0["detail"] as String }.joined(separator: "; ")
            }
            return (
                try plan(
                    SQLiteStorage.deliveryInsert,
                    [1, "c7", 300, "c7", Self.app.rawValue, WebhookEventType.memberJoined.rawValue]),
                try plan(SQLiteStorage.claimableDeliveries, ["ep_all", 300, 300, 8])
            )
        }
        #expect(insert.contains("USING COVERING INDEX webhook_deliveries_pending_key_due (endpoint_id=? AND ordering_key=?)")
            || insert.contains("USING INDEX webhook_deliveries_pending_key_due (endpoint_id=? AND ordering_key=?)"), "\(insert)")
        #expect(claim.contains("USING INDEX webhook_deliveries_pending_due_seq (endpoint_id=? AND due_at<?)"), "\(claim)")
        #expect(!claim.contains("TEMP B-TREE"), "\(claim)")
        // And they still do their jobs: each call's first delivery, oldest first.
        #expect(try await Self.claim(storage, "ep_all", now: 300, limit: 3) == ["evt_c0_1", "evt_c1_1", "evt_c2_1"])
    }

    /// A batch refused by its fence (a leader that lost its place) stores none of its events: a
    /// change that did not happen is never reported.
    @Test(.enabled(if: PostgresTestDatabase.isAvailable)) func aRefusedBatchReportsNothing() async throws {
        let test = try await StorageTests.makeStore(.postgres)
        defer { Task { await test.close() } }
        let store = test.store
        try await store.saveWebhookEndpoint(Self.endpoint("ep_all"))
        let cluster = ClusterStore(client: try #require(store as? PostgresStorage).client, logger: Logger(label: "test"))
        let term = try await cluster.beginTerm("first")
        _ = try await cluster.beginTerm("second")
        let entry = JournalEntry(callId: "c1", app: Self.app, state: Data("one".utf8), updatedAt: 10)
        await #expect(throws: ClusterError.fenced) {
            try await store.commit(PersistenceBatch(fence: term, journal: [entry], events: [Self.event("c1", 1, .callCreated, time: 10)]))
        }
        #expect(try await store.webhookBacklogs().isEmpty)
        #expect(try await store.webhookDeliveries(endpoint: "ep_all", state: nil, before: nil, limit: 10).isEmpty)
    }

    /// One call's deliveries go out one at a time, in order; a retry holds the call's later ones
    /// back, never another call's.
    @Test(arguments: StorageTests.kinds) func aCallsDeliveriesGoOutInOrderAndARetryHoldsOnlyItsCall(_ kind: Kind) async throws {
        let test = try await StorageTests.makeStore(kind)
        defer { Task { await test.close() } }
        let store = test.store
        try await store.saveWebhookEndpoint(Self.endpoint("ep"))
        _ = try await store.commit(
            PersistenceBatch(events: [
                Self.event("a", 1, .callCreated, time: 10), Self.event("b", 1, .callCreated, time: 11),
                Self.event("a", 2, .memberInvited, time: 12), Self.event("b", 2, .memberInvited, time: 13),
            ]))
        // The first of each call only; the same claim again gets nothing (they are claimed).
        #expect(try await Self.claim(store, "ep", now: 100) == ["evt_a_1", "evt_b_1"])
        #expect(try await Self.claim(store, "ep", now: 101).isEmpty)
        // a's first fails and waits until 5000; b's is delivered: b's next comes, a's does not.
        try await Self.finish(store, "ep", "evt_a_1", at: 200, .retry(at: 5000))
        try await Self.finish(store, "ep", "evt_b_1", at: 200, .delivered)
        #expect(try await Self.claim(store, "ep", now: 300) == ["evt_b_2"])
        try await Self.finish(store, "ep", "evt_b_2", at: 301, .delivered)
        #expect(try await store.nextWebhookDue(endpoint: "ep", after: 300) == 5000)
        // At 5000, a's first again (not its second), then its second once it went through.
        #expect(try await Self.claim(store, "ep", now: 5000) == ["evt_a_1"])
        try await Self.finish(store, "ep", "evt_a_1", at: 5001, .delivered)
        #expect(try await Self.claim(store, "ep", now: 5002) == ["evt_a_2"])
        let a1 = try #require(
            try await store.webhookDeliveries(endpoint: "ep", state: .delivered, before: nil, limit: 10)
                .first { $0.eventId == "evt_a_1" })
        #expect(a1.attempts == 2 && a1.firstAttemptAt == 200 && a1.lastStatus == 200)

        // A result from a node whose claim is not the one held is ignored.
        try await Self.finish(store, "ep", "evt_a_2", node: "someone-else", at: 5003, .delivered)
        #expect(try await store.webhookDeliveries(endpoint: "ep", state: .pending, before: nil, limit: 10).map(\.eventId) == ["evt_a_2"])
        // A claim that lapsed (its node died) is taken by another.
        #expect(try await Self.claim(store, "ep", node: "n2", now: 5002 + 30_001) == ["evt_a_2"])
    }

    /// Two nodes claiming at once never get the same delivery (PostgreSQL: `FOR UPDATE SKIP LOCKED`).
    @Test(.enabled(if: PostgresTestDatabase.isAvailable)) func twoNodesNeverClaimTheSameDelivery() async throws {
        let test = try await StorageTests.makeStore(.postgres)
        defer { Task { await test.close() } }
        let store = test.store
        let second = try await test.reopen()
        try await store.saveWebhookEndpoint(Self.endpoint("ep"))
        _ = try await store.commit(
            PersistenceBatch(events: (0..<200).map { Self.event("call\($0)", 1, .callCreated, time: Int64($0)) }))
        var claimed: [String] = []
        for _ in 0..<10 {
            async let one = Self.claim(store, "ep", node: "n1", now: 1000, limit: 15)
            async let two = Self.claim(second, "ep", node: "n2", now: 1000, limit: 15)
            claimed += try await one + two
        }
        #expect(claimed.count == 200)
        #expect(Set(claimed).count == 200)
        await second.shutdown()
    }

    /// At its bound an endpoint gets no new deliveries; once under it again, the time it was full
    /// is kept as a gap, and a replay of that range queues what it missed.
    @Test(arguments: StorageTests.kinds) func aFullEndpointSkipsEventsAndAReplayFillsTheGap(_ kind: Kind) async throws {
        let test = try await StorageTests.makeStore(kind)
        defer { Task { await test.close() } }
        let store = test.store
        try await store.saveWebhookEndpoint(Self.endpoint("ep"))
        try await store.setWebhookFull(endpoint: "ep", full: true, now: 100)
        _ = try await store.commit(PersistenceBatch(events: [Self.event("a", 1, .callCreated, time: 150)]))
        #expect(try await store.webhookBacklogs()["ep"] == nil)
        try await store.setWebhookFull(endpoint: "ep", full: false, now: 200)
        let endpoint = try #require(try await store.webhookEndpoints(app: Self.app).first)
        #expect(endpoint.fullSince == nil && endpoint.gaps == [WebhookGap(from: 100, to: 200)])
        // Saving its configuration keeps the gaps (only the bound's bookkeeping changes them).
        try await store.saveWebhookEndpoint(endpoint)

        let replayed = try await store.replayWebhookEvents(endpoint: "ep", from: 100, to: 200, limit: 10, now: 300)
        #expect(replayed.queued == 1 && replayed.continueFrom == nil)
        #expect(try await Self.claim(store, "ep", now: 300) == ["evt_a_1"])
        try await Self.finish(store, "ep", "evt_a_1", at: 301, .delivered)
        // A delivered event replayed goes out again from zero attempts.
        #expect(try await store.replayWebhookEvent(endpoint: "ep", eventId: "evt_a_1", now: 400))
        #expect(try await store.replayWebhookEvent(endpoint: "ep", eventId: "evt_nope", now: 400) == false)
        let again = try #require(try await store.webhookDeliveries(endpoint: "ep", state: nil, before: nil, limit: 10).first)
        #expect(again.state == .pending && again.attempts == 0)
    }

    /// The bound holds at every write, not only at the housekeeper's rounds (issue 48: with a
    /// bound of 20, 80 deliveries queued between two rounds): with a bound of 3, the commit that
    /// brings 5 events queues 3 and marks the endpoint full at the first it left out; another
    /// endpoint of the app, which wants none of them, stays as it was. Deliveries taken, replayed
    /// and swept keep the count the bound reads right.
    @Test(arguments: StorageTests.kinds) func theBoundHoldsAtEveryWrite(_ kind: Kind) async throws {
        let test = try await StorageTests.makeStore(kind)
        defer { Task { await test.close() } }
        let store = test.store
        try await store.setWebhookMaxBacklog(3)
        try await store.saveWebhookEndpoint(Self.endpoint("ep"))
        try await store.saveWebhookEndpoint(Self.endpoint("ep_ends", events: [.callEnded]))
        _ = try await store.commit(
            PersistenceBatch(events: (1...5).map { Self.event("a\($0)", 1, .callCreated, time: Int64(100 + $0)) }))
        #expect(try await store.webhookBacklogs()["ep"]?.pending == 3)
        func endpoint(_ id: String) async throws -> WebhookEndpoint {
            try #require(try await store.webhookEndpoints(app: Self.app).first { $0.id == id })
        }
        #expect(try await endpoint("ep").fullSince == 104)
        #expect(try await endpoint("ep_ends").fullSince == nil)
        // A later commit, one event at a time: nothing more.
        _ = try await store.commit(PersistenceBatch(events: [Self.event("b", 1, .callCreated, time: 200)]))
        #expect(try await store.webhookBacklogs()["ep"]?.pending == 3)

        // Taken, and the mark lifted (the housekeeper's round): room for three again.
        for eventId in try await Self.claim(store, "ep", now: 300) {
            try await Self.finish(store, "ep", eventId, at: 301, .delivered)
        }
        try await store.setWebhookFull(endpoint: "ep", full: false, now: 302)
        _ = try await store.commit(
            PersistenceBatch(events: (1...2).map { Self.event("c\($0)", 1, .callCreated, time: Int64(400 + $0)) }))
        #expect(try await store.webhookBacklogs()["ep"]?.pending == 2)
        // A replayed delivery counts: it fills the bound, and the next event is left out.
        #expect(try await store.replayWebhookEvent(endpoint: "ep", eventId: "evt_a1_1", now: 500))
        _ = try await store.commit(
            PersistenceBatch(events: (1...2).map { Self.event("d\($0)", 1, .callCreated, time: Int64(600 + $0)) }))
        #expect(try await store.webhookBacklogs()["ep"]?.pending == 3)
        #expect(try await endpoint("ep").fullSince == 601)
        // Swept with their events: nothing waits, the count says so.
        #expect(try await store.sweepWebhookEvents(before: 10_000, limit: 100) > 0)
        try await store.setWebhookFull(endpoint: "ep", full: false, now: 700)
        _ = try await store.commit(PersistenceBatch(events: [Self.event("e", 1, .callCreated, time: 20_000)]))
        #expect(try await store.webhookBacklogs()["ep"]?.pending == 1)
    }

    /// A call's deliveries held back by its first, which fails, say so: the listing shows which
    /// delivery holds them and its attempts and last failure (issue 48: they showed `attempts: 0`
    /// and no status, so the list hid why an endpoint was stuck).
    @Test(arguments: StorageTests.kinds) func aDeliveryHeldBackSaysByWhichAndWhy(_ kind: Kind) async throws {
        let test = try await StorageTests.makeStore(kind)
        defer { Task { await test.close() } }
        let store = test.store
        try await store.saveWebhookEndpoint(Self.endpoint("ep"))
        _ = try await store.commit(
            PersistenceBatch(events: [
                Self.event("a", 1, .callCreated, time: 10), Self.event("a", 2, .memberInvited, time: 11),
                Self.event("a", 3, .memberRinging, time: 12), Self.event("b", 1, .callCreated, time: 13),
            ]))
        #expect(try await Self.claim(store, "ep", now: 100) == ["evt_a_1", "evt_b_1"])
        try await Self.finish(store, "ep", "evt_a_1", at: 200, .retry(at: 5000))
        let listed = try await store.webhookDeliveries(endpoint: "ep", state: .pending, before: nil, limit: 10)
        let blocker = DeliveryInfo.Blocker(
            eventId: "evt_a_1", attempts: 1, lastStatus: 500, lastError: "HTTP 500", nextAttemptAt: 5000)
        #expect(listed.map(\.eventId) == ["evt_b_1", "evt_a_3", "evt_a_2", "evt_a_1"])
        #expect(listed.map(\.waitingFor) == [nil, blocker, blocker, nil])
        #expect(listed.map(\.attempts) == [0, 0, 0, 1])
    }

    /// Range replays are bounded and continue where they stopped; the sweep deletes the oldest
    /// events and their deliveries, at most a batch at a time.
    @Test(arguments: StorageTests.kinds) func replaysAndSweepsAreBounded(_ kind: Kind) async throws {
        let test = try await StorageTests.makeStore(kind)
        defer { Task { await test.close() } }
        let store = test.store
        try await store.saveWebhookEndpoint(Self.endpoint("ep"))
        _ = try await store.commit(
            PersistenceBatch(events: (0..<25).map { Self.event("c\($0)", 1, .callCreated, time: Int64(1000 + $0)) }))
        let first = try await store.replayWebhookEvents(endpoint: "ep", from: 0, to: 2000, limit: 10, now: 5000)
        #expect(first.queued == 10 && first.continueFrom == 1010)
        #expect(try await store.sweepWebhookEvents(before: 1020, limit: 8) == 8)
        #expect(try await store.sweepWebhookEvents(before: 1020, limit: 8) == 8)
        #expect(try await store.sweepWebhookEvents(before: 1020, limit: 8) == 4)
        #expect(try await store.sweepWebhookEvents(before: 1020, limit: 8) == 0)
        #expect(try await store.webhookBacklogs()["ep"]?.pending == 5)
    }

    /// The admin API's record query: every owner of the app, filtered, newest first, in pages;
    /// the retention sweep deletes only the app's old records, a bounded number at a time.
    @Test(arguments: StorageTests.kinds) func recordsQueryFiltersAndPagesAndTheSweepIsBounded(_ kind: Kind) async throws {
        let test = try await StorageTests.makeStore(kind)
        defer { Task { await test.close() } }
        let store = test.store
        var drafts: [RecordDraft] = []
        for index in 0..<12 {
            let result: CallRecordResult = index % 3 == 0 ? .missed : .answered
            drafts.append(StorageTests.draft(StorageTests.alice, call: "c\(index)", end: Int64(1000 * (index + 1)), result: result))
            drafts.append(StorageTests.draft(StorageTests.bob, call: "c\(index)", end: Int64(1000 * (index + 1)), result: result))
        }
        let stranger = UserKey(app: Self.other, user: "alice")
        drafts.append(StorageTests.draft(stranger, call: "x", end: 5000))
        _ = try await store.commit(PersistenceBatch(ended: [EndedCallWrite(callId: nil, records: drafts)]))

        var seen: [String] = []
        var cursor: AppRecordCursor?
        repeat {
            let page = try await store.queryAppRecords(app: Self.app, filter: AppRecordFilter(), after: cursor, limit: 5)
            seen += page.records.map { "\($0.owner.user.rawValue)/\($0.record.callId.rawValue)" }
            cursor = page.next.flatMap { AppRecordCursor(token: $0.token) }
        } while cursor != nil
        #expect(seen.count == 24 && Set(seen).count == 24)
        #expect(seen.prefix(2) == ["bob/c11", "alice/c11"])

        let filtered = try await store.queryAppRecords(
            app: Self.app, filter: AppRecordFilter(user: "bob", from: 2000, to: 10_000, result: .missed, mediaType: .audio),
            after: nil, limit: 50)
        // Missed: c0, c3, c6, c9 (ends 1000, 4000, 7000, 10000); from 2000 to before 10000.
        #expect(filtered.records.map(\.record.callId) == ["c6", "c3"] && filtered.next == nil)
        #expect(try await store.queryAppRecords(
            app: Self.app, filter: AppRecordFilter(mediaType: .video), after: nil, limit: 50).records.isEmpty)

        #expect(try await store.sweepRecords(app: Self.app, before: 6000, limit: 4) == 4)
        #expect(try await store.sweepRecords(app: Self.app, before: 6000, limit: 100) == 6)
        #expect(try await store.sweepRecords(app: Self.app, before: 6000, limit: 100) == 0)
        let left = try await store.queryAppRecords(app: Self.app, filter: AppRecordFilter(), after: nil, limit: 50)
        #expect(left.records.count == 14 && left.records.allSatisfy { $0.record.endTime >= 6000 })
        #expect(try await store.queryAppRecords(app: Self.other, filter: AppRecordFilter(), after: nil, limit: 50).records.count == 1)
    }

    /// Nodes of a cluster that start at once with the same `--webhook` make one endpoint between
    /// them, and a restart keeps it (with its secret when none is configured).
    @Test(arguments: StorageTests.kinds) func startupEndpointsAreMadeOnce(_ kind: Kind) async throws {
        let test = try await StorageTests.makeStore(kind)
        defer { Task { await test.close() } }
        var configuration = WebhookConfiguration()
        configuration.startupEndpoints = ["http://127.0.0.1:9/hooks"]
        let policy = WebhookAddressPolicy(allowed: [IPNetwork("127.0.0.0/8")!])
        async let one = makeStartupWebhooks(configuration, apps: [Self.app], storage: test.store, policy: policy, now: 1)
        async let two = makeStartupWebhooks(configuration, apps: [Self.app], storage: test.store, policy: policy, now: 1)
        let made = try await one + two
        let endpoints = try await test.store.webhookEndpoints(app: Self.app)
        #expect(endpoints.count == 1 && Set(made.map(\.endpointId)) == [endpoints[0].id])
        let again = try await makeStartupWebhooks(configuration, apps: [Self.app], storage: test.store, policy: policy, now: 2)
        #expect(again.map(\.secret) == [endpoints[0].secret])
        #expect(try await test.store.webhookEndpoints(app: nil).count == 1)
    }
}
