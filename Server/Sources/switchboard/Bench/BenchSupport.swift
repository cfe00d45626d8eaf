import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Histogram
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SwitchboardProtocol

#if canImport(Glibc)
import Glibc
#endif

/// A server under load: where it listens and the app the load logs in to.
struct BenchTarget: Sendable {
    var host: String
    var port: Int
    var sdkAppID: SdkAppID
    var secretKey: String
    /// The server's process id, when this machine runs it (for its memory and limits).
    var pid: Int32?
}

/// One logged-in user of the load: request/response matching for the set-up steps, and a fast
/// path for the scenario (every frame that is not the answer to a waited-for request).
final class BenchClient: Sendable {
    let user: String
    let index: Int
    private let socketBox = NIOLockedValueBox<BenchSocket?>(nil)
    private let waiters = NIOLockedValueBox<[String: CheckedContinuation<ByteBuffer, any Error>]>([:])
    private let handler = LockedCallback<BenchSocket.Receive?>(nil)
    private let closed = NIOLockedValueBox(false)

    init(user: String, index: Int) {
        self.user = user
        self.index = index
    }

    var socket: BenchSocket { socketBox.withLockedValue { $0! } }
    var isClosed: Bool { closed.withLockedValue { $0 } }

    func connect(to target: BenchTarget, from source: String?, group: any EventLoopGroup) async throws {
        let socket = try await BenchSocket.connect(
            host: target.host, port: target.port, path: "/v1/ws", localAddress: source, group: group,
            onText: { [weak self] buffer, time in self?.received(buffer, time) },
            onClose: { [weak self] in self?.socketClosed() })
        socketBox.withLockedValue { $0 = socket }
    }

    /// Sends a request and waits for its answer (result or error frame); throws if the
    /// connection closes first (a server that died must not leave the load waiting for good).
    func request(id: String, _ text: String) async throws -> ByteBuffer {
        try await withCheckedThrowingContinuation { continuation in
            let open = waiters.withLockedValue { waiters -> Bool in
                guard !closed.withLockedValue({ $0 }) else { return false }
                waiters[id] = continuation
                return true
            }
            guard open else {
                continuation.resume(throwing: BenchError("\(user)'s connection closed before \(id) was answered"))
                return
            }
            socket.send(text)
        }
    }

    private func socketClosed() {
        let pending = waiters.withLockedValue { waiters in
            closed.withLockedValue { $0 = true }
            defer { waiters = [:] }
            return waiters
        }
        for (id, waiter) in pending {
            waiter.resume(throwing: BenchError("\(user)'s connection closed before \(id) was answered"))
        }
    }

    func login(_ target: BenchTarget, sig: String) async throws {
        let answer = try await request(
            id: "login",
            #"{"id":"login","type":"login","data":{"sdkAppID":\#(target.sdkAppID.rawValue),"userID":"\#(user)","userSig":"\#(sig)","protocolVersion":1,"platform":"bench"}}"#)
        if answer.contains(#""error""#) {
            throw BenchError("login of \(user) failed: \(String(buffer: answer))")
        }
    }

    /// Frames that no waiter takes go here (on the event loop).
    func onFrame(_ receive: @escaping BenchSocket.Receive) {
        handler.function = receive
    }

    private func received(_ buffer: ByteBuffer, _ time: UInt64) {
        if let id = buffer.stringValue(of: #""id":""#),
            let waiter = waiters.withLockedValue({ $0.removeValue(forKey: id) })
        {
            waiter.resume(returning: buffer)
            return
        }
        handler.function?(buffer, time)
    }
}

/// A latency histogram shared by the event loop and the scenario (microseconds, 1 µs to 60 s).
final class LatencyRecorder: Sendable {
    private let histogram = NIOLockedValueBox(Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three))

    func record(nanos: UInt64) {
        histogram.withLockedValue { _ = $0.record(Swift.max(1, nanos / 1000)) }
    }

    var summary: LatencySummary {
        histogram.withLockedValue { LatencySummary($0) }
    }

    func reset() {
        histogram.withLockedValue { $0.reset() }
    }
}

/// Percentiles of a latency distribution, in microseconds.
struct LatencySummary: Codable, Equatable {
    var count: UInt64
    var p50: UInt64
    var p90: UInt64
    var p99: UInt64
    var p999: UInt64
    var max: UInt64
    var mean: Double

