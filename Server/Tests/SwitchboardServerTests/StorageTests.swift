import Foundation
import Logging
import SwitchboardProtocol
import SwitchboardTestServers
import SwitchboardTesting
import Testing

@testable import SwitchboardServer

/// One suite for every `SwitchboardStorage` implementation: SQLite always, PostgreSQL when
/// scripts/test started a server for it (`SWITCHBOARD_TEST_POSTGRES`).
struct StorageTests {
    enum Kind: String, CaseIterable, Sendable { case sqlite, postgres }

    /// The stores this run can test.
    static let kinds: [Kind] = PostgresTestDatabase.isAvailable ? [.sqlite, .postgres] : [.sqlite]

    /// A store on a fresh database, which can be opened again (a restart).
    final class TestStore: Sendable {
        let kind: Kind
        let store: any SwitchboardStorage
        let location: String

        init(kind: Kind, location: String) async throws {
            self.kind = kind
            self.location = location
            self.store = try await Self.open(kind, location)
        }

        static func open(_ kind: Kind, _ location: String) async throws -> any SwitchboardStorage {
            switch kind {
            case .sqlite: return try SQLiteStorage(path: location)
            case .postgres:
                return try await PostgresStorage(
                    try #require(PostgresStorage.Location(url: location)), logger: Logger(label: "test"))
            }
        }

        func reopen() async throws -> any SwitchboardStorage { try await Self.open(kind, location) }

        func close() async {
            await store.shutdown()
            if kind == .sqlite { try? FileManager.default.removeItem(atPath: (location as NSString).deletingLastPathComponent) }
        }
    }

    static func makeStore(_ kind: Kind) async throws -> TestStore {
        switch kind {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-store-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            return try await TestStore(kind: kind, location: directory.appendingPathComponent("db.sqlite").path)
        case .postgres:
            return try await TestStore(kind: kind, location: try await PostgresTestDatabase.create())
        }
    }

    static let app: SdkAppID = 1_400_000_001
    static let alice = UserKey(app: app, user: "alice")
    static let bob = UserKey(app: app, user: "bob")

    static func draft(_ owner: UserKey, call: String, end: Int64, result: CallRecordResult = .answered) -> RecordDraft {
        RecordDraft(
            owner: owner,
            record: CallRecord(
                callId: CallID(rawValue: call), roomId: "r", callType: .oneToOne, mediaType: .audio, callerId: "alice",
                inviterId: "alice", participantIds: ["alice", "bob"],
                direction: owner.user == "alice" ? .outgoing : .incoming, result: result,
                startTime: result == .answered ? end - 5000 : nil, endTime: end,
                duration: result == .answered ? 5 : 0, endReason: .hangup, syncTime: 0))
    }

    /// Who blocks the caller, and who blocks anyone (the engine's index, read at start), follow
    /// every block and unblock, and survive a restart.
    @Test(arguments: StorageTests.kinds) func blocksAreFoundAfterEveryChangeAndARestart(_ kind: Kind) async throws {
        let test = try await Self.makeStore(kind)
        let store = test.store
        let app = Self.app
        func blockers(_ store: any SwitchboardStorage) async throws -> Set<UserKey> { Set(try await store.blockers()) }
        #expect(try await store.usersBlocking("alice", among: ["bob", "carol"], app: app).isEmpty)
        #expect(try await blockers(store).isEmpty)
        try await store.block(app: app, user: "bob", blocked: ["alice", "mallory"])
        try await store.block(app: app, user: "carol", blocked: ["mallory"])
        try await store.block(app: 1_400_000_002, user: "dave", blocked: ["alice"])
        #expect(try await store.usersBlocking("alice", among: ["bob", "carol"], app: app) == ["bob"])
        #expect(try await store.usersBlocking("alice", among: ["bob"], app: 1_400_000_002).isEmpty)
        #expect(
            try await blockers(store)
                == [UserKey(app: app, user: "bob"), UserKey(app: app, user: "carol"), UserKey(app: 1_400_000_002, user: "dave")])
        try await store.unblock(app: app, user: "bob", blocked: ["alice"])
        #expect(try await store.usersBlocking("alice", among: ["bob", "carol"], app: app).isEmpty)
        #expect(try await store.usersBlocking("mallory", among: ["bob", "carol"], app: app) == ["bob", "carol"])
        try await store.unblock(app: app, user: "carol", blocked: ["mallory"])
        #expect(try await blockers(store) == [UserKey(app: app, user: "bob"), UserKey(app: 1_400_000_002, user: "dave")])
        try await store.unblock(app: app, user: "bob", blocked: ["mallory"])
        try await store.block(app: app, user: "bob", blocked: ["alice"])

