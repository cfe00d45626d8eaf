import Foundation
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

// The recordings table on SQLite and PostgreSQL alike: takes stored with a batch (once), claimed
// once, finished with their event, listed, found, expired, deleted.
extension StorageTests {
    static func take(_ call: String, take: Int = 1, stoppedAt: Int64) -> RecordingTake {
        let callId = CallID(rawValue: call)
        return RecordingTake(
            id: RecordingTake.id(callId: callId, take: take), app: app, callId: callId, take: take, startedBy: "alice",
            startedAt: stoppedAt - 30_000, stoppedAt: stoppedAt, members: ["alice", "bob"], mediaType: .video)
    }

    @Test(arguments: StorageTests.kinds) func recordingsGoFromPendingToReadyOnceAndAreListedFoundAndDeleted(_ kind: Kind) async throws {
        let test = try await Self.makeStore(kind)
        let store = test.store
        let first = Self.take("c-rec-1", stoppedAt: 1_000_000)
        let second = Self.take("c-rec-1", take: 2, stoppedAt: 2_000_000)
        let other = Self.take("c-rec-2", stoppedAt: 3_000_000)
        // The same take in two batches (a retry after a crash) is one recording.
        _ = try await store.commit(PersistenceBatch(recordings: [first, second]))
        _ = try await store.commit(PersistenceBatch(recordings: [first, other]))
        #expect(try await store.unconvertedRecordings() == 3)

        let claimed = try await store.claimRecordings(now: 4_000_000, staleBefore: 3_999_000, limit: 2)
        #expect(claimed.count == 2)
        #expect(claimed.allSatisfy { $0.state == .converting && $0.attempts == 1 })
        let rest = try await store.claimRecordings(now: 4_000_000, staleBefore: 3_999_000, limit: 5)
        #expect(rest.count == 1)
        #expect(Set((claimed + rest).map(\.take.id)) == [first.id, second.id, other.id])
        #expect(try await store.claimRecordings(now: 4_000_000, staleBefore: 3_999_000, limit: 5).isEmpty)

        let file = RecordedFile(
            name: "mixed.webm", kind: .mixed, userId: nil, contentType: "video/webm", size: 1234, duration: 30_000, video: true)
        let stored = StoredRecording(take: first, state: .ready, attempts: 1, files: [file], failure: nil, updatedAt: 0)
        try await store.finishRecording(
            id: first.id, .ready([file]), now: 4_001_000,
            event: RecordingWorker.event(.ready([file]), of: stored, now: 4_001_000))
        try await store.finishRecording(id: second.id, .retry("ffmpeg failed"), now: 4_001_000, event: nil)
        try await store.finishRecording(id: other.id, .failed("no media was recorded"), now: 4_001_000, event: nil)

        let ready = try #require(try await store.recording(app: Self.app, id: first.id))
        #expect(ready.state == .ready)
        #expect(ready.files == [file])
        #expect(ready.take == first)
        #expect(try await store.recording(app: Self.app, id: second.id)?.state == .pending)
        #expect(try await store.recording(app: Self.app, id: second.id)?.failure == "ffmpeg failed")
        #expect(try await store.recording(app: SdkAppID(1_400_000_999), id: first.id) == nil)
        #expect(try await store.unconvertedRecordings() == 1)

        // Newest first; by call.
        #expect(try await store.recordings(app: Self.app, callId: nil, limit: 10).map(\.take.id) == [other.id, second.id, first.id])
        #expect(try await store.recordings(app: Self.app, callId: "c-rec-1", limit: 10).map(\.take.id) == [second.id, first.id])
        #expect(try await store.recordings(app: Self.app, callId: nil, limit: 1).count == 1)
        // Expired: ready or failed, stopped before the cutoff.
        #expect(try await store.expiredRecordings(app: Self.app, before: 2_500_000, limit: 10).map(\.take.id) == [first.id])
        #expect(try await store.expiredRecordings(app: Self.app, before: 9_000_000, limit: 10).map(\.take.id) == [first.id, other.id])

        let deleted = try await store.deleteRecording(app: Self.app, id: first.id) { _ in nil }
        #expect(deleted?.take == first)
        #expect(try await store.deleteRecording(app: Self.app, id: first.id) { _ in nil } == nil)
        #expect(try await store.recording(app: Self.app, id: first.id) == nil)
        await test.close()
    }
}
