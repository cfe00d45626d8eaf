#if GStreamer
import Foundation
import SwitchboardProtocol
import Testing

@testable import SwitchboardGStreamer

/// A received track's recording is named at its first media: names follow the order in which
/// tracks carried something, and a track that carried nothing leaves no file.
@Suite struct RecordingFileTests {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("recordings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    private func files() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
    }

    /// What the recorder's file sink does: opens the hidden file and writes through it.
    private func write(_ text: String, to file: RecordingFile) throws -> FileHandle {
        _ = FileManager.default.createFile(atPath: file.location.path, contents: nil)
        let handle = try FileHandle(forWritingTo: file.location)
        try handle.write(contentsOf: Data(text.utf8))
        return handle
    }

    @Test func theTrackThatCarriesMediaFirstGetsTheName() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        // A chain built first (a session that is about to be replaced) and one built after it.
        let early = RecordingFile(directory: directory, peer: "sfq", kind: .video)
        let late = RecordingFile(directory: directory, peer: "sfq", kind: .video)
        let earlyHandle = try write("", to: early)
        let lateHandle = try write("late ", to: late)
        #expect(try files().allSatisfy { $0.hasPrefix(".") && $0.hasSuffix(".part") })

        late.claim()
        // The sink writes on through its open file after the rename.
        try lateHandle.write(contentsOf: Data("media".utf8))
        try lateHandle.close()
        try earlyHandle.close()
        early.discard()
        late.discard()

        #expect(try files() == ["sfq-video.webm"])
        #expect(try String(contentsOf: directory.appendingPathComponent("sfq-video.webm"), encoding: .utf8) == "late media")
    }

    @Test func laterTracksAreNumberedAndKindsAndMembersApart() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let recordings = [
            RecordingFile(directory: directory, peer: "alice", kind: .screen),
            RecordingFile(directory: directory, peer: "alice", kind: .screen),
            RecordingFile(directory: directory, peer: "alice", kind: .audio),
            RecordingFile(directory: directory, peer: "bob", kind: .screen),
            RecordingFile(directory: directory, peer: "alice", kind: .screen),
        ]
        for recording in recordings {
            try write("x", to: recording).close()
            recording.claim()
            recording.claim()  // a second first buffer changes nothing
        }
        #expect(
            try files() == ["alice-audio.wav", "alice-screen-2.webm", "alice-screen-3.webm", "alice-screen.webm", "bob-screen.webm"])
    }

    /// Ids no server should send name no file outside the directory, nor a file too long to make.
    @Test(arguments: ["../escape", "a/b", "..", String(repeating: "x", count: 300), "", "é"])
    func anInvalidIdIsRecordedAsMember(_ id: String) throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let recording = RecordingFile(directory: directory, peer: UserID(rawValue: id), kind: .video)
        #expect(recording.location.deletingLastPathComponent().standardizedFileURL.path == directory.standardizedFileURL.path)
        try write("x", to: recording).close()
        recording.claim()
        #expect(try files() == ["member-video.webm"])
    }

    @Test func aNameTakenByAnotherFileIsNotOverwritten() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        // Left from an earlier call in the same directory.
        try Data("earlier".utf8).write(to: directory.appendingPathComponent("bob-audio.wav"))
        let recording = RecordingFile(directory: directory, peer: "bob", kind: .audio)
        try write("now", to: recording).close()
        recording.claim()
        #expect(try files() == ["bob-audio-2.wav", "bob-audio.wav"])
        #expect(try String(contentsOf: directory.appendingPathComponent("bob-audio.wav"), encoding: .utf8) == "earlier")
    }
}
#endif