        let reopened = try await test.reopen()
        #expect(try await reopened.usersBlocking("alice", among: ["bob", "carol"], app: app) == ["bob"])
        #expect(try await reopened.usersBlocking("mallory", among: ["bob", "carol"], app: app).isEmpty)
        #expect(try await blockers(reopened) == [UserKey(app: app, user: "bob"), UserKey(app: 1_400_000_002, user: "dave")])
    }

    @Test(arguments: StorageTests.kinds) func insertAssignsUniqueIncreasingSyncTimes(_ kind: Kind) async throws {
        let test = try await Self.makeStore(kind)
        let store = test.store
        // Three records ending in the same millisecond, and one ending earlier than the newest.
        let stored = try await store.insertRecords([
            Self.draft(Self.alice, call: "c1", end: 1000), Self.draft(Self.alice, call: "c2", end: 1000),
            Self.draft(Self.bob, call: "c2", end: 1000), Self.draft(Self.alice, call: "c3", end: 999),
        ])
        #expect(stored.map(\.record.syncTime) == [1000, 1001, 1000, 1002])
        #expect(stored.map(\.owner) == [Self.alice, Self.alice, Self.bob, Self.alice])
    }

    @Test(arguments: StorageTests.kinds) func insertIsIdempotentPerOwnerAndCall(_ kind: Kind) async throws {
        let test = try await Self.makeStore(kind)
        let store = test.store
        let first = try await store.insertRecords([Self.draft(Self.alice, call: "c1", end: 1000)])
        let again = try await store.insertRecords([Self.draft(Self.alice, call: "c1", end: 5000)])
        #expect(again == first)
        let page = try await store.queryRecords(owner: Self.alice, syncTime: -1, count: 10, order: .descending)
        #expect(page.records.count == 1)
    }

    @Test(arguments: StorageTests.kinds) func pagesBothWays(_ kind: Kind) async throws {
        let test = try await Self.makeStore(kind)
        let store = test.store
        _ = try await store.insertRecords((1...25).map { Self.draft(Self.alice, call: "c\($0)", end: Int64($0) * 1000) })
        _ = try await store.insertRecords([Self.draft(Self.bob, call: "c1", end: 1000)])

        var seen: [String] = []
        var syncTime: Int64 = -1
        var pages = 0
        while true {
            let page = try await store.queryRecords(owner: Self.alice, syncTime: syncTime, count: 10, order: .descending)
            seen += page.records.map(\.callId.rawValue)
            pages += 1
            syncTime = page.syncTime
            if !page.hasMore { break }
        }
        #expect(pages == 3)
        #expect(seen == (1...25).reversed().map { "c\($0)" })

        let oldest = try await store.queryRecords(owner: Self.alice, syncTime: -1, count: 3, order: .ascending)
        #expect(oldest.records.map(\.callId.rawValue) == ["c1", "c2", "c3"])
        #expect(oldest.hasMore)
        #expect(oldest.syncTime == 3000)
        let next = try await store.queryRecords(owner: Self.alice, syncTime: oldest.syncTime, count: 100, order: .ascending)
        #expect(next.records.count == 22)
        #expect(!next.hasMore)

        let empty = try await store.queryRecords(owner: Self.alice, syncTime: 1000, count: 10, order: .descending)
        #expect(empty.records.isEmpty && !empty.hasMore && empty.syncTime == 1000)
    }

