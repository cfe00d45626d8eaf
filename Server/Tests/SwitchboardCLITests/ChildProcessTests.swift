import Foundation
import SwitchboardTools
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The child processes the tests and the bench start (`posix_spawn`, not Foundation's `Process`).
struct ChildProcessTests {
    static func run(_ script: String, environment: [String: String]? = nil, directory: URL? = nil) throws -> (ChildProcess.Termination, String) {
        let child = try ChildProcess(
            executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", script], environment: environment,
            directory: directory, output: .pipe)
        let output = child.output!.readDataToEndOfFile()
        return (child.waitForExit(), String(decoding: output, as: UTF8.self))
    }

    /// A child holds none of the parent's descriptors: a pipe another child inherited would keep a
    /// reader waiting for its end until that child exits.
    @Test func theChildHoldsOnlyItsThreeStandardDescriptors() throws {
        let pipe = Pipe()  // open in the parent while the child starts
        defer { _ = pipe }
        let (ended, output) = try Self.run("ls /proc/$$/fd")
        #expect(ended == .exit(0))
        #expect(output.split(separator: "\n").sorted() == ["0", "1", "2"], "\(output)")
    }

    @Test func exitStatusEnvironmentAndDirectory() throws {
        let (ended, output) = try Self.run(
            "echo \"$GREETING\"; pwd; exit 3", environment: ["GREETING": "hello"], directory: URL(fileURLWithPath: "/tmp"))
        #expect(ended == .exit(3))
        #expect(output == "hello\n/tmp\n")
    }

    @Test func aSignalIsReportedAndNothingIsSentAfterTheChildIsReaped() throws {
        let child = try ChildProcess(executable: URL(fileURLWithPath: "/bin/sleep"), arguments: ["60"])
        #expect(child.isRunning)
        child.send(SIGKILL)
        #expect(child.waitForExit() == .signal(SIGKILL))
        #expect(!child.isRunning)
        child.send(SIGKILL)  // reaped: nothing is sent to the id, which another process may have now
        #expect(child.waitForExit() == .signal(SIGKILL))
    }

    @Test func aChildThatEndedIsReapedWhenNobodyHoldsItAnyMore() throws {
        var child: ChildProcess? = try ChildProcess(executable: URL(fileURLWithPath: "/bin/true"), arguments: [])
        let pid = try #require(child?.processIdentifier)
        // Waits for the end without reaping: the child is a zombie until somebody does.
        var info = siginfo_t()
        #expect(waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == 0)
        #expect(FileManager.default.fileExists(atPath: "/proc/\(pid)"))
        child = nil
        #expect(!FileManager.default.fileExists(atPath: "/proc/\(pid)"), "pid \(pid) is still a zombie")
    }

    /// What the child writes to a `.file` stream is in the file once it ends (the servers' error logs).
    @Test func anOutputCanGoToAFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: file) }
        try "an older log".write(to: file, atomically: true, encoding: .utf8)
        let child = try ChildProcess(
            executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", "echo to stderr >&2"], error: .file(file))
        #expect(child.waitForExit() == .exit(0))
        #expect(try String(contentsOf: file, encoding: .utf8) == "to stderr\n")
    }

    @Test func aChildThatCannotStartIsAnError() {
        #expect(throws: ChildProcessError.self) {
            try ChildProcess(executable: URL(fileURLWithPath: "/nonexistent/switchboard"), arguments: [])
        }
        #expect(throws: ChildProcessError.self) {
            try ChildProcess(executable: URL(fileURLWithPath: "/bin/true"), arguments: [], input: .file(URL(fileURLWithPath: "/dev/null")))
        }
    }
}
