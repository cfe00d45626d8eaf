import Foundation
import GRDB
import Logging
import SwitchboardProtocol
import SwitchboardTesting
import Testing

@testable import SwitchboardServer

/// The recordings' worker on a real SQLite database, without Janus: a take stored through the
/// persistence batch is claimed once; a take with nothing recorded fails at once; a conversion
/// that fails otherwise is tried three times and then reported failed (never dropped); the retention sweep deletes a ready recording's files and row
/// past the app's days, with its event, and keeps what is younger. (The conversion itself, with
/// Janus's files, is GStreamerRecordingTests'.)
struct RecordingWorkerTests {
    static let app: SdkAppID = 1_400_000_001

    struct Fixture {
        var storage: SQLiteStorage
        var worker: RecordingWorker
        var clock: TestClock
        var directory: URL
    }

    static func fixture(retentionDays: Int? = nil) throws -> Fixture {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recording-worker-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let storage = try SQLiteStorage(path: directory.appendingPathComponent("db.sqlite").path)
        let clock = TestClock()
        let tools = RecordingTools(nice: "/usr/bin/nice", ppRec: "/usr/bin/janus-pp-rec", ffmpeg: "/usr/bin/ffmpeg", ffprobe: "/usr/bin/ffprobe")
        let worker = RecordingWorker(
            store: storage, files: RecordingFiles(root: directory.appendingPathComponent("recordings").path), tools: tools,
            retention: { [(app, retentionDays)] }, clock: clock, logger: Logger(label: "test"))
        return Fixture(storage: storage, worker: worker, clock: clock, directory: directory)
    }

    static func take(_ call: String, at time: Int64) -> RecordingTake {
        let callId = CallID(rawValue: call)
        return RecordingTake(
            id: RecordingTake.id(callId: callId, take: 1), app: app, callId: callId, take: 1, startedBy: "alice",
            startedAt: time - 60_000, stoppedAt: time, members: ["alice", "bob"], mediaType: .audio)
    }

    static func eventTypes(_ storage: SQLiteStorage) async throws -> [String] {
        try await storage.pool.read { db in try String.fetchAll(db, sql: "SELECT type FROM webhook_events ORDER BY seq") }
    }

    @Test func aTakeWithNothingRecordedFailsAtOnce() async throws {
        let fixture = try Self.fixture()
        let take = Self.take("c-empty", at: fixture.clock.now())
        // Stored twice (a retry after a crash): one recording.
        _ = try await fixture.storage.commit(PersistenceBatch(recordings: [take, take]))
        #expect(try await fixture.storage.unconvertedRecordings() == 1)
        // Janus recorded nothing for it (its members never sent media): no second attempt.
        #expect(await fixture.worker.convertNext() == .converted)
        let failed = try #require(try await fixture.storage.recording(app: Self.app, id: take.id))
        #expect(failed.state == .failed)
        #expect(failed.attempts == 1)
        #expect(failed.failure == "no media was recorded")
        #expect(try await Self.eventTypes(fixture.storage) == ["recording.failed"])
        #expect(await fixture.worker.convertNext() == .idle)
        #expect(try await fixture.storage.unconvertedRecordings() == 0)
    }

