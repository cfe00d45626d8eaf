#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How many connections a node holds, for how long each may take to say who it is, and how much a
/// connection that does not read may make the server hold for it (docs/OPERATIONS.md, "Bounds").
public struct ConnectionLimits: Sendable, Equatable {
    /// Connections of every kind at once; nil: the open-file limit minus ``reservedFileDescriptors``.
    /// A connection beyond it is closed as it is accepted.
    public var maxConnections: Int?
    /// File descriptors kept for the database, push, logs and the web client's files.
    public var reservedFileDescriptors = 256
    /// Connections not logged in yet (HTTP requests, WebSockets before `login`) from one address; a
    /// new one beyond it is closed as it is accepted. Behind a reverse proxy every client has the
    /// proxy's address: raise it there.
    public var maxPendingPerAddress = 128
    /// Connections not logged in yet, from all addresses; nil: a quarter of ``maxConnections``. A new
    /// one beyond it closes the oldest pending connection, so a flood cannot keep newcomers out.
    public var maxPending: Int?
    /// From accepting a connection to the end of its HTTP request head (slowloris).
    public var headTimeout: Duration = .seconds(10)
    /// From the end of an HTTP request head to the end of its body.
    public var requestTimeout: Duration = .seconds(30)
    /// An HTTP keep-alive connection left unused.
    public var idleTimeout: Duration = .seconds(60)
    /// From the WebSocket upgrade to a successful `login`.
    public var loginTimeout: Duration = .seconds(10)
    /// Bytes a connection may have waiting to be written to its socket (the peer not reading);
    /// beyond it the connection is closed with 1008.
    public var outgoingBudgetBytes = 1 << 20
    /// Frames a connection may be sent while its socket takes no more; beyond it, closed with 1008.
    public var outgoingBudgetFrames = 1024
    /// Devices of one user connected at once; the next login is refused with `tooManyDevices`.
    public var maxDevicesPerUser = 16

    public init() {}

    /// ``maxConnections``, or what the process's open-file limit leaves after the reserve.
    public var effectiveMaxConnections: Int {
        if let maxConnections { return maxConnections }
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        // RLIM_INFINITY is all ones; clamping turns it into a very large number.
        let files = min(Int(clamping: limit.rlim_cur), 1 << 20)
        return max(16, files - reservedFileDescriptors)
    }

    /// ``maxPending``, or a quarter of the connections.
    public var effectiveMaxPending: Int {
        maxPending ?? max(16, effectiveMaxConnections / 4)
    }
}
