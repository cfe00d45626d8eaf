import Foundation
import Logging
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Three real `switchboard serve` processes on one PostgreSQL database, and SDK clients that know
/// all three addresses: a deploy (each node restarted in turn with SIGTERM) and the loss of the
/// leader (`kill -9`) end no call.
@Suite(.serialized, .enabled(if: PostgresTestDatabase.isAvailable)) struct ClusterProcessTests {
    static let secret = "cluster-process-secret"
    static let sdkAppID: SdkAppID = 1_400_000_002

    /// The nodes' arguments: the test's clients all come from 127.0.0.1, as they would from a load
    /// balancer, so the per-address limits are raised (docs/OPERATIONS.md, "Running a cluster").
    static func arguments(database: String, name: String) -> [String] {
        [
            "--app", "\(sdkAppID):\(secret)", "--database", database, "--node-id", name, "--reconnect-grace", "30",
            "--max-pending-per-ip", "5000", "--rate-limit", "login-per-ip=5000/s:5000",
        ] + (ProcessInfo.processInfo.environment["SWITCHBOARD_TEST_NODE_LOGS"] == nil ? [] : ["--log-level", "debug"])
    }

    /// SWITCHBOARD_TEST_NODE_LOGS=DIR keeps each node's log (level debug: the leader notes where each device is) there.
    static func errorLog(_ name: String) -> URL? {
        ProcessInfo.processInfo.environment["SWITCHBOARD_TEST_NODE_LOGS"].map {
            URL(fileURLWithPath: $0).appendingPathComponent("\(name)-\(UUID().uuidString.prefix(6)).log")
        }
    }

    final class Cluster: Sendable {
        let database: String
        let directory: URL
        let nodes: NIOLockedValueBox<[ServerProcess?]>
        /// Arguments every node gets beside ``ClusterProcessTests/arguments(database:name:)``.
        let extra: [String]

        init(database: String, directory: URL, nodes: [ServerProcess], extra: [String] = []) {
            self.database = database
            self.directory = directory
            self.nodes = NIOLockedValueBox(nodes)
            self.extra = extra
        }

        static func start(count: Int, extra: [String] = []) async throws -> Cluster {
            let database = try await PostgresTestDatabase.create()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-cluster-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var nodes: [ServerProcess] = []
            for index in 0..<count {
                nodes.append(
                    try ServerProcess.launch(
                        binary: CLITests.binary, arguments: arguments(database: database, name: "node\(index)") + extra,
                        directory: directory, errorLog: errorLog("node\(index)")))
            }
            return Cluster(database: database, directory: directory, nodes: nodes, extra: extra)
        }

        var ports: [Int] { nodes.withLockedValue { $0.map { $0?.port ?? 0 } } }

        func node(_ index: Int) -> ServerProcess? { nodes.withLockedValue { $0[index] } }

        /// SIGTERM, wait for a clean exit, start again on the same port.
        func restart(_ index: Int) async throws {
            let old = try #require(node(index))
            old.terminate()
            #expect(await old.waitForExit() == 0)
            let new = try ServerProcess.launch(
                binary: CLITests.binary, port: old.port,
                arguments: ClusterProcessTests.arguments(database: database, name: "node\(index)") + extra, directory: directory,
                errorLog: ClusterProcessTests.errorLog("node\(index)"))
            nodes.withLockedValue { $0[index] = new }
        }

        func kill(_ index: Int) {
            node(index)?.kill()
            nodes.withLockedValue { $0[index] = nil }
        }

        /// `/health` of a running node.
        func health(_ index: Int) async throws -> [String: Any] {
            let port = try #require(node(index)?.port)
            let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/health")!)
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }

        /// The index of the node that leads, as the nodes say.
        func leaderIndex() async throws -> Int? {
            for index in 0..<ports.count where node(index) != nil {
                let health = try await health(index)
                if let leader = health["leader"] as? String, leader == health["node"] as? String { return index }
            }
            return nil
        }

        /// The running node with the most devices connected.
        func busiestIndex() async throws -> Int {
            var best: (index: Int, devices: Int)?
            for index in 0..<ports.count where node(index) != nil {
                let devices = try await health(index)["devices"] as? Int ?? 0
                if best == nil || devices > best!.devices { best = (index, devices) }
            }
            return try #require(best).index
        }

        /// Devices connected on the running nodes.
        func connectedDevices() async -> Int {
            var total = 0
            for index in 0..<ports.count where node(index) != nil {
                total += ((try? await health(index))?["devices"] as? Int) ?? 0
            }
            return total
        }

        func stop() async {
            for index in 0..<ports.count {
                guard let node = node(index) else { continue }
                node.terminate()
                _ = await node.waitForExit()
            }
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// A client whose first address is node `home` and whose fallbacks are the others.
    static func client(
        _ user: String, device: String? = nil, home: Int, ports: [Int],
        reconnectPolicy: ReconnectPolicy = ReconnectPolicy(initialDelay: .milliseconds(50), maxDelay: .milliseconds(500))
    ) async throws -> SwitchboardClient {
        let urls = (0..<ports.count).map { URL(string: "ws://127.0.0.1:\(ports[(home + $0) % ports.count])/v1/ws")! }
        let client = SwitchboardClient(
            configuration: SwitchboardConfiguration(
                serverURL: urls[0], fallbackServerURLs: Array(urls.dropFirst()),
                deviceId: DeviceID(rawValue: device ?? "\(user)-phone"), platform: "test",
                reconnectPolicy: reconnectPolicy, logger: quietLogger))
        let sig = UserSig.generate(sdkAppID: sdkAppID, secretKey: secret, userID: user, expire: 3600)
        try await client.loginStore.login(sdkAppID: sdkAppID, userID: user, userSig: sig)
        return client
    }

    static let quietLogger: Logger = {
        var logger = Logger(label: "switchboard.cluster-test")
        logger.logLevel = .warning
        return logger
    }()

    /// One connected call, its two clients and what they heard.
    struct Pair: Sendable {
        let caller: SwitchboardClient
        let callee: SwitchboardClient
        let callerName: UserID
        let calleeName: UserID
        let callerEvents: Recorder<CallStoreEvent>
        let calleeEvents: Recorder<CallStoreEvent>
        let call: CallID
        let startTime: Int64
    }

    /// How long each client spent reconnecting, from `reconnecting` to `loggedIn`.
    final class ReconnectTimes: Sendable {
        private let box = NIOLockedValueBox<[Duration]>([])
        private let watchers = NIOLockedValueBox<[Task<Void, Never>]>([])

        func watch(_ client: SwitchboardClient) {
            let updates = client.loginStore.stateUpdates
            let task = Task { [box] in
                var droppedAt: ContinuousClock.Instant?
                for await state in updates {
                    switch state.loginStatus {
                    case .reconnecting where droppedAt == nil:
                        droppedAt = .now
                        if ProcessInfo.processInfo.environment["SWITCHBOARD_TEST_NODE_LOGS"] != nil {
                            print("drop: \(state.lastError.map { "\($0.code.name) \($0.message)" } ?? "-")")
                        }
                    case .loggedIn:
                        if let since = droppedAt { box.withLockedValue { $0.append(.now - since) } }
                        droppedAt = nil
                    default: break
                    }
                }
            }
            watchers.withLockedValue { $0.append(task) }
        }

        var values: [Duration] { box.withLockedValue { $0 } }

        /// The reconnects since the last call, as "N reconnects, p50 …, p99 …" (milliseconds).
        func summary(since start: inout Int) -> String {
            let all = values
            let durations = all[start...].map { Double($0.components.seconds) * 1000 + Double($0.components.attoseconds) / 1e15 }.sorted()
            start = all.count
            guard !durations.isEmpty else { return "no reconnects" }
            func percentile(_ p: Double) -> Int { Int(durations[min(durations.count - 1, Int(Double(durations.count) * p))]) }
            return "\(durations.count) reconnects, p50 \(percentile(0.5)) ms, p99 \(percentile(0.99)) ms, max \(Int(durations.last!)) ms"
        }

        func stop() { watchers.withLockedValue { $0.forEach { $0.cancel() } } }
    }

    /// Every client is connected and each member of each call hears the other's status report:
    /// the leader knows where every device is. `round` picks a quality that differs from the last
    /// round's, so that each report is news.
    struct ReportNotHeard: Error {}

    static func expectEveryCallAlive(_ pairs: [Pair], cluster: Cluster, round: Int) async throws {
        // The nodes are other processes: their state is looked at until it is right.
        let start = ContinuousClock.now
        var connected = await cluster.connectedDevices()
        while connected < pairs.count * 2 {
            try #require(ContinuousClock.now - start < .seconds(60), "only \(connected) clients came back")
            try await Task.sleep(for: .milliseconds(100))
            connected = await cluster.connectedDevices()
        }
        let rtts = [10, 150, 300, 600]
        let rtt = rtts[round % rtts.count]
        let quality = NetworkQuality.from(packetLoss: 0, rtt: rtt)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for pair in pairs {
                group.addTask {
                    for (client, listener, name) in [
                        (pair.caller, pair.calleeEvents, pair.callerName), (pair.callee, pair.callerEvents, pair.calleeName),
                    ] {
                        let from = listener.values.count
                        // Reports come every second from a real client, and one that reaches the
                        // node running the call before it learned that the other member's device
                        // is back may go nowhere (status is not kept for later): the next one
                        // arrives. So the client reports again every 2 s until heard, a minute at most.
                        var heard = false
                        for _ in 0..<30 where !heard {
                            try await report(client, rtt: rtt)
                            heard =
                                (try? await listener.first(from: from, timeout: .seconds(2)) {
                                    $0 == .onMemberStatusChanged(
                                        callId: pair.call, userId: name, networkQuality: quality, volumeLevel: .mute)
                                }) != nil
                        }
                        if !heard {
                            let other = name == pair.callerName ? pair.callee : pair.caller
                            let state = other.callStore.state
                            Issue.record(
                                """
                                call \(pair.call): \(name)'s report (rtt \(rtt)) did not reach the other member, who is \
                                \(other.loginStore.state.loginStatus), in call \(state.activeCall?.callId.rawValue ?? "none") as \
                                \(state.selfInfo.status), and heard since: \(listener.values[from...])
                                """)
                            throw ReportNotHeard()
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// A status report, made again after a passing failure (`isTransient`): refused with
    /// `storageUnavailable` while the cluster changes leader, as docs/PROTOCOL.md tells clients to,
    /// or lost with the connection when the client's node closes it (a node cut from its database
    /// closes its clients, sometimes only when the cut ends) and the client logs in again.
    static func report(_ client: SwitchboardClient, rtt: Int) async throws {
        for attempt in 1... {
            do {
                return try await client.callStore.reportStatus(packetLoss: 0, rtt: rtt, bitrate: 100, audioLevel: 0)
            } catch let error as SwitchboardError where error.isTransient && attempt < 20 {
                try await Task.sleep(for: .milliseconds(100 * attempt))
            }
        }
    }

    /// A hang-up as a call screen makes it (`CallKitCoordinator` does the same): made again after a
    /// passing failure, with the SDK's `RetryPolicy`; a call the server already ended, because an
    /// earlier try reached it before the connection was lost, counts as ended. The caller then
    /// checks who ended it and why.
    static func hangup(_ client: SwitchboardClient) async throws {
        do {
            try await RetryPolicy(attempts: 8, firstDelay: .milliseconds(200)).run(clock: SystemClock()) {
                try await client.callStore.hangup()
            }
        } catch let error as SwitchboardError where [.callNotFound, .callAlreadyEnded].contains(error.code) {
            print("hang-up: the call was over already (\(error.code)): an earlier try reached the server")
        }
    }

    /// 200 calls connected across three nodes; each node restarted in turn (SIGTERM, then started
    /// again on its port), then the leader killed with -9. Every call goes on: both members hear
    /// each other's reports after each step, nobody hears a call end, and each call ends at the
    /// hang-up with one true record per member. The time clients spent reconnecting is printed.
    @Test func aRollingRestartAndALostLeaderEndNoCall() async throws {
        let cluster = try await Cluster.start(count: 3)
        let ports = cluster.ports
        let times = ReconnectTimes()
        let pairCount = 200

        // Callers on node i % 3, callees on the next node.
        let pairs = try await withThrowingTaskGroup(of: Pair.self) { group in
            var pairs: [Pair] = []
            for index in 0..<pairCount {
                if index >= 25 { pairs.append(try #require(try await group.next())) }
                group.addTask {
                    let callerName = UserID(rawValue: "caller\(index)")
                    let calleeName = UserID(rawValue: "callee\(index)")
                    let caller = try await Self.client(callerName.rawValue, home: index % 3, ports: ports)
                    let callee = try await Self.client(calleeName.rawValue, home: (index + 1) % 3, ports: ports)
                    let callerEvents = Recorder(caller.callStore.events)
                    let calleeEvents = Recorder(callee.callStore.events)
                    let call = try await ServerProcessTests.connect(caller, callee, calleeName.rawValue, callerEvents, calleeEvents)
                    let startTime = try #require(caller.callStore.state.activeCall?.startTime)
                    return Pair(
                        caller: caller, callee: callee, callerName: callerName, calleeName: calleeName,
                        callerEvents: callerEvents, calleeEvents: calleeEvents, call: call, startTime: startTime)
                }
            }
            for try await pair in group { pairs.append(pair) }
            return pairs
        }
        for pair in pairs { times.watch(pair.caller); times.watch(pair.callee) }
        var seen0 = 0
        try await Self.expectEveryCallAlive(pairs, cluster: cluster, round: 0)
        print("cluster test: \(pairs.count) calls connected")
        var seen = 0

        // A deploy: each node in turn.
        for index in 0..<3 {
            try await cluster.restart(index)
            try await Self.expectEveryCallAlive(pairs, cluster: cluster, round: index + 1)
            print("cluster test: node \(index) restarted (SIGTERM): every call went on; \(times.summary(since: &seen))")
        }
        // Node loss: the node with the most clients dies, then the leader if that was another.
        let busiest = try await cluster.busiestIndex()
        let leader = try #require(try await cluster.leaderIndex())
        cluster.kill(busiest)
        try await Self.expectEveryCallAlive(pairs, cluster: cluster, round: 4)
        print(
            "cluster test: node \(busiest) (\(busiest == leader ? "the leader" : "not the leader")) killed (-9): every call went on; \(times.summary(since: &seen))"
        )
        if busiest != leader {
            cluster.kill(leader)
            try await Self.expectEveryCallAlive(pairs, cluster: cluster, round: 5)
            print("cluster test: node \(leader) (the leader) killed (-9): every call went on; \(times.summary(since: &seen))")
        }

        // Nothing ended; now every call ends at its hang-up, with true records.
        for pair in pairs {
            #expect(!pair.callerEvents.values.contains(where: isEnded) && !pair.calleeEvents.values.contains(where: isEnded))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for pair in pairs {
                group.addTask {
                    try await pair.caller.callStore.hangup(callId: pair.call)
                    for events in [pair.callerEvents, pair.calleeEvents] {
                        let ended = try await events.first(from: 0, timeout: .seconds(60), where: isEnded)
                        #expect(
                            ended == .onCallEnded(callId: pair.call, mediaType: .audio, reason: .hangup, userId: pair.callerName))
                        let record = try #require(await events.first(from: 0, timeout: .seconds(60), where: isRecord).record)
                        #expect(record.callId == pair.call && record.result == .answered && record.endReason == .hangup)
                        #expect(record.startTime == pair.startTime)
                        #expect(record.duration == Int((record.endTime - pair.startTime) / 1000))
                    }
                    let stored = try await pair.callee.callStore.queryRecords(count: 10).records.filter { $0.callId == pair.call }
                    #expect(stored.count == 1)
                }
            }
            try await group.waitForAll()
        }

        #expect(times.values.count >= pairCount * 2)
        print("cluster test: over the whole test, \(times.summary(since: &seen0))")
        times.stop()
        for pair in pairs {
            try? await pair.caller.loginStore.logout()
            try? await pair.callee.loginStore.logout()
        }
        await cluster.stop()
    }
}
