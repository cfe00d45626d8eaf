import Foundation
import SwitchboardTools
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The binary run wrong, as a newcomer does (issue 48): each mistake ends the process by itself
/// with a sentence that names the cause and what to do, a non-zero status, and no crash. A run
/// that has not ended after ``CLITests/hangBound`` is killed and fails its row (the port in use
/// used to hang for ever); the times these runs take are well under a second.
extension CLITests {
    /// What a row needs besides its arguments; made in the row's own directory, the run's
    /// working directory (so a `switchboard.sqlite` it makes stays there).
    struct Scratch: Sendable {
        var directory: URL
        /// A port on 127.0.0.1 another socket listens on.
        var busyPort: Int
        /// A port on 127.0.0.1 nothing listens on.
        var freePort: Int
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
    }

    struct Mistake: Sendable, CustomTestStringConvertible {
        var name: String
        var arguments: @Sendable (Scratch) -> [String]
        /// 64: refused arguments (ArgumentParser's usage error); 1: a start that failed.
        var status: Int32
        /// What stderr says (every piece, in any order).
        var says: @Sendable (Scratch) -> [String]
        var testDescription: String { name }

        init(
            _ name: String, _ arguments: @escaping @Sendable (Scratch) -> [String], status: Int32,
            says: @escaping @Sendable (Scratch) -> [String]
        ) {
            self.name = name
            self.arguments = arguments
            self.status = status
            self.says = says
        }

        init(_ name: String, _ arguments: [String], status: Int32, says: [String]) {
            self.init(name, { _ in arguments }, status: status, says: { _ in says })
        }
    }

    static let serveInScratch: @Sendable (Scratch, [String]) -> [String] = { scratch, extra in
        ["serve", "--port", "0", "--database", scratch.path("db.sqlite"), "--log-level", "error"] + extra
    }

