import Foundation
import Logging
import Switchboard
import SwitchboardProtocol
import SwitchboardTestServers
import SwitchboardTesting
import SwitchboardTools
import Testing

/// A cluster node cut from its clients: the network between them drops every packet, so no close
/// reaches either side (docs/ARCHITECTURE.md, "Failures"). Real time and the production defaults:
/// two `switchboard serve` processes on one PostgreSQL (WebSocket heartbeat 10 s, reconnect grace
/// 15 s), the SDK's default reconnect policy; alice on node 1 through a proxy that is blackholed,
/// with node 0 as her other address; bob on node 0.
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

    @Test(.timeLimit(.minutes(4))) func aNodeCutFromItsClients() async throws {
        let database = try await PostgresTestDatabase.create()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-node-cut-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let nodes = try (0..<2).map { index in
            try ServerProcess.launch(
                binary: CLITests.binary,
                arguments: [
                    "--app", "\(Self.sdkAppID):\(Self.secret)", "--database", database, "--node-id", "node\(index)",
                ],
                directory: directory, errorLog: ClusterProcessTests.errorLog("node\(index)"))
        }
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
            wentOn =
                (try? await bobEvents.first(from: from, timeout: .seconds(10)) {
                    if case .onMemberStatusChanged(call, "alice", .excellent, _) = $0 { true } else { false }
                }) != nil
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
        for node in nodes {
            node.terminate()
            _ = await node.waitForExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}
