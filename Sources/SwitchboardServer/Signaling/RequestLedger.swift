import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Remembers the answers to each device's recent state-changing requests, so that a request the
/// client sends again after a reconnect (same id) is answered again instead of applied twice.
///
/// Request ids are the client's, unique per device (the SDK prefixes them with a random session
/// token). A device keeps its last ``capacity`` answers, each for ``retention`` ms; a logout forgets
/// them. A duplicate that arrives while the original is still being handled waits for its answer.
final class RequestLedger: Sendable {
    struct DeviceKey: Hashable, Sendable {
        var user: UserKey
        var device: DeviceID
    }

    private struct Entry {
        var answer: String?
        var at: Int64
        var waiters: [CheckedContinuation<String, Never>] = []
    }

    private struct Log {
        var order: [RequestID] = []
        var entries: [RequestID: Entry] = [:]
    }

    static let capacity = 32
    static let retention: Int64 = 10 * 60_000

    private let logs = NIOLockedValueBox<[DeviceKey: Log]>([:])

    /// Returns the answer already given to this request (waiting for it if the request is being
    /// handled right now), or nil when the request is new and the caller handles it.
    func begin(_ id: RequestID, device: DeviceKey, now: Int64) async -> String? {
        enum Start {
            case fresh
            case answered(String)
            case wait
        }
        // The device's log is changed in place: a copy of it would copy its dictionary.
        func start(_ log: inout Log) -> Start {
            // Forget old answers, and the oldest ones beyond the capacity (never one in progress).
            while let first = log.order.first, let entry = log.entries[first], entry.answer != nil,
                log.order.count > Self.capacity || entry.at < now - Self.retention
            {
                log.order.removeFirst()
                log.entries[first] = nil
            }
            if let entry = log.entries[id] {
                return entry.answer.map(Start.answered) ?? .wait
            }
            log.entries[id] = Entry(answer: nil, at: now)
            log.order.append(id)
            return .fresh
        }
        switch logs.withLockedValue({ start(&$0[device, default: Log()]) }) {
        case .fresh:
            return nil
        case .answered(let answer):
            return answer
        case .wait:
            return await withCheckedContinuation { continuation in
                let answer = logs.withLockedValue { logs -> String? in
                    if let answer = logs[device]?.entries[id]?.answer { return answer }
                    logs[device]?.entries[id]?.waiters.append(continuation)
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        }
    }

    /// Records the answer to a request begun with ``begin(_:device:now:)`` and hands it to any
    /// duplicate waiting for it.
    func finish(_ id: RequestID, device: DeviceKey, answer: String) {
        let waiters = logs.withLockedValue { logs -> [CheckedContinuation<String, Never>] in
            guard var entry = logs[device]?.entries[id] else { return [] }
            let waiters = entry.waiters
            entry.answer = answer
            entry.waiters = []
            logs[device]?.entries[id] = entry
            return waiters
        }
        waiters.forEach { $0.resume(returning: answer) }
    }

    /// Forgets a device's answers (after a logout).
    func forget(_ device: DeviceKey) {
        logs.withLockedValue { _ = $0.removeValue(forKey: device) }
    }

    /// Number of devices with remembered answers.
    var deviceCount: Int { logs.withLockedValue { $0.count } }
}