    init(_ histogram: Histogram<UInt64>) {
        count = histogram.totalCount
        p50 = count > 0 ? histogram.valueAtPercentile(50) : 0
        p90 = count > 0 ? histogram.valueAtPercentile(90) : 0
        p99 = count > 0 ? histogram.valueAtPercentile(99) : 0
        p999 = count > 0 ? histogram.valueAtPercentile(99.9) : 0
        max = count > 0 ? histogram.max : 0
        mean = count > 0 ? (histogram.mean * 10).rounded() / 10 : 0
    }

    /// `p50/p90/p99/p99.9/max` in ms.
    /// The columns of ``row``, after a first one naming the row.
    static let header = ["", "p50", "p90", "p99", "p99.9", "max (ms)"]

    var row: [String] {
        [p50, p90, p99, p999, max].map { String(format: "%.3f", Double($0) / 1000) }
    }
}

/// What this machine allows the load: open files per process, local ports per source address.
struct SystemLimits: Codable {
    var clientOpenFiles: Int
    var serverOpenFiles: Int?
    var localPorts: Int

    /// Raises this process's open-file limit to its hard limit and reads the server's.
    static func prepare(serverPid: Int32?) -> SystemLimits {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        var ports = 28_232
        if let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8) {
            let bounds = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
            if bounds.count == 2 { ports = bounds[1] - bounds[0] + 1 }
        }
        var serverFiles: Int?
        if let serverPid, let text = try? String(contentsOfFile: "/proc/\(serverPid)/limits", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Max open files") })
        {
            serverFiles = line.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }.first
        }
        return SystemLimits(clientOpenFiles: Int(limit.rlim_cur), serverOpenFiles: serverFiles, localPorts: ports)
    }

    /// Source addresses for `connections`: each carries at most 80% of the local port range.
    func sources(for connections: Int, minimum: Int) -> [String] {
        let perSource = Swift.max(1, localPorts * 8 / 10)
        let count = Swift.max(minimum, (connections + perSource - 1) / perSource)
        return (0..<count).map { "127.0.0.\(10 + $0)" }
    }

    /// Refuses a load the machine cannot carry, saying which limit, instead of failing midway.
    func check(connections: Int) throws {
        let margin = 64
        if connections + margin > clientOpenFiles {
            throw BenchError(
                "\(connections) connections need \(connections + margin) open files in the load generator; its limit is \(clientOpenFiles)")
        }
        if let serverOpenFiles, connections + margin > serverOpenFiles {
            throw BenchError(
                "\(connections) connections need \(connections + margin) open files in the server; its limit is \(serverOpenFiles)")
        }
    }
}

/// The server's resident memory, from /proc (kB).
func residentKilobytes(of pid: Int32) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return nil }
    return line.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }.first
}

/// CPU seconds a process has used so far, from /proc/PID/stat: in user space and in the kernel.
struct CPUTimes {
    var user: Double
    var system: Double
    var total: Double { user + system }

    static func of(_ pid: Int32) -> CPUTimes? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = text.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state is field 3; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: end)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
        return CPUTimes(user: user / tick, system: system / tick)
    }

    static func - (after: CPUTimes, before: CPUTimes) -> CPUTimes {
        CPUTimes(user: after.user - before.user, system: after.system - before.system)
    }
}

/// CPU seconds (user + system) a process has used so far.
func cpuSeconds(of pid: Int32) -> Double? {
    CPUTimes.of(pid)?.total
}

