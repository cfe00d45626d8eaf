import NIOConcurrencyHelpers
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

/// Profile misses are read in batches: while one read is in flight, what other sessions miss waits
/// and goes into the next read together; a failing read fails exactly the sessions it was for.
struct ProfileDirectoryTests {
    /// Holds each read until the test lets it go, and remembers what was asked.
    final class GatedStore: ProfileStore {
        let reads = NIOLockedValueBox<[[UserID]]>([])
        let gate = Permits()
        let failing = NIOLockedValueBox<Set<UserID>>([])

        func loadProfiles(app: SdkAppID, users: [UserID]) async throws -> [UserProfile] {
            reads.withLockedValue { $0.append(users.sorted()) }
            await gate.wait()
            if !failing.withLockedValue({ $0.isDisjoint(with: users) }) { throw SwitchboardError(.storageUnavailable) }
            return users.filter { $0.rawValue.hasPrefix("named") }.map { UserProfile(userId: $0, nickname: "N \($0.rawValue)") }
        }

        func saveProfile(app: SdkAppID, _ profile: UserProfile, now: Int64) async throws {}
    }

    /// Lets `count` waiters through, one at a time as they come (a counting semaphore; the
    /// server's `AsyncGate` is a mutex).
    final class Permits: Sendable {
        private let state = NIOLockedValueBox<(open: Int, waiting: [CheckedContinuation<Void, Never>])>((0, []))

        func wait() async {
            await withCheckedContinuation { continuation in
                let go = state.withLockedValue { state -> Bool in
                    if state.open > 0 {
                        state.open -= 1
                        return true
                    }
                    state.waiting.append(continuation)
                    return false
                }
                if go { continuation.resume() }
            }
        }

        func open(_ count: Int) {
            let released = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
                state.open += count
                let taken = Array(state.waiting.prefix(state.open))
                state.waiting.removeFirst(taken.count)
                state.open -= taken.count
                return taken
            }
            released.forEach { $0.resume() }
        }
    }

    private let app = SdkAppID(1_400_000_001)

    @Test(.timeLimit(.minutes(1))) func missesWhileAReadIsInFlightGoIntoTheNextReadTogether() async throws {
        let store = GatedStore()
        let directory = ProfileDirectory(store: store)
        let first = Task { try await directory.profiles(app: app, users: ["named-0"]) }
        try await waitForReads(store, 1)
        // Forty sessions miss while the first read is held.
        let others = (1...40).map { index in
            Task { try await directory.profiles(app: app, users: [UserID(rawValue: index % 2 == 0 ? "named-\(index)" : "bare-\(index)")]) }
        }
        try await waitForWaiters(others.count, directory)
        store.gate.open(2)
        #expect(try await first.value["named-0"]?.nickname == "N named-0")
        for (offset, task) in others.enumerated() {
            let index = offset + 1
            let user = UserID(rawValue: index % 2 == 0 ? "named-\(index)" : "bare-\(index)")
            let profiles = try await task.value
            #expect(profiles.count == 1)
            #expect(profiles[user]?.nickname == (index % 2 == 0 ? "N \(user.rawValue)" : nil))
        }
        let reads = store.reads.withLockedValue { $0 }
        #expect(reads.count == 2)
        #expect(reads.last?.count == 40)
        // Cached now: no read for any of them.
        _ = try await directory.profiles(app: app, users: ["named-0", "bare-1", "named-2"])
        #expect(store.reads.withLockedValue { $0.count } == 2)
    }

    @Test(.timeLimit(.minutes(1))) func aFailedReadFailsOnlyItsSessionsAndTheNextReadGoesOn() async throws {
        let store = GatedStore()
        store.failing.withLockedValue { $0 = ["broken"] }
        let directory = ProfileDirectory(store: store)
        let failed = Task { try await directory.profiles(app: app, users: ["broken"]) }
        try await waitForReads(store, 1)
        let after = Task { try await directory.profiles(app: app, users: ["named-1"]) }
        try await waitForWaiters(1, directory)
        store.gate.open(2)
        await #expect(throws: SwitchboardError.self) { try await failed.value }
        #expect(try await after.value["named-1"]?.nickname == "N named-1")
        #expect(directory.cachedCount == 1)
    }

    /// A profile saved while a read of it is in flight is what the cache keeps: the read, which may
    /// have seen the old one, is not cached.
    @Test(.timeLimit(.minutes(1))) func aProfileSavedDuringAReadIsNotReplacedByWhatTheReadSaw() async throws {
        let store = GatedStore()
        let directory = ProfileDirectory(store: store)
        let read = Task { try await directory.profiles(app: app, users: ["named-1"]) }
        try await waitForReads(store, 1)
        try await directory.save(app: app, UserProfile(userId: "named-1", nickname: "saved"), now: 1)
        store.gate.open(1)
        #expect(try await read.value["named-1"]?.nickname == "N named-1")
        #expect(try await directory.profiles(app: app, users: ["named-1"])["named-1"]?.nickname == "saved")
        #expect(store.reads.withLockedValue { $0.count } == 1)
    }

    private func waitForReads(_ store: GatedStore, _ count: Int) async throws {
        for _ in 0..<10_000 where store.reads.withLockedValue({ $0.count }) < count { await Task.yield() }
        try #require(store.reads.withLockedValue { $0.count } == count)
    }

    private func waitForWaiters(_ count: Int, _ directory: ProfileDirectory) async throws {
        for _ in 0..<100_000 where directory.waitingCount < count { await Task.yield() }
        try #require(directory.waitingCount == count)
    }
}
