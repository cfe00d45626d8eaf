import ArgumentParser
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SwitchboardProtocol
import SwitchboardTools

/// One benchmark run: the server (started here or given), the echo server, the load's threads.
final class Bench: Sendable {
    /// The first node (the only one unless --nodes).
    let target: BenchTarget
    /// Every node, in order.
    let targets: [BenchTarget]
    let limits: SystemLimits
    let group: MultiThreadedEventLoopGroup
    let smoke: Bool
    let minimumSources: Int
    private let spawned: [ServerProcess]
    private let echoServer: ServerProcess?
    private let directory: URL?
    private let databaseIsPostgres: Bool

    /// - Parameter launcher: runs each server node this bench starts under another program
    ///   (valgrind, for the cost scenario's instruction count).
    init(
        _ options: BenchCommand.Options, launcher: (executable: URL, arguments: [String])? = nil,
        warnOfDebugBuild: Bool = true
    ) async throws {
        #if DEBUG
        if !options.smoke, warnOfDebugBuild {
            FileHandle.standardError.write(
                Data("warning: a debug build; build with `swift build -c release` for numbers worth keeping\n".utf8))
        }
        #endif
        let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var spawned: [ServerProcess] = []
        var targets: [BenchTarget] = []
        if let server = options.server {
            let parts = server.replacingOccurrences(of: "ws://", with: "").split(separator: "/")[0].split(separator: ":")
            guard parts.count == 2, let port = Int(parts[1]), let appID = options.appID, let secret = options.secret else {
                throw ValidationError("--server takes host:port, with --app-id and --secret")
            }
            target = BenchTarget(
                host: String(parts[0]), port: port, sdkAppID: SdkAppID(appID), secretKey: secret, pid: options.serverPid)
            targets = [target]
        } else {
            let secret = (0..<32).map { _ in String("0123456789abcdef".randomElement()!) }.joined()
            let app = SdkAppID(1_400_000_001)
            guard (1...16).contains(options.nodes) else { throw ValidationError("--nodes takes 1-16") }
            let database = options.database ?? directory.appendingPathComponent("bench.sqlite").path
            guard options.nodes == 1 || database.hasPrefix("postgres") else {
                throw ValidationError("a cluster (--nodes above 1) needs --database postgresql://…")
            }
            var webhook: [String] = []
            if options.serverWebhook {
                let sink = try ServerProcess.launch(binary: binary, command: "webhook-sink", arguments: [], directory: directory)
                spawned.append(sink)
                webhook = ["--webhook", "http://127.0.0.1:\(sink.port)/hooks", "--webhook-allow", "127.0.0.0/8"]
            }
            for index in 0..<options.nodes {
                let server = try ServerProcess.launch(
                    binary: options.serverBinary.map { URL(fileURLWithPath: $0) } ?? binary,
                    arguments: [
                        "--database", database, "--app", "\(app.rawValue):\(secret)", "--node-id", "bench\(index)",
                        // Storms of logins from a few loopback addresses are the point here.
                        "--no-rate-limits", "--host", "127.0.0.1", "--max-pending-per-ip", "100000", "--max-pending", "100000",
                    ] + (options.serverThreads.map { ["--threads", "\($0)"] } ?? [])
                        + (options.serverCommitInterval.map { ["--commit-interval", "\($0)"] } ?? []) + webhook,
                    directory: directory, launcher: launcher)
                spawned.append(server)
                targets.append(
                    BenchTarget(host: "127.0.0.1", port: server.port, sdkAppID: app, secretKey: secret, pid: server.processIdentifier))
            }
            target = targets[0]
        }
        echoServer = try ServerProcess.launch(binary: binary, command: "echo-server", arguments: [], directory: directory)
        spawned.append(echoServer!)
        self.spawned = spawned
        self.targets = targets
        self.directory = directory
        self.databaseIsPostgres = options.server == nil && options.database?.hasPrefix("postgres") == true
        self.limits = SystemLimits.prepare(serverPid: target.pid)
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, options.clientThreads))
        self.smoke = options.smoke
        self.minimumSources = max(1, min(options.sources, 200))
        print(
            "== server \(targets.map { "\($0.host):\($0.port)\($0.pid.map { " (pid \($0))" } ?? "")" }.joined(separator: ", ")); "
                + "limits: \(limits.clientOpenFiles) open files here, \(limits.serverOpenFiles.map(String.init) ?? "?") in the server, "
                + "\(limits.localPorts) local ports per source address; \(ProcessInfo.processInfo.activeProcessorCount) cores")
    }

    /// Each node's event-loop lag figures (nil for a node that did not answer).
    func loopLags() async -> [LoopLag?] {
        var lags: [LoopLag?] = []
        for target in targets { lags.append(await LoopLag.read(target)) }
        return lags
    }

    /// Whether the nodes this bench started use PostgreSQL on this machine (its CPU is measured).
    var watchesDatabase: Bool { databaseIsPostgres }

    func stop() {
        for process in spawned where process.isRunning { process.terminate() }
        try? group.syncShutdownGracefully()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// The message the echo floor bounces: a `call.start` request of the size the invite scenario sends.
    static let echoPayload =
        #"{"id":"s123.45","type":"call.start","data":{"participantIds":["uabcdr123"],"mediaType":"audio"}}"#

    func echo(messages: Int, interval: TimeAmount = .zero) async throws -> EchoReport {
        guard let echoServer else { throw BenchError("no echo server") }
        return try await measureEcho(
            host: "127.0.0.1", port: echoServer.port, messages: messages, payload: Self.echoPayload,
            source: "127.0.0.\(10)", group: group, interval: interval)
    }

    func callLoad(pairs: Int, hold: TimeAmount = .zero) async throws -> CallLoad {
        let tag = runTag()
        let sources = limits.sources(for: pairs * 2, minimum: minimumSources)
        try limits.check(connections: pairs * 2)
        // Callers on node i, their callees on the next node: in a cluster every call crosses nodes.
        let callers = try await connectUsers(prefix: "u\(tag)c", count: pairs, targets: targets, sources: sources, group: group)
        let callees = try await connectUsers(
            prefix: "u\(tag)r", count: pairs, targets: Array(targets.dropFirst() + targets.prefix(1)), sources: sources, group: group)
        return CallLoad(pairs: zip(callers, callees).map { CallLoad.Pair(caller: $0, callee: $1) }, hold: hold)
    }

    func connections(count: Int, hold: Double) async throws -> ConnectionsReport {
        try limits.check(connections: count)
        let sources = limits.sources(for: count, minimum: minimumSources)
        let before = target.pid.flatMap(residentKilobytes)
        let started = monotonicNanos()
        let clients = try await connectUsers(prefix: "u\(runTag())i", count: count, targets: targets, sources: sources, group: group)
        let connectSeconds = Double(monotonicNanos() - started) / 1e9
        let connected = target.pid.flatMap(residentKilobytes)
        // Heartbeats as the SDK sends them: a ping every 10 s per connection, spread evenly.
        let answered = NIOLockedValueBox(0)
        for client in clients {
            client.onFrame { buffer, _ in
                if buffer.contains(#""serverTime""#) { answered.withLockedValue { $0 += 1 } }
            }
        }
        var sent = 0
        let holdStart = monotonicNanos()
        let holdEnd = holdStart + UInt64(hold * 1e9)
        let interval = 10.0
        while monotonicNanos() < holdEnd {
            let elapsed = Double(monotonicNanos() - holdStart) / 1e9
            let due = Int(elapsed / interval * Double(count))
            while sent < due {
                clients[sent % count].socket.send(#"{"id":"ping","type":"ping","data":{}}"#)
                sent += 1
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        let drain = monotonicNanos() + 5_000_000_000
        while answered.withLockedValue({ $0 }) < sent, monotonicNanos() < drain {
            try? await Task.sleep(for: .milliseconds(20))
        }
        let after = target.pid.flatMap(residentKilobytes)
        let closed = clients.filter(\.isClosed).count
        for client in clients { client.socket.close() }
        return ConnectionsReport(
            connections: count, sources: sources.count, connectSeconds: (connectSeconds * 10).rounded() / 10,
            holdSeconds: hold, pingsSent: sent, pingsAnswered: answered.withLockedValue { $0 }, closedByServer: closed,
            serverRSSBeforeKiB: before, serverRSSConnectedKiB: connected, serverRSSAfterHoldKiB: after,
            bytesPerConnection: before.flatMap { before in after.map { ($0 - before) * 1024 / max(1, count) } },
            loadGeneratorRSSKiB: residentKilobytes(of: getpid()))
    }

    func loginStorm(count: Int) async throws -> LoginReport {
        try limits.check(connections: count)
        let sources = limits.sources(for: count, minimum: minimumSources)
        let tag = runTag()
        let clients = (0..<count).map { BenchClient(user: "u\(tag)l\($0)", index: $0) }
        try await forEach(clients, width: 256) { [targets, group] client in
            let target = targets[client.index % targets.count]
            try await client.connect(to: target, from: sources[client.index % sources.count], group: group)
        }
        // UserSigs made beforehand: the storm measures the server's verification, not the generator's signing.
        let now = Int64(Date().timeIntervalSince1970)
        let frames = clients.map { client in
            let sig = UserSig.generate(
                sdkAppID: target.sdkAppID, secretKey: target.secretKey, userID: client.user, expire: 86_400, time: now)
            return #"{"id":"login","type":"login","data":{"sdkAppID":\#(target.sdkAppID.rawValue),"userID":"\#(client.user)","userSig":"\#(sig)","protocolVersion":1,"platform":"bench"}}"#
        }
        let latency = LatencyRecorder()
        let outcome = NIOLockedValueBox<(done: Int, failures: Int, samples: [String], last: UInt64)>((0, 0, [], 0))
        let sentAt = clients.map { _ in NIOLockedValueBox<UInt64>(0) }
        let finished = NIOLockedValueBox<CheckedContinuation<Void, Never>?>(nil)
        for client in clients {
            client.onFrame { buffer, time in
                latency.record(nanos: time &- sentAt[client.index].withLockedValue { $0 })
                let complete = outcome.withLockedValue { outcome -> Bool in
                    outcome.done += 1
                    outcome.last = max(outcome.last, time)
                    if buffer.contains(#""error":{"#) {
                        outcome.failures += 1
                        if outcome.samples.count < 5 { outcome.samples.append(String(buffer: buffer)) }
                    }
                    return outcome.done == count
                }
                if complete { finished.withLockedValue { $0.take() }?.resume() }
            }
        }
        let start = monotonicNanos()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            finished.withLockedValue { $0 = continuation }
            for (index, client) in clients.enumerated() {
                client.socket.channel.eventLoop.execute {
                    sentAt[index].withLockedValue { $0 = monotonicNanos() }
                    client.socket.send(frames[index])
                }
            }
        }
        let result = outcome.withLockedValue { $0 }
        let seconds = Double(result.last - start) / 1e9
        for client in clients { client.socket.close() }
        return LoginReport(
            logins: count, sources: sources.count, seconds: (seconds * 1000).rounded() / 1000,
            loginsPerSecond: (Double(count) / seconds).rounded(), failures: result.failures, latency: latency.summary,
            failureSamples: result.samples)
    }

    // MARK: - output

    static func printStep(_ step: StepReport, echo: EchoReport) {
        let counters = step.counters
        table(
            "invite: \(Int(step.rate)) calls/s for \(step.seconds) s: \(counters.completed) of \(counters.started) calls done "
                + "(\(step.callsPerSecond)/s), \(counters.errors) errors, \(counters.unfinished) unfinished, "
                + "\(counters.noIdlePair) skipped (no idle pair), \(counters.recordsMissing) records missing",
            LatencySummary.header,
            [
                ["echo round trip (floor)"] + echo.roundTrip.row,
                ["invite: call.start → callReceived"] + step.invite.row,
                ["accept → caller's callStarted"] + step.acceptToConnected.row,
                ["hangup → both callEnded"] + step.hangupToEnded.row,
                ["hangup → both records durable"] + step.hangupToRecordsDurable.row,
            ])
        print("invite delay p50 / echo round trip p50 = \(step.invite.ratio(to: echo.roundTrip))")
        print(
            "CPU per call: server \(step.serverCPUPerCallMicros.map { "\(Int($0)) µs" } ?? "n/a (not its parent)")"
                + (step.serverKernelCPUPerCallMicros.map { " (\(Int($0)) µs of it in the kernel)" } ?? "") + ", "
                + "load generator \(step.generatorCPUPerCallMicros.map { "\(Int($0)) µs" } ?? "n/a")")
        if let nodes = step.nodeCPUPerCallMicros, nodes.count > 1 {
            print("  per node: " + nodes.enumerated().map { "node \($0.offset) \(Int($0.element)) µs" }.joined(separator: ", "))
        }
        if let database = step.databaseCPUPerCallMicros { print("  PostgreSQL (every postgres process): \(Int(database)) µs") }
        for sample in counters.errorSamples { print("  error: \(sample)") }
    }

    static func table(_ title: String, _ header: [String], _ rows: [[String]]) {
        print("\n\(title)")
        let widths = header.indices.map { column in
            ([header] + rows).map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, cell in
                let pad = String(repeating: " ", count: max(0, widths[index] - cell.count))
                return index == 0 ? cell + pad : pad + cell
            }.joined(separator: "  ")
        }
        print(line(header))
        print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
        rows.forEach { print(line($0)) }
    }

    func write<Parameters: Encodable, Results: Encodable>(
        _ path: String?, scenario: String, parameters: Parameters, results: Results
    ) throws {
        guard path != nil else { return }
        let output = BenchOutput(
            scenario: scenario, command: CommandLine.arguments.joined(separator: " "),
            date: ISO8601DateFormatter().string(from: Date()), smoke: smoke,
            cores: ProcessInfo.processInfo.activeProcessorCount, limits: limits, parameters: parameters, results: results)
        try Self.writeJSON(output, to: path)
    }

    /// Writes `value` as readable JSON to `path` (nothing without a path).
    static func writeJSON(_ value: some Encodable, to path: String?) throws {
        guard let path else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(value).write(to: URL(fileURLWithPath: path))
        print("results written to \(path)")
    }
}
