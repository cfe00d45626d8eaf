import Foundation
import SwitchboardProtocol

/// What a node's ``ClusterBus`` has received and not yet handed over, in the order it came, and
/// which messages it already handed over: the rules that keep every message handed over once and
/// in the order it was sent, whichever way it came.
///
/// A message comes two ways. Its notification usually carries it (with its row id), and the row
/// stays in `switchboard_messages` until the node deletes it after handing it over; a take
/// (`DELETE … RETURNING`, after a notification without messages, on every heartbeat and after every
/// reconnection) returns whatever rows are still there. So a message can be seen twice: handed
/// over from its notification and then returned by a take before its row was deleted, or returned by
/// a take and then seen in its notification, which came later. ``seen`` remembers those ids until
/// the second sighting is no longer possible.
///
/// Order: notifications arrive in the order their transactions committed, and a node sends its
/// messages one batch after another, so a node's messages to another arrive in the order sent; work
/// is done in the order it came, one item at a time. A take returns every row that is there, in id
/// order: all the earlier messages of a sender whose later ones it returns. When a take fails, the
/// messages queued behind it could overtake messages only that take would have returned, so they
/// are dropped (their rows stay) until a take succeeds.
///
/// Bounded: at most ``maxQueued`` items wait; beyond that the messages waiting are dropped for a
/// single take (their rows are in the table). ``seen`` holds at most ``maxSeen`` ids, the oldest
/// forgotten first: an id is needed there for the few milliseconds until its row is deleted or its
/// notification comes (a message whose row outlived 100,000 newer ones, because deleting it kept
/// failing, could be handed over twice).
struct BusInbox {
    /// One message with the id of its row.
    struct Entry: Decodable, Equatable, Sendable {
        var id: Int64
        var body: String

        init(id: Int64, body: String) {
            self.id = id
            self.body = body
        }

        /// `[id, body]`, as the send statement writes it.
        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            id = try container.decode(Int64.self)
            body = try container.decode(String.self)
        }
    }

    enum Work: Equatable {
        /// Messages that came in a notification, to hand over (those not handed over already).
        case messages([Entry])
        /// Take every row of this node from the table.
        case take
    }

    static let maxQueued = 1_000
    static let maxSeen = 100_000

    private var queue: [Work] = []
    private var head = 0
    /// A take failed: nothing is handed over from notifications until one succeeds.
    private(set) var needsTake = false
    private var seen: Set<Int64> = []
    private var seenOrder: [Int64] = []
    private var seenHead = 0
    /// Rows of messages handed over from their notifications, to delete.
    private(set) var toDelete: [Int64] = []

    var isEmpty: Bool { head == queue.count }

    /// Ids remembered as handed over (for tests and the bound).
    var seenCount: Int { seen.count }

    /// A notification came: its messages (a JSON array of `[id, body]`), or none (`""`: they did not
    /// fit, or it only says "look").
    mutating func notified(_ payload: String) {
        guard !payload.isEmpty, let entries = try? SwitchboardJSON.decode([Entry].self, from: Data(payload.utf8)) else {
            takeDue()
            return
        }
        append(.messages(entries))
    }

    /// The table may hold messages no notification brought (a heartbeat, a new `LISTEN` connection).
    mutating func takeDue() {
        if head < queue.count, queue[queue.count - 1] == .take { return }
        append(.take)
    }

    private mutating func append(_ work: Work) {
        if queue.count - head >= Self.maxQueued {
            queue = [.take]
            head = 0
            if work == .take { return }
        }
        queue.append(work)
    }

    /// The next work, or nil when there is none. Messages from a notification come back without
    /// those already handed over, and count as handed over from now on.
    mutating func next() -> Work? {
        while head < queue.count {
            let work = queue[head]
            head += 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 64 && head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            switch work {
            case .take:
                return .take
            case .messages(let entries):
                if needsTake { continue }
                var fresh: [Entry] = []
                for entry in entries {
                    // Seen already: a take returned it (its row is gone), and nothing else will.
                    if seen.remove(entry.id) != nil { continue }
                    fresh.append(entry)
                    remember(entry.id)
                    toDelete.append(entry.id)
                }
                // Deletions that keep failing: the oldest rows are left for the next take.
                if toDelete.count > Self.maxSeen { toDelete.removeFirst(toDelete.count - Self.maxSeen) }
                if fresh.isEmpty { continue }
                return .messages(fresh)
            }
        }
        return nil
    }

    /// A take returned these rows (in any order): the ones to hand over, in id order.
    mutating func took(_ rows: [Entry]) -> [Entry] {
        needsTake = false
        var fresh: [Entry] = []
        for row in rows.sorted(by: { $0.id < $1.id }) {
            // Handed over from its notification; the take deleted its row.
            if seen.remove(row.id) != nil { continue }
            fresh.append(row)
            // Its notification may still come.
            remember(row.id)
        }
        return fresh
    }

    /// A take failed: what waits behind it is dropped until a take succeeds.
    mutating func takeFailed() {
        needsTake = true
        queue = queue[head...].filter { $0 == .take }
        head = 0
    }

    /// The rows to delete now (they leave ``toDelete``).
    mutating func takeDeletions() -> [Int64] {
        defer { toDelete = [] }
        return toDelete
    }

    /// This node deleted these rows: no take can return them any more. (Rows it meant to delete
    /// that a take running at the same time deleted first are not among them: they stay
    /// remembered until that take's rows are handed over, where they are recognised.)
    mutating func deleted(_ ids: [Int64]) {
        for id in ids { seen.remove(id) }
    }

    /// Deleting these rows failed: they are deleted with the next ones.
    mutating func deletionFailed(_ ids: [Int64]) {
        toDelete = ids + toDelete
    }

    private mutating func remember(_ id: Int64) {
        seen.insert(id)
        seenOrder.append(id)
        while seenOrder.count - seenHead > Self.maxSeen {
            seen.remove(seenOrder[seenHead])
            seenHead += 1
        }
        if seenHead > 1_024 && seenHead * 2 > seenOrder.count {
            seenOrder.removeFirst(seenHead)
            seenHead = 0
        }
    }
}
