import Foundation
import NIOConcurrencyHelpers
import SwitchboardProtocol
import SwitchboardTestServers
import SwitchboardTesting
import SwitchboardTools
import Testing

@testable import SwitchboardServer

/// A database outage loses no record: the writer retries on the node's clock until the database is
/// back, and reports a backlog past its bound so that new calls are refused meanwhile.
struct PersistenceWriterOutageTests {
    @Test func anOutageIsRetriedUntilTheDatabaseIsBackAndNothingIsLost() async throws {
        let test = try await StorageTests.makeStore(.sqlite)
        let store = RecordingStore(test.store)
        let broken = NIOLockedValueBox(true)
        store.refusal.function = { _ in broken.withLockedValue { $0 } ? SwitchboardError(.storageUnavailable) : nil }
        let clock = TestClock()
        let reported = Recorder<StoredRecord>.Sink()
        let writer = PersistenceWriter(store: store, clock: clock, maxBacklog: 5, logger: .init(label: "test")) {
            reported.add($0)
        }
        for index in 0..<10 {
            writer.submit([StorageTests.draft(StorageTests.alice, call: "c\(index)", end: Int64(index))])
        }
        // Ten minutes of retries: nothing is given up, and the backlog keeps new calls out.
        for _ in 0..<200 {
            await clock.waitForSleepers(atLeast: 1)
            clock.advance(by: .seconds(5))
        }
        // The writer is waiting for its next attempt when the database comes back.
        await clock.waitForSleepers(atLeast: 1)
        #expect(store.batches.count > 100)
        #expect(writer.isBacklogged)
        #expect(reported.values.isEmpty)
        broken.withLockedValue { $0 = false }
        clock.advance(by: .seconds(5))
        await writer.drain()
        #expect(Set(reported.values.map(\.record.callId)).count == 10)
        #expect(!writer.isBacklogged)
    }
}

/// A drain waiting on a database that does not come back ends when its task is cancelled (a
/// graceful shutdown that ran out of its time), with the writes still queued for their retries: a
/// cluster node told to stop while cut off from PostgreSQL used to run on, its shutdown waiting here.
struct PersistenceWriterShutdownTests {
    @Test(.timeLimit(.minutes(1))) func aCancelledDrainEndsWhileTheDatabaseIsAway() async throws {
        let test = try await StorageTests.makeStore(.sqlite)
        defer { Task { await test.close() } }
        let store = RecordingStore(test.store)
        store.refusal.function = { _ in SwitchboardError(.storageUnavailable) }
        let clock = TestClock()
        let writer = PersistenceWriter(store: store, clock: clock, maxBacklog: 5, logger: .init(label: "test")) { _ in }
        writer.submit([StorageTests.draft(StorageTests.alice, call: "c1", end: 1)])
        // The first attempt failed: the writer waits for its retry.
        await clock.waitForSleepers(atLeast: 1)
        let drain = Task { await writer.drain() }
        drain.cancel()
        await drain.value
        #expect(writer.backlog == 1)
        // An uncancelled drain still waits for the commit, and the retries go on.
        store.refusal.function = { _ in nil }
        clock.advance(by: .seconds(5))
        await writer.drain()
        #expect(writer.backlog == 0)
    }
}

/// Commits start at least the commit interval apart, on the node's clock: what arrives sooner
/// waits for the rest of the interval and shares the next transaction.
struct CommitIntervalTests {
    /// A writer with a 5 ms commit interval on a test clock, in front of a recording store.
    static func writer(
        clock: any SwitchboardClock = TestClock(), reported: Recorder<StoredRecord>.Sink = .init()
    ) async throws -> (PersistenceWriter, RecordingStore) {
        let store = RecordingStore(try await StorageTests.makeStore(.sqlite).store)
        let writer = PersistenceWriter(store: store, clock: clock, commitInterval: .milliseconds(5), logger: .init(label: "test")) {
            reported.add($0)
        }
        return (writer, store)
    }

    /// Submits the records of a call that ended.
    static func end(_ call: String, on writer: PersistenceWriter) {
        writer.submit([StorageTests.draft(StorageTests.alice, call: call, end: 1)])
    }

