import Foundation
import SwitchboardProtocol

/// One app as the server stores it.
struct AppRecord: Equatable, Sendable {
    var sdkAppID: SdkAppID
    var secretKey: String
    var settings: AppSettings
    /// Created by the server for a first run without configuration.
    var isDevelopment: Bool
    var createdAt: Int64
    /// The app's own push credentials (its VAPID key pair at least, once it has started).
    var push = AppPushCredentials()
}

/// A stored record with its owner.
struct StoredRecord: Equatable, Sendable {
    var owner: UserKey
    var record: CallRecord
}

/// Apps, their settings and their push credentials.
protocol AppStore: Sendable {
    func loadApps() async throws -> [AppRecord]
    /// Inserts or replaces an app, but not its push credentials.
    func saveApp(_ app: AppRecord) async throws
    /// Replaces an app's push credentials (kept beside its secret key, as its other secrets).
    func savePushCredentials(app: SdkAppID, _ credentials: AppPushCredentials, now: Int64) async throws
    /// Stores an app's push credentials unless it has some already (the first start of an app,
    /// maybe on several nodes at once: the first one's stay).
    func addPushCredentials(app: SdkAppID, _ credentials: AppPushCredentials, now: Int64) async throws
}

/// Users' nicknames and avatars.
protocol ProfileStore: Sendable {
    func loadProfiles(app: SdkAppID, users: [UserID]) async throws -> [UserProfile]
    func saveProfile(app: SdkAppID, _ profile: UserProfile, now: Int64) async throws
}

/// A call in progress as kept in the journal, to be ended properly after a crash.
struct JournalEntry: Equatable, Sendable {
    var callId: CallID
    var app: SdkAppID
    /// The call's state as JSON.
    var state: Data
    var updatedAt: Int64
}

/// A call that ended: its records are stored and its journal entry removed together.
struct EndedCallWrite: Equatable, Sendable {
    /// The call whose journal entry goes; nil for records of calls that were never journaled.
    var callId: CallID?
    var records: [RecordDraft]
}

/// Writes that go into one transaction.
struct PersistenceBatch: Equatable, Sendable {
    /// In a cluster, the leader's term: the transaction is refused (``ClusterError/fenced``) when
    /// another node has led since, so a leader that lost its place cannot overwrite the calls a
    /// newer one took over.
    var fence: Int64?
    /// Calls in progress to save (replacing what the journal has for them).
    var journal: [JournalEntry] = []
    /// Saves dropped because their state could not be encoded (logged by the writer).
    var unencodable = 0
    var ended: [EndedCallWrite] = []
    /// Webhook events for the outbox, in the order they happened; each goes to every endpoint of
    /// its app that wants its type (and is not at its bound) as a delivery.
    var events: [OutboxEvent] = []
    /// Events dropped because they could not be encoded (logged by the writer).
    var unencodableEvents = 0
    /// Recordings' takes to store for conversion (before the rest of the batch: a take is never
    /// lost to a crash between it and the change that ended it; storing one again keeps the first).
    var recordings: [RecordingTake] = []
}

/// Per-user call records (SPEC §4) and the journal of calls in progress.
protocol CallRecordStore: Sendable {
    /// Commits a batch in one transaction. Records get a `syncTime` that is unique and increasing for
    /// their owner (the end time, moved up by a millisecond past the owner's newest record if needed);
    /// a record that already exists for its owner and call is returned as stored, not duplicated.
    func commit(_ batch: PersistenceBatch) async throws -> [StoredRecord]
    /// The same commit for ``PersistenceWriter``, answered to `completion` on the store's own
    /// thread: a store that writes on a thread of its own (SQLite) runs batch after batch there
    /// without waking another thread for each (the default runs the `async` commit in a task).
    func commit(_ batch: PersistenceBatch, completion: @escaping @Sendable (Result<[StoredRecord], any Error>) -> Void)
    /// Runs `work` where this store commits (SQLite: its writer queue; the default: a task), so
    /// that the writer builds its batches there and not on the thread that submitted a write.
    func onWriter(_ work: @escaping @Sendable () -> Void)
    /// The calls that were in progress when the server last stopped.
    func loadJournal() async throws -> [JournalEntry]
    /// Notes that the server is alive now (for dating the end of calls cut by a crash).
    func markAlive(at time: Int64) async throws
    /// The last time the server was known alive.
    func lastAlive() async throws -> Int64?
    /// One page of the owner's records strictly after (ascending) or before (descending) `syncTime`;
    /// -1 starts at the oldest or newest end.
    func queryRecords(owner: UserKey, syncTime: Int64, count: Int, order: RecordOrder) async throws
        -> QueryRecordsResponse
    /// Deletes the owner's records of these calls; returns how many were deleted.
    func deleteRecords(owner: UserKey, callIds: [CallID]) async throws -> Int
    /// Deletes all of the owner's records; returns how many were deleted.
    func deleteAllRecords(owner: UserKey) async throws -> Int
}

