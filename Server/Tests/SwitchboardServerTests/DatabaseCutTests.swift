import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTestServers
import SwitchboardTesting
import SwitchboardTools
import Testing

@testable import SwitchboardServer

/// The rules of ``DatabaseWatch``: when a node takes itself for cut off from its database, and when
/// it serves again.
struct DatabaseWatchTests {
    enum Step: Sendable, CustomStringConvertible {
        case heartbeat(at: Int64)
        case check(at: Int64)

        var description: String {
            switch self {
            case .heartbeat(let at): "heartbeat at \(at)"
            case .check(let at): "check at \(at)"
            }
        }
    }

    /// Each case: the steps after a start at 0 with a timeout of 5,000 ms, and the action of each.
    static let cases: [(String, [(Step, DatabaseWatch.Action?)])] = [
        ("heartbeats keep it reachable", [(.check(at: 4_999), nil), (.heartbeat(at: 4_000), nil), (.check(at: 8_999), nil)]),
        ("cut off when the last heartbeat is timeout old", [(.check(at: 5_000), .closeConnections)]),
        ("it closes once per cut", [(.check(at: 5_000), .closeConnections), (.check(at: 9_000), nil)]),
        (
            "serves again after a heartbeat, and may be cut off again",
            [
                (.check(at: 6_000), .closeConnections), (.heartbeat(at: 30_000), .serve), (.check(at: 34_999), nil),
                (.check(at: 35_000), .closeConnections),
            ]
        ),
        (
            "a heartbeat noted late does not move the last one back",
            [(.heartbeat(at: 3_000), nil), (.heartbeat(at: 2_000), nil), (.check(at: 7_999), nil), (.check(at: 8_000), .closeConnections)]
        ),
    ]

    @Test(arguments: cases.indices) func transitions(_ index: Int) {
        let (name, steps) = Self.cases[index]
        var watch = DatabaseWatch(timeout: 5_000, startedAt: 0)
        for (step, expected) in steps {
            let action =
                switch step {
                case .heartbeat(let at): watch.heartbeatSucceeded(at: at)
                case .check(let at): watch.check(now: at)
                }
            #expect(action == expected, "\(name): \(step)")
        }
    }
}

