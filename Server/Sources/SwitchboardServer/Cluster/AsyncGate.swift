import NIOConcurrencyHelpers

/// Runs async work one piece at a time, in arrival order: a second caller waits until the first
/// is done (an actor would let the pieces interleave at each suspension).
final class AsyncGate: Sendable {
    private struct State {
        var busy = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = NIOLockedValueBox(State())

    func run<T: Sendable>(_ work: () async -> T) async -> T {
        await enter()
        defer { leave() }
        return await work()
    }

    private func enter() async {
        await withCheckedContinuation { continuation in
            let now = state.withLockedValue { state -> Bool in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    private func leave() {
        let next = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
