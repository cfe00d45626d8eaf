#if GStreamer
import Foundation
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

@testable import Switchboard
@testable import SwitchboardGStreamer

/// The GStreamer engine in group calls through a real Janus (``SFUMediaEngine``): two engines
/// publish to the SFU and receive each other from it, named by the server's track lists; a shared
/// screen comes and goes as its own track; what each sends is counted once, as published; a
/// failed transport gives a new session whose media flows again. Media is real time: the tests wait for what the engines observe.
@Suite(.tags(.gstreamer), .serialized, .enabled(if: JanusProcess.isAvailable, "needs janus (scripts/test installs it)"))
struct GStreamerSFUTests {
    typealias Member = GStreamerEngineTests.Member

    /// alice calls bob and carol with video; carol (no engine of note) declines, so alice and bob
    /// are in a group call, which goes through Janus.
    static func groupCall(_ server: TestServer) async throws -> (Member, Member) {
        let alice = try await GStreamerEngineTests.member(server, "alice")
        let bob = try await GStreamerEngineTests.member(server, "bob", tone: 660)
        let carol = try await server.client("carol")
        let carolCalls = Recorder(carol.callStore.events)
        let call = try await alice.client.callStore.calls(participantIds: ["bob", "carol"], mediaType: .video)
        try await carolCalls.first(from: 0, timeout: GStreamerEngineTests.wait) { if case .onCallReceived = $0 { true } else { false } }
        try await carol.callStore.reject(callId: call.callId)
        try await bob.calls.first(from: 0, timeout: GStreamerEngineTests.wait) { if case .onCallReceived = $0 { true } else { false } }
        bob.client.deviceStore.openLocalCamera()
        try await bob.client.callStore.accept(callId: call.callId)
        alice.client.deviceStore.openLocalCamera()
        return (alice, bob)
    }

    static func start() async throws -> (JanusProcess, TestServer) {
        let janus = try await JanusProcess.start()
        let server = try await TestServer.start { configuration in
            configuration.sfu = SFUConfiguration(urls: [janus.url], secret: JanusProcess.secret)
        }
        return (janus, server)
    }

    @Test func twoEnginesReceiveEachOtherThroughJanus() async throws {
        let (janus, server) = try await Self.start()
        defer { janus.stop() }
        let (alice, bob) = try await Self.groupCall(server)

        // Each decodes the other's audio and video, reported under the other's name.
        for (member, other) in [(alice, bob.id), (bob, alice.id)] {
            try await GStreamerEngineTests.expect(member, .trackStarted(other, .audio))
            try await GStreamerEngineTests.expect(member, .frameSize(other, .video, width: 640, height: 360))
            try await GStreamerEngineTests.expect(member, "\(other)'s tone") {
                if case .audioLevel(other, let level, _) = $0 { level > 10 } else { false }
            }
            let statistics = try #require(await member.engine.statistics().peers[other])
            #expect(statistics.audio.packetsReceived > 0)
            #expect(statistics.video.framesDecoded > 0)
            #expect(statistics.localCandidateType == "host")
            // Nobody else: the SFU's own connections are not members.
            #expect(Set(await member.engine.statistics().peers.keys) == [other])
        }
        // What alice sends goes to the SFU once: it is `published`, in no member's entry.
        let published = try #require(await alice.engine.statistics().published)
        #expect(published.audio.bytesSent > 0)
        #expect(published.video.bytesSent > 0)
        #expect(published.localCandidateType == "host")
        #expect(try #require(await alice.engine.statistics().peers[bob.id]).video.bytesSent == 0)
        // No connection per member in an SFU call.
        let connections = await alice.engine.connectionNames()
        #expect(connections.peers.isEmpty)
        #expect(connections.sfu == [.publish, .subscribe])

        // alice shares a screen: bob receives it as her screen, a track of its own, until she stops.
        alice.client.deviceStore.startScreenShare(.testPattern)
        try await GStreamerEngineTests.expect(bob, .frameSize("alice", .screen, width: 480, height: 270))
        #expect(try #require(await alice.engine.statistics().published).screen.bytesSent > 0)
        alice.client.deviceStore.stopScreenShare()
        // The server takes the stopped stream out of bob's subscription: its section goes inactive.
        try await GStreamerEngineTests.expect(bob, .trackEnded("alice", .screen))
        // Shared again, it comes in the section Janus made inactive, which bob receives again.
        let mark = bob.media.values.count
        alice.client.deviceStore.startScreenShare(.testPattern)
        try await bob.media.first(from: mark, timeout: GStreamerEngineTests.wait) { $0 == .trackStarted("alice", .screen) }
        alice.client.deviceStore.stopScreenShare()
        try await bob.media.first(from: mark, timeout: GStreamerEngineTests.wait) { $0 == .trackEnded("alice", .screen) }
        // A third share would be a fifth section on alice's publish connection (webrtcbin cannot
        // send in a stopped one), more than the SFU takes: her SDK starts a new session instead,
        // whose publish connection has a section per track, and bob receives her screen from it.
        let opened = await alice.engine.connectionNames().sfuOpened
        let third = bob.media.values.count
        alice.client.deviceStore.startScreenShare(.testPattern)
        try await bob.media.first(from: third, timeout: GStreamerEngineTests.wait) { $0 == .trackStarted("alice", .screen) }
        #expect(await alice.engine.connectionNames().sfuOpened == opened + 2)
        alice.client.deviceStore.stopScreenShare()
        // Her camera goes on, from the new session too (its first frame may come after the
        // screen's: it waits for a keyframe).
        try await bob.media.first(from: third, timeout: GStreamerEngineTests.wait) { $0 == .trackStarted("alice", .video) }
        let camera = await GStreamerEngineTests.frames(bob, alice.id, .video)
        try await GStreamerEngineTests.barrier(bob, from: alice.id)
        #expect(await GStreamerEngineTests.frames(bob, alice.id, .video) > camera)

        try await alice.client.callStore.hangup()
        try await GStreamerEngineTests.expect(bob, .trackEnded("alice", .audio))
        await server.stop()
    }

