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
    }

    private let clock: any SwitchboardClock
    private let state = NIOLockedValueBox(State())

    init(clock: any SwitchboardClock) {
        self.clock = clock
    }

    /// Runs `action` at `deadline` (Unix ms) unless the connection's deadline is disarmed or armed
    /// again first. One deadline per connection id.
    func arm(_ id: UInt64, at deadline: Int64, _ action: @escaping @Sendable () -> Void) {
        state.withLockedValue { state in
            guard !state.stopped else { return }
            state.queue.set(id, at: deadline)
            state.deadlines[id] = deadline
            state.actions[id] = action
            schedule(&state)
        }
    }

    /// Arms `id` for `duration` from now.
    func arm(_ id: UInt64, after duration: Duration, _ action: @escaping @Sendable () -> Void) {
        let (deadline, overflow) = clock.now().addingReportingOverflow(duration.milliseconds)
        arm(id, at: overflow ? .max : deadline, action)
    }

    func disarm(_ id: UInt64) {
        state.withLockedValue { state in
            guard state.actions.removeValue(forKey: id) != nil else { return }
            state.deadlines[id] = nil
            state.queue.cancel(id)
        }
    }

    /// The armed deadlines, earliest first.
    var armed: [Int64] { state.withLockedValue { $0.deadlines.values.sorted() } }

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
        let actions = state.withLockedValue { state -> [@Sendable () -> Void] in
            guard generation == state.generation, !state.stopped else { return [] }
            state.sleeper = nil
            state.sleeperDeadline = nil
            let due = state.queue.popDue(now: clock.now())
            let actions = due.compactMap { state.actions.removeValue(forKey: $0) }
            for id in due { state.deadlines[id] = nil }
            schedule(&state)
            return actions
        }
        for action in actions { action() }
    }
}
