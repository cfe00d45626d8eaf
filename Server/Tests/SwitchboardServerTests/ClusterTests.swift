import Foundation
import Logging
import PostgresNIO
import Switchboard
import SwitchboardProtocol
import SwitchboardTestServers
import SwitchboardTesting
import SwitchboardTools
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import SwitchboardServer

/// Three nodes on one PostgreSQL database (scripts/test starts the server): clients on different
/// nodes call each other as if on one.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable)) struct ClusterTests {
    static func client(_ cluster: TestCluster, _ node: Int, _ user: String, device: String? = nil) async throws
        -> SwitchboardClient
    {
        try await cluster.nodes[node].client(user, deviceId: device)
    }

    /// A cluster of three, with alice and bob each on one of the two nodes that do not lead.
    static func twoUsersBesideTheLeader(
        configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> (TestCluster, Int, SwitchboardClient, SwitchboardClient) {
        let cluster = try await TestCluster.start(configure: configure)
        let leader = try #require(cluster.leaderIndex)
        let others = (0..<3).filter { $0 != leader }
        return (cluster, leader, try await client(cluster, others[0], "alice"), try await client(cluster, others[1], "bob"))
    }

    /// The leader shuts down (a deploy); the two other nodes look, one of them takes the lead, and
    /// the other looks again and learns it. Returns the nodes left and which of them leads.
    static func theLeaderLeaves(_ cluster: TestCluster, _ leader: Int) async throws -> (others: [Int], next: Int) {
        let others = (0..<3).filter { $0 != leader }
        await cluster.nodes[leader].stopKeepingFiles()
        for index in others { await cluster.nodes[index].node.clusterHeartbeat() }
        let next = try #require(others.first { cluster.nodes[$0].node.isClusterLeader })
        #expect(cluster.nodes.filter { $0.node.isClusterLeader }.count == 1)
        for index in others where index != next { await cluster.nodes[index].node.clusterHeartbeat() }
        return (others, next)
    }

    @Test func oneNodeLeadsAndEveryNodeKnowsIt() async throws {
        let cluster = try await TestCluster.start()
        let leader = try #require(cluster.leaderIndex)
        #expect(cluster.nodes.filter { $0.node.isClusterLeader }.count == 1)
        let leaderId = try #require(cluster.nodes[leader].node.clusterNodeId)
        #expect(leaderId.hasPrefix("node\(leader)-"))
        for node in cluster.nodes {
            #expect(node.node.inspection.cluster?.leader == leaderId)
        }
        await cluster.stop()
    }

    /// A node that finds no leader (another holds the lock but does not lead) refuses logins with
    /// `storageUnavailable`, keeping the connection; once the lock is free, the next login on it
    /// succeeds: the node looks for a leader, takes the lead and answers.
    @Test func aLoginWithoutALeaderIsRefusedAndMayBeTriedAgain() async throws {
        let url = try await PostgresTestDatabase.create()
        let squatter = try await PostgresTestDatabase.holdLock(ClusterNode.leaderLock, in: url)
        let server = try await TestServer.start { configuration in
            configuration.database = .postgres(url: url)
            configuration.nodeId = "alone"
        }
        let raw = try await RawClient(url: server.url)
        let login = LoginRequest(sdkAppID: server.app.sdkAppID, userID: "alice", userSig: server.userSig("alice"))
        let refused = try await raw.request(login, id: "1")
        #expect(RawClient.errorCode(refused) == SwitchboardError.Code.storageUnavailable.rawValue)
        #expect(!server.node.isClusterLeader)

        try await squatter.release()
        let accepted = try await raw.request(login, id: "2")
        #expect(RawClient.errorCode(accepted) == nil)
        #expect(server.node.isClusterLeader)
        // The connection is logged in: requests that need a session are served.
        let blocked = try await raw.request(BlockedUsersRequest(), id: "3")
        #expect(RawClient.errorCode(blocked) == nil)
        await server.stop()
    }

    /// A call between users on two nodes that are not the leader: ring, accept, the same start
    /// time on both, a media signal relayed, hang-up, a record for each.
    @Test func aCallAcrossNodes() async throws {
        let (cluster, _, alice, bob) = try await Self.twoUsersBesideTheLeader()
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)

        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .video)
        let received = try await bobEvents.first(from: 0, where: isReceived)
        #expect(received == .onCallReceived(callId: call.callId, callerId: "alice", inviterId: "alice", mediaType: .video, userData: nil))
        try await bob.callStore.accept()
        try await aliceEvents.first(from: 0, where: isStarted)
        try await bobEvents.first(from: 0, where: isStarted)
        let startTime = try #require(alice.callStore.state.activeCall?.startTime)
        #expect(bob.callStore.state.activeCall?.startTime == startTime)

        alice.deviceStore.closeLocalCamera()
        try await bobEvents.first(from: 0) {
            if case .onRemoteDeviceChanged(call.callId, "alice", _, false) = $0 { true } else { false }
        }

        cluster.clock.advance(by: .seconds(4))
        try await bob.callStore.hangup()
        #expect(
            try await aliceEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .video, reason: .hangup, userId: "bob"))
        for events in [aliceEvents, bobEvents] {
            let record = try #require(await events.first(from: 0, where: isRecord).record)
            #expect(record.callId == call.callId && record.result == .answered && record.duration == 4)
        }
        await cluster.stop()
    }

    /// bob's devices on three nodes all ring; the one that answers wins, the others hear
    /// `otherDeviceAccepted` and see the call elsewhere.
    @Test func everyDeviceRingsOnEveryNode() async throws {
        let cluster = try await TestCluster.start()
        let alice = try await Self.client(cluster, 0, "alice")
        let bobs = try await (0..<3).asyncMap { try await Self.client(cluster, $0, "bob", device: "b\($0)") }
        let bobEvents = bobs.map { Recorder($0.callStore.events) }
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        for events in bobEvents { try await events.first(from: 0, where: isReceived) }
        try await bobs[1].callStore.accept()
        for index in [0, 2] {
            #expect(
                try await bobEvents[index].first(from: 0, where: isEnded)
                    == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .otherDeviceAccepted, userId: "bob"))
        }
        try await bobEvents[1].first(from: 0, where: isStarted)
        try await alice.callStore.hangup()
        try await bobEvents[1].first(from: 0, where: isEnded)
        await cluster.stop()
    }

    /// A group call whose members sit on three nodes; one is invited mid-call, one joins.
    @Test func aGroupCallOverThreeNodes() async throws {
        let cluster = try await TestCluster.start()
        let alice = try await Self.client(cluster, 0, "alice")
        let bob = try await Self.client(cluster, 1, "bob")
        let carol = try await Self.client(cluster, 2, "carol")
        let dave = try await Self.client(cluster, 2, "dave")
        let events = [alice, bob, carol, dave].map { Recorder($0.callStore.events) }
        let call = try await alice.callStore.calls(participantIds: ["bob", "carol"], mediaType: .audio)
        try await events[1].first(from: 0, where: isReceived)
        try await events[2].first(from: 0, where: isReceived)
        try await bob.callStore.accept()
        try await carol.callStore.accept()
        try await events[0].first(from: 0, where: isStarted)
        _ = try await alice.callStore.invite(participantIds: ["dave"])
        try await events[3].first(from: 0, where: isReceived)
        try await dave.callStore.accept()
        try await Recorder(bob.callStore.stateUpdates).first(from: 0) { state in
            state.allParticipants.first { $0.userId == "dave" }?.status == .accept
        }
        // carol leaves and joins again by herself.
        try await carol.callStore.hangup()
        try await carol.callStore.join(callId: call.callId)
        #expect(carol.callStore.state.activeCall?.callId == call.callId)
        // Three leave; the last one is left alone and the call ends for them.
        for client in [alice, bob, carol] { try await client.callStore.hangup() }
        for recorder in events { try await recorder.first(from: 0, where: isRecord) }
        await cluster.stop()
    }

    /// Two callers on two nodes call the same callee at the same instant under busy policy
    /// `reject`: exactly one call rings, the other caller hears `lineBusy`. Every time.
    @Test func noDoubleBookingAcrossNodes() async throws {
        let cluster = try await TestCluster.start { $0.rateLimits.disabled = true }
        let callee = try await Self.client(cluster, 0, "callee")
        let calleeEvents = Recorder(callee.callStore.events)
        let callers = try await [1, 2].asyncMap { try await Self.client(cluster, $0, "caller\($0)") }
        let seed = UInt64.random(in: 0...UInt64.max)
        print("noDoubleBookingAcrossNodes seed \(seed)")
        for round in 0..<20 {
            let results = await withTaskGroup(of: Result<CallStartResult, any Error>.self) { group in
                for caller in callers {
                    group.addTask {
                        do { return .success(try await caller.callStore.calls(participantIds: ["callee"], mediaType: .audio)) }
                        catch { return .failure(error) }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let started = try results.map { try $0.get() }
            #expect(started.filter { $0.busyUserIds.isEmpty }.count == 1, "round \(round)")
            #expect(started.filter { $0.busyUserIds == ["callee"] }.count == 1, "round \(round)")
            // The one that rings is rejected; both callers are free again.
            let ringing = try #require(started.first { $0.busyUserIds.isEmpty }?.callId)
            try await calleeEvents.first(from: 0) { if case .onCallReceived(ringing, _, _, _, _) = $0 { true } else { false } }
            try await callee.callStore.reject(callId: ringing)
            for caller in callers {
                try await Recorder(caller.callStore.stateUpdates).first(from: 0) { $0.activeCall == nil }
            }
        }
        await cluster.stop()
    }

    /// Blocks, profiles and app settings changed on one node hold on the others.
    @Test func blocksProfilesAndSettingsHoldOnEveryNode() async throws {
        // A blocked caller's call is declined a second after it seems to ring.
        let cluster = try await TestCluster.start { $0.blockedCallerDecline = .seconds(1)...(.seconds(1)) }
        let alice = try await Self.client(cluster, 0, "alice")
        let bob = try await Self.client(cluster, 1, "bob")
        let carol = try await Self.client(cluster, 2, "carol")
        let aliceEvents = Recorder(alice.callStore.events)
        // alice's profile, cached on node 2 (where carol's call reads its invitees') before she
        // changes it on node 0...
        let first = try await carol.callStore.calls(participantIds: ["alice"], mediaType: .audio)
        try await aliceEvents.first(from: 0) { if case .onCallReceived(first.callId, _, _, _, _) = $0 { true } else { false } }
        try await carol.callStore.hangup()
        try await aliceEvents.first(from: 0) { if case .onCallEnded(first.callId, _, _, _) = $0 { true } else { false } }
        let aliceOnNode2 = UserKey(app: cluster.nodes[2].app.sdkAppID, user: "alice")
        #expect(cluster.nodes[2].node.inspection.profiles.cached(aliceOnNode2) != nil)
        try await alice.loginStore.setSelfInfo(nickname: "Alice on node 0")
        // ...is forgotten there when node 0's message arrives (at a look, at the latest)...
        for _ in 0..<500 where cluster.nodes[2].node.inspection.profiles.cached(aliceOnNode2) != nil { await cluster.tick() }
        // ...so carol's next call, its profiles read on node 2 again, shows the new one.
        let second = try await carol.callStore.calls(participantIds: ["alice"], mediaType: .audio)
        try await aliceEvents.first(from: 0) { if case .onCallReceived(second.callId, _, _, _, _) = $0 { true } else { false } }
        #expect(carol.callStore.state.allParticipants.first { $0.userId == "alice" }?.nickname == "Alice on node 0")
        try await carol.callStore.hangup()
        try await aliceEvents.first(from: 0) { if case .onCallEnded(second.callId, _, _, _) = $0 { true } else { false } }

        // bob blocks alice on node 1; her call from node 0 never rings there.
        _ = try await bob.callStore.blockUsers(["alice"])
        let blocked = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        cluster.clock.advance(by: .seconds(1))
        await cluster.tick()
        #expect(
            try await aliceEvents.first(from: 0) { if case .onCallEnded(blocked.callId, _, _, _) = $0 { true } else { false } }
                == .onCallEnded(callId: blocked.callId, mediaType: .audio, reason: .reject, userId: "bob"))

        // The busy policy changed through node 2's admin API holds for calls placed on node 0.
        var request = URLRequest(url: URL(string: "/v1/apps/\(cluster.nodes[2].app.sdkAppID)/settings", relativeTo: cluster.nodes[2].httpURL)!)
        request.httpMethod = "PUT"
        request.setValue("Bearer test-admin-secret", forHTTPHeaderField: "Authorization")
        request.httpBody = Data(#"{"busyPolicy":"callWaiting"}"#.utf8)
        _ = try await URLSession.shared.data(for: request)
        // The change reaches node 0 as a message, which it may take a moment after its next look.
        func policy() -> BusyPolicy? { cluster.nodes[0].node.inspection.apps.app(cluster.nodes[0].app.sdkAppID)?.settings.busyPolicy }
        for _ in 0..<500 where policy() != .callWaiting { await cluster.tick() }
        #expect(policy() == .callWaiting)
        await cluster.stop()
    }

    /// A node that joined since the others last looked at the table (they look at every heartbeat;
    /// here node 0 never looks again) still forgets a profile changed on another node: a message
    /// for every node goes to the nodes in the table when it is written. It went to the nodes the
    /// sender knew, and the new node showed the old profile for as long as it kept it cached.
    @Test func aNodeThatJustJoinedForgetsAProfileChangedElsewhere() async throws {
        let cluster = try await TestCluster.start(nodes: 1)
        let late = try await cluster.startNode(1)
        let alice = try await Self.client(cluster, 0, "alice")
        let carol = try await late.client("carol")
        let aliceEvents = Recorder(alice.callStore.events)
        let aliceThere = UserKey(app: late.app.sdkAppID, user: "alice")
        // alice's profile, cached on the new node (where carol's call reads its invitees')...
        let first = try await carol.callStore.calls(participantIds: ["alice"], mediaType: .audio)
        try await aliceEvents.first(from: 0) { if case .onCallReceived(first.callId, _, _, _, _) = $0 { true } else { false } }
        try await carol.callStore.hangup()
        try await aliceEvents.first(from: 0) { if case .onCallEnded(first.callId, _, _, _) = $0 { true } else { false } }
        #expect(late.node.inspection.profiles.cached(aliceThere) != nil)
        // ...is forgotten there once node 0's message arrives (at its look, at the latest)...
        try await alice.loginStore.setSelfInfo(nickname: "Alice on node 0")
        for _ in 0..<500 where late.node.inspection.profiles.cached(aliceThere) != nil { await late.node.clusterHeartbeat() }
        #expect(late.node.inspection.profiles.cached(aliceThere) == nil)
        // ...and carol's next call shows the new one.
        let second = try await carol.callStore.calls(participantIds: ["alice"], mediaType: .audio)
        try await aliceEvents.first(from: 0) { if case .onCallReceived(second.callId, _, _, _, _) = $0 { true } else { false } }
        #expect(carol.callStore.state.allParticipants.first { $0.userId == "alice" }?.nickname == "Alice on node 0")
        try await carol.callStore.hangup()
        try await aliceEvents.first(from: 0) { if case .onCallEnded(second.callId, _, _, _) = $0 { true } else { false } }
        await late.stop()
        await cluster.stop()
    }

    /// A node out of the table (the leader removes a node it takes for dead) gets no message for
    /// every node, a profile's change included. When its heartbeat puts it back, it forgets every
    /// profile it cached (and reads the apps again), so the profile changed meanwhile reads new.
    @Test func aNodeBackInTheTableForgetsTheProfilesItCached() async throws {
        let cluster = try await TestCluster.start(nodes: 2)
        let alice = try await Self.client(cluster, 0, "alice")
        let node1 = cluster.nodes[1].node.inspection
        let aliceThere = UserKey(app: cluster.nodes[1].app.sdkAppID, user: "alice")
        _ = try await node1.profiles.profiles(app: aliceThere.app, users: ["alice"])
        #expect(node1.profiles.cached(aliceThere) != nil)

        let storage = try #require(cluster.nodes[0].node.inspection.storage as? PostgresStorage)
        try await ClusterStore(client: storage.client, logger: Logger(label: "test.cluster")).remove(node: "node1")
        // Answered once node 0 told the nodes in the table (nobody: node 1 is out)...
        try await alice.loginStore.setSelfInfo(nickname: "Alice while node 1 was out")
        await cluster.nodes[1].node.clusterHeartbeat()
        #expect(node1.profiles.cached(aliceThere) == nil)
        let read = try await node1.profiles.profiles(app: aliceThere.app, users: ["alice"])
        #expect(read["alice"]?.nickname == "Alice while node 1 was out")
        await cluster.stop()
    }

    /// The leader decides whether a call is blocked: a block answered on a node that does not lead
    /// holds for a call placed at once on another one, and after the leader leaves (the next one
    /// reads the table); an unblock frees the caller again.
    @Test func aBlockHoldsFromItsAnswerOnEveryNodeAndAcrossALeaderChange() async throws {
        let (cluster, leader, alice, bob) = try await Self.twoUsersBesideTheLeader {
            $0.blockedCallerDecline = .seconds(1)...(.seconds(1))
        }
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        func expectBlocked() async throws {
            let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
            // bob seems to ring, and declines a second later.
            cluster.clock.advance(by: .seconds(1))
            await cluster.tick()
            #expect(
                try await aliceEvents.first(from: 0) { if case .onCallEnded(call.callId, _, _, _) = $0 { true } else { false } }
                    == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .reject, userId: "bob"))
        }
        #expect(try await bob.callStore.blockUsers(["alice"]) == ["alice"])
        try await expectBlocked()

        let (others, _) = try await Self.theLeaderLeaves(cluster, leader)
        try await expectBlocked()

        #expect(try await bob.callStore.unblockUsers(["alice"]).isEmpty)
        let allowed = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        #expect(try await bobEvents.first(from: 0, where: isReceived).receivedCallId == allowed.callId)
        for index in others { await cluster.nodes[index].stop() }
    }

    /// The leader stops taking its messages (its links close); `request` starts, and this returns
    /// once another node's link holds a message for the leader: the request is waiting for it.
    static func waitingForTheLeader<T: Sendable>(
        _ cluster: TestCluster, _ leader: Int, _ request: @escaping @Sendable () async throws -> T
    ) async throws -> Task<T, any Error> {
        let leaderNode = try #require(cluster.nodes[leader].node.inspection.cluster)
        await leaderNode.links.stop()
        let task = Task { try await request() }
        let others = cluster.nodes.indices.filter { $0 != leader }.compactMap { cluster.nodes[$0].node.inspection.cluster }
        while others.allSatisfy({ $0.links.waiting(for: leaderNode.id) == 0 }) { await Task.yield() }
        return task
    }

    /// A block waiting for a leader that stops answering is sent again to the next leader, which
    /// answers it: the request succeeds instead of being refused, and the block holds.
    @Test(.timeLimit(.minutes(1))) func aBlockWaitingForALeaderThatLeavesIsAnsweredByTheNext() async throws {
        let (cluster, leader, alice, bob) = try await Self.twoUsersBesideTheLeader {
            $0.blockedCallerDecline = .seconds(1)...(.seconds(1))
        }
        // The leader takes no more messages: bob's block waits for it.
        let block = try await Self.waitingForTheLeader(cluster, leader) { try await bob.callStore.blockUsers(["alice"]) }

        _ = try await Self.theLeaderLeaves(cluster, leader)
        #expect(try await block.value == ["alice"])
        let aliceEvents = Recorder(alice.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        cluster.clock.advance(by: .seconds(1))
        #expect(
            try await aliceEvents.first(from: 0) { if case .onCallEnded(call.callId, _, _, _) = $0 { true } else { false } }
                == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .reject, userId: "bob"))
        for index in 0..<3 where index != leader { await cluster.nodes[index].stop() }
    }

    /// A login waiting for a leader that stops answering is sent again to the next leader: the
    /// login succeeds instead of being refused, and the new leader knows the device (a call reaches it).
    @Test(.timeLimit(.minutes(1))) func aLoginWaitingForALeaderThatLeavesIsAnsweredByTheNext() async throws {
        let (cluster, leader, alice, _) = try await Self.twoUsersBesideTheLeader()
        let others = (0..<3).filter { $0 != leader }
        // The leader takes no more messages: carol's login waits for it.
        let login = try await Self.waitingForTheLeader(cluster, leader) { try await Self.client(cluster, others[1], "carol") }

        _ = try await Self.theLeaderLeaves(cluster, leader)
        let carol = try await login.value
        #expect(carol.loginStore.state.loginStatus == .loggedIn)
        let carolEvents = Recorder(carol.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["carol"], mediaType: .audio)
        #expect(try await carolEvents.first(from: 0, where: isReceived).receivedCallId == call.callId)
        for index in others { await cluster.nodes[index].stop() }
    }

    /// The admin API of any node ends a call the leader runs, and lists every node's devices.
    @Test func theAdminAPIOfAnyNodeSeesTheWholeCluster() async throws {
        let cluster = try await TestCluster.start()
        let leader = try #require(cluster.leaderIndex)
        let other = (leader + 1) % 3
        let alice = try await Self.client(cluster, 0, "alice")
        let bob = try await Self.client(cluster, 1, "bob")
        let bobEvents = Recorder(bob.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bobEvents.first(from: 0, where: isReceived)
        func http(_ node: Int, _ method: String, _ path: String) async throws -> (Int, [String: Any]) {
            var request = URLRequest(url: URL(string: path, relativeTo: cluster.nodes[node].httpURL)!)
            request.httpMethod = method
            request.setValue("Bearer test-admin-secret", forHTTPHeaderField: "Authorization")
            let (data, response) = try await URLSession.shared.data(for: request)
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
        }
        let (status, online) = try await http(other, "GET", "/v1/apps/\(cluster.nodes[0].app.sdkAppID)/online")
        #expect(status == 200)
        #expect(((online["users"] as? [[String: Any]]) ?? []).compactMap { $0["userId"] as? String } == ["alice", "bob"])
        let (ended, _) = try await http(other, "POST", "/v1/calls/\(call.callId)/end")
        #expect(ended == 200)
        #expect(
            try await bobEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .endByServer, userId: nil))
        let (_, health) = try await http(leader, "GET", "/health")
        #expect(health["activeCalls"] as? Int == 0)
        let (_, otherHealth) = try await http(other, "GET", "/health")
        #expect(otherHealth["activeCalls"] == nil)
        await cluster.stop()
    }

    /// The leader shuts down (a deploy): another node takes the lead on its next heartbeat,
    /// restores the call from the journal and resumes it for the devices still connected elsewhere.
    @Test func aLeaderThatLeavesHandsItsCallsOver() async throws {
        let (cluster, leader, alice, bob) = try await Self.twoUsersBesideTheLeader()
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bobEvents.first(from: 0, where: isReceived)
        try await bob.callStore.accept()
        try await aliceEvents.first(from: 0, where: isStarted)
        let startTime = try #require(alice.callStore.state.activeCall?.startTime)

        let (others, _) = try await Self.theLeaderLeaves(cluster, leader)

        // The call goes on: a request that only a member in the call may make is answered...
        try await alice.callStore.reportStatus(packetLoss: 0, rtt: 10, bitrate: 100, audioLevel: 10)
        cluster.clock.advance(by: .seconds(3))
        // ...and it ends normally, its record counting from the original start.
        try await bob.callStore.hangup()
        #expect(
            try await aliceEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .hangup, userId: "bob"))
        let record = try #require(await aliceEvents.first(from: 0, where: isRecord).record)
        #expect(record.startTime == startTime && record.result == .answered && record.endReason == .hangup)
        for index in others { await cluster.nodes[index].stop() }
    }
}

