import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTestServers
import SwitchboardTesting
import SwitchboardTools
import Testing

@testable import SwitchboardServer

/// Group calls through the SFU on a cluster (docs/OPERATIONS.md, "Group calls through Janus"): the
/// leader runs every call, so it places the rooms; the engines are fakes with a browser-like
/// publish offer, against a real Janus and three real nodes on PostgreSQL.
@Suite(
    .enabled(if: JanusProcess.isAvailable, "needs janus (scripts/test installs it)"),
    .enabled(if: PostgresTestDatabase.isAvailable, "needs PostgreSQL (scripts/test starts it)"))
struct ClusterSFUTests {
    /// When the leader leaves (a deploy), the next one takes the call back from the journal, and
    /// each member's device, still connected to its own node, gets a new session in a room the new
    /// leader placed: its old connections close, new ones open, and Janus answers the new publish
    /// offer. The call goes on, and ends at the hang-ups.
    @Test(.timeLimit(.minutes(2))) func aNewLeaderPlacesTheRoomAgain() async throws {
        let janus = try await JanusProcess.start()
        defer { janus.stop() }
        let cluster = try await TestCluster.start { configuration in
            configuration.sfu = SFUConfiguration(urls: [janus.url], secret: JanusProcess.secret)
        }
        let leader = try #require(cluster.leaderIndex)
        let others = (0..<3).filter { $0 != leader }
        let alice = try await SFUTestMember.logIn("alice", to: cluster.nodes[others[0]])
        let bob = try await SFUTestMember.logIn("bob", to: cluster.nodes[others[1]])
        let carol = try await SFUTestMember.logIn("carol", to: cluster.nodes[others[0]])
        let call = try await alice.client.callStore.calls(participantIds: ["bob", "carol"], mediaType: .video)
        for member in [bob, carol] {
            try await member.events.first(from: 0, where: isReceived)
            try await member.client.callStore.accept()
        }
        var marks: [Int] = []
        for member in [alice, bob, carol] {
            marks.append(try await member.media.calls.position(after: 0, where: FakeMediaEngine.isPublishAnswer))
        }

        _ = try await ClusterTests.theLeaderLeaves(cluster, leader)
        for (index, member) in [alice, bob, carol].enumerated() {
            let closed = try await member.media.calls.position(after: marks[index]) { $0 == .sfuClosed(.publish) }
            let opened = try await member.media.calls.position(after: closed) { $0 == .sfuOpened(.publish) }
            try await member.media.calls.first(from: opened, where: FakeMediaEngine.isPublishAnswer)
            #expect(member.client.callStore.state.activeCall?.callId == call.callId)
        }

        // Nobody heard the call end through the change of leader.
        #expect(![alice, bob, carol].contains { $0.events.values.contains(where: isEnded) })
        try await bob.client.callStore.hangup()
        try await carol.client.callStore.hangup()
        #expect(
            try await alice.events.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .video, reason: .hangup, userId: "carol"))
        for index in others { await cluster.nodes[index].stop() }
    }
}
