import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Deadlines of connections on the node's clock: the HTTP request head must arrive, a request must
/// complete, an idle keep-alive connection must be used, a WebSocket must log in. One heap and one
/// task sleeping until the earliest deadline serve every connection of the node (no timer task per
/// connection), and tests move the clock instead of waiting.
final class ConnectionDeadlines: Sendable {
    private struct State {
        var queue = TimerQueue<UInt64>()
        var actions: [UInt64: @Sendable () -> Void] = [:]
        var deadlines: [UInt64: Int64] = [:]
        var sleeper: Task<Void, Never>?
        var sleeperDeadline: Int64?
        var generation = 0
        var stopped = false
        /// Tests waiting for the armed deadlines to satisfy a predicate.
        var watchers: [(predicate: @Sendable ([Int64]) -> Bool, resume: @Sendable () -> Void)] = []
    }

    private let clock: any SwitchboardClock
    private let state = NIOLockedValueBox(State())

    init(clock: any SwitchboardClock) {
        self.clock = clock
    }

    /// Runs `action` at `deadline` (Unix ms) unless the connection's deadline is disarmed or armed
    /// again first. One deadline per connection id.
    func arm(_ id: UInt64, at deadline: Int64, _ action: @escaping @Sendable () -> Void) {
        let ready = state.withLockedValue { state -> [@Sendable () -> Void] in
            guard !state.stopped else { return [] }
            state.queue.set(id, at: deadline)
            state.deadlines[id] = deadline
            state.actions[id] = action
            schedule(&state)
            return watchersReady(&state)
        }
        ready.forEach { $0() }
    }

    /// Arms `id` for `duration` from now.
    func arm(_ id: UInt64, after duration: Duration, _ action: @escaping @Sendable () -> Void) {
        let (deadline, overflow) = clock.now().addingReportingOverflow(duration.milliseconds)
        arm(id, at: overflow ? .max : deadline, action)
    }

    func disarm(_ id: UInt64) {
        let ready = state.withLockedValue { state -> [@Sendable () -> Void] in
            guard state.actions.removeValue(forKey: id) != nil else { return [] }
            state.deadlines[id] = nil
            state.queue.cancel(id)
            return watchersReady(&state)
        }
        ready.forEach { $0() }
    }

    /// Number of armed deadlines.
    var count: Int { state.withLockedValue { $0.actions.count } }

    /// Returns true once the armed deadlines, earliest first, satisfy `predicate`; false if they did
    /// not within `timeout` of real time (tests: a deadline is armed before the clock moves).
    func waitUntil(timeout: Duration = .seconds(10), _ predicate: @escaping @Sendable ([Int64]) -> Bool) async -> Bool {
        let answer = OneAnswer()
        let timer = Task {
            try? await Task.sleep(for: timeout)
            answer.give(false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            answer.wait(with: continuation)
            let done = state.withLockedValue { state -> Bool in
                if predicate(state.deadlines.values.sorted()) { return true }
                state.watchers.append((predicate, { answer.give(true) }))
                return false
            }
            if done { answer.give(true) }
        }
    }

    private func watchersReady(_ state: inout State) -> [@Sendable () -> Void] {
        guard !state.watchers.isEmpty else { return [] }
        let armed = state.deadlines.values.sorted()
        var ready: [@Sendable () -> Void] = []
        state.watchers.removeAll { watcher in
            guard watcher.predicate(armed) else { return false }
            ready.append(watcher.resume)
            return true
        }
        return ready
    }

    /// Stops the sleeper; nothing fires any more (shutdown).
    func stop() {
        state.withLockedValue { state in
            state.stopped = true
            state.sleeper?.cancel()
            state.sleeper = nil
            state.actions = [:]
            state.deadlines = [:]
            state.queue = TimerQueue()
        }
    }

    /// Keeps one task sleeping until the earliest deadline.
    private func schedule(_ state: inout State) {
        guard let next = state.queue.earliestDeadline() else { return }
        if let current = state.sleeperDeadline, current <= next { return }
        state.sleeper?.cancel()
        state.generation += 1
        let generation = state.generation
        state.sleeperDeadline = next
        let clock = self.clock
        state.sleeper = Task { [weak self] in
            do {
                try await clock.sleep(until: next)
            } catch {
                return
            }
            self?.due(generation: generation)
        }
    }

    private func due(generation: Int) {
        let actions = state.withLockedValue {
            state -> ([@Sendable () -> Void], [@Sendable () -> Void]) in
            guard generation == state.generation, !state.stopped else { return ([], []) }
            state.sleeper = nil
            state.sleeperDeadline = nil
            let due = state.queue.popDue(now: clock.now())
            let actions = due.compactMap { state.actions.removeValue(forKey: $0) }
            for id in due { state.deadlines[id] = nil }
            schedule(&state)
            return (actions, watchersReady(&state))
        }
        for action in actions.0 { action() }
        actions.1.forEach { $0() }
    }
}

/// A continuation resumed once, by whichever answer comes first (before or after it waits).
private final class OneAnswer: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<Bool, Never>)
        case answered(Bool)
        case done
    }

    private let state = NIOLockedValueBox(State.idle)

    func wait(with continuation: CheckedContinuation<Bool, Never>) {
        let early = state.withLockedValue { state -> Bool? in
            guard case .answered(let value) = state else {
                state = .waiting(continuation)
                return nil
            }
            state = .done
            return value
        }
        if let early { continuation.resume(returning: early) }
    }

    func give(_ value: Bool) {
        let waiting = state.withLockedValue { state -> CheckedContinuation<Bool, Never>? in
            switch state {
            case .idle:
                state = .answered(value)
                return nil
            case .waiting(let continuation):
                state = .done
                return continuation
            case .answered, .done:
                return nil
            }
        }
        waiting?.resume(returning: value)
    }
}
