import SwitchboardProtocol

/// Who rings or is joined in which call on this node.
///
/// Several rules look across calls: a user in any call is busy (under the reject policy) and cannot
/// place another; answering hangs up the call one is joined in (call waiting); a device that comes
/// or goes touches every call of its user. They ask the roster instead of scanning every call.
struct CallRoster: Equatable, Sendable {
    /// The calls in which each user rings or is joined; a user in none has no entry.
    private(set) var callsByUser: [UserKey: Set<CallID>] = [:]

    /// The calls in which `user` rings or is joined.
    func calls(of user: UserKey) -> Set<CallID> {
        callsByUser[user] ?? []
    }

    /// Whether `user` rings or is joined anywhere.
    func isInAnyCall(_ user: UserKey) -> Bool {
        !(callsByUser[user]?.isEmpty ?? true)
    }

    mutating func add(_ user: UserKey, to call: CallID) {
        callsByUser[user, default: []].insert(call)
    }

    mutating func remove(_ user: UserKey, from call: CallID) {
        callsByUser[user]?.remove(call)
        if callsByUser[user]?.isEmpty == true { callsByUser[user] = nil }
    }
}