/// How late the server's event loops ran (its `/metrics`, `switchboard_event_loop_lag_*`).
struct LoopLag: Codable, Sendable {
    /// The longest since the server started, ms.
    var longestSinceStartMs: Double
    /// Probes so far at or below each bucket's bound (seconds → count).
    var buckets: [Double: Double]

    /// Reads a node's figures; nil when it does not answer.
    static func read(_ target: BenchTarget) async -> LoopLag? {
        guard let url = URL(string: "http://\(target.host):\(target.port)/metrics"),
            let (data, _) = try? await URLSession.shared.data(from: url)
        else { return nil }
        var longest = 0.0
        var buckets: [Double: Double] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let value = Double(parts[1]) else { continue }
            if parts[0] == "switchboard_event_loop_lag_max_seconds" {
                longest = value * 1000
            } else if parts[0].hasPrefix("switchboard_event_loop_lag_seconds_bucket{le=\""),
                let bound = Double(parts[0].dropFirst("switchboard_event_loop_lag_seconds_bucket{le=\"".count).prefix { $0 != "\"" })
            {
                buckets[bound] = value
            }
        }
        return LoopLag(longestSinceStartMs: longest, buckets: buckets)
    }

    /// The bound (ms) of the highest bucket that gained probes from `before` to `self`: the longest
    /// delay in between was at most this (and above the bucket under it). Nil: none above 0.5 ms.
    func worstSince(_ before: LoopLag) -> Double? {
        let bounds = buckets.keys.sorted()
        var worst: Double?
        var below = 0.0
        var belowBefore = 0.0
        for bound in bounds where bound.isFinite {
            let gained = (buckets[bound] ?? 0) - (before.buckets[bound] ?? 0)
            // Probes in this bucket alone gained: cumulative counts minus the bucket under it.
            if gained - (below - belowBefore) > 0 { worst = bound * 1000 }
            below = buckets[bound] ?? 0
            belowBefore = before.buckets[bound] ?? 0
        }
        if let infinite = buckets[.infinity], infinite - (before.buckets[.infinity] ?? 0) > below - belowBefore {
            worst = .infinity
        }
        return worst
    }
}

/// CPU seconds of every process named `postgres` (a PostgreSQL server on this machine).
func postgresCPUSeconds() -> Double? {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
    var total = 0.0
    var found = false
    for entry in entries {
        guard let pid = Int32(entry),
            let name = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
            name.trimmingCharacters(in: .whitespacesAndNewlines) == "postgres",
            let seconds = cpuSeconds(of: pid)
        else { continue }
        total += seconds
        found = true
    }
    return found ? total : nil
}

/// Runs `body` for every item with at most `width` at a time.
func forEach<T: Sendable>(
    _ items: [T], width: Int, _ body: @escaping @Sendable (T) async throws -> Void
) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        var iterator = items.makeIterator()
        for _ in 0..<width {
            guard let item = iterator.next() else { break }
            group.addTask { try await body(item) }
        }
        while try await group.next() != nil {
            if let item = iterator.next() { group.addTask { try await body(item) } }
        }
    }
}

/// Connects and logs in `count` users named `<prefix><i>`, spread over `sources`.
func connectUsers(
    prefix: String, count: Int, targets: [BenchTarget], sources: [String], group: any EventLoopGroup
) async throws -> [BenchClient] {
    let clients = (0..<count).map { BenchClient(user: "\(prefix)\($0)", index: $0) }
    let now = Int64(Date().timeIntervalSince1970)
    try await forEach(clients, width: 256) { client in
        // Client i on node i (round robin over the nodes).
        let target = targets[client.index % targets.count]
        try await client.connect(to: target, from: sources[client.index % sources.count], group: group)
        let sig = UserSig.generate(
            sdkAppID: target.sdkAppID, secretKey: target.secretKey, userID: client.user, expire: 86_400, time: now)
        try await client.login(target, sig: sig)
    }
    return clients
}

/// A short random tag that keeps the users of one run apart from the last one's.
func runTag() -> String {
    String((0..<4).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement()! })
}
