#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore

/// Why a node could not start, in a sentence that names the cause and what to do about it:
/// `switchboard serve` prints ``description`` as it is and exits non-zero.
public struct StartupError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What failed, for tests and logs.
    public let code: Code
    /// The sentence: the cause and the fix.
    public let message: String

    public var description: String { message }

    /// What failed.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case portInUse, cannotListen, databaseUnavailable
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Another process listens on the port.
        public static let portInUse = Code(.portInUse)
        /// The address is not this machine's, the port needs privileges, or the host has no address.
        public static let cannotListen = Code(.cannotListen)
        /// The database cannot be opened (a file that cannot be made or read).
        public static let databaseUnavailable = Code(.databaseUnavailable)

        public var description: String { base.rawValue }
    }

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The sentence for a failure to listen on `host:port`, or nil when `error` is not one.
    init?(listening error: any Error, host: String, port: Int) {
        let place = "\(host):\(port)"
        switch error {
        case let error as IOError where error.errnoCode == EADDRINUSE:
            self.init(
                .portInUse,
                "cannot listen on \(place): the port is in use by another process (another switchboard serve?). "
                    + "Stop that process, or pass --port with a free port (--port 0 takes any).")
        case let error as IOError where error.errnoCode == EACCES:
            self.init(
                .cannotListen,
                "cannot listen on \(place): permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE). "
                    + "Pass --port 8080, or put a reverse proxy in front.")
        case let error as IOError where error.errnoCode == EADDRNOTAVAIL:
            self.init(
                .cannotListen,
                "cannot listen on \(place): \(host) is not an address of this machine. "
                    + "Pass --host with one of its addresses (127.0.0.1, or 0.0.0.0 for all).")
        case is SocketAddressError.UnknownHost:
            self.init(
                .cannotListen,
                "cannot listen on \(place): the host name \(host) has no address. "
                    + "Pass --host with an address of this machine (127.0.0.1, or 0.0.0.0 for all).")
        default:
            return nil
        }
    }
}
