import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `switchboard serve` (or another command of the binary) running as a child process: the servers
/// `switchboard bench` measures, and the tests of what happens to a real server (`kill -9`,
/// SIGTERM, restarts on the same database).
public final class ServerProcess: Sendable {
    public let port: Int
    /// Everything the process printed on stdout so far.
    public var output: String { outputBox.withLockedValue { $0 } }
    private let process: ChildProcess
    private let outputBox: NIOLockedValueBox<String>

    private init(process: ChildProcess, port: Int, outputBox: NIOLockedValueBox<String>) {
        self.process = process
        self.port = port
        self.outputBox = outputBox
    }

    /// A child nobody holds any more is not left running (a test that failed half-way, a bench
    /// that stopped early).
    deinit {
        if process.isRunning { process.killAndReap() }
    }

    /// Starts `binary <command> --port PORT <arguments>` and returns once it prints that it listens
    /// (`… is listening on http://host:port`). Port 0: any free port. With a `launcher` (an
    /// executable and its arguments, such as `ip netns exec NAME`), the binary runs through it.
    public static func launch(
        binary: URL, command: String = "serve", port requestedPort: Int = 0, arguments: [String], directory: URL,
        errorLog: URL? = nil, launcher: (executable: URL, arguments: [String])? = nil
    ) throws -> ServerProcess {
        let serverArguments = [command, "--port", "\(requestedPort)", "--log-level", "error"] + arguments
        let process = try ChildProcess(
            executable: launcher?.executable ?? binary,
            arguments: launcher.map { $0.arguments + [binary.path] + serverArguments } ?? serverArguments,
            environment: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SWITCHBOARD_") },
            directory: directory, output: .pipe, error: errorLog.map { .file($0) } ?? .null)
        let stdout = process.output!
        let output = NIOLockedValueBox("")
        var port: Int?
        while port == nil {
            let chunk = stdout.availableData
            if chunk.isEmpty { break }
            let text = output.withLockedValue { text in
                text += String(decoding: chunk, as: UTF8.self)
                return text
            }
            if let line = text.split(separator: "\n").first(where: { $0.contains("is listening on http://") }),
                let value = line.split(separator: ":").last.flatMap({ Int($0) })
            {
                port = value
            }
        }
        guard let port else {
            process.killAndReap()
            throw ChildProcessError(description: "the server did not start: \(output.withLockedValue { $0 })")
        }
        // Keep reading so the server never blocks on a full pipe.
        Thread.detachNewThread {
            while true {
                let chunk = stdout.availableData
                if chunk.isEmpty { return }
                output.withLockedValue { $0 += String(decoding: chunk, as: UTF8.self) }
            }
        }
        return ServerProcess(process: process, port: port, outputBox: output)
    }

    /// The WebSocket URL.
    public var url: URL { URL(string: "ws://127.0.0.1:\(port)/v1/ws")! }

    /// `kill -9`: no shutdown at all.
    public func kill() {
        process.killAndReap()
    }

    /// SIGTERM: a graceful shutdown.
    public func terminate() {
        process.send(SIGTERM)
    }

    /// Waits for the process to end; returns its exit status, or nil if it was killed by a signal.
    public func waitForExit() async -> Int32? {
        if case .exit(let status) = await process.ended() { return status }
        return nil
    }

    public var isRunning: Bool { process.isRunning }

    /// The process id (to read its memory in /proc).
    public var processIdentifier: Int32 { process.processIdentifier }
}
