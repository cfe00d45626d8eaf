import SwitchboardProtocol

/// Who you block and your call records: requests to the server, no state of the store's.
extension CallStore {
    /// Blocks callers: their calls never ring for you. Returns everyone you block now.
    @discardableResult
    public func blockUsers(_ userIds: [String]) async throws -> [UserID] {
        try await signaling.send(BlockUsersRequest(userIds: userIds.map(UserID.init(rawValue:)))).userIds
    }

    /// Lets blocked callers call you again. Returns everyone you still block.
    @discardableResult
    public func unblockUsers(_ userIds: [String]) async throws -> [UserID] {
        try await signaling.send(UnblockUsersRequest(userIds: userIds.map(UserID.init(rawValue:)))).userIds
    }

    /// Everyone you block.
    public func blockedUsers() async throws -> [UserID] {
        try await signaling.send(BlockedUsersRequest()).userIds
    }

    /// One page of your call records (count 1…100). Start with `syncTime` -1, continue with the
    /// returned `syncTime` while `hasMore`.
    public func queryRecords(syncTime: Int64 = -1, count: Int = 30, order: RecordOrder = .descending) async throws
        -> QueryRecordsResponse
    {
        try await signaling.send(QueryRecordsRequest(syncTime: syncTime, count: count, order: order))
    }

    /// Deletes your records of these calls (others keep theirs); returns how many were deleted.
    @discardableResult
    public func deleteRecords(callIds: [CallID]) async throws -> Int {
        try await signaling.send(DeleteRecordsRequest(callIds: callIds)).deleted
    }

    /// Deletes all your records; returns how many were deleted.
    @discardableResult
    public func deleteAllRecords() async throws -> Int {
        try await signaling.send(DeleteAllRecordsRequest()).deleted
    }
}