/// A node cut off from PostgreSQL while its clients still reach it (docs/ARCHITECTURE.md,
/// "Failures"). Two nodes on the test clock; node 0 leads, node 1 reaches the database through a
/// proxy that stalls every byte (a network that drops packets: the queries wait, nothing fails).
/// alice and bob are in a call on node 1, with node 0 as their other address.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable)) struct DatabaseCutTests {
    /// For just under `seconds` of the test clock, starting just after node 1's heartbeat (the best
    /// phase: a cut just under `nodeTimeout` is not noticed; in real time the last heartbeat is up
    /// to a heartbeat interval older). The call goes on either way, same call, nobody ends it; a
    /// cut of `nodeTimeout` or longer moves the clients to node 0 (closed at 5 s, logged in there
    /// a reconnect delay later), where the call goes on.
    @Test(.timeLimit(.minutes(1)), arguments: [5, 30]) func aNodeCutOffFromTheDatabase(seconds: Int) async throws {
        let cluster = try await TestCluster.start(nodes: 2, databaseThroughProxy: [1])
        #expect(cluster.leaderIndex == 0)
        let (leader, cut) = (cluster.nodes[0], cluster.nodes[1])
        let proxy = try #require(cluster.databaseProxies[1])
        let pair = try await CallOnACutNode.start(on: cut, otherAddress: leader)
        let (aliceLogin, bobLogin) = (pair.aliceLogin, pair.bobLogin)

        await cluster.tick()
        let marks = (alice: aliceLogin.values.count, bob: bobLogin.values.count)
        let wall = ContinuousClock.now
        proxy.stall = true
        var closedAfter: Int?
        var movedAfter: Int?
        var away = (alice: 0, bob: 0)
        for second in 1...(seconds + 1) {
            if second == seconds {
                // The network is back just before the clock reaches the cut's end: the heartbeat
                // that waited gets through, then one more.
                proxy.stall = false
                await cut.node.clusterHeartbeat()
            }
            cluster.clock.advance(by: .seconds(1))
            // The watchdog's look (it looks by itself too, every heartbeat interval).
            await cut.node.clusterWatchDatabase()
            if closedAfter != nil, movedAfter == nil {
                // The first attempt, a reconnect delay after the close, goes to the other address.
                try await aliceLogin.first(from: away.alice) { $0.loginStatus == .loggedIn }
                try await bobLogin.first(from: away.bob) { $0.loginStatus == .loggedIn }
                movedAfter = second
                print("cut \(seconds) s: clients logged in on node 0 \(second) s after the cut (test clock; \(ContinuousClock.now - wall) real)")
            }
            await leader.node.clusterHeartbeat()
            if closedAfter == nil, cut.node.isClusterCutOff {
                closedAfter = second
                away.alice = try await aliceLogin.position(after: marks.alice) { $0.loginStatus == .reconnecting }
                away.bob = try await bobLogin.position(after: marks.bob) { $0.loginStatus == .reconnecting }
                print("cut \(seconds) s: node 1 closed its clients \(second) s after the cut (test clock)")
                // A login on the cut-off node is refused at once, not after the cut.
                let raw = try await RawClient(url: cut.url)
                let refused = try await raw.request(
                    LoginRequest(sdkAppID: cut.app.sdkAppID, userID: "carol", userSig: cut.userSig("carol")), id: "1")
                #expect(RawClient.errorCode(refused) == SwitchboardError.Code.storageUnavailable.rawValue)
            }
        }
        #expect(!cut.node.isClusterCutOff)
        if seconds < 6 {
            // Not noticed: nobody reconnected.
            #expect(closedAfter == nil && movedAfter == nil)
            #expect(!aliceLogin.values.dropFirst(marks.alice).contains { $0.loginStatus != .loggedIn })
        } else {
            #expect(closedAfter == 5 && movedAfter == 6)
        }

        await cluster.tick()
        try await pair.expectTheCallAgreed()
        print("cut \(seconds) s: call state agreed \(ContinuousClock.now - wall) real after the cut began")

        // Node 1 serves again.
        let carol = try await cut.client("carol")
        #expect(carol.loginStore.state.loginStatus == .loggedIn)

        try await pair.expectItEndsAtTheHangUp()
        await cluster.stop()
    }

    /// The leader cut off (through its stalling proxy; alice and bob in a call on it, with the
    /// other node as their other address). Once its watchdog takes it for cut off it no longer leads,
    /// before the cut ends: it steps down, then closes its clients. Its lock goes once PostgreSQL
    /// hears its lock connection close (here when the stall ends; on a real cut the keepalives drop
    /// it about 8 s in: `LeaderDatabaseCutTests`); a node that reaches the database takes it, the
    /// clients are logged in on the other node, and the call goes on. Before, the cut-off leader led on
    /// until a heartbeat got through after the cut, beside the new leader on a real network.
    @Test(.timeLimit(.minutes(1))) func aLeaderCutOffStepsDown() async throws {
        // Both through a proxy: whichever took the lead first is cut.
        let cluster = try await TestCluster.start(nodes: 2, databaseThroughProxy: [0, 1])
        let leader = try #require(cluster.leaderIndex)
        let (cut, other) = (cluster.nodes[leader], cluster.nodes[1 - leader])
        let proxy = try #require(cluster.databaseProxies[leader])
        let pair = try await CallOnACutNode.start(on: cut, otherAddress: other)
        let (aliceLogin, bobLogin) = (pair.aliceLogin, pair.bobLogin)

        await cluster.tick()
        let marks = (alice: aliceLogin.values.count, bob: bobLogin.values.count)
        proxy.stall = true
        for _ in 1...5 {
            cluster.clock.advance(by: .seconds(1))
            await cut.node.clusterWatchDatabase()
            await other.node.clusterHeartbeat()
        }
        #expect(cut.node.isClusterCutOff)
        #expect(!cut.node.isClusterLeader, "the cut-off leader still leads")
        // It closed its lock connection: PostgreSQL hears that through the stalling proxy at once
        // (on a real cut, only after the keepalives, about 8 s in) and the other node takes the
        // lock at a heartbeat, while the cut goes on.
        var attempts = 0
        while !other.node.isClusterLeader {
            attempts += 1
            try #require(attempts < 200, "the other node did not take the lock")
            await other.node.clusterHeartbeat()
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(cluster.leaderIndex == 1 - leader)
        let away = (
            alice: try await aliceLogin.position(after: marks.alice) { $0.loginStatus == .reconnecting },
            bob: try await bobLogin.position(after: marks.bob) { $0.loginStatus == .reconnecting }
        )
        func loggedIn(_ login: Recorder<LoginStore.State>, after position: Int) async -> Bool {
            (try? await login.first(from: position, timeout: .seconds(2)) { $0.loginStatus == .loggedIn }) != nil
        }
        attempts = 0
        while true {
            let back = (alice: await loggedIn(aliceLogin, after: away.alice), bob: await loggedIn(bobLogin, after: away.bob))
            if back.alice && back.bob { break }
            // A reconnect delay on the test clock, while the cut goes on.
            attempts += 1
            try #require(attempts < 10, "alice and bob are not logged in again")
            cluster.clock.advance(by: .seconds(1))
            await other.node.clusterHeartbeat()
        }
        proxy.stall = false
        await cluster.tick()
        #expect(cluster.leaderIndex == 1 - leader)
        print("leader cut: node \(cluster.leaderIndex.map { "\($0)" } ?? "-") leads (node \(leader) before); alice and bob logged in there during the cut")

        try await pair.expectTheCallAgreed()
        try await pair.expectItEndsAtTheHangUp()
        await cluster.stop()
    }
}

