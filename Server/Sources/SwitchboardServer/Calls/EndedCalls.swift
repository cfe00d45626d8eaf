import NIOCore
import SwitchboardProtocol

/// What is remembered of an ended call: enough to answer `callAlreadyEnded` and to tell a device
/// that comes back how the call ended for it.
struct EndedCall: Equatable, Sendable {
    struct Member: Equatable, Sendable {
        var reason: CallEndReason
        var endedBy: UserID?
        var result: CallRecordResult
        /// The device the member was in the call on, if any.
        var device: DeviceID?
    }

    let app: SdkAppID
    let mediaType: CallMediaType
    let members: [UserID: Member]
    let endedAt: Int64

    /// The end a device of `user` should hear about when it comes back, and who caused it.
    func end(for user: UserID, device: DeviceID) -> (CallEndReason, UserID?)? {
        guard let member = members[user] else { return nil }
        if member.device == device { return (member.reason, member.endedBy) }
        switch member.result {
        case .answered where member.device != nil: return (.otherDeviceAccepted, user)
        case .rejected: return (.otherDeviceReject, user)
        default: return (member.reason, member.endedBy)
        }
    }
}

/// The memory of ended calls: each for `retention` ms after its end, and never more than `limit`
/// at once (the oldest go first).
struct EndedCalls: Sendable {
    let retention: Int64
    let limit: Int
    private var calls: [CallID: EndedCall] = [:]
    /// The remembered ended calls of each user, oldest first.
    private var byUser: [UserKey: [CallID]] = [:]
    /// Every remembered call in the order it ended (a ring: forgetting the oldest moves nothing).
    private var order = CircularBuffer<CallID>()

    /// The table is made at its full size (only its index is written until calls come): growing
    /// it rehashes every call it holds, a stall of the event loop the engine runs on.
    init(retention: Int64, limit: Int) {
        self.retention = retention
        self.limit = limit
        calls.reserveCapacity(limit + 1)
    }

    subscript(id: CallID) -> EndedCall? { calls[id] }

    /// How many call ids the users' lists hold, over all users (tests: the lists shrink as calls
    /// are forgotten).
    var listedCount: Int { byUser.values.reduce(0) { $0 + $1.count } }

    /// The remembered ended calls `user` was a member of, oldest first (``forget(now:)`` takes a
    /// forgotten call out of its members' lists as it goes).
    func calls(of user: UserKey) -> [CallID] {
        byUser[user] ?? []
    }

    /// Remembers a call that ended at `now` (every member has left it). An invitee who blocks the
    /// caller is left out: the call never reached them, so their devices hear nothing of it.
    mutating func remember(_ call: CallStateMachine.Call, at now: Int64) {
        var members: [UserID: EndedCall.Member] = [:]
        for member in call.members where member.departure?.blocksCaller != true {
            let departure = member.departure
            members[member.userId] = EndedCall.Member(
                reason: departure?.reason ?? .unknown, endedBy: departure?.by,
                result: member.firstConnectedAt != nil ? .answered : departure?.result ?? .unknown, device: member.device)
            byUser[UserKey(app: call.app, user: member.userId), default: []].append(call.id)
        }
        calls[call.id] = EndedCall(app: call.app, mediaType: call.mediaType, members: members, endedAt: now)
        order.append(call.id)
    }

    /// Forgets the calls that ended more than `retention` ago, and the oldest beyond `limit`.
    mutating func forget(now: Int64) {
        let horizon = now - retention
        while let id = order.first {
            guard let ended = calls[id] else {
                order.removeFirst()
                continue
            }
            guard ended.endedAt < horizon || order.count > limit else { break }
            calls[id] = nil
            for user in ended.members.keys {
                forgetLeading(of: UserKey(app: ended.app, user: user))
            }
            order.removeFirst()
        }
    }

    /// Drops the forgotten calls at the front of a user's list. Calls are forgotten in the order
    /// they ended, which is the order of every user's list, so the call just forgotten is at the
    /// front: no search through the list (a user with many recent calls made each forget a scan of
    /// them, 14 % of the server's CPU once the bound was reached at 1,000 calls/s).
    private mutating func forgetLeading(of user: UserKey) {
        let forgotten = byUser[user].map { ids in ids.prefix { calls[$0] == nil }.count } ?? 0
        guard forgotten > 0 else { return }
        if forgotten == byUser[user]?.count {
            byUser[user] = nil
        } else {
            byUser[user]?.removeFirst(forgotten)
        }
    }
}
