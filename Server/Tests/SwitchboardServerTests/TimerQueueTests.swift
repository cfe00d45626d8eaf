import Testing

@testable import SwitchboardServer

/// The heap of deadlines behind the call engine's timers and the connections' deadlines.
struct TimerQueueTests {
    @Test func popsDueKeysInDeadlineOrder() {
        var queue = TimerQueue<String>()
        queue.set("c", at: 30)
        queue.set("a", at: 10)
        queue.set("b", at: 20)
        queue.set("d", at: 40)
        #expect(queue.earliestDeadline() == 10)
        #expect(queue.popDue(now: 25) == ["a", "b"])
        #expect(queue.earliestDeadline() == 30)
        #expect(queue.count == 2)
    }

    @Test func cancelAndMove() {
        var queue = TimerQueue<String>()
        queue.set("a", at: 10)
        queue.set("b", at: 20)
        queue.cancel("a")
        queue.set("b", at: 50)
        queue.set("c", at: 30)
        #expect(queue.earliestDeadline() == 30)
        #expect(queue.popDue(now: 40) == ["c"])
        #expect(queue.popDue(now: 60) == ["b"])
        #expect(queue.earliestDeadline() == nil)
    }

    @Test func equalDeadlinesComeOutInTheOrderTheyWereSet() {
        var queue = TimerQueue<String>()
        for key in ["c", "a", "d", "b"] { queue.set(key, at: 10) }
        queue.set("a", at: 10)  // moved: set again, so last
        #expect(queue.popDue(now: 10) == ["c", "d", "b", "a"])
    }

    /// A timer moved or cancelled again and again (a deadline re-armed per connection, ring timers
    /// answered) leaves nothing behind: the heap holds exactly the timers that are set, and the
    /// slots are those of the most timers set at once.
    @Test func movingAndCancellingKeepNothingStale() throws {
        var queue = TimerQueue<Int>()
        for round in 0..<10_000 {
            for key in 0..<10 { queue.set(key, at: Int64(round * 10 + key)) }
            queue.cancel(round % 10)
            // Nine set, and no more slots than the most ever set at once: a cancelled or moved
            // timer took nothing with it and left nothing behind.
            try #require(queue.count == 9 && queue.slotCount == 10, "round \(round)")
        }
        #expect(queue.count == 9)
        #expect(queue.slotCount == 10)
        #expect(queue.earliestDeadline() == 99_990)
        #expect(queue.popDue(now: .max) == Array(0..<9))
        #expect(queue.count == 0 && queue.earliestDeadline() == nil)
    }

    /// Random sets, moves, cancels and pops against a plain model: the same keys come out, in the
    /// order of (deadline, when set).
    @Test func randomOperationsMatchAModel() throws {
        let seed = FuzzBudget.firstSeed("timer queue")
        var generator = SeededRandom(seed: seed)
        var queue = TimerQueue<Int>()
        var model: [Int: (deadline: Int64, order: Int)] = [:]
        var order = 0
        var now: Int64 = 0
        for _ in 0..<20_000 {
            let key = Int.random(in: 0..<300, using: &generator)
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<6:
                let deadline = now + Int64.random(in: 0...1_000, using: &generator)
                queue.set(key, at: deadline)
                order += 1
                model[key] = (deadline, order)
            case 6..<8:
                queue.cancel(key)
                model[key] = nil
            default:
                now += Int64.random(in: 0...200, using: &generator)
                let expected = model.filter { $0.value.deadline <= now }
                    .sorted { ($0.value.deadline, $0.value.order) < ($1.value.deadline, $1.value.order) }.map(\.key)
                for key in expected { model[key] = nil }
                try #require(queue.popDue(now: now) == expected, "SWITCHBOARD_FUZZ_SEED=\(seed)")
            }
            try #require(queue.count == model.count, "SWITCHBOARD_FUZZ_SEED=\(seed)")
            try #require(queue.earliestDeadline() == model.values.map(\.deadline).min(), "SWITCHBOARD_FUZZ_SEED=\(seed)")
        }
    }
}