/// alice and bob in an audio call on a node about to be cut off from its database, with another
/// node as their other address; what both tests of ``DatabaseCutTests`` check afterwards.
struct CallOnACutNode {
    let alice: SwitchboardClient
    let bob: SwitchboardClient
    let aliceEvents: Recorder<CallStoreEvent>
    let bobEvents: Recorder<CallStoreEvent>
    let aliceLogin: Recorder<LoginStore.State>
    let bobLogin: Recorder<LoginStore.State>
    let call: CallID
    let startTime: Int64

    static func start(on node: TestServer, otherAddress other: TestServer) async throws -> CallOnACutNode {
        let alice = try await node.client("alice", deviceId: "alice-phone", fallbackURLs: [other.url])
        let bob = try await node.client("bob", deviceId: "bob-phone", fallbackURLs: [other.url])
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let aliceLogin = Recorder(alice.loginStore.stateUpdates)
        let bobLogin = Recorder(bob.loginStore.stateUpdates)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio).callId
        try await bobEvents.first(from: 0, where: isReceived)
        try await bob.callStore.accept()
        try await aliceEvents.first(from: 0, where: isStarted)
        try await bobEvents.first(from: 0, where: isStarted)
        let startTime = try #require(alice.callStore.state.activeCall?.startTime)
        return CallOnACutNode(
            alice: alice, bob: bob, aliceEvents: aliceEvents, bobEvents: bobEvents, aliceLogin: aliceLogin, bobLogin: bobLogin,
            call: call, startTime: startTime)
    }

    /// Both in the same call, from the same start; bob hears alice's status through the leader.
    func expectTheCallAgreed() async throws {
        for client in [alice, bob] {
            #expect(client.callStore.state.activeCall?.callId == call)
            #expect(client.callStore.state.activeCall?.startTime == startTime)
        }
        let statusFrom = bobEvents.values.count
        try await alice.callStore.reportStatus(packetLoss: 0, rtt: 10, bitrate: 100, audioLevel: 10)
        try await bobEvents.first(from: statusFrom) { [call] in
            if case .onMemberStatusChanged(call, "alice", .excellent, _) = $0 { true } else { false }
        }
    }

    /// The first end either hears of is bob's hang-up; neither heard the call start again.
    func expectItEndsAtTheHangUp() async throws {
        #expect(aliceEvents.values.filter(isEnded).isEmpty && bobEvents.values.filter(isEnded).isEmpty)
        try await bob.callStore.hangup()
        #expect(try await aliceEvents.first(from: 0, where: isEnded) == .onCallEnded(callId: call, mediaType: .audio, reason: .hangup, userId: "bob"))
        #expect(aliceEvents.values.filter(isStarted).count == 1 && bobEvents.values.filter(isStarted).count == 1)
    }
}
