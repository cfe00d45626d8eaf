import Foundation
import Logging
import Switchboard
import SwitchboardProtocol
import SwitchboardTestServers
import SwitchboardTesting
import SwitchboardTools
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A cluster node cut from its clients or from its database by a network that drops every packet
/// (docs/ARCHITECTURE.md, "Failures"), on real time with the production defaults: two
/// `switchboard serve` processes on one PostgreSQL (node heartbeat 1 s, node timeout 5 s,
/// WebSocket heartbeat 10 s, reconnect grace 15 s) and the SDK's default reconnect policy.
@Suite(.serialized, .enabled(if: PostgresTestDatabase.isAvailable)) struct NodeCutProcessTests {
    static let secret = "node-cut-secret"
    static let sdkAppID: SdkAppID = 1_400_000_034

    static func client(_ user: String, url: URL, fallbacks: [URL]) async throws -> SwitchboardClient {
        var logger = Logger(label: "switchboard.node-cut-test")
        logger.logLevel = .warning
        let client = SwitchboardClient(
            configuration: SwitchboardConfiguration(
                serverURL: url, fallbackServerURLs: fallbacks, deviceId: DeviceID(rawValue: "\(user)-phone"), platform: "test",
                logger: logger))
        let sig = UserSig.generate(sdkAppID: sdkAppID, secretKey: secret, userID: user, expire: 3600)
        try await client.loginStore.login(sdkAppID: sdkAppID, userID: user, userSig: sig)
        return client
    }

    /// The time from `start` at which `recorder` has a value (at or after `from`) that matches.
    static func when<Value: Sendable>(
        _ recorder: Recorder<Value>, from: Int, since start: ContinuousClock.Instant,
        where predicate: @escaping @Sendable (Value) -> Bool
    ) -> Task<Duration?, Never> {
        Task {
            guard (try? await recorder.first(from: from, timeout: .seconds(120), where: predicate)) != nil else { return nil }
            return ContinuousClock.now - start
        }
    }

    /// When a client was closed (`reconnecting`) and logged in again, from `start`; nil if it was
    /// not within two minutes.
    static func move(
        _ login: Recorder<LoginStore.State>, from: Int, since start: ContinuousClock.Instant
    ) -> Task<(Duration, Duration)?, Never> {
        Task {
            guard let away = try? await login.position(after: from, timeout: .seconds(60), where: { $0.loginStatus == .reconnecting })
            else { return nil }
            let closed = ContinuousClock.now - start
            guard (try? await login.first(from: away, timeout: .seconds(60)) { $0.loginStatus == .loggedIn }) != nil else { return nil }
            return (closed, ContinuousClock.now - start)
        }
    }

    /// Starts node `index`. `ServerProcess.launch` blocks its thread until the node listens, so it
    /// runs on a thread of its own: on a cooperative thread it could starve the proxy a node
    /// reaches its database through (two cores, two such threads), and the node never listens.
    static func launch(_ index: Int, database: String, directory: URL) async throws -> ServerProcess {
        try await launch(name: "node\(index)", database: database, directory: directory)
    }

    /// Starts a node named `name` on a thread of its own, inside a test network host's namespace
    /// when `network` is given (listening on that host's address).
    static func launch(
        name: String, database: String, directory: URL, network: TestNetwork? = nil
    ) async throws -> ServerProcess {
        let host = network.map { ["--host", $0.address(of: name)] } ?? []
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result {
                        try ServerProcess.launch(
                            binary: CLITests.binary,
                            arguments: host + [
                                "--app", "\(Self.sdkAppID):\(Self.secret)", "--database", database, "--node-id", name,
                            ],
                            directory: directory, errorLog: ClusterProcessTests.errorLog(name),
                            launcher: network?.launcher(in: name))
                    })
            }
        }
    }

    /// SIGTERM to each node; one still running 15 s later is killed (and said so).
    static func stop(_ nodes: [ServerProcess]) async {
        for node in nodes {
            node.terminate()
            let start = ContinuousClock.now
            while node.isRunning, ContinuousClock.now - start < .seconds(15) { try? await Task.sleep(for: .milliseconds(100)) }
            if node.isRunning {
                print("node on port \(node.port) did not exit within 15 s of SIGTERM: killed")
                node.kill()
            }
        }
    }

    /// Node 0, once it leads, and node 1, which reaches PostgreSQL through the returned proxy.
    static func nodeBehindAProxy(database: String, directory: URL) async throws -> (ServerProcess, ServerProcess, TCPProxy) {
        let leader = try await launch(0, database: database, directory: directory)
        let started = ContinuousClock.now
        while !(await leads(leader.port)) {
            try #require(ContinuousClock.now - started < .seconds(30), "node 0 does not lead")
            try await Task.sleep(for: .milliseconds(100))
        }
        var components = try #require(URLComponents(string: database))
        let proxy = try await TCPProxy.start(targetPort: try #require(components.port))
        components.port = proxy.port
        let cut = try await launch(1, database: try #require(components.string), directory: directory)
        return (leader, cut, proxy)
    }

    /// Whether the node on `port` says it leads.
    static func leads(_ port: Int) async -> Bool {
        guard let (data, _) = try? await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/health")!),
            let health = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        else { return false }
        return health["leader"] as? String != nil && health["leader"] as? String == health["node"] as? String
    }

    /// Node 1 reaches PostgreSQL through a proxy that stalls every byte for `seconds` (the queries
    /// wait; nothing fails or closes); node 0 leads. alice and bob are in a call on node 1, with
    /// node 0 as their other address. However the cut falls between node 1's heartbeats, the call
    /// goes on: same call, same start, nobody hears it end; the times of the clients' move, if
    /// they moved, are printed.
    @Test(.serialized, .timeLimit(.minutes(3)), arguments: [5, 30]) func aNodeCutFromTheDatabase(seconds: Int) async throws {
        let database = try await PostgresTestDatabase.create()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-db-cut-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let (leader, cut, proxy) = try await Self.nodeBehindAProxy(database: database, directory: directory)
        let alice = try await Self.client("alice", url: cut.url, fallbacks: [leader.url])
        let bob = try await Self.client("bob", url: cut.url, fallbacks: [leader.url])
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let aliceLogin = Recorder(alice.loginStore.stateUpdates)
        let bobLogin = Recorder(bob.loginStore.stateUpdates)
        let call = try await ServerProcessTests.connect(alice, bob, "bob", aliceEvents, bobEvents)
        let startTime = try #require(alice.callStore.state.activeCall?.startTime)

        let marks = (alice: aliceLogin.values.count, bob: bobLogin.values.count)
        let start = ContinuousClock.now
        proxy.stall = true
        let moves = [Self.move(aliceLogin, from: marks.alice, since: start), Self.move(bobLogin, from: marks.bob, since: start)]
        /// The same call from the same start on both; each hears the other's report. A report
        /// sent while the listener was being moved (its node closed it as the cut ended) may not
        /// reach it: it is sent again, three times at most.
        func expectTheCallAgreed(rtt: Int) async throws {
            let quality = NetworkQuality.from(packetLoss: 0, rtt: rtt)
            for client in [alice, bob] {
                #expect(client.callStore.state.activeCall?.callId == call)
                #expect(client.callStore.state.activeCall?.startTime == startTime)
            }
            for (client, listener, name) in [(alice, bobEvents, "alice"), (bob, aliceEvents, "bob")] {
                var heard = false
                for _ in 1...3 where !heard {
                    let from = listener.values.count
                    try await ClusterProcessTests.report(client, rtt: rtt)
                    heard =
                        (try? await listener.first(from: from, timeout: .seconds(20)) {
                            $0 == .onMemberStatusChanged(
                                callId: call, userId: UserID(rawValue: name), networkQuality: quality, volumeLevel: .mute)
                        }) != nil
                }
                #expect(heard, "\(name)'s report of rtt \(rtt) did not reach the other side")
            }
        }
        if seconds > 6 {
            // The node closes its clients 4–6 s into the cut; they log in on node 0 and the call
            // goes on there while node 1 is still cut off.
            for (name, move) in zip(["alice", "bob"], moves) {
                let (closed, back) = try #require(await move.value)
                print("database cut \(seconds) s: \(name) closed \(closed) after the cut, logged in on node 0 at \(back)")
            }
            try await expectTheCallAgreed(rtt: 150)
            print("database cut \(seconds) s: call state agreed \(ContinuousClock.now - start) after the cut")
        }
        try await Task.sleep(until: start + .seconds(seconds))
        proxy.stall = false
        print("database cut \(seconds) s: stalled for \(ContinuousClock.now - start)")
        // A node that noticed the cut only at its end closed its clients then: they move while
        // the reports go (each sent again if its listener was moving).
        try await expectTheCallAgreed(rtt: 600)
        print("database cut \(seconds) s: call state agreed after the cut ended (\(ContinuousClock.now - start) after it began)")
        let moved = [aliceLogin, bobLogin].enumerated().filter { index, login in
            login.values.dropFirst(index == 0 ? marks.alice : marks.bob).contains { $0.loginStatus == .reconnecting }
        }.count
        print("database cut \(seconds) s: \(moved) of 2 clients moved")
        if seconds > 6 { #expect(moved == 2) }
        // Moved or not, each ends logged in (a move that had begun finished: a report needs it).
        for (client, name) in [(alice, "alice"), (bob, "bob")] {
            #expect(client.loginStore.state.loginStatus == .loggedIn, "\(name) is not logged in after the cut")
        }
        #expect(!aliceEvents.values.contains(where: isEnded) && !bobEvents.values.contains(where: isEnded))
        try await ClusterProcessTests.hangup(bob)
        print("database cut \(seconds) s: bob hung up \(ContinuousClock.now - start) after the cut began")
        #expect(try await aliceEvents.first(from: 0, where: isEnded) == .onCallEnded(callId: call, mediaType: .audio, reason: .hangup, userId: "bob"))

        try? await alice.loginStore.logout()
        try? await bob.loginStore.logout()
        await Self.stop([cut, leader])
        proxy.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A node told to stop (SIGTERM) while cut off from PostgreSQL, with a call on it, still stops
    /// within its 10 s shutdown bound: its last journal writes cannot reach the database, and the
    /// shutdown gives them up (logged) rather than wait for a database that does not answer. It used
    /// to run on for good, its shutdown waiting for the writer to drain.
    @Test(.timeLimit(.minutes(2))) func aNodeToldToStopWithoutItsDatabaseStops() async throws {
        let database = try await PostgresTestDatabase.create()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-db-stop-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let (leader, cut, proxy) = try await Self.nodeBehindAProxy(database: database, directory: directory)
        let alice = try await Self.client("alice", url: cut.url, fallbacks: [leader.url])
        let bob = try await Self.client("bob", url: cut.url, fallbacks: [leader.url])
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        _ = try await ServerProcessTests.connect(alice, bob, "bob", aliceEvents, bobEvents)

        proxy.stall = true
        let stop = ContinuousClock.now
        cut.terminate()
        while cut.isRunning, ContinuousClock.now - stop < .seconds(30) { try await Task.sleep(for: .milliseconds(100)) }
        let stopped = !cut.isRunning
        print("node told to stop without its database: \(stopped ? "exited \(ContinuousClock.now - stop) after SIGTERM" : "still running after 30 s")")
        if !stopped { cut.kill() }
        #expect(stopped)

        proxy.stall = false
        try? await alice.loginStore.logout()
        try? await bob.loginStore.logout()
        await Self.stop([leader])
        proxy.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// alice is on node 1 through a proxy that is then blackholed (the node is cut from its
    /// clients; no close reaches either side), with node 0 as her other address; bob is on node 0.
    /// The server notices first (its WebSocket ping goes unanswered: 10–20 s) and starts alice's
    /// grace; the SDK notices a heartbeat later (two silent heartbeats) and goes to its other
    /// address first, within the grace: the call goes on.
    @Test(.timeLimit(.minutes(4))) func aNodeCutFromItsClients() async throws {
        let database = try await PostgresTestDatabase.create()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-node-cut-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let nodes = [
            try await Self.launch(0, database: database, directory: directory),
            try await Self.launch(1, database: database, directory: directory),
        ]
        let proxy = try await TCPProxy.start(targetPort: nodes[1].port)
        let alice = try await Self.client(
            "alice", url: URL(string: "ws://127.0.0.1:\(proxy.port)/v1/ws")!, fallbacks: [nodes[0].url])
        let bob = try await Self.client("bob", url: nodes[0].url, fallbacks: [])
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let aliceLogin = Recorder(alice.loginStore.stateUpdates)
        let call = try await ServerProcessTests.connect(alice, bob, "bob", aliceEvents, bobEvents)

        let marks = (login: aliceLogin.values.count, bob: bobEvents.values.count, alice: aliceEvents.values.count)
        let start = ContinuousClock.now
        proxy.blackhole = true
        let aliceAway = Self.when(aliceLogin, from: marks.login, since: start) { $0.loginStatus == .reconnecting }
        let aliceDown = Self.when(bobEvents, from: marks.bob, since: start) {
            if case .onMemberStatusChanged(call, "alice", .down, _) = $0 { true } else { false }
        }
        let bobHeardEnd = Self.when(bobEvents, from: marks.bob, since: start, where: isEnded)
        let away = try await aliceLogin.position(after: marks.login, timeout: .seconds(120)) { $0.loginStatus == .reconnecting }
        try await aliceLogin.first(from: away, timeout: .seconds(120)) { $0.loginStatus == .loggedIn }
        let back = ContinuousClock.now - start
        print("node cut from its clients: bob sees alice down \(await aliceDown.value.map { "\($0)" } ?? "never")")
        print("node cut from its clients: alice reconnecting \(await aliceAway.value.map { "\($0)" } ?? "never"), logged in on node 0 \(back)")
        // The call's state once alice is back: either it went on, or both heard it end.
        let from = bobEvents.values.count
        var wentOn = false
        if (try? await alice.callStore.reportStatus(packetLoss: 0, rtt: 10, bitrate: 100, audioLevel: 0)) != nil {
            let excellent = try? await bobEvents.position(after: from, timeout: .seconds(10)) {
                if case .onMemberStatusChanged(call, "alice", .excellent, _) = $0 { true } else { false }
            }
            wentOn = excellent != nil
            // Before alice's report came back, bob's screen showed her with no network: the
            // server noticed the cut (an unanswered ping) and said so while she was away.
            if let excellent {
                #expect(
                    bobEvents.values[marks.bob..<excellent].contains {
                        if case .onMemberStatusChanged(call, "alice", .down, _) = $0 { true } else { false }
                    }, "bob never saw alice down while she was cut off")
            }
        }
        if wentOn {
            print("node cut from its clients: the call went on (\(ContinuousClock.now - start))")
            bobHeardEnd.cancel()
        } else {
            let ended = bobEvents.values.dropFirst(marks.bob).first(where: isEnded)
            print(
                "node cut from its clients: the call ended for bob at \(await bobHeardEnd.value.map { "\($0)" } ?? "never"): \(ended.map { "\($0)" } ?? "-"); alice heard \(aliceEvents.values.dropFirst(marks.alice).first(where: isEnded).map { "\($0)" } ?? "nothing")"
            )
        }
        #expect(wentOn)

        proxy.blackhole = false
        proxy.stop()
        try? await alice.loginStore.logout()
        try? await bob.loginStore.logout()
        await Self.stop(nodes)
        try? FileManager.default.removeItem(at: directory)
    }

    /// A node that stops dead without closing anything (SIGSTOP: its machine froze or vanished;
    /// its sockets stay open, nothing answers): alice and bob are in a call on it, with node 0 (the
    /// leader) as their other address. The leader takes the node for dead after 5 s and gives their
    /// devices the grace their clients need to notice (`ClusterNode.lostNodeGrace`: 40 s with the
    /// defaults); they notice after two silent heartbeats, log in on node 0, and the call goes on.
    /// (With the plain 15 s grace the call ended 21 s after the stop; the clients came back at 30 s.)
    @Test(.timeLimit(.minutes(3))) func aNodeThatStopsDead() async throws {
        let database = try await PostgresTestDatabase.create()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-stopped-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let leader = try await Self.launch(0, database: database, directory: directory)
        let started = ContinuousClock.now
        while !(await Self.leads(leader.port)) {
            try #require(ContinuousClock.now - started < .seconds(30), "node 0 does not lead")
            try await Task.sleep(for: .milliseconds(100))
        }
        let stopped = try await Self.launch(1, database: database, directory: directory)
        let alice = try await Self.client("alice", url: stopped.url, fallbacks: [leader.url])
        let bob = try await Self.client("bob", url: stopped.url, fallbacks: [leader.url])
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let aliceLogin = Recorder(alice.loginStore.stateUpdates)
        let bobLogin = Recorder(bob.loginStore.stateUpdates)
        let call = try await ServerProcessTests.connect(alice, bob, "bob", aliceEvents, bobEvents)

        let marks = (alice: aliceLogin.values.count, bob: bobLogin.values.count)
        let start = ContinuousClock.now
        kill(stopped.processIdentifier, SIGSTOP)
        let moves = [Self.move(aliceLogin, from: marks.alice, since: start), Self.move(bobLogin, from: marks.bob, since: start)]
        for (name, move) in zip(["alice", "bob"], moves) {
            let (closed, back) = try #require(await move.value)
            print("node stopped dead: \(name) noticed \(closed) after the stop, logged in on node 0 at \(back)")
        }
        // Both back on node 0: alice's report reaches bob there (the later event), and by then
        // neither heard the call end.
        #expect(alice.callStore.state.activeCall?.callId == call && bob.callStore.state.activeCall?.callId == call)
        let from = bobEvents.values.count
        try await ClusterProcessTests.report(alice, rtt: 10)
        try await bobEvents.first(from: from, timeout: .seconds(30)) {
            $0 == .onMemberStatusChanged(callId: call, userId: "alice", networkQuality: .excellent, volumeLevel: .mute)
        }
        let ended = (aliceEvents.values.first(where: isEnded), bobEvents.values.first(where: isEnded))
        print("node stopped dead: the call \(ended.0 == nil && ended.1 == nil ? "went on" : "ended: \(String(describing: ended))")")
        #expect(ended.0 == nil && ended.1 == nil)

        kill(stopped.processIdentifier, SIGCONT)
        try? await alice.loginStore.logout()
        try? await bob.loginStore.logout()
        await Self.stop([stopped, leader])
        try? FileManager.default.removeItem(at: directory)
    }
}
