import Foundation
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Collects the values of an AsyncSequence so that a test, or the demo player, can wait for the
/// ones it expects.
///
/// Waiting has a real-time limit only as a guard against a hang; no logic depends on it.
public final class Recorder<Value: Sendable>: Sendable {
    /// How long a wait lasts unless told: long enough for a two-core machine that runs the whole
    /// suite at once (real server processes, GStreamer, PostgreSQL) to answer what takes
    /// milliseconds alone; a test that fails by running out of it has hung.
    public static var defaultTimeout: Duration { .seconds(30) }

    private struct State {
        var values: [Value] = []
        var waiters: [UInt64: (predicate: @Sendable (Value) -> Bool, from: Int, continuation: CheckedContinuation<Value, any Error>)] = [:]
        var nextWaiter: UInt64 = 0
        var finished = false
        var endWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
    }

    private let state = NIOLockedValueBox(State())
    private let pump: NIOLockedValueBox<Task<Void, Never>?> = NIOLockedValueBox(nil)

    /// A recorder fed by ``record(_:)`` and ended by ``finish()``: what a test server records
    /// before it answers is in ``values`` for anyone who saw that answer.
    public init() {}

    /// A recorder fed by a sequence. The values arrive through a task of their own, so two
    /// recorders fed this way keep no order between them.
    public init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Value {
        let task = Task { [weak self] in
            do {
                for try await value in sequence {
                    guard let self else { return }
                    self.record(value)
                }
            } catch {}
            self?.finish()
        }
        pump.withLockedValue { $0 = task }
    }

    /// Appends a value and hands it to the waits it matches.
    public func record(_ value: Value) {
        let ready = state.withLockedValue { state -> [CheckedContinuation<Value, any Error>] in
            state.values.append(value)
            let index = state.values.count - 1
            let matched = state.waiters.filter { $0.value.from <= index && $0.value.predicate(value) }
            for id in matched.keys { state.waiters[id] = nil }
            return matched.values.map(\.continuation)
        }
        ready.forEach { $0.resume(returning: value) }
    }

    /// Marks the end: ``waitForEnd(timeout:)`` returns true from now on.
    public func finish() {
        let waiters = state.withLockedValue { state in
            state.finished = true
            defer { state.endWaiters = [:] }
            return state.endWaiters.values
        }
        waiters.forEach { $0.resume(returning: true) }
    }

    deinit {
        pump.withLockedValue { $0?.cancel() }
    }

    /// Everything received so far.
    public var values: [Value] { state.withLockedValue { $0.values } }

    /// Whether the sequence has ended.
    public var isFinished: Bool { state.withLockedValue { $0.finished } }

    /// Waits until the sequence ends; false if it did not within `timeout`.
    public func waitForEnd(timeout: Duration = Recorder.defaultTimeout) async -> Bool {
        let waiterID = state.withLockedValue { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let timer = Task { [state] in
            try? await Task.sleep(for: timeout)
            state.withLockedValue { $0.endWaiters.removeValue(forKey: waiterID) }?.resume(returning: false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let done = state.withLockedValue { state -> Bool in
                if state.finished { return true }
                state.endWaiters[waiterID] = continuation
                return false
            }
            if done { continuation.resume(returning: true) }
        }
    }

    /// The first value received at or after position `from` that matches, waiting for it if needed.
    ///
    /// `from` has no default: a wait says where it starts. `0` is the whole stream, replayed state
    /// included (a state stream begins with the state as it was when the recorder subscribed), so
    /// a wait for what an action brings about starts at a position taken before that action
    /// (``values``' count, or ``position(after:where:)`` of the event that precedes it).
    @discardableResult
    public func first(
        from: Int, timeout: Duration = Recorder.defaultTimeout, where predicate: @escaping @Sendable (Value) -> Bool
    ) async throws -> Value {
        let waiterID = state.withLockedValue { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let timer = Task { [state] in
            try? await Task.sleep(for: timeout)
            let waiter = state.withLockedValue { $0.waiters.removeValue(forKey: waiterID) }
            waiter?.continuation.resume(throwing: RecorderTimeout(description: "no matching value within \(timeout)"))
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            let found = state.withLockedValue { state -> Value? in
                if let match = state.values.dropFirst(from).first(where: predicate) { return match }
                state.waiters[waiterID] = (predicate, from, continuation)
                return nil
            }
            if let found { continuation.resume(returning: found) }
        }
    }
}

extension Recorder {
    /// Waits for the first value (at or after `from`) that matches and returns the position just
    /// past it: a wait for what must follow that value starts there, so a value replayed or
    /// received before it cannot answer that wait.
    public func position(
        after from: Int, timeout: Duration = Recorder.defaultTimeout, where predicate: @escaping @Sendable (Value) -> Bool
    ) async throws -> Int {
        try await first(from: from, timeout: timeout, where: predicate)
        let values = self.values
        // Values are only ever appended, so the match `first` found is still there.
        let index = (from..<values.count).first { predicate(values[$0]) } ?? values.count - 1
        return index + 1
    }

    /// Waits until `count` values that match have arrived at or after position `from`; returns them.
    @discardableResult
    public func matches(
        _ count: Int, from: Int, timeout: Duration = Recorder.defaultTimeout,
        where predicate: @escaping @Sendable (Value) -> Bool
    ) async throws -> [Value] {
        var from = from
        var found: [Value] = []
        while found.count < count {
            let value = try await first(from: from, timeout: timeout, where: predicate)
            found.append(value)
            let values = self.values
            from = (from..<values.count).first { predicate(values[$0]) }.map { $0 + 1 } ?? values.count
        }
        return found
    }
}

/// A wait for an expected value ran out of time.
public struct RecorderTimeout: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) {
        self.description = description
    }
}