    @Test(.timeLimit(.minutes(1))) func writesSoonerThanTheIntervalWaitForItAndShareOneCommit() async throws {
        let clock = TestClock()
        let reported = Recorder<StoredRecord>.Sink()
        let (writer, store) = try await Self.writer(clock: clock, reported: reported)
        func ended(_ call: String) { Self.end(call, on: writer) }

        // The first write after a quiet moment commits at once.
        ended("a")
        await writer.drain()
        #expect(store.endedPerBatch == [1])

        // Three more within the interval: the writer waits on the clock, then commits them together.
        ended("b")
        ended("c")
        ended("d")
        await clock.waitForSleepers(atLeast: 1)
        #expect(store.endedPerBatch == [1])
        #expect(reported.values.count == 1)
        clock.advance(by: .milliseconds(4))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .milliseconds(1))
        await writer.drain()
        #expect(store.endedPerBatch == [1, 3])
        #expect(Set(reported.values.map(\.record.callId.rawValue)) == ["a", "b", "c", "d"])

        // Once the interval has passed since the last commit began, a write commits at once again.
        clock.advance(by: .milliseconds(5))
        ended("e")
        await writer.drain()
        #expect(store.endedPerBatch == [1, 3, 1])
        #expect(clock.sleeperCount == 0)
    }

    /// A write is fenced by the leadership term in force when it was made, not by the one in force
    /// when its batch is taken: writes an earlier term queued are refused once a newer term began,
    /// even when the same node leads again.
    @Test(.timeLimit(.minutes(1))) func eachWriteIsFencedByTheTermItWasMadeIn() async throws {
        let clock = TestClock()
        let (writer, store) = try await Self.writer(clock: clock)
        func ended(_ call: String) { Self.end(call, on: writer) }
        writer.fence = 1
        ended("x")
        await writer.drain()
        ended("a")  // waits for the interval, made in term 1
        writer.fence = 2  // the node stepped down and leads again
        ended("b")
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .milliseconds(5))
        await clock.waitForSleepers(atLeast: 1)  // "b" waits for the next interval
        clock.advance(by: .milliseconds(5))
        await writer.drain()
        #expect(store.batches.map(\.fence) == [1, 1, 2])
        #expect(store.endedPerBatch == [1, 1, 1])
    }

    /// A refused batch of the current term makes the node step down; a refused batch of a former
    /// term (writes queued before the node led again) is only dropped.
    @Test(.timeLimit(.minutes(1))) func onlyARefusalOfTheCurrentTermStepsDown() async throws {
        let clock = TestClock()
        let reported = Recorder<StoredRecord>.Sink()
        let (writer, store) = try await Self.writer(clock: clock, reported: reported)
        store.refusal.function = { $0.fence == 1 ? ClusterError.fenced : nil }
        let stepDowns = NIOLockedValueBox(0)
        writer.onFenced.function = { stepDowns.withLockedValue { $0 += 1 } }
        func ended(_ call: String) { Self.end(call, on: writer) }

        writer.fence = 1
        ended("x")
        await writer.drain()
        #expect(stepDowns.withLockedValue { $0 } == 1)

        ended("a")  // term 1, refused below
        writer.fence = 2
        ended("b")
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .milliseconds(5))
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .milliseconds(5))
        await writer.drain()
        #expect(stepDowns.withLockedValue { $0 } == 1)
        #expect(reported.values.map(\.record.callId.rawValue) == ["b"])
    }

    /// A wall clock that only moves when told to, or to the deadline of a sleep (which it records).
    final class SteppingClock: SwitchboardClock {
        let time = NIOLockedValueBox<Int64>(1_000_000)
        let sleeps = NIOLockedValueBox<[Int64]>([])
        func now() -> Int64 { time.withLockedValue { $0 } }
        func sleep(until deadline: Int64) async throws {
            sleeps.withLockedValue { $0.append(deadline) }
            time.withLockedValue { $0 = max($0, deadline) }
        }
    }

    /// The system's wall clock stepped back (an NTP correction): the writer does not wait for the
    /// old time to come round again, which would hold every record back for as long as the step.
    @Test(.timeLimit(.minutes(1))) func aClockSteppingBackDoesNotHoldCommitsBack() async throws {
        let clock = SteppingClock()
        let (writer, store) = try await Self.writer(clock: clock)
        Self.end("a", on: writer)
        await writer.drain()
        clock.time.withLockedValue { $0 -= 3_600_000 }
        Self.end("b", on: writer)
        await writer.drain()
        #expect(store.endedPerBatch == [1, 1])
        #expect(clock.sleeps.withLockedValue { $0 }.allSatisfy { $0 <= clock.now() })
        #expect(clock.now() < 1_000_000)
    }
}
