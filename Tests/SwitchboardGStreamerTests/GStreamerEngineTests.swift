#if GStreamer
import Foundation
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTesting
import Testing

@testable import Switchboard
@testable import SwitchboardGStreamer

extension Tag {
    /// Needs GStreamer (the `GStreamer` trait); scripts/test installs it and runs these.
    @Tag static var gstreamer: Self
}

/// The GStreamer engine between SDK clients through a real server: real offers and answers,
/// ICE on 127.0.0.1, Opus and VP8 decoded at the other end. Media flows in real time, so these
/// wait for what the engines observe (``MediaEvent``s), never for a set time.
@Suite(.tags(.gstreamer), .serialized)
struct GStreamerEngineTests {
    struct Member {
        var id: UserID
        var client: SwitchboardClient
        var engine: GStreamerMediaEngine
        var media: Recorder<MediaEvent>
        var calls: Recorder<CallStoreEvent>
    }

    static let wait = Duration.seconds(30)

    static func member(
        _ server: TestServer, _ user: UserID, record: URL? = nil, tone: Double = 440
    ) async throws -> Member {
        let engine = GStreamerMediaEngine(
            configuration: .init(
                audioSource: .tone(frequency: tone), videoSource: .pattern("ball"), recordDirectory: record,
                loopbackOnly: true, screenQuality: (480, 270, 10, 300)))
        let media = Recorder(engine.events)
        let client = try await server.client(user.rawValue, mediaEngine: engine)
        client.deviceStore.openLocalMicrophone()
        client.deviceStore.setVideoQuality(.p360)
        return Member(id: user, client: client, engine: engine, media: media, calls: Recorder(client.callStore.events))
    }

    /// `caller` calls `callees`, who all answer; returns once every member decodes every other's audio.
    static func connect(_ caller: Member, _ callees: [Member], mediaType: CallMediaType) async throws -> CallID {
        let call = try await caller.client.callStore.calls(participantIds: callees.map(\.id.rawValue), mediaType: mediaType)
        for callee in callees {
            try await callee.calls.first(timeout: wait) { if case .onCallReceived = $0 { true } else { false } }
            if mediaType == .video { callee.client.deviceStore.openLocalCamera() }
            try await callee.client.callStore.accept(callId: call.callId)
        }
        if mediaType == .video { caller.client.deviceStore.openLocalCamera() }
        let members = [caller] + callees
        for member in members {
            for other in members where other.id != member.id {
                try await member.media.first(timeout: wait) { $0 == .trackStarted(other.id, .audio) }
            }
        }
        return call.callId
    }

    @Test func anAudioCallIsDecodedAtBothEndsAndRecorded() async throws {
        let server = try await TestServer.start()
        let directory = server.directory.appendingPathComponent("recordings")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob", record: directory, tone: 880)
        _ = try await Self.connect(alice, [bob], mediaType: .audio)

        // Each side hears the other's tone, and its statistics say so.
        try await bob.media.first(timeout: Self.wait) { if case .audioLevel("alice", let level, _) = $0 { level > 10 } else { false } }
        try await alice.media.first(timeout: Self.wait) { if case .audioLevel("bob", let level, _) = $0 { level > 10 } else { false } }
        for (member, peer) in [(alice, UserID("bob")), (bob, UserID("alice"))] {
            let statistics = try #require(await member.engine.statistics().peers[peer])
            #expect(statistics.audio.packetsReceived > 0)
            #expect(statistics.audio.packetsSent > 0)
            #expect(statistics.audio.framesDecoded > 0)
            #expect(statistics.audio.codec == "opus")
            #expect(statistics.localCandidateType == "host")
            #expect(await member.engine.statistics().localAudioLevel > 0)
        }

        // alice mutes: bob receives silence (the packets keep coming, their level drops).
        alice.client.deviceStore.closeLocalMicrophone()
        try await bob.media.first(timeout: Self.wait) { $0 == .audioLevel("alice", level: 0, playout: 0) }
        alice.client.deviceStore.openLocalMicrophone()
        try await bob.media.first(timeout: Self.wait) { if case .audioLevel("alice", let level, _) = $0 { level > 10 } else { false } }

        // bob silences everyone here: alice still arrives, but nothing plays.
        bob.client.deviceStore.muteAllRemoteAudio(true)
        try await bob.media.first(timeout: Self.wait) {
            if case .audioLevel("alice", let level, let playout) = $0 { level > 10 && playout == 0 } else { false }
        }
        bob.client.deviceStore.muteAllRemoteAudio(false)
        bob.client.deviceStore.setAudioPlayoutVolume(50)
        try await bob.media.first(timeout: Self.wait) {
            if case .audioLevel("alice", let level, let playout) = $0 { playout > 0 && playout < level } else { false }
        }

        // The end: bob's recording of alice is a WAV file with her audio in it.
        try await alice.client.callStore.hangup()
        try await bob.media.first(timeout: Self.wait) { $0 == .trackEnded("alice", .audio) }
        let wav = try Data(contentsOf: directory.appendingPathComponent("alice-audio.wav"))
        #expect(wav.prefix(4) == Data("RIFF".utf8))
        #expect(wav.count > 48_000)
        await server.stop()
    }
}
#endif
