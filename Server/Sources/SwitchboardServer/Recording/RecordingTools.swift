import Foundation
import SwitchboardChildProcess

/// The programs a recording's conversion runs, found at start-up: Janus's `janus-pp-rec` (its
/// `.mjr` files to Opus and WebM) and FFmpeg's `ffmpeg` and `ffprobe` (aligning, mixing, the grid).
/// Each runs as a child process at a lower priority (`nice`), so calls keep the CPU they need.
struct RecordingTools: Sendable, Equatable {
    var nice: String
    var ppRec: String
    var ffmpeg: String
    var ffprobe: String

    /// The tools in `PATH`; nil with the names of those missing.
    static func find(path: String? = ProcessInfo.processInfo.environment["PATH"]) -> Result<RecordingTools, MissingTools> {
        let folders = (path ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        func locate(_ name: String) -> String? {
            folders.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
        }
        let names = ["nice", "janus-pp-rec", "ffmpeg", "ffprobe"]
        let found = names.map(locate)
        let missing = zip(names, found).filter { $0.1 == nil }.map(\.0)
        guard missing.isEmpty else { return .failure(MissingTools(names: missing)) }
        return .success(RecordingTools(nice: found[0]!, ppRec: found[1]!, ffmpeg: found[2]!, ffprobe: found[3]!))
    }

    struct MissingTools: Error, CustomStringConvertible {
        var names: [String]
        var description: String {
            "recording needs \(names.joined(separator: ", ")) (Debian: apt-get install janus-tools ffmpeg)"
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs `tool` with `arguments` at a lower priority; returns its standard output. A non-zero
    /// exit throws with the end of its standard error.
    func run(_ tool: String, _ arguments: [String], scratch: String) async throws -> Data {
        let log = URL(fileURLWithPath: scratch + "/stderr-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let child = try ChildProcess(
            executable: URL(fileURLWithPath: nice), arguments: ["-n", "10", tool] + arguments, output: .pipe,
            error: .file(log))
        let output = await Task.detached { child.output?.readDataToEndOfFile() ?? Data() }.value
        let ended = await child.ended()
        guard ended == .exit(0) else {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            let name = URL(fileURLWithPath: tool).lastPathComponent
            throw Failure(description: "\(name) failed (\(ended)): \(text.suffix(600).trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return output
    }
}