    static let mistakes: [Mistake] = [
        Mistake(
            "serve on a port in use", { ["serve", "--port", "\($0.busyPort)", "--database", $0.path("db.sqlite")] },
            status: 1, says: { ["cannot listen on 127.0.0.1:\($0.busyPort)", "in use", "--port"] }),
        Mistake(
            "serve on an address of another machine", { serveInScratch($0, ["--host", "203.0.113.7"]) }, status: 1,
            says: { _ in ["203.0.113.7 is not an address of this machine", "--host"] }),
        Mistake(
            "serve with a database in a directory that does not exist",
            ["serve", "--port", "0", "--database", "/proc/nope/x.sqlite"], status: 1,
            says: ["/proc/nope/x.sqlite", "the directory /proc/nope does not exist", "--database"]),
        Mistake(
            "serve with a directory as its database", { ["serve", "--port", "0", "--database", $0.directory.path] },
            status: 1, says: { ["cannot open the database \($0.directory.path): it is a directory", "--database"] }),
        Mistake(
            "serve with a file that is no database", { ["serve", "--port", "0", "--database", $0.path("notes.txt")] },
            status: 1, says: { ["cannot open the database \($0.path("notes.txt")): the file is not an SQLite database"] }),
        Mistake(
            "serve with a database URL of no known kind",
            ["serve", "--port", "0", "--database", "postgresql://nobody"], status: 1,
            says: ["postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE"]),
        Mistake(
            "serve with a loopback webhook not allowed", { serveInScratch($0, ["--webhook", "http://127.0.0.1:9/x"]) },
            status: 1, says: { _ in ["--webhook http://127.0.0.1:9/x", "--webhook-allow"] }),
        Mistake(
            "serve with a localhost webhook not allowed", { serveInScratch($0, ["--webhook", "http://localhost:9/x"]) },
            status: 1, says: { _ in ["--webhook http://localhost:9/x", "--webhook-allow"] }),
        Mistake(
            "serve with an ftp webhook", { serveInScratch($0, ["--webhook", "ftp://127.0.0.1/x"]) }, status: 1,
            says: { _ in ["--webhook ftp://127.0.0.1/x", "http(s) URL"] }),
        Mistake(
            "serve with a webhook secret that is none",
            { serveInScratch($0, ["--webhook", "http://127.0.0.1:9/x", "--webhook-secret", "hunter2"]) }, status: 1,
            says: { _ in ["whsec_"] }),
        Mistake(
            "serve with a web root that does not exist", { serveInScratch($0, ["--web-root", $0.path("no-such-folder")]) },
            status: 1, says: { ["the web root \($0.path("no-such-folder")) is not a directory"] }),
        Mistake(
            "serve with an app without its secret", ["serve", "--port", "0", "--app", "1400000001"], status: 64,
            says: ["--app takes SDKAPPID:SECRET, got '1400000001'"]),
        Mistake(
            "serve on a port out of range", ["serve", "--port", "70000"], status: 64, says: ["port must be 0-65535"]),
        Mistake(
            "serve on a port that is no number", ["serve", "--port", "eighty"], status: 64, says: ["--port", "eighty"]),
        Mistake(
            "serve with an unknown busy policy", ["serve", "--busy-policy", "maybe"], status: 64,
            says: ["busy policy must be reject or callWaiting"]),
        Mistake(
            "serve with an unknown log level", ["serve", "--log-level", "loud"], status: 64,
            says: ["unknown log level loud"]),
        Mistake(
            "serve with half of the APNs settings", ["serve", "--apns-key-file", "key.p8"], status: 64,
            says: ["--apns-key-file, --apns-key-id and --apns-team-id together"]),
        Mistake(
            "serve with an APNs key file that does not exist",
            ["serve", "--apns-key-file", "/nonexistent/key.p8", "--apns-key-id", "K", "--apns-team-id", "T"], status: 64,
            says: ["--apns-key-file /nonexistent/key.p8: no such file"]),
        Mistake(
            "serve with an FCM account file that does not exist",
            ["serve", "--fcm-service-account", "/nonexistent/account.json"], status: 64,
            says: ["--fcm-service-account /nonexistent/account.json: no such file"]),
        Mistake(
            "serve with a VAPID key file that is a directory", ["serve", "--vapid-key-file", "/tmp"], status: 64,
            says: ["--vapid-key-file /tmp: a directory, not a file"]),
        Mistake(
            "serve with TURN and no secret", ["serve", "--turn-url", "turn:turn.example.com:3478"], status: 64,
            says: ["TURN URLs need --turn-secret"]),
        Mistake(
            "serve with an SFU secret and no SFU", ["serve", "--sfu-secret", "s"], status: 64,
            says: ["--sfu-secret needs --sfu"]),
        Mistake(
            "serve with a rate limit of no known form", ["serve", "--rate-limit", "logins=lots"], status: 64,
            says: ["--rate-limit takes NAME=N/s|min|h[:BURST], got 'logins=lots'"]),
        Mistake(
            "serve with a webhook network that is none", ["serve", "--webhook-allow", "localhost"], status: 64,
            says: ["--webhook-allow takes networks such as 127.0.0.0/8"]),
        Mistake("a command that does not exist", ["start"], status: 64, says: ["Unexpected argument 'start'"]),
        Mistake(
            "usersig gen for a user id that is none",
            ["usersig", "gen", "--app-id", "1", "--secret", "s", "--user", "no spaces"], status: 64,
            says: ["userID must be 1-32 letters, digits, '-' or '_'"]),
        Mistake(
            "call with none of --to, --answer and --take", ["call", "--app-id", "1", "--secret", "s", "--user", "alice"],
            status: 64, says: ["give one of --to ID[,ID…], --answer or --take"]),
        Mistake(
            "call without an app", ["call", "--secret", "s", "--user", "alice", "--to", "bob"], status: 64,
            says: ["Missing expected argument '--app-id <app-id>'"]),
        Mistake(
            "call an http server", ["call", "--app-id", "1", "--secret", "s", "--user", "a", "--to", "b", "--server", "http://x"],
            status: 64, says: ["--server is a ws:// or wss:// URL"]),
        Mistake(
            "call a server that is not there",
            { ["call", "--app-id", "1", "--secret", "s", "--user", "alice", "--to", "bob", "--server", "ws://127.0.0.1:\($0.freePort)/v1/ws"] },
            status: Self.mediaBuilt ? 1 : 3,
            says: {
                Self.mediaBuilt
                    ? ["no server at ws://127.0.0.1:\($0.freePort)/v1/ws — start `switchboard serve` or pass `--server`"]
                    : ["swift build --package-path Server --traits GStreamer"]
            }),
    ]

    /// Whether this build has `switchboard call`'s media (the GStreamer trait).
    static var mediaBuilt: Bool {
        #if GStreamer
        true
        #else
        false
        #endif
    }

    /// Longer than any of these runs may take on a loaded machine; a run still going then hangs.
    static let hangBound: Duration = .seconds(60)

    @Test(arguments: mistakes)
    func aMistakeIsToldWithWhatToDo(_ mistake: Mistake) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-mistake-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "not a database, some notes\n".write(to: directory.appendingPathComponent("notes.txt"), atomically: true, encoding: .utf8)
        let busy = try ListeningSocket()
        defer { busy.close() }
        let free = try ListeningSocket()
        free.close()
        let scratch = Scratch(directory: directory, busyPort: busy.port, freePort: free.port)