/// The registry of chat groups whose members may join the group's calls (set by the admin API).
protocol ChatGroupStore: Sendable {
    /// Replaces the members of a group; an empty list deletes it.
    func setChatGroupMembers(app: SdkAppID, group: ChatGroupID, members: [UserID]) async throws
    func chatGroupMembers(app: SdkAppID, group: ChatGroupID) async throws -> [UserID]
    func isChatGroupMember(app: SdkAppID, group: ChatGroupID, user: UserID) async throws -> Bool
}

extension CallRecordStore {
    func onWriter(_ work: @escaping @Sendable () -> Void) {
        Task { work() }
    }

    func commit(_ batch: PersistenceBatch, completion: @escaping @Sendable (Result<[StoredRecord], any Error>) -> Void) {
        Task {
            do {
                completion(.success(try await commit(batch)))
            } catch {
                completion(.failure(error))
            }
        }
    }

    /// Stores records of calls that were never journaled.
    func insertRecords(_ drafts: [RecordDraft]) async throws -> [StoredRecord] {
        try await commit(PersistenceBatch(ended: [EndedCallWrite(callId: nil, records: drafts)]))
    }
}

/// Who blocks whom (per app).
protocol BlockStore: Sendable {
    /// Blocks users; `notify` gets those it newly blocked and makes the webhook event that
    /// reports it (nil: none), written in the same transaction.
    func block(app: SdkAppID, user: UserID, blocked: [UserID], notify: @Sendable ([UserID]) -> OutboxEvent?) async throws
    /// Unblocks users; `notify` as for ``block(app:user:blocked:notify:)``, with those it unblocked.
    func unblock(app: SdkAppID, user: UserID, blocked: [UserID], notify: @Sendable ([UserID]) -> OutboxEvent?) async throws
    func blockedUsers(app: SdkAppID, user: UserID) async throws -> [UserID]
    /// Which of `users` block `caller`.
    func usersBlocking(_ caller: UserID, among users: [UserID], app: SdkAppID) async throws -> Set<UserID>
    /// Every user who blocks anyone (for the engine's ``BlockerIndex``).
    func blockers() async throws -> [UserKey]
}

extension BlockStore {
    func block(app: SdkAppID, user: UserID, blocked: [UserID]) async throws {
        try await block(app: app, user: user, blocked: blocked, notify: { _ in nil })
    }

    func unblock(app: SdkAppID, user: UserID, blocked: [UserID]) async throws {
        try await unblock(app: app, user: user, blocked: blocked, notify: { _ in nil })
    }
}

/// One of a device's push tokens.
struct PushToken: Equatable, Sendable {
    /// APNs: hex, lowercased; FCM: the registration token; Web Push: the endpoint URL.
    var token: String
    var user: UserKey
    var device: DeviceID
    var kind: PushTokenKind
    /// APNs tokens; `production` for the others.
    var environment: PushEnvironment
    /// APNs tokens; empty for the others.
    var bundleId: String
    var updatedAt: Int64
    /// A Web Push subscription's keys.
    var webPush: WebPushKeys? = nil
    /// The device's X25519 public key (base64url): pushes carry a sealed box for it.
    var sealingKey: String? = nil
    /// An alert token of a device that rings without CallKit.
    var alertRinging = false

    /// Whether a push to this token can ring a call (a plain alert token only announces a missed one).
    var rings: Bool {
        switch kind {
        case .voip, .web, .fcm: true
        case .alert: alertRinging
        }
    }

    /// ``rings`` as a condition on the `push_tokens` table (SQLite and PostgreSQL).
    static let ringsWhere = "(kind <> 'alert' OR alert_ringing)"
}

extension WebPushKeys {
    /// The keys of a stored Web Push subscription; nil for other tokens.
    static func stored(p256dh: String?, auth: String?) -> WebPushKeys? {
        guard let p256dh, let auth else { return nil }
        return WebPushKeys(p256dh: p256dh, auth: auth)
    }
}

/// Push tokens: one of each kind per device, each token on one device.
protocol PushTokenStore: Sendable {
    /// Saves a token for its device, replacing the device's previous token of that kind. A token
    /// that another device or user holds is taken over only with `move` and within the same app;
    /// otherwise this throws `pushTokenInUse` and changes nothing.
    func registerPushToken(_ token: PushToken, move: Bool) async throws
    /// Forgets the device's token of `kind`, or all its tokens when `kind` is nil.
    func unregisterPushToken(user: UserKey, device: DeviceID, kind: PushTokenKind?) async throws
    /// The tokens of these users.
    func pushTokens(app: SdkAppID, users: [UserID]) async throws -> [UserID: [PushToken]]
    /// Forgets a token APNs said is no longer valid.
    func removePushToken(_ token: String) async throws
    /// Every device with a token that rings (``PushToken/rings``), for the engine's ``PushReachIndex``.
    func ringingPushDevices() async throws -> [(UserKey, DeviceID)]
}

/// The database connection itself.
protocol StorageConnection: Sendable {
    /// Closes the connections (at the end of a graceful shutdown).
    func shutdown() async
}

/// Everything the server keeps in its database.
typealias SwitchboardStorage = AppStore & ProfileStore & CallRecordStore & ChatGroupStore & BlockStore & PushTokenStore
    & WebhookStore & RecordingStore & StorageConnection
