import NIOConcurrencyHelpers
import SwitchboardProtocol

/// A clock that only moves when a test says so. Sleepers wake, in deadline order, when
/// ``advance(by:)`` passes their deadline; a sleep whose deadline has already passed returns at once.
public final class TestClock: SwitchboardClock {
    private struct Sleeper {
        var deadline: Int64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Int64
        var sleepers: [UInt64: Sleeper] = [:]
        var cancelled: Set<UInt64> = []
        var nextID: UInt64 = 0
        var countWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var deadlineWaiters: [(deadline: Int64, continuation: CheckedContinuation<Void, Never>)] = []

        /// The waiters a new sleep (with its deadline) satisfies, removed from the lists.
        mutating func satisfied(byA deadline: Int64) -> [CheckedContinuation<Void, Never>] {
            let count = sleepers.count
            let ready = countWaiters.filter { $0.count <= count }.map(\.continuation)
                + deadlineWaiters.filter { $0.deadline == deadline }.map(\.continuation)
            countWaiters.removeAll { $0.count <= count }
            deadlineWaiters.removeAll { $0.deadline == deadline }
            return ready
        }
    }

    private let state: NIOLockedValueBox<State>

    /// 2026-01-01T00:00:00Z by default.
    public init(now: Int64 = 1_767_225_600_000) {
        state = NIOLockedValueBox(State(now: now))
    }

    public func now() -> Int64 { state.withLockedValue { $0.now } }

    /// How many tasks are sleeping on this clock.
    public var sleeperCount: Int { state.withLockedValue { $0.sleepers.count } }

    public func sleep(until deadline: Int64) async throws {
        let id = state.withLockedValue { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (outcome, ready) = state.withLockedValue {
                    state -> (Result<Void, any Error>?, [CheckedContinuation<Void, Never>]) in
                    if state.cancelled.remove(id) != nil { return (.failure(CancellationError()), []) }
                    if deadline <= state.now { return (.success(()), []) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return (nil, state.satisfied(byA: deadline))
                }
                if let outcome { continuation.resume(with: outcome) }
                ready.forEach { $0.resume() }
            }
        } onCancel: {
            let sleeper = state.withLockedValue { state -> Sleeper? in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else {
                    state.cancelled.insert(id)
                    return nil
                }
                return sleeper
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Returns once at least `count` tasks are sleeping on this clock: a deterministic way to know
    /// that a timer has been armed (and its deadline fixed) before moving time.
    public func waitForSleepers(atLeast count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLockedValue { state -> Bool in
                if state.sleepers.count >= count { return true }
                state.countWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Returns once a task sleeps until exactly `deadline` (milliseconds on this clock): the event
    /// that one particular timer was armed, told from the others by its deadline (a backoff of
    /// 500 ms from now, beside tickers of a second).
    public func waitForSleeper(until deadline: Int64) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLockedValue { state -> Bool in
                if state.sleepers.values.contains(where: { $0.deadline == deadline }) { return true }
                state.deadlineWaiters.append((deadline, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline is reached, earliest first.
    public func advance(by duration: Duration) {
        let due = state.withLockedValue { state -> [Sleeper] in
            state.now += duration.milliseconds
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.sorted { $0.deadline < $1.deadline }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
