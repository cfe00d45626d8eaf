import Testing

@testable import SwitchboardServer

/// A timer moved again and again (a heartbeat, a deadline re-armed per request) must not grow the
/// heap that keeps its stale entries.
struct TimerQueueBoundTests {
    @Test func movingTimersKeepsTheHeapBounded() {
        var queue = TimerQueue<Int>()
        for round in 0..<10_000 {
            for key in 0..<10 { queue.set(key, at: Int64(round * 10 + key)) }
        }
        #expect(queue.count == 10)
        #expect(queue.storedCount <= 2 * 10 + 64 + 1)
        #expect(queue.earliestDeadline() == 99_990)
        #expect(queue.popDue(now: .max) == Array(0..<10))
    }
}
