import CSpawn
import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`. Every process the CLI and the tests start goes
/// through this type instead of Foundation's `Process`, whose `run()` on Linux copies 256 bytes of
/// every directory entry of `/proc/self/fd` and so can read past a mapped page and crash the
/// parent (swift-corelibs-foundation #5472; seen as a flaky crash of the test run).
///
/// The child gets descriptors 0–2 as asked and nothing else of the parent's, default signal
/// dispositions and an empty signal mask. It is reaped once, under a lock, so a signal is never sent
/// to a process id that was already reaped and could belong to another process.
public final class ChildProcess: Sendable {
    /// What one of the child's standard descriptors is connected to.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// A pipe whose other end is this object's `input`, `output` or `error`.
        case pipe
        /// A file, created or truncated (output and error only).
        case file(URL)
    }

    /// How the child ended.
    public enum Termination: Sendable, Equatable {
        case exit(Int32)
        case signal(Int32)
    }

    public let processIdentifier: pid_t
    /// The writing end of the child's stdin, when it is `.pipe`.
    public let input: FileHandle?
    /// The reading end of the child's stdout, when it is `.pipe`.
    public let output: FileHandle?
    /// The reading end of the child's stderr, when it is `.pipe`.
    public let error: FileHandle?
    private let termination = NIOLockedValueBox<Termination?>(nil)

    /// Starts `executable` (a path, not looked up in PATH) with `arguments`, in `directory` (nil:
    /// this process's), with `environment` (nil: this process's).
    public init(
        executable: URL, arguments: [String], environment: [String: String]? = nil, directory: URL? = nil,
        input: Stream = .null, output: Stream = .null, error: Stream = .null
    ) throws {
        var parentEnds: [Int32?] = [nil, nil, nil]
        var childEnds: [Int32] = []
        defer { for fd in childEnds { close(fd) } }
        do {
            for (index, stream) in [input, output, error].enumerated() {
                let reading = index == 0
                switch stream {
                case .null:
                    childEnds.append(try Self.check(open("/dev/null", O_RDWR | O_CLOEXEC), "open /dev/null"))
                case .file(let url):
                    guard !reading else { throw ChildProcessError(description: "stdin cannot be a file here") }
                    childEnds.append(
                        try Self.check(open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644), "open \(url.path)"))
                case .pipe:
                    var fds: [Int32] = [-1, -1]
                    let rc = switchboard_pipe(&fds)
                    guard rc == 0 else { throw ChildProcessError(description: "pipe: \(String(cString: strerror(rc)))") }
                    childEnds.append(reading ? fds[0] : fds[1])
                    parentEnds[index] = reading ? fds[1] : fds[0]
                }
            }
            let argv = [executable.path] + arguments
            let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
            var pid: pid_t = 0
            let rc = Self.withCStrings(argv) { argv in
                Self.withCStrings(env) { envp in
                    switchboard_spawn(
                        &pid, executable.path, argv, envp, directory?.path, childEnds[0], childEnds[1], childEnds[2])
                }
            }
            guard rc == 0 else {
                throw ChildProcessError(description: "cannot start \(executable.path): \(String(cString: strerror(rc)))")
            }
            processIdentifier = pid
        } catch {
            for case let fd? in parentEnds { close(fd) }
            throw error
        }
        self.input = parentEnds[0].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        self.output = parentEnds[1].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        self.error = parentEnds[2].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
    }

    /// A child that has ended is reaped, so it does not stay a zombie; one still running is left
    /// running (``ServerProcess`` kills its own).
    deinit {
        _ = reap()
    }

    /// Whether the child has not ended yet (reaps it if it has).
    public var isRunning: Bool { reap() == nil }

    /// Sends `signal`, unless the child was already reaped.
    public func send(_ signal: Int32) {
        termination.withLockedValue { ended in
            if ended == nil { _ = kill(processIdentifier, signal) }
        }
    }

    /// SIGKILL, then waits for the end (quick: the child cannot catch it).
    @discardableResult
    public func killAndReap() -> Termination {
        send(SIGKILL)
        return waitForExit()
    }

    /// Blocks until the child ends.
    public func waitForExit() -> Termination {
        while true {
            if let ended = reap() { return ended }
            // Waits without reaping, so the reaping stays in `reap`, under the lock.
            var info = siginfo_t()
            if waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) == -1 && errno == ECHILD {
                // Reaped by somebody else (not by this type): the status is lost.
                return reap() ?? .exit(-1)
            }
        }
    }

    /// Waits on a thread of its own until the child ends.
    public func ended() async -> Termination {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: self.waitForExit()) }
        }
    }

    private func reap() -> Termination? {
        termination.withLockedValue { ended in
            if let ended { return ended }
            var status: Int32 = 0
            guard waitpid(processIdentifier, &status, WNOHANG) == processIdentifier else { return nil }
            let signal = status & 0x7f
            ended = signal == 0 ? .exit((status >> 8) & 0xff) : .signal(signal)
            return ended
        }
    }

    private static func check(_ fd: Int32, _ what: String) throws -> Int32 {
        guard fd >= 0 else { throw ChildProcessError(description: "\(what): \(String(cString: strerror(errno)))") }
        return fd
    }

    /// `strings` as a NULL-terminated array of C strings, valid inside `body`.
    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }
}

public struct ChildProcessError: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) {
        self.description = description
    }
}
