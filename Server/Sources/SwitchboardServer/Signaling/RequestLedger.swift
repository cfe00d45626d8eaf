import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Remembers the answers to each device's recent state-changing requests, so that a request the
/// client sends again after a reconnect (same id) is answered again instead of applied twice.
///
/// Request ids are the client's, unique per device (the SDK prefixes them with a random session
/// token). A duplicate that arrives while the original is still being handled waits for its answer.
///
/// Bounded three ways (``Limits``): a device keeps its last `perDevice` answers; an answer is kept
/// `retention` ms; all devices together keep at most `totalBytes` of answers and `totalEntries`
/// entries, the oldest going first. A device whose answers are all gone is forgotten, whether or not
/// it ever comes back (a login without a `deviceId` is a new device every time); a logout forgets
/// a device at once.
final class RequestLedger: Sendable {
    struct DeviceKey: Hashable, Sendable {
        var user: UserKey
        var device: DeviceID
    }

    struct Limits: Sendable {
        var perDevice = 32
        var retention: Int64 = 10 * 60_000
        var totalBytes = 32 << 20
        var totalEntries = 200_000
    }

    private struct Entry {
        var answer: String?
        var at: Int64
        /// Its key in ``State/arrivals``: when it arrived, among all devices' entries.
        var sequence: UInt64
        var waiters: [CheckedContinuation<String, Never>] = []
    }

    private struct Log {
        /// This device's request ids, oldest first (some may be gone already: skipped).
        var order: [RequestID] = []
        var head = 0
        var entries: [RequestID: Entry] = [:]

        /// Records the answer to `id`; returns its waiters, or nil when it has no entry or an answer.
        mutating func answer(_ id: RequestID, _ answer: String) -> [CheckedContinuation<String, Never>]? {
            guard let index = entries.index(forKey: id), entries.values[index].answer == nil else { return nil }
            let waiters = entries.values[index].waiters
            entries.values[index].answer = answer
            entries.values[index].waiters = []
            return waiters
        }

        /// The oldest request of this device that has its answer.
        var oldestAnswered: RequestID? {
            order[head...].first { entries[$0]?.answer != nil }
        }

        /// Removes `id`'s entry and moves `head` past the ids that are gone.
        mutating func remove(_ id: RequestID) -> Entry? {
            guard let entry = entries.removeValue(forKey: id) else { return nil }
            while head < order.count, entries[order[head]] == nil { head += 1 }
            if head > 64 && head * 2 > order.count {
                order.removeFirst(head)
                head = 0
            }
            return entry
        }
    }

    private struct Arrival {
        var device: DeviceKey
        var id: RequestID
    }

    private struct State {
        var logs: [DeviceKey: Log] = [:]
        /// Every entry by its sequence number, the order it arrived in: what is evicted first by
        /// age or by the totals. An entry removed any other way (the per-device bound, a logout)
        /// leaves a gap, skipped once when the sweep reaches it (at most ``maxSkipsPerSweep`` per
        /// request); nothing is ever compacted, so no request pays for a pass over the whole
        /// ledger (the queue this replaces was filtered whole, under the lock, each time its dead
        /// entries outnumbered the live ones: 400,000 of them at the totals).
        var arrivals: [UInt64: Arrival] = [:]
        /// The sequence number the eviction sweep looks at next.
        var oldest: UInt64 = 1
        var bytes = 0
        var entries = 0
        var nextSequence: UInt64 = 0
    }

    let limits: Limits
    private let state = NIOLockedValueBox(State())

