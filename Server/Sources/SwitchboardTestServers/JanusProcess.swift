import Foundation
import NIOConcurrencyHelpers
import SwitchboardTools

/// A real Janus (the SFU of group calls) for tests: Debian's `janus` with the configuration
/// `scripts/janus config` writes (VideoRoom and WebSocket only, everything on 127.0.0.1), on a free
/// port, in a directory of its own. It can be killed (`kill -9`, as a crash) and started again on
/// the same port, as an operator's restart would.
public final class JanusProcess: Sendable {
    /// The API secret (and VideoRoom admin key) every test Janus uses.
    public static let secret = "janus-test-secret"

    /// Whether this machine has Janus (scripts/test installs it: the tests that need it run there).
    public static var isAvailable: Bool { executable != nil }

    static var executable: URL? {
        ["/usr/bin/janus", "/usr/local/bin/janus"].map(URL.init(fileURLWithPath:))
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// The repository's `scripts/janus`, found from this file's place in the checkout.
    static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/janus")
    }

    public let port: Int
    public let directory: URL
    private let process: ChildProcessBox

    /// The WebSocket API's URL.
    public var url: String { "ws://127.0.0.1:\(port)" }

    /// Writes a configuration and starts Janus; returns once its WebSocket API accepts connections.
    public static func start(port: Int? = nil, rtpPorts: String = "20000-40000") async throws -> JanusProcess {
        guard let executable else { throw ChildProcessError(description: "janus is not installed (scripts/janus install)") }
        let port = try port ?? freeTCPPort()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-janus-\(UUID().uuidString)")
        let configure = try ChildProcess(
            executable: URL(fileURLWithPath: "/bin/bash"),
            arguments: [script.path, "config", directory.path, String(port), secret, rtpPorts])
        guard configure.waitForExit() == .exit(0) else {
            throw ChildProcessError(description: "scripts/janus config failed")
        }
        let janus = JanusProcess(port: port, directory: directory, process: ChildProcessBox())
        try await janus.launch(executable)
        return janus
    }

    private init(port: Int, directory: URL, process: ChildProcessBox) {
        self.port = port
        self.directory = directory
        self.process = process
    }

    private func launch(_ executable: URL) async throws {
        let child = try ChildProcess(
            executable: executable,
            arguments: ["-F", directory.path, "-C", directory.appendingPathComponent("janus.jcfg").path],
            output: .file(directory.appendingPathComponent("janus.log")),
            error: .file(directory.appendingPathComponent("janus.err")))
        process.set(child)
        // Ready once the WebSocket port takes connections (Janus starts in well under a second).
        for _ in 0..<200 {
            if Self.accepts(port: port) { return }
            guard child.isRunning else { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw ChildProcessError(description: "janus did not start: \(log())")
    }

    /// Kills Janus at once (SIGKILL): everything it carried is gone, as after a crash.
    public func kill() {
        _ = process.take()?.killAndReap()
    }

    /// Starts Janus again on the same port with the same configuration (after ``kill()``).
    public func restart() async throws {
        kill()
        guard let executable = Self.executable else { return }
        // The old socket may linger a moment.
        for _ in 0..<200 where Self.accepts(port: port) { try await Task.sleep(for: .milliseconds(25)) }
        try await launch(executable)
    }

    /// Stops Janus and removes its directory.
    public func stop() {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }

    /// What Janus logged.
    public func log() -> String {
        let out = (try? String(contentsOf: directory.appendingPathComponent("janus.log"), encoding: .utf8)) ?? ""
        let err = (try? String(contentsOf: directory.appendingPathComponent("janus.err"), encoding: .utf8)) ?? ""
        return String((out + err).suffix(4000))
    }

    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    static func freeTCPPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ChildProcessError(description: "socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw ChildProcessError(description: "bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// The running Janus child, replaced at a restart.
final class ChildProcessBox: Sendable {
    private let child = NIOLockedValueBox<ChildProcess?>(nil)

    func set(_ process: ChildProcess) { child.withLockedValue { $0 = process } }

    func take() -> ChildProcess? {
        child.withLockedValue { child in
            defer { child = nil }
            return child
        }
    }
}