    @Test(arguments: StorageTests.kinds) func deletionOnlyTouchesTheOwner(_ kind: Kind) async throws {
        let test = try await Self.makeStore(kind)
        let store = test.store
        _ = try await store.insertRecords([
            Self.draft(Self.alice, call: "c1", end: 1000), Self.draft(Self.bob, call: "c1", end: 1000),
            Self.draft(Self.alice, call: "c2", end: 2000), Self.draft(Self.bob, call: "c2", end: 2000),
            Self.draft(Self.alice, call: "c3", end: 3000),
        ])
        #expect(try await store.deleteRecords(owner: Self.alice, callIds: ["c1", "nope"]) == 1)
        #expect(try await store.deleteRecords(owner: Self.alice, callIds: []) == 0)
        let alice = try await store.queryRecords(owner: Self.alice, syncTime: -1, count: 10, order: .ascending)
        #expect(alice.records.map(\.callId) == ["c2", "c3"])
        #expect(try await store.deleteAllRecords(owner: Self.alice) == 2)
        #expect(try await store.queryRecords(owner: Self.alice, syncTime: -1, count: 10, order: .ascending).records.isEmpty)
        let bob = try await store.queryRecords(owner: Self.bob, syncTime: -1, count: 10, order: .ascending)
        #expect(bob.records.map(\.callId) == ["c1", "c2"])
    }

    @Test(arguments: StorageTests.kinds) func recordsRoundTrip(_ kind: Kind) async throws {
        let test = try await Self.makeStore(kind)
        let store = test.store
        var draft = Self.draft(Self.bob, call: "c9", end: 42_000)
        draft.record.chatGroupId = "team"
        draft.record.callType = .group
        draft.record.participantIds = ["alice", "bob", "carol"]
        let stored = try await store.insertRecords([draft])
        let page = try await store.queryRecords(owner: Self.bob, syncTime: -1, count: 1, order: .descending)
        #expect(page.records == stored.map(\.record))
        var expected = draft.record
        expected.syncTime = 42_000
        #expect(page.records == [expected])
    }

    /// One batch of many owners (PostgreSQL writes it in one statement per record an owner has in
    /// it): every record comes back as stored, the optional fields' absence included.
    @Test(arguments: StorageTests.kinds) func aBatchOfManyOwnersRoundTripsWithItsEmptyFields(_ kind: Kind) async throws {
        let test = try await Self.makeStore(kind)
        let store = test.store
        let owners = (0..<6).map { UserKey(app: Self.app, user: UserID(rawValue: "user-\($0)")) }
        var drafts = owners.enumerated().map { index, owner in
            Self.draft(owner, call: "c\(index)", end: 7_000, result: index % 2 == 0 ? .missed : .answered)
        }
        drafts[1].record.chatGroupId = "team"
        drafts[1].record.participantIds = ["user-0", "user-1", "user-2"]
        drafts.append(Self.draft(owners[0], call: "c-again", end: 7_000))
        let stored = try await store.insertRecords(drafts)
        #expect(stored.map(\.owner) == drafts.map(\.owner))
        #expect(stored.map(\.record.syncTime) == [7_000, 7_000, 7_000, 7_000, 7_000, 7_000, 7_001])
        #expect(stored[0].record.startTime == nil && stored[0].record.chatGroupId == nil)
        for owner in owners {
            let page = try await store.queryRecords(owner: owner, syncTime: -1, count: 10, order: .ascending)
            #expect(page.records == stored.filter { $0.owner == owner }.map(\.record))
        }
    }

    @Test(arguments: StorageTests.kinds) func theJournalKeepsCallsInProgressUntilTheyEnd(_ kind: Kind) async throws {
        let test = try await Self.makeStore(kind)
        let store = test.store
        let first = JournalEntry(callId: "c1", app: Self.app, state: Data("one".utf8), updatedAt: 10)
        let second = JournalEntry(callId: "c2", app: Self.app, state: Data("two".utf8), updatedAt: 11)
        _ = try await store.commit(PersistenceBatch(journal: [first, second]))
        var changed = first
        changed.state = Data("one, later".utf8)
        changed.updatedAt = 20
        _ = try await store.commit(PersistenceBatch(journal: [changed]))
        #expect(try await store.loadJournal() == [second, changed])

        // The end of c1 removes its entry and stores its records in the same transaction.
        let stored = try await store.commit(
            PersistenceBatch(ended: [EndedCallWrite(callId: "c1", records: [Self.draft(Self.alice, call: "c1", end: 30)])]))
        #expect(stored.map(\.record.callId) == ["c1"])
        #expect(try await store.loadJournal() == [second])

        #expect(try await store.lastAlive() == nil)
        try await store.markAlive(at: 100)
        try await store.markAlive(at: 105)
        #expect(try await store.lastAlive() == 105)
    }

