import Testing

@testable import SwitchboardServer

/// The persistence writer's queue as a value: when a take is scheduled, what a batch holds (one
/// term, a bound), and how commits keep their interval.
struct WriteQueueTests {
    typealias Queue = WriteQueue<String>

    static func batch(_ take: Queue.Take) -> [String]? {
        if case .batch(let writes, _) = take { writes } else { nil }
    }

    @Test func onlyTheFirstSubmitOfAnIdleWriterSchedulesATake() {
        var queue = Queue(interval: 0, maxBatch: 10)
        #expect(queue.isIdle)
        let first = queue.submit("a")
        #expect(first)
        #expect(queue.phase == .scheduled)
        let second = queue.submit("b")
        #expect(!second)
        let batch = Self.batch(queue.take(now: 0))
        #expect(batch == ["a", "b"])
        #expect(queue.phase == .committing(writes: 2))
        // Writes that come during the commit wait for the next take; none is scheduled for them.
        let duringTheCommit = queue.submit("c")
        #expect(!duringTheCommit)
        #expect(queue.backlog == 3)
        queue.batchDone()
        let next = Self.batch(queue.take(now: 0))
        #expect(next == ["c"])
        queue.batchDone()
        let last = queue.take(now: 0)
        #expect({ if case .idle = last { true } else { false } }())
        #expect(queue.isIdle)
        #expect(queue.backlog == 0)
        // Idle again: the next submit schedules.
        let again = queue.submit("d")
        #expect(again)
    }

    @Test func aBatchHoldsOneTermAndAtMostTheBound() {
        var queue = Queue(interval: 0, maxBatch: 2)
        queue.fence = 1
        _ = queue.submit("a1")
        _ = queue.submit("b1")
        _ = queue.submit("c1")
        queue.fence = 2
        _ = queue.submit("d2")
        var batches: [[String]] = []
        var fences: [Int64?] = []
        while case .batch(let writes, let fence) = queue.take(now: 0) {
            batches.append(writes)
            fences.append(fence)
            queue.batchDone()
        }
        #expect(batches == [["a1", "b1"], ["c1"], ["d2"]])
        #expect(fences == [1, 1, 2])
    }

    /// Commits start at least the interval apart; a clock that stepped back holds nothing back.
    @Test(arguments: [
        // (time of each take, what each take did: b = batch, w<t> = wait until t)
        ([0, 50, 100], ["b", "w100", "b"]),
        ([0, 99, 250], ["b", "w100", "b"]),
        ([0, 100], ["b", "b"]),
        // The wall clock stepped back 10 s: no wait for the old time to come round.
        ([10_000, -5_000], ["b", "b"]),
    ] as [([Int64], [String])])
    func theIntervalBetweenCommits(_ times: [Int64], _ expected: [String]) {
        var queue = Queue(interval: 100, maxBatch: 10)
        var seen: [String] = []
        for time in times {
            _ = queue.submit("x")
            switch queue.take(now: time) {
            case .batch:
                seen.append("b")
                queue.batchDone()
            case .wait(let until):
                seen.append("w\(until)")
                #expect(queue.phase == .holding(until: until))
            case .idle:
                seen.append("idle")
            }
        }
        #expect(seen == expected, "\(times)")
    }
}