    /// Four engines through Janus in a video call: alice sends silence, bob, carol and dave tones.
    /// Each hears the others under their own names: a tone's level under its sender, and nothing
    /// above a whisper under alice's, for the whole call. A subscription gets several members'
    /// audio and video tracks at once; GStreamer's receiving chains for tracks that came together
    /// could share a name, and the level router, which routes by that name, put one member's
    /// level under another's or left it at 0 while the audio was decoded (issue 52: 5 of 8
    /// four-member calls seen from outside). With the chains numbered as before (`tracks.count`),
    /// this test failed 4 runs of 4 (a tone never seen under its sender's name, or alice's level
    /// gone from two members); with the fix it passed 5 of 5.
    @Test func eachMembersLevelIsUnderTheirOwnName() async throws {
        let (janus, server) = try await Self.start()
        defer { janus.stop() }
        let alice = try await GStreamerEngineTests.member(server, "alice", audio: .silence)
        let bob = try await GStreamerEngineTests.member(server, "bob", tone: 660)
        let carol = try await GStreamerEngineTests.member(server, "carol", tone: 880)
        let dave = try await GStreamerEngineTests.member(server, "dave", tone: 990)
        let call = try await alice.client.callStore.calls(participantIds: ["bob", "carol", "dave"], mediaType: .video)
        for callee in [bob, carol, dave] {
            try await callee.calls.first(from: 0, timeout: GStreamerEngineTests.wait) {
                if case .onCallReceived = $0 { true } else { false }
            }
            callee.client.deviceStore.openLocalCamera()
            try await callee.client.callStore.accept(callId: call.callId)
        }
        alice.client.deviceStore.openLocalCamera()
        for (member, others) in [(alice, [bob.id, carol.id, dave.id]), (bob, [carol.id, dave.id]), (carol, [bob.id, dave.id]), (dave, [bob.id, carol.id])] {
            for other in others {
                try await GStreamerEngineTests.expect(member, "\(other)'s tone") {
                    if case .audioLevel(other, let level, _) = $0 { level > 10 } else { false }
                }
            }
        }
        // A later event: 20 more levels of the other's tone at bob and at carol; alice's silence
        // never showed a level there, and her audio was decoded all the same.
        for (member, other) in [(bob, carol.id), (carol, bob.id), (dave, bob.id)] {
            let mark = member.media.values.count
            for _ in 0..<20 {
                let seen = member.media.values.count
                try await member.media.first(from: seen, timeout: GStreamerEngineTests.wait) {
                    if case .audioLevel(other, let level, _) = $0 { level > 10 } else { false }
                }
            }
            let aliceLevels = member.media.values.compactMap { if case .audioLevel("alice", let level, _) = $0 { level } else { nil } }
            #expect(aliceLevels.allSatisfy { $0 <= 5 }, "\(member.id) showed levels under alice's name: \(aliceLevels)")
            #expect(member.media.values[mark...].contains { if case .audioLevel("alice", _, _) = $0 { true } else { false } })
            #expect(await GStreamerEngineTests.frames(member, alice.id, .audio) > 0)
        }
        try await alice.client.callStore.hangup()
        await server.stop()
    }

    /// The transport of alice's publish connection fails: the engine reports ICE failed, the SDK
    /// asks for a new session, and bob receives alice again from her new connections (a second
    /// `trackStarted`), as alice receives bob.
    @Test func aFailedTransportStartsANewSession() async throws {
        let (janus, server) = try await Self.start()
        defer { janus.stop() }
        let (alice, bob) = try await Self.groupCall(server)
        try await GStreamerEngineTests.expect(bob, .trackStarted(alice.id, .video))
        try await GStreamerEngineTests.expect(alice, .trackStarted(bob.id, .video))
        let (bobMark, aliceMark) = (bob.media.values.count, alice.media.values.count)
        let sentBefore = try #require(await alice.engine.statistics().published).video.bytesSent

        try await alice.engine.failTransport(of: .publish)
        // bob's subscription keeps its sections: Janus gives alice's new tracks the ones her old
        // tracks left inactive.
        try await bob.media.first(from: bobMark, timeout: GStreamerEngineTests.wait) { $0 == .trackStarted(alice.id, .video) }
        try await alice.media.first(from: aliceMark, timeout: GStreamerEngineTests.wait) { $0 == .trackStarted(bob.id, .audio) }
        // The failure did start a new session: both connections were opened again.
        #expect(await alice.engine.connectionNames().sfuOpened == 4)
        // What the old publish connection sent carries on: the count only grows.
        #expect(try #require(await alice.engine.statistics().published).video.bytesSent > sentBefore)
        await server.stop()
    }
}
#endif