    /// A leader's writes carry its term (PostgreSQL): once another term began, its batch is
    /// refused whole, and the new leader's goes through.
    @Test(.enabled(if: PostgresTestDatabase.isAvailable)) func aBatchOfAnEndedTermIsRefusedWhole() async throws {
        let test = try await Self.makeStore(.postgres)
        let store = test.store
        let cluster = ClusterStore(client: try #require(store as? PostgresStorage).client, logger: Logger(label: "test"))
        let term = try await cluster.beginTerm("first")
        let entry = JournalEntry(callId: "c1", app: Self.app, state: Data("one".utf8), updatedAt: 10)
        _ = try await store.commit(PersistenceBatch(fence: term, journal: [entry]))
        #expect(try await store.loadJournal() == [entry])

        let next = try await cluster.beginTerm("second")
        #expect(next == term + 1)
        var changed = entry
        changed.state = Data("changed by the old leader".utf8)
        let late = PersistenceBatch(
            fence: term, journal: [changed, JournalEntry(callId: "c2", app: Self.app, state: Data("two".utf8), updatedAt: 11)],
            ended: [EndedCallWrite(callId: "c1", records: [Self.draft(Self.alice, call: "c1", end: 30)])])
        await #expect(throws: ClusterError.fenced) { try await store.commit(late) }
        #expect(try await store.loadJournal() == [entry])
        #expect(try await store.queryRecords(owner: Self.alice, syncTime: -1, count: 10, order: .ascending).records.isEmpty)

        var current = late
        current.fence = next
        #expect(try await store.commit(current).map(\.record.callId) == ["c1"])
        #expect(try await store.loadJournal().map(\.callId) == ["c2"])
    }

    @Test(arguments: StorageTests.kinds) func appsAndProfiles(_ kind: Kind) async throws {
        let test = try await Self.makeStore(kind)
        let store = test.store
        let app = AppRecord(
            sdkAppID: Self.app, secretKey: "s", settings: AppSettings(busyPolicy: .callWaiting, maxParticipants: 8),
            isDevelopment: true, createdAt: 5)
        try await store.saveApp(app)
        var changed = app
        changed.secretKey = "t"
        changed.settings.callPull = true
        try await store.saveApp(changed)
        #expect(try await store.loadApps() == [changed])

        try await store.saveProfile(app: Self.app, UserProfile(userId: "alice", nickname: "Alice"), now: 1)
        try await store.saveProfile(app: 7, UserProfile(userId: "alice", nickname: "Other app"), now: 1)
        let profiles = try await store.loadProfiles(app: Self.app, users: ["alice", "bob"])
        #expect(profiles == [UserProfile(userId: "alice", nickname: "Alice")])
    }
}

extension StorageTests {
    @Test(arguments: StorageTests.kinds) func pushTokensBelongToOneDevice(_ kind: Kind) async throws {
        let test = try await Self.makeStore(kind)
        let store = test.store
        func token(_ value: String, _ user: UserKey, _ device: DeviceID, at: Int64, kind: PushTokenKind = .voip) -> PushToken {
            PushToken(
                token: value, user: user, device: device, kind: kind, environment: .sandbox, bundleId: "com.example",
                updatedAt: at)
        }
        let first = String(repeating: "ab", count: 32)
        let second = String(repeating: "cd", count: 32)
        try await store.registerPushToken(token(first, Self.alice, "phone", at: 1), move: false)
        try await store.registerPushToken(token(second, Self.alice, "tablet", at: 2), move: false)
        #expect(try await store.pushTokens(app: Self.app, users: ["alice"])["alice"]?.map(\.token) == [first, second])
        // Another user cannot take a token without saying so, another app not at all.
        await #expect(throws: SwitchboardError(.pushTokenInUse)) {
            try await store.registerPushToken(token(first, Self.bob, "phone", at: 3), move: false)
        }
        await #expect(throws: SwitchboardError(.pushTokenInUse)) {
            try await store.registerPushToken(token(first, UserKey(app: 7, user: "alice"), "phone", at: 3), move: true)
        }
        try await store.registerPushToken(token(first, Self.bob, "phone", at: 4), move: true)
        let tokens = try await store.pushTokens(app: Self.app, users: ["alice", "bob"])
        #expect(tokens["alice"]?.map(\.token) == [second])
        #expect(tokens["bob"]?.map(\.device) == ["phone"])
        try await store.unregisterPushToken(user: Self.alice, device: "tablet", kind: nil)
        try await store.removePushToken(first)
        #expect(try await store.pushTokens(app: Self.app, users: ["alice", "bob"]).isEmpty)

