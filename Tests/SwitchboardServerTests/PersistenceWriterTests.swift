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
    /// A store that fails every commit while `broken` is set.
    final class FlakyStore: CallRecordStore {
        let inner: any SwitchboardStorage
        let broken = NIOLockedValueBox(true)
        let attempts = NIOLockedValueBox(0)
        init(_ inner: any SwitchboardStorage) { self.inner = inner }
        func commit(_ batch: PersistenceBatch) async throws -> [StoredRecord] {
            attempts.withLockedValue { $0 += 1 }
            if broken.withLockedValue({ $0 }) { throw SwitchboardError(.storageUnavailable) }
            return try await inner.commit(batch)
        }
        func loadJournal() async throws -> [JournalEntry] { try await inner.loadJournal() }
        func markAlive(at time: Int64) async throws {}
        func lastAlive() async throws -> Int64? { nil }
        func queryRecords(owner: UserKey, syncTime: Int64, count: Int, order: RecordOrder) async throws -> QueryRecordsResponse {
            try await inner.queryRecords(owner: owner, syncTime: syncTime, count: count, order: order)
        }
        func deleteRecords(owner: UserKey, callIds: [CallID]) async throws -> Int { 0 }
        func deleteAllRecords(owner: UserKey) async throws -> Int { 0 }
    }

    @Test func anOutageIsRetriedUntilTheDatabaseIsBackAndNothingIsLost() async throws {
        let test = try await StorageTests.makeStore(.sqlite)
        let store = FlakyStore(test.store)
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
        #expect(store.attempts.withLockedValue { $0 } > 100)
        #expect(writer.isBacklogged)
        #expect(reported.values.isEmpty)
        store.broken.withLockedValue { $0 = false }
        clock.advance(by: .seconds(5))
        await writer.drain()
        #expect(Set(reported.values.map(\.record.callId)).count == 10)
        #expect(!writer.isBacklogged)
    }
}

/// Commits start at least the commit interval apart, on the node's clock: what arrives sooner
/// waits for the rest of the interval and shares the next transaction.
struct CommitIntervalTests {
    /// A store that remembers how many records each commit carried.
    final class CountingStore: CallRecordStore {
        let inner: any SwitchboardStorage
        let commits = NIOLockedValueBox<[Int]>([])
        let fences = NIOLockedValueBox<[Int64?]>([])
        init(_ inner: any SwitchboardStorage) { self.inner = inner }
        func commit(_ batch: PersistenceBatch) async throws -> [StoredRecord] {
            commits.withLockedValue { $0.append(batch.ended.count) }
            fences.withLockedValue { $0.append(batch.fence) }
            return try await inner.commit(batch)
        }
        func loadJournal() async throws -> [JournalEntry] { try await inner.loadJournal() }
        func markAlive(at time: Int64) async throws {}
        func lastAlive() async throws -> Int64? { nil }
        func queryRecords(owner: UserKey, syncTime: Int64, count: Int, order: RecordOrder) async throws -> QueryRecordsResponse {
            try await inner.queryRecords(owner: owner, syncTime: syncTime, count: count, order: order)
        }
        func deleteRecords(owner: UserKey, callIds: [CallID]) async throws -> Int { 0 }
        func deleteAllRecords(owner: UserKey) async throws -> Int { 0 }
    }

    @Test(.timeLimit(.minutes(1))) func writesSoonerThanTheIntervalWaitForItAndShareOneCommit() async throws {
        let test = try await StorageTests.makeStore(.sqlite)
        let store = CountingStore(test.store)
        let clock = TestClock()
        let reported = Recorder<StoredRecord>.Sink()
        let writer = PersistenceWriter(store: store, clock: clock, commitInterval: .milliseconds(5), logger: .init(label: "test")) {
            reported.add($0)
        }
        func ended(_ call: String) { writer.submit([StorageTests.draft(StorageTests.alice, call: call, end: 1)]) }

        // The first write after a quiet moment commits at once.
        ended("a")
        await writer.drain()
        #expect(store.commits.withLockedValue { $0 } == [1])

        // Three more within the interval: the writer waits on the clock, then commits them together.
        ended("b")
        ended("c")
        ended("d")
        await clock.waitForSleepers(atLeast: 1)
        #expect(store.commits.withLockedValue { $0 } == [1])
        #expect(reported.values.count == 1)
        clock.advance(by: .milliseconds(4))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .milliseconds(1))
        await writer.drain()
        #expect(store.commits.withLockedValue { $0 } == [1, 3])
        #expect(Set(reported.values.map(\.record.callId.rawValue)) == ["a", "b", "c", "d"])

