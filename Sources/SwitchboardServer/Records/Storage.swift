import SwitchboardProtocol

/// One app as the server stores it.
struct AppRecord: Equatable, Sendable {
    var sdkAppID: SdkAppID
    var secretKey: String
    var settings: AppSettings
    /// Created by the server for a first run without configuration.
    var isDevelopment: Bool
    var createdAt: Int64
}

/// A stored record with its owner.
struct StoredRecord: Equatable, Sendable {
    var owner: UserKey
    var record: CallRecord
}

/// Apps and their settings.
protocol AppStore: Sendable {
    func loadApps() async throws -> [AppRecord]
    /// Inserts or replaces an app.
    func saveApp(_ app: AppRecord) async throws
}

/// Users' nicknames and avatars.
protocol ProfileStore: Sendable {
    func loadProfiles(app: SdkAppID, users: [UserID]) async throws -> [UserProfile]
    func saveProfile(app: SdkAppID, _ profile: UserProfile, now: Int64) async throws
}

/// Per-user call records (SPEC §4).
protocol CallRecordStore: Sendable {
    /// Stores records in one transaction, giving each a `syncTime` that is unique and increasing for
    /// its owner (its end time, moved up by a millisecond past the owner's newest record if needed).
    /// A record that already exists for the owner and call is returned as stored, not duplicated.
    func insertRecords(_ drafts: [RecordDraft]) async throws -> [StoredRecord]
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

/// Everything the server keeps in its database.
typealias SwitchboardStorage = AppStore & ProfileStore & CallRecordStore & ChatGroupStore