        // A device holds one token of each kind; a new one replaces only its own kind.
        let voip = String(repeating: "01", count: 32)
        let alert = String(repeating: "02", count: 32)
        let newAlert = String(repeating: "03", count: 32)
        try await store.registerPushToken(token(voip, Self.alice, "phone", at: 5), move: false)
        try await store.registerPushToken(token(alert, Self.alice, "phone", at: 6, kind: .alert), move: false)
        try await store.registerPushToken(token(newAlert, Self.alice, "phone", at: 7, kind: .alert), move: false)
        let both = try await store.pushTokens(app: Self.app, users: ["alice"])["alice"] ?? []
        #expect(both.map(\.token) == [voip, newAlert] && both.map(\.kind) == [.voip, .alert])
        try await store.unregisterPushToken(user: Self.alice, device: "phone", kind: .alert)
        #expect(try await store.pushTokens(app: Self.app, users: ["alice"])["alice"]?.map(\.kind) == [.voip])
        try await store.registerPushToken(token(newAlert, Self.alice, "phone", at: 8, kind: .alert), move: false)
        try await store.unregisterPushToken(user: Self.alice, device: "phone", kind: nil)
        #expect(try await store.pushTokens(app: Self.app, users: ["alice"]).isEmpty)

        // A Web Push subscription, an FCM token with a sealing key and an alert token that rings
        // keep what they carry.
        let web = PushToken(
            token: "https://push.example.net/wpush/v2/gAAAAABn3xQ1", user: Self.alice, device: "browser", kind: .web,
            environment: .production, bundleId: "", updatedAt: 9,
            webPush: WebPushKeys(p256dh: "BCVxsr7N_eNg", auth: "BTBZMqHH6r4T"))
        let fcm = PushToken(
            token: "dGVzdC1mY20tdG9rZW4:APA91bH", user: Self.alice, device: "android", kind: .fcm, environment: .production,
            bundleId: "", updatedAt: 10, sealingKey: "jn0pOZvLmi7NfOaoN2P-n5YgOa5wy0ZhbhpoD-ZJrls")
        let ringingAlert = PushToken(
            token: String(repeating: "a1", count: 32), user: Self.alice, device: "phone", kind: .alert, environment: .sandbox,
            bundleId: "com.example.app", updatedAt: 11, alertRinging: true)
        for token in [web, fcm, ringingAlert] { try await store.registerPushToken(token, move: false) }
        #expect(try await store.pushTokens(app: Self.app, users: ["alice"])["alice"] == [web, fcm, ringingAlert])
        await test.close()
    }

    @Test(arguments: StorageTests.kinds) func chatGroupsAndBlockLists(_ kind: Kind) async throws {
        let test = try await Self.makeStore(kind)
        let store = test.store
        try await store.setChatGroupMembers(app: Self.app, group: "team", members: ["carol", "alice", "alice"])
        #expect(try await store.chatGroupMembers(app: Self.app, group: "team") == ["alice", "carol"])
        #expect(try await store.isChatGroupMember(app: Self.app, group: "team", user: "carol"))
        #expect(try await !store.isChatGroupMember(app: 7, group: "team", user: "carol"))
        try await store.setChatGroupMembers(app: Self.app, group: "team", members: [])
        #expect(try await store.chatGroupMembers(app: Self.app, group: "team").isEmpty)

        try await store.block(app: Self.app, user: "alice", blocked: ["zed", "bob"])
        #expect(try await store.blockedUsers(app: Self.app, user: "alice") == ["bob", "zed"])
        try await store.unblock(app: Self.app, user: "alice", blocked: ["zed", "nobody"])
        #expect(try await store.blockedUsers(app: Self.app, user: "alice") == ["bob"])
        await test.close()
    }
}

struct PersistenceWriterTests {
    @Test func aBatchKeepsTheLastSaveOfACallAndNoneOfAnEndedOne() {
        func save(_ id: CallID, _ at: Int64) -> PersistenceWriter.Write {
            .save(.init(callId: id, app: 1, updatedAt: at) { Data("\(id.rawValue)@\(at)".utf8) })
        }
        let batch = PersistenceWriter.batch([
            save("c1", 1), save("c2", 2), save("c1", 3), .end(EndedCallWrite(callId: "c2", records: [])), save("c3", 4),
            .save(.init(callId: "c4", app: 1, updatedAt: 5) { nil }),
        ])
        #expect(batch.journal.map(\.callId) == ["c1", "c3"])
        #expect(batch.journal.map { String(decoding: $0.state, as: UTF8.self) } == ["c1@3", "c3@4"])
        #expect(batch.ended.map(\.callId) == ["c2"])
        #expect(batch.unencodable == 1)
    }