        // Once the interval has passed since the last commit began, a write commits at once again.
        clock.advance(by: .milliseconds(5))
        ended("e")
        await writer.drain()
        #expect(store.commits.withLockedValue { $0 } == [1, 3, 1])
        #expect(clock.sleeperCount == 0)
    }

    /// A write is fenced by the leadership term in force when it was made, not by the one in force
    /// when its batch is taken: writes an earlier term queued are refused once a newer term began,
    /// even when the same node leads again.
    @Test(.timeLimit(.minutes(1))) func eachWriteIsFencedByTheTermItWasMadeIn() async throws {
        let test = try await StorageTests.makeStore(.sqlite)
        let store = CountingStore(test.store)
        let clock = TestClock()
        let writer = PersistenceWriter(store: store, clock: clock, commitInterval: .milliseconds(5), logger: .init(label: "test")) { _ in }
        func ended(_ call: String) { writer.submit([StorageTests.draft(StorageTests.alice, call: call, end: 1)]) }
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
        #expect(store.fences.withLockedValue { $0 } == [1, 1, 2])
        #expect(store.commits.withLockedValue { $0 } == [1, 1, 1])
    }

    /// A refused batch of the current term makes the node step down; a refused batch of a former
    /// term (writes queued before the node led again) is only dropped.
    @Test(.timeLimit(.minutes(1))) func onlyARefusalOfTheCurrentTermStepsDown() async throws {
        final class FencingStore: CallRecordStore {
            let inner: any SwitchboardStorage
            init(_ inner: any SwitchboardStorage) { self.inner = inner }
            func commit(_ batch: PersistenceBatch) async throws -> [StoredRecord] {
                if batch.fence == 1 { throw ClusterError.fenced }
                return try await inner.commit(batch)
            }
            func loadJournal() async throws -> [JournalEntry] { [] }
            func markAlive(at time: Int64) async throws {}
            func lastAlive() async throws -> Int64? { nil }
            func queryRecords(owner: UserKey, syncTime: Int64, count: Int, order: RecordOrder) async throws -> QueryRecordsResponse {
                try await inner.queryRecords(owner: owner, syncTime: syncTime, count: count, order: order)
            }
            func deleteRecords(owner: UserKey, callIds: [CallID]) async throws -> Int { 0 }
            func deleteAllRecords(owner: UserKey) async throws -> Int { 0 }
        }
        let test = try await StorageTests.makeStore(.sqlite)
        let clock = TestClock()
        let reported = Recorder<StoredRecord>.Sink()
        let writer = PersistenceWriter(
            store: FencingStore(test.store), clock: clock, commitInterval: .milliseconds(5), logger: .init(label: "test")
        ) { reported.add($0) }
        let stepDowns = NIOLockedValueBox(0)
        writer.onFenced.withLockedValue { $0 = { stepDowns.withLockedValue { $0 += 1 } } }
        func ended(_ call: String) { writer.submit([StorageTests.draft(StorageTests.alice, call: call, end: 1)]) }

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
        let test = try await StorageTests.makeStore(.sqlite)
        let store = CountingStore(test.store)
        let clock = SteppingClock()
        let writer = PersistenceWriter(store: store, clock: clock, commitInterval: .milliseconds(5), logger: .init(label: "test")) { _ in }
        writer.submit([StorageTests.draft(StorageTests.alice, call: "a", end: 1)])
        await writer.drain()
        clock.time.withLockedValue { $0 -= 3_600_000 }
        writer.submit([StorageTests.draft(StorageTests.alice, call: "b", end: 1)])
        await writer.drain()
        #expect(store.commits.withLockedValue { $0 } == [1, 1])
        #expect(clock.sleeps.withLockedValue { $0 }.allSatisfy { $0 <= clock.now() })
        #expect(clock.now() < 1_000_000)
    }
}