    @Test func aConversionThatFailsIsTriedThreeTimesThenReportedFailed() async throws {
        // The take's files are there, but its output folder cannot be made (a file is in its
        // place: as an unwritable directory or a full disk, the tools fail).
        let fixture = try Self.fixture()
        let take = Self.take("c-failing", at: fixture.clock.now())
        _ = try await fixture.storage.commit(PersistenceBatch(recordings: [take]))
        let folder = fixture.worker.files.folder(of: take.callId)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: folder + "/t1-616c696365-s1-audio-0.mjr", contents: Data("MJR00002".utf8)))
        #expect(FileManager.default.createFile(atPath: fixture.worker.files.outputFolder(callId: take.callId, take: 1), contents: Data()))
        #expect(await fixture.worker.convertNext() == .failedAttempt)
        let retried = try #require(try await fixture.storage.recording(app: Self.app, id: take.id))
        #expect(retried.state == .pending)
        #expect(retried.failure?.isEmpty == false)
        #expect(await fixture.worker.convertNext() == .failedAttempt)
        #expect(await fixture.worker.convertNext() == .converted)
        let failed = try #require(try await fixture.storage.recording(app: Self.app, id: take.id))
        #expect(failed.state == .failed)
        #expect(failed.attempts == 3)
        #expect(try await Self.eventTypes(fixture.storage) == ["recording.failed"])
        #expect(await fixture.worker.convertNext() == .idle)
    }

    /// At the backlog's bound the worker says so (the engine then refuses new recordings with
    /// `recordingUnavailable`); below it, not.
    @Test func aFullBacklogIsReported() async throws {
        let fixture = try Self.fixture()
        let takes = (0..<RecordingWorker.maxBacklog).map { Self.take("c-backlog-\($0)", at: fixture.clock.now()) }
        _ = try await fixture.storage.commit(PersistenceBatch(recordings: Array(takes.dropLast())))
        _ = await fixture.worker.convertNext()
        #expect(!fixture.worker.isBacklogged)
        _ = try await fixture.storage.commit(PersistenceBatch(recordings: [takes[takes.count - 1], takes[0]]))
        fixture.worker.wake()
        #expect(fixture.worker.isBacklogged)
        // Counted again at its next turn: the failed one no longer waits.
        _ = await fixture.worker.convertNext()
        #expect(!fixture.worker.isBacklogged)
    }

    @Test func aClaimIsTakenOnceAndAgainOnlyWhenItsNodeLookedDead() async throws {
        let fixture = try Self.fixture()
        let take = Self.take("c-claimed", at: fixture.clock.now())
        _ = try await fixture.storage.commit(PersistenceBatch(recordings: [take]))
        let now = fixture.clock.now()
        #expect(try await fixture.storage.claimRecordings(now: now, staleBefore: now - 1000, limit: 5).map(\.take.id) == [take.id])
        #expect(try await fixture.storage.claimRecordings(now: now, staleBefore: now - 1000, limit: 5).isEmpty)
        // Its node never finished: after the stale time another takes it.
        let later = now + RecordingWorker.staleAfter + 1
        #expect(
            try await fixture.storage.claimRecordings(now: later, staleBefore: later - RecordingWorker.staleAfter, limit: 5)
                .map(\.attempts) == [2])
    }

    @Test func theRetentionSweepDeletesOldRecordingsAndTheirFilesAndTells() async throws {
        let fixture = try Self.fixture(retentionDays: 1)
        let now = fixture.clock.now()
        let old = Self.take("c-old", at: now - 2 * 86_400_000)
        let young = Self.take("c-young", at: now - 3_600_000)
        _ = try await fixture.storage.commit(PersistenceBatch(recordings: [old, young]))
        var paths: [String] = []
        for take in [old, young] {
            let folder = fixture.worker.files.outputFolder(callId: take.callId, take: take.take)
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            #expect(FileManager.default.createFile(atPath: folder + "/mixed.webm", contents: Data("webm".utf8)))
            paths.append(folder + "/mixed.webm")
            _ = try await fixture.storage.claimRecordings(now: now, staleBefore: now, limit: 5)
            try await fixture.storage.finishRecording(
                id: take.id,
                .ready([RecordedFile(name: "mixed.webm", kind: .mixed, userId: nil, contentType: "audio/webm", size: 4, duration: 60_000, video: false)]),
                now: now, event: nil)
        }
        #expect(await fixture.worker.sweepExpired() == 1)
        #expect(try await fixture.storage.recording(app: Self.app, id: old.id) == nil)
        #expect(!FileManager.default.fileExists(atPath: paths[0]))
        #expect(try await fixture.storage.recording(app: Self.app, id: young.id)?.state == .ready)
        #expect(FileManager.default.fileExists(atPath: paths[1]))
        #expect(try await Self.eventTypes(fixture.storage) == ["recording.deleted"])
        // Swept again: nothing more.
        #expect(await fixture.worker.sweepExpired() == 0)
    }

    @Test func aFileNameFromOutsideReachesOnlyTheRecordingsOwnFiles() throws {
        let files = RecordingFiles(root: "/var/recordings")
        let take = Self.take("c-files", at: 1_000_000)
        let recording = StoredRecording(
            take: take, state: .ready, attempts: 1,
            files: [RecordedFile(name: "mixed.webm", kind: .mixed, userId: nil, contentType: "audio/webm", size: 1, duration: 1, video: false)],
            failure: nil, updatedAt: 0)
        #expect(files.path(of: "mixed.webm", in: recording) == "/var/recordings/c-files/t1/mixed.webm")
        for name in ["../../etc/passwd", "../t1/mixed.webm", "t1-616c696365-s1-audio-0.mjr", "", "mixed.webm/.."] {
            #expect(files.path(of: name, in: recording) == nil, "\(name)")
        }
        #expect(AdminAPI.byteRange("bytes=0-9", size: 100) == 0...9)
        #expect(AdminAPI.byteRange("bytes=90-", size: 100) == 90...99)
        #expect(AdminAPI.byteRange("bytes=-10", size: 100) == 90...99)
        #expect(AdminAPI.byteRange("bytes=95-200", size: 100) == 95...99)
        for refused in ["bytes=100-", "bytes=5-2", "bytes=0-1,5-6", "items=0-1", "bytes=-0", "bytes=x-"] {
            #expect(AdminAPI.byteRange(refused, size: 100) == nil, "\(refused)")
        }
    }
}