    @Test func everySubmittedRecordIsCommittedAndReportedOnce() async throws {
        let test = try await StorageTests.makeStore(.sqlite)
        let store = RecordingStore(test.store)
        let reported = Recorder<StoredRecord>.Sink()
        let writer = PersistenceWriter(store: store, clock: TestClock(), logger: .init(label: "test")) { reported.add($0) }
        for index in 0..<500 {
            writer.submit([StorageTests.draft(StorageTests.alice, call: "c\(index)", end: Int64(index))])
        }
        await writer.drain()
        #expect(reported.values.count == 500)
        #expect(Set(reported.values.map(\.record.callId)).count == 500)
        // Group commit: records submitted while a transaction runs share the next one.
        let records = store.batches.map { $0.ended.reduce(0) { $0 + $1.records.count } }
        #expect(records.reduce(0, +) == 500)
        #expect(records.count < 500)
        let page = try await store.queryRecords(owner: StorageTests.alice, syncTime: -1, count: 100, order: .ascending)
        #expect(page.hasMore)
    }

    /// The writer builds its batches, the journal's JSON included, on the store's thread: a save
    /// submitted by the call engine costs the engine's event loop no encoding.
    @Test func aBatchIsMadeOnTheStoresThreadNotTheSubmitters() async throws {
        let test = try await StorageTests.makeStore(.sqlite)
        let writer = PersistenceWriter(store: test.store, clock: TestClock(), logger: .init(label: "test")) { _ in }
        let encodedOn = NIOLockedValueBox<pthread_t?>(nil)
        let submitter = pthread_self()
        writer.submit(journal: "c1", app: 1, updatedAt: 1) {
            encodedOn.withLockedValue { $0 = pthread_self() }
            return Data("{}".utf8)
        }
        await writer.drain()
        let thread = try #require(encodedOn.withLockedValue { $0 })
        #expect(pthread_equal(thread, submitter) == 0)
        #expect(try await test.store.loadJournal().map(\.callId) == ["c1"])
    }
}

import NIOConcurrencyHelpers
import SwitchboardTesting
import SwitchboardTools

extension Recorder {
    /// A thread-safe list to collect callback values in tests.
    final class Sink: Sendable {
        private let box = NIOLockedValueBox<[Value]>([])
        func add(_ values: [Value]) { box.withLockedValue { $0 += values } }
        var values: [Value] { box.withLockedValue { $0 } }
    }
}

extension StorageTests {
    /// An app's push credentials are kept beside it: the first ones added stay (nodes starting
    /// together), later ones replace them, saving the app itself leaves them alone, and they
    /// survive a restart.
    @Test(arguments: StorageTests.kinds) func pushCredentialsAreKeptWithTheApp(_ kind: Kind) async throws {
        let test = try await Self.makeStore(kind)
        let store = test.store
        let app = AppRecord(sdkAppID: Self.app, secretKey: "s", settings: AppSettings(), isDevelopment: false, createdAt: 5)
        try await store.saveApp(app)
        #expect(try await store.loadApps().first?.push == AppPushCredentials())
        let first = AppPushCredentials(webPush: .generate())
        try await store.addPushCredentials(app: Self.app, first, now: 6)
        try await store.addPushCredentials(app: Self.app, AppPushCredentials(webPush: .generate()), now: 7)
        #expect(try await store.loadApps().first?.push == first)
        var changed = first
        changed.apns = APNsKey(privateKey: "-----BEGIN PRIVATE KEY-----", keyId: "KEY1234567", teamId: "TEAM123456")
        changed.fcm = FCMServiceAccount(projectId: "p-1", clientEmail: "a@p-1.iam.gserviceaccount.com", privateKey: "pem")
        try await store.savePushCredentials(app: Self.app, changed, now: 8)
        try await store.saveApp(app)
        #expect(try await store.loadApps().first?.push == changed)
        let reopened = try await test.reopen()
        #expect(try await reopened.loadApps().first?.push == changed)
        await test.close()
    }
}