    init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Returns the answer already given to this request (waiting for it if the request is being
    /// handled right now), or nil when the request is new and the caller handles it.
    func begin(_ id: RequestID, device: DeviceKey, now: Int64) async -> String? {
        enum Start {
            case fresh
            case answered(String)
            case wait
        }
        let start = state.withLockedValue { state -> Start in
            evict(&state, now: now)
            // The device's log is looked up once and changed in place.
            let index: [DeviceKey: Log].Index
            if let found = state.logs.index(forKey: device) {
                if let entry = state.logs.values[found].entries[id] {
                    return entry.answer.map(Start.answered) ?? .wait
                }
                index = found
            } else {
                state.logs[device] = Log()
                index = state.logs.index(forKey: device)!
            }
            state.nextSequence += 1
            let sequence = state.nextSequence
            state.logs.values[index].entries[id] = Entry(answer: nil, at: now, sequence: sequence)
            state.logs.values[index].order.append(id)
            state.arrivals[sequence] = Arrival(device: device, id: id)
            state.entries += 1
            trimDevice(&state, at: index)
            return .fresh
        }
        switch start {
        case .fresh:
            return nil
        case .answered(let answer):
            return answer
        case .wait:
            return await withCheckedContinuation { continuation in
                let answer = state.withLockedValue { state -> String? in
                    guard let entry = state.logs[device]?.entries[id] else { return "" }
                    if let answer = entry.answer { return answer }
                    state.logs[device]?.entries[id]?.waiters.append(continuation)
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        }
    }

    /// Records the answer to a request begun with ``begin(_:device:now:)`` and hands it to any
    /// duplicate waiting for it.
    func finish(_ id: RequestID, device: DeviceKey, answer: String) {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<String, Never>] in
            guard let index = state.logs.index(forKey: device) else { return [] }
            let waiters = state.logs.values[index].answer(id, answer)
            guard let waiters else { return [] }
            state.bytes += answer.utf8.count
            trimDevice(&state, at: index)
            return waiters
        }
        waiters.forEach { $0.resume(returning: answer) }
    }

    /// Forgets a device's answers (after a logout).
    func forget(_ device: DeviceKey) {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<String, Never>] in
            guard let log = state.logs.removeValue(forKey: device) else { return [] }
            var waiters: [CheckedContinuation<String, Never>] = []
            for entry in log.entries.values {
                state.arrivals[entry.sequence] = nil
                state.entries -= 1
                state.bytes -= entry.answer?.utf8.count ?? 0
                waiters += entry.waiters
            }
            return waiters
        }
        // A duplicate waiting on a logged-out device gets nothing to resend ("" is never sent).
        waiters.forEach { $0.resume(returning: "") }
    }

    /// Number of devices with remembered answers.
    var deviceCount: Int { state.withLockedValue { $0.logs.count } }

    /// Bytes of answers remembered, over all devices.
    var byteCount: Int { state.withLockedValue { $0.bytes } }

    /// How many duplicates wait for the answer to `id` (tests).
    func waiterCount(_ id: RequestID, device: DeviceKey) -> Int? {
        state.withLockedValue { $0.logs[device]?.entries[id]?.waiters.count }
    }

    /// Number of entries remembered, over all devices.
    var entryCount: Int { state.withLockedValue { $0.entries } }

    /// Entries in the arrival order (tests: as many as ``entryCount``, whatever was removed).
    var arrivalCount: Int { state.withLockedValue { $0.arrivals.count } }

    // MARK: - bounds

    /// Gaps one request's sweep skips at most; the rest wait for the next request. Eviction can
    /// then lag behind the totals by a few entries for as many requests as the gaps take.
    static let maxSkipsPerSweep = 1_024

    /// Drops, oldest first, the answers past their retention or beyond the totals. An entry still
    /// being handled stops the sweep (it is answered within the request); it is never dropped.
    private func evict(_ state: inout State, now: Int64) {
        let horizon = now - limits.retention
        var skips = 0
        while state.oldest <= state.nextSequence {
            guard let arrival = state.arrivals[state.oldest],
                let entry = state.logs[arrival.device]?.entries[arrival.id]
            else {
                state.arrivals[state.oldest] = nil  // already gone (never kept, should it happen)
                state.oldest += 1
                skips += 1
                if skips >= Self.maxSkipsPerSweep { break }
                continue
            }
            let over = entry.at < horizon || state.bytes > limits.totalBytes || state.entries > limits.totalEntries
            guard over, entry.answer != nil else { break }
            remove(&state, arrival.device, arrival.id)
            state.oldest += 1
        }
    }

    /// Keeps the answered entries of the device at `index` to `perDevice`, dropping its oldest.
    private func trimDevice(_ state: inout State, at index: [DeviceKey: Log].Index) {
        while state.logs.values[index].entries.count > limits.perDevice {
            guard let oldest = state.logs.values[index].oldestAnswered else { return }
            // With no entry left the device is forgotten, and `index` with it.
            guard remove(&state, at: index, oldest) else { return }
        }
    }

    private func remove(_ state: inout State, _ device: DeviceKey, _ id: RequestID) {
        guard let index = state.logs.index(forKey: device) else { return }
        remove(&state, at: index, id)
    }

    /// Removes an entry of the device at `index`; a device left without entries is forgotten.
    /// Returns whether the device is still there.
    @discardableResult
    private func remove(_ state: inout State, at index: [DeviceKey: Log].Index, _ id: RequestID) -> Bool {
        guard let entry = state.logs.values[index].remove(id) else { return true }
        state.arrivals[entry.sequence] = nil
        state.entries -= 1
        state.bytes -= entry.answer?.utf8.count ?? 0
        guard state.logs.values[index].entries.isEmpty else { return true }
        state.logs.remove(at: index)
        return false
    }
}