        let output = try await Self.run(mistake.arguments(scratch), directory: directory, within: Self.hangBound)
        #expect(output.status == mistake.status, "\(output.stderr)")
        for piece in mistake.says(scratch) {
            #expect(output.stderr.contains(piece), "\(output.stderr)")
        }
        // A sentence, not a dump: no Swift type names of NIO's or Foundation's errors.
        for dump in ["SingleConnectionFailure", "NSCocoaErrorDomain", "IOError", "DatabaseError", "Fatal error"] {
            #expect(!output.stderr.contains(dump), "\(output.stderr)")
        }
    }

    /// SIGINT and SIGTERM end `serve` while it starts: here it waits for a database that took
    /// the connection and says nothing (the default for a signal before the server listens:
    /// the process ends at once, and a start has nothing to save).
    @Test(arguments: [SIGINT, SIGTERM])
    func aSignalEndsServeWhileItStarts(_ signal: Int32) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-signal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let silent = try ListeningSocket()
        defer { silent.close() }
        let process = try ChildProcess(
            executable: Self.binary,
            arguments: ["serve", "--port", "0", "--database", "postgresql://nobody@127.0.0.1:\(silent.port)/switchboard"],
            directory: directory, output: .pipe, error: .pipe)
        let stdout = Self.readToEnd(process.output!)
        let stderr = Self.readToEnd(process.error!)
        // It connected: it is starting, and waits for the database's answer.
        let connection = try await silent.accept()
        defer { Glibc.close(connection) }
        process.send(signal)
        let ended = await withTaskGroup(of: ChildProcess.Termination?.self) { group in
            group.addTask { await process.ended() }
            group.addTask {
                try? await Task.sleep(for: Self.hangBound)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            if first == nil { process.send(SIGKILL) }
            return first
        }
        _ = (await stdout.value, await stderr.value)
        #expect(ended == .signal(signal))
    }

    /// SIGINT, as SIGTERM (``serveStartsPrintsTheDevelopmentAppAndStopsOnSigterm(_:)``), ends a
    /// serving node gracefully: exit 0.
    @Test func sigintEndsAServingNodeGracefully() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-signal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = try ChildProcess(
            executable: Self.binary, arguments: ["serve", "--port", "0", "--log-level", "warning"], directory: directory,
            output: .pipe)
        var banner = ""
        while !banner.contains("Stop with Ctrl-C") {
            let chunk = process.output!.availableData
            if chunk.isEmpty { break }
            banner += String(decoding: chunk, as: UTF8.self)
        }
        try #require(banner.contains("Stop with Ctrl-C"), "\(banner)")
        process.send(SIGINT)
        #expect(await process.ended() == .exit(0))
    }

    /// Runs the binary to its end, reading its output as it comes; a run that has not ended
    /// within `limit` is killed and is an error (it hangs).
    static func run(
        _ arguments: [String], environment: [String: String] = [:], directory: URL? = nil, within limit: Duration
    ) async throws -> Output {
        try await runExecutable(
            binary, arguments,
            environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 },
            directory: directory, within: limit)
    }

    /// ``run(_:environment:directory:within:)`` for any executable, with its whole environment.
    static func runExecutable(
        _ executable: URL, _ arguments: [String], environment: [String: String]?, directory: URL?, within limit: Duration
    ) async throws -> Output {
        let process = try ChildProcess(
            executable: executable, arguments: arguments, environment: environment, directory: directory, output: .pipe,
            error: .pipe)
        let stdout = Self.readToEnd(process.output!)
        let stderr = Self.readToEnd(process.error!)
        let ended = await withTaskGroup(of: ChildProcess.Termination?.self) { group in
            group.addTask { await process.ended() }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            if first == nil { process.send(SIGKILL) }
            return first
        }
        let (out, err) = (await stdout.value, await stderr.value)
        guard let ended else {
            throw ChildProcessError(description: "\(arguments) still ran after \(limit): killed. stderr: \(err)")
        }
        guard case .exit(let status) = ended else {
            throw ChildProcessError(description: "\(arguments) ended by \(ended). stderr: \(err)")
        }
        return Output(status: status, stdout: out, stderr: err)
    }

    /// Everything `handle` gives until its end, read on a thread of its own (reading blocks).
    static func readToEnd(_ handle: FileHandle) -> Task<String, Never> {
        Task.detached {
            await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    continuation.resume(returning: String(decoding: handle.readDataToEndOfFile(), as: UTF8.self))
                }
            }
        }
    }
}

/// A TCP socket listening on 127.0.0.1 (a port in use), or, closed, a port nothing listens on.
final class ListeningSocket: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ChildProcessError(description: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else {
            let problem = String(cString: strerror(errno))
            Glibc.close(fd)
            throw ChildProcessError(description: "listen: \(problem)")
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() {
        Glibc.close(descriptor)
    }

    /// Waits, on a thread of its own, for a connection, and returns its descriptor.
    func accept() async throws -> Int32 {
        let descriptor = self.descriptor
        let connection = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: Glibc.accept(descriptor, nil, nil)) }
        }
        guard connection >= 0 else { throw ChildProcessError(description: "accept: \(String(cString: strerror(errno)))") }
        return connection
    }
}
