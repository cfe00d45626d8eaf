import SwitchboardProtocol

/// The requests sent and not yet answered, in the order they were made: the order in which they
/// go out again on a new connection. A request is either resendable (state-changing: the server
/// answers a repeat with its first answer) or not (pings and logins, which answer a connection
/// that is gone).
///
/// Bound: each entry has a timeout (``SwitchboardConfiguration/requestTimeout``) that removes it,
/// so the table holds at most what the app sends within one timeout.
struct PendingRequests<Entry> {
    private var entries: [RequestID: (entry: Entry, resendable: Bool)] = [:]
    private var order: [RequestID] = []

    mutating func add(_ id: RequestID, _ entry: Entry, resendable: Bool) {
        if entries.updateValue((entry, resendable), forKey: id) == nil { order.append(id) }
    }

    /// The entry answered or timed out, if it is still here.
    mutating func remove(_ id: RequestID) -> Entry? {
        guard let removed = entries.removeValue(forKey: id) else { return nil }
        order.removeAll { $0 == id }
        return removed.entry
    }

    /// The connection dropped: the entries that cannot be sent again leave, in order; the rest stay.
    mutating func removeNotResendable() -> [Entry] {
        let (kept, dropped) = order.reduce(into: ([RequestID](), [RequestID]())) { lists, id in
            if entries[id]?.resendable == true { lists.0.append(id) } else { lists.1.append(id) }
        }
        order = kept
        return dropped.compactMap { entries.removeValue(forKey: $0)?.entry }
    }

    /// The session ended: every entry leaves, in order.
    mutating func removeAll() -> [Entry] {
        defer {
            entries = [:]
            order = []
        }
        return order.compactMap { entries[$0]?.entry }
    }

    /// Every entry, in the order the requests were made.
    var inOrder: [Entry] { order.compactMap { entries[$0]?.entry } }
}
