import SwitchboardProtocol
import SwitchboardTestServers
import SwitchboardTesting
import SwitchboardTools
import Testing

@testable import SwitchboardServer

/// The ledger of answers is bounded per device, by age and in total, and forgets devices that are gone.
struct RequestLedgerTests {
    static func device(_ index: Int) -> RequestLedger.DeviceKey {
        RequestLedger.DeviceKey(user: UserKey(app: 1, user: "alice"), device: DeviceID(rawValue: "d\(index)"))
    }

    /// Begins and answers `id` on `device`; true when it was new.
    static func answer(_ ledger: RequestLedger, _ id: String, _ device: RequestLedger.DeviceKey, now: Int64, bytes: Int = 10)
        async -> Bool
    {
        guard await ledger.begin(RequestID(rawValue: id), device: device, now: now) == nil else { return false }
        ledger.finish(RequestID(rawValue: id), device: device, answer: String(repeating: "x", count: bytes))
        return true
    }

    @Test func aDeviceKeepsItsLastAnswersOnly() async {
        let ledger = RequestLedger(limits: .init(perDevice: 4))
        for index in 0..<6 { #expect(await Self.answer(ledger, "r\(index)", Self.device(0), now: 0)) }
        #expect(ledger.entryCount == 4)
        // The newest are remembered, the oldest are not.
        #expect(await ledger.begin("r5", device: Self.device(0), now: 0) == String(repeating: "x", count: 10))
        #expect(await Self.answer(ledger, "r0", Self.device(0), now: 0))
    }

    /// At a bound of 0 an answer is dropped as soon as it is given, and the device with it.
    @Test func aDeviceBoundOfZeroKeepsNothing() async {
        let ledger = RequestLedger(limits: .init(perDevice: 0))
        #expect(await Self.answer(ledger, "r0", Self.device(0), now: 0))
        #expect(ledger.entryCount == 0 && ledger.deviceCount == 0 && ledger.byteCount == 0 && ledger.arrivalCount == 0)
        #expect(await Self.answer(ledger, "r0", Self.device(0), now: 0))  // nothing to resend: handled again
    }

    @Test func answersAgeOutAndDevicesThatAreGoneAreForgotten() async {
        let ledger = RequestLedger(limits: .init(retention: 1_000))
        for index in 0..<50 { #expect(await Self.answer(ledger, "r", Self.device(index), now: 0)) }
        #expect(ledger.deviceCount == 50)
        #expect(await Self.answer(ledger, "r", Self.device(99), now: 1_001))
        #expect(ledger.deviceCount == 1)
        #expect(ledger.entryCount == 1)
        #expect(ledger.byteCount == 10)
    }

    @Test func theTotalsDropTheOldestFirst() async {
        let ledger = RequestLedger(limits: .init(totalBytes: 10_000, totalEntries: 15))
        for index in 0..<30 {
            #expect(await Self.answer(ledger, "r", Self.device(index), now: Int64(index), bytes: 1_000))
        }
        #expect(ledger.byteCount <= 11_000)
        #expect(ledger.entryCount <= 16)
        // The newest device still has its answer, the oldest does not.
        #expect(await ledger.begin("r", device: Self.device(29), now: 30) != nil)
        #expect(await ledger.begin("r", device: Self.device(0), now: 30) == nil)
    }

    @Test(.timeLimit(.minutes(1))) func aRequestInProgressIsNeverDroppedAndItsDuplicateGetsTheAnswer() async throws {
        let ledger = RequestLedger(limits: .init(perDevice: 2, retention: 10, totalBytes: 100))
        #expect(await ledger.begin("slow", device: Self.device(0), now: 0) == nil)
        for index in 0..<10 {
            #expect(await Self.answer(ledger, "r\(index)", Self.device(0), now: Int64(index * 100), bytes: 50))
        }
        // Past its age, beyond the device's bound and the total: still there (nil if dropped),
        // since unanswered, with nobody waiting for it yet.
        let kept = try #require(ledger.waiterCount("slow", device: Self.device(0)))
        #expect(kept == 0)
        let duplicate = Task { await ledger.begin("slow", device: Self.device(0), now: 1_000) }
        // The duplicate waits for the first one's answer (the test's time limit bounds this).
        while ledger.waiterCount("slow", device: Self.device(0)) != 1 { await Task.yield() }
        ledger.finish("slow", device: Self.device(0), answer: "first")
        #expect(await duplicate.value == "first")
    }

    /// Answers dropped by the per-device bound or a logout leave nothing behind in the order of
    /// arrival, and the sweep still gets past them to what is due: a device that stopped long ago
    /// is evicted behind thousands of answers its busy neighbour's bound dropped meanwhile.
    @Test func droppedAnswersLeaveNothingBehindAndTheSweepGetsPastThem() async {
        let ledger = RequestLedger(limits: .init(perDevice: 4, retention: 1_000))
        #expect(await Self.answer(ledger, "old", Self.device(0), now: 0))
        for index in 0..<5_000 { #expect(await Self.answer(ledger, "r\(index)", Self.device(1), now: 500)) }
        #expect(ledger.entryCount == 5)
        #expect(ledger.arrivalCount == 5)
        ledger.forget(Self.device(1))
        #expect(ledger.arrivalCount == 1)
        // Past the retention the old answer goes, after the 5,000 gaps (a few requests' sweeps).
        for index in 0..<8 { #expect(await Self.answer(ledger, "n\(index)", Self.device(2), now: 1_001)) }
        #expect(ledger.deviceCount == 1)
        #expect(ledger.entryCount == 4)
        #expect(ledger.arrivalCount == 4)
    }

    @Test func aLogoutForgetsTheDeviceAndReleasesItsWaiters() async {
        let ledger = RequestLedger()
        #expect(await ledger.begin("a", device: Self.device(0), now: 0) == nil)
        ledger.forget(Self.device(0))
        #expect(ledger.deviceCount == 0)
        #expect(ledger.entryCount == 0)
        #expect(await Self.answer(ledger, "a", Self.device(0), now: 0))
    }
}

/// The profile cache keeps at most its capacity, misses for made-up users included, and what is used.
struct BoundedCacheTests {
    @Test func itKeepsWhatIsUsedWithinItsCapacity() {
        var cache = BoundedCache<Int, String>(capacity: 100)
        cache.insert("kept", for: -1)
        for key in 0..<10_000 {
            cache.insert("made-up", for: key)
            _ = cache.value(for: -1)
            #expect(cache.count < 100)
        }
        #expect(cache.value(for: -1) == "kept")
        #expect(cache.value(for: 0) == nil)
    }

    /// The same with a cache large enough to be split into shards: the bound holds over all of
    /// them, and an entry in use survives a flood of others however they hash.
    @Test func aShardedCacheKeepsWhatIsUsedWithinItsCapacity() {
        var cache = BoundedCache<Int, String>(capacity: 40_000)
        cache.insert("kept", for: -1)
        var most = 0
        for key in 0..<200_000 {
            cache.insert("made-up", for: key)
            if key % 100 == 0 { _ = cache.value(for: -1) }
            most = max(most, cache.count)
        }
        #expect(most <= 40_000)
        #expect(most > 20_000)
        #expect(cache.value(for: -1) == "kept")
        #expect(cache.value(for: 0) == nil)
        #expect(cache.value(for: 199_999) == "made-up")
    }
}
