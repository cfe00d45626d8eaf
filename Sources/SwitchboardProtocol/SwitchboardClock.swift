import Foundation

/// The time source of every timer in Switchboard: ring timeouts, grace periods, heartbeats,
/// reconnect backoff, the call-duration ticker.
///
/// Swift's `Clock` gives monotonic instants but no wall time, and Switchboard needs both from one
/// source: records and call start times are wall-clock timestamps, and in tests the durations
/// between them must follow the same manually driven time as the timers. So the clock speaks
/// Unix milliseconds and sleeps until such a deadline. Production code uses ``SystemClock``;
/// tests use `TestClock` from SwitchboardTesting and move time forward themselves.
public protocol SwitchboardClock: Sendable {
    /// Now, in Unix milliseconds.
    func now() -> Int64
    /// Suspends until `deadline` (Unix ms) has passed; returns at once if it already has.
    /// Throws `CancellationError` when the task is cancelled.
    func sleep(until deadline: Int64) async throws
}

extension SwitchboardClock {
    /// Suspends for `duration` from now.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now() + duration.milliseconds)
    }
}

/// The real clock: wall time from the system, sleeping on the monotonic clock.
public struct SystemClock: SwitchboardClock {
    public init() {}

    public func now() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    public func sleep(until deadline: Int64) async throws {
        let remaining = deadline - now()
        if remaining > 0 {
            try await Task.sleep(for: .milliseconds(remaining))
        } else {
            try Task.checkCancellation()
        }
    }
}

extension Duration {
    /// Whole milliseconds, rounded down.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
