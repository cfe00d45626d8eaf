#if GStreamer
import Foundation
import Logging
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
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
        _ server: TestServer, _ user: UserID, deviceId: String? = nil, record: URL? = nil, tone: Double = 440,
        audio: AudioSource? = nil, video: VideoSource = .pattern("ball")
    ) async throws -> Member {
        var logger = Logger(label: "switchboard.gstreamer.\(user)")
        logger.logLevel = ProcessInfo.processInfo.environment["SWITCHBOARD_TEST_LOG"].flatMap { Logger.Level(rawValue: $0) } ?? .critical
        let engine = GStreamerMediaEngine(
            configuration: .init(
                audioSource: audio ?? .tone(frequency: tone), videoSource: video, recordDirectory: record,
                loopbackOnly: true, screenQuality: (480, 270, 10, 300)),
            logger: logger)
        let media = Recorder(engine.events)
        let client = try await server.client(user.rawValue, deviceId: deviceId, mediaEngine: engine)
        client.deviceStore.openLocalMicrophone()
        client.deviceStore.setVideoQuality(.p360)
        return Member(id: user, client: client, engine: engine, media: media, calls: Recorder(client.callStore.events))
    }

    /// `caller` calls `callees`, who all answer; returns once every member decodes every other's audio.
    static func connect(_ caller: Member, _ callees: [Member], mediaType: CallMediaType) async throws -> CallID {
        let call = try await caller.client.callStore.calls(participantIds: callees.map(\.id.rawValue), mediaType: mediaType)
        for callee in callees {
            try await callee.calls.first(from: 0, timeout: wait) { if case .onCallReceived = $0 { true } else { false } }
            if mediaType == .video { callee.client.deviceStore.openLocalCamera() }
            try await callee.client.callStore.accept(callId: call.callId)
        }
        if mediaType == .video { caller.client.deviceStore.openLocalCamera() }
        let members = [caller] + callees
        for member in members {
            for other in members where other.id != member.id {
                try await expect(member, .trackStarted(other.id, .audio))
            }
        }
        return call.callId
    }

    /// coturn's REST credentials (`expiry:user`, base64) in webrtcbin's TURN URI form.
    /// A burst of settings while the engine is busy (a pipeline being built) queues one job, not
    /// one per change, and that job applies the latest of them.
    @Test(.timeLimit(.minutes(1))) func aBurstOfSettingsWhileTheEngineIsBusyQueuesOneJob() async throws {
        // On a clock that stands still: the engine's once-a-second send-rate job is no job here (on
        // the real clock, a second that ended during the burst queued it beside the settings').
        let engine = GStreamerMediaEngine(configuration: .init(clock: TestClock()))
        let (entered, enter) = AsyncStream<Void>.makeStream()
        let (released, release) = AsyncStream<Void>.makeStream()
        let busy = Task {
            try await engine.runAsJob {
                enter.yield()
                for await _ in released { break }
            }
        }
        for await _ in entered { break }
        for index in 0..<10_000 {
            engine.setMicrophone(on: index % 2 == 0)
            engine.setMicrophoneVolume(index % 100)
        }
        #expect(engine.waitingJobs == 1)
        release.yield()
        try await busy.value
        let applied = try await engine.appliedSettings()
        #expect(applied.microphoneOn == false)
        #expect(applied.microphoneVolume == 99)
        #expect(engine.waitingJobs == 0)
    }

    @Test func turnServersBecomeWebRTCBinURIs() {
        #expect(
            PeerConnection.turnURI("turn:127.0.0.1:3478?transport=udp", username: "1767225600:alice", credential: "a+b/c=")
                == "turn://1767225600%3Aalice:a%2Bb%2Fc%3D@127.0.0.1:3478?transport=udp")
        #expect(PeerConnection.turnURI("turns:turn.example.com:5349", username: "u", credential: "p") == "turns://u:p@turn.example.com:5349")
        #expect(PeerConnection.turnURI("stun:127.0.0.1:3478", username: nil, credential: nil) == nil)
    }

    @Test func anAudioCallIsDecodedAtBothEndsAndRecorded() async throws {
        let server = try await TestServer.start()
        let directory = server.directory.appendingPathComponent("recordings")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob", record: directory, tone: 880)
        _ = try await Self.connect(alice, [bob], mediaType: .audio)

        // Each side hears the other's tone, and its statistics say so.
        try await Self.expect(bob, "alice's tone") { if case .audioLevel("alice", let level, _) = $0 { level > 10 } else { false } }
        try await Self.expect(alice, "bob's tone") { if case .audioLevel("bob", let level, _) = $0 { level > 10 } else { false } }
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
        try await Self.expect(bob, .audioLevel("alice", level: 0, playout: 0))
        alice.client.deviceStore.openLocalMicrophone()
        try await Self.expect(bob, "alice's tone again") { if case .audioLevel("alice", let level, _) = $0 { level > 10 } else { false } }

        // bob silences everyone here: alice still arrives, but nothing plays.
        bob.client.deviceStore.muteAllRemoteAudio(true)
        try await Self.expect(bob, "alice not played") {
            if case .audioLevel("alice", let level, let playout) = $0 { level > 10 && playout == 0 } else { false }
        }
        bob.client.deviceStore.muteAllRemoteAudio(false)
        bob.client.deviceStore.setAudioPlayoutVolume(50)
        try await Self.expect(bob, "alice played at half volume") {
            if case .audioLevel("alice", let level, let playout) = $0 { playout > 0 && playout < level } else { false }
        }

        // The end, after half a second more: bob's recording of alice is a WAV file with her
        // audio in it.
        try await Self.barrier(bob, from: "alice", count: 5)
        try await alice.client.callStore.hangup()
        try await Self.expect(bob, .trackEnded("alice", .audio))
        let wav = try Data(contentsOf: directory.appendingPathComponent("alice-audio.wav"))
        #expect(wav.prefix(4) == Data("RIFF".utf8))
        #expect(wav.count > 48_000)
        #expect(wav.dropFirst(44).contains { $0 != 0 })
        // Only that: no hidden file of a track that carried nothing is left.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["alice-audio.wav"])
        await server.stop()
    }

    /// Waits for `member`'s engine to observe an event; on a timeout the failure says what was
    /// awaited and what the engine observed instead (levels left out).
    @discardableResult
    static func expect(
        _ member: Member, _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ predicate: @escaping @Sendable (MediaEvent) -> Bool
    ) async throws -> MediaEvent {
        do {
            return try await member.media.first(from: 0, timeout: wait, where: predicate)
        } catch {
            let seen = member.media.values.filter { if case .audioLevel = $0 { false } else { true } }
            Issue.record("\(member.id) did not see \(what); it saw \(seen)", sourceLocation: sourceLocation)
            throw error
        }
    }

    static func expect(
        _ member: Member, _ event: MediaEvent, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        try await expect(member, "\(event)", sourceLocation: sourceLocation) { $0 == event }
    }

    /// The frames `member` decoded from `peer`'s track so far.
    static func frames(_ member: Member, _ peer: UserID, _ kind: TrackKind) async -> Int {
        let statistics = await member.engine.statistics().peers[peer]
        return switch kind {
        case .audio: statistics?.audio.framesDecoded ?? 0
        case .video: statistics?.video.framesDecoded ?? 0
        case .screen: statistics?.screen.framesDecoded ?? 0
        }
    }

    /// Waits for `count` more audio level events from `peer` (a tenth of a second each): the
    /// barrier before checking that something did not happen.
    static func barrier(_ member: Member, from peer: UserID, count: Int = 10) async throws {
        var position = member.media.values.count
        for _ in 0..<count {
            try await member.media.first(from: position, timeout: wait) {
                if case .audioLevel(peer, _, _) = $0 { true } else { false }
            }
            position = member.media.values.lastIndex { if case .audioLevel(peer, _, _) = $0 { true } else { false } }! + 1
        }
    }

    @Test func aVideoCallFollowsQualityCameraAndScreenSharing() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        _ = try await Self.connect(alice, [bob], mediaType: .video)
        try await Self.expect(bob, .frameSize("alice", .video, width: 640, height: 360))
        try await Self.expect(alice, .frameSize("bob", .video, width: 640, height: 360))
        let statistics = try #require(await bob.engine.statistics().peers["alice"])
        #expect(statistics.video.framesDecoded > 0 && statistics.video.codec == "VP8")
        #expect((statistics.video.frameWidth, statistics.video.frameHeight) == (640, 360))

        // A higher quality reaches bob's decoder as a larger picture.
        alice.client.deviceStore.setVideoQuality(.p540)
        try await Self.expect(bob, .frameSize("alice", .video, width: 960, height: 540))

        // alice's camera goes off: bob decodes no more of it (checked a second later), then again.
        // Frames already on their way are still decoded, later on a loaded machine: the count is
        // taken once it held still for half a second (within five).
        alice.client.deviceStore.closeLocalCamera()
        var stopped = await Self.frames(bob, "alice", .video)
        for _ in 0..<10 {
            try await Self.barrier(bob, from: "alice", count: 5)
            let decoded = await Self.frames(bob, "alice", .video)
            if decoded == stopped { break }
            stopped = decoded
        }
        try await Self.barrier(bob, from: "alice")
        #expect(await Self.frames(bob, "alice", .video) == stopped)
        alice.client.deviceStore.openLocalCamera()
        try await Self.barrier(bob, from: "alice")
        #expect(await Self.frames(bob, "alice", .video) > stopped)

        // bob shares a screen: a second video track, which alice decodes as a screen beside his
        // camera (whose count goes on from where it was when the share began); then he stops.
        let cameraBeforeTheShare = await Self.frames(alice, "bob", .video)
        bob.client.deviceStore.startScreenShare(.testPattern)
        try await alice.calls.first(from: 0, timeout: Self.wait) { if case .onRemoteScreenShareChanged(_, "bob", true) = $0 { true } else { false } }
        try await Self.expect(alice, .frameSize("bob", .screen, width: 480, height: 270))
        try await Self.barrier(alice, from: "bob")
        #expect(await Self.frames(alice, "bob", .video) > cameraBeforeTheShare, "bob's camera stopped when his screen began")
        #expect(await Self.frames(alice, "bob", .screen) > 0)
        bob.client.deviceStore.stopScreenShare()
        try await Self.expect(alice, .trackEnded("bob", .screen))
        await server.stop()
    }

    /// Agreeing to switch adds the camera track on both sides and renegotiates; switching back
    /// removes it.
    @Test func anAudioCallSwitchesToVideoAndBack() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        _ = try await Self.connect(alice, [bob], mediaType: .audio)

        let transaction = try await alice.client.callStore.requestMediaTypeChange(to: .video)
        try await bob.calls.first(from: 0, timeout: Self.wait) { if case .onMediaTypeChangeRequested = $0 { true } else { false } }
        try await bob.client.callStore.replyMediaTypeChange(transactionId: transaction, agree: true)
        try await Self.expect(alice, .trackStarted("bob", .video))
        try await Self.expect(bob, .trackStarted("alice", .video))

        let back = try await bob.client.callStore.requestMediaTypeChange(to: .audio)
        try await alice.calls.first(from: 0, timeout: Self.wait) {
            if case .onMediaTypeChangeRequested(_, back, _, _) = $0 { true } else { false }
        }
        try await alice.client.callStore.replyMediaTypeChange(transactionId: back, agree: true)
        try await Self.expect(alice, .trackEnded("bob", .video))
        try await Self.expect(bob, .trackEnded("alice", .video))
        // The audio goes on.
        try await Self.barrier(alice, from: "bob", count: 3)
        await server.stop()
    }

    /// An ICE restart (the SDK asks after a reconnect) replaces the connection: audio flows again
    /// on the new one, and the counters carry on.
    @Test func anIceRestartReplacesTheConnection() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        _ = try await Self.connect(alice, [bob], mediaType: .audio)
        let before = await Self.frames(alice, "bob", .audio)

        bob.client.media.reconnected()
        try await Self.expectAudioAgain(alice, bob, after: before)
        await server.stop()
    }

    /// An element inside a connection's webrtcbin fails (as `nicesrc` did when a flow error
    /// stopped it during a renegotiation under load): that connection is failed, ICE restarts on a
    /// new one, and media flows again, from whichever side the failure came.
    @Test(arguments: ["alice", "bob"]) func aFailedTransportIsReplaced(on side: String) async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        _ = try await Self.connect(alice, [bob], mediaType: .audio)
        let before = await Self.frames(alice, "bob", .audio)

        let (failing, peer) = side == "alice" ? (alice, bob.id) : (bob, alice.id)
        try await failing.engine.failTransport(of: peer)
        try await Self.expectAudioAgain(alice, bob, after: before)
        await server.stop()
    }

    /// Each side receives the other's audio on a new connection (a second `trackStarted`), and
    /// alice decodes more of bob's than `before`.
    static func expectAudioAgain(_ alice: Member, _ bob: Member, after before: Int) async throws {
        for (member, peer) in [(alice, bob.id), (bob, alice.id)] {
            do {
                _ = try await member.media.matches(2, from: 0, timeout: wait) { $0 == .trackStarted(peer, .audio) }
            } catch {
                let seen = member.media.values.filter { if case .audioLevel = $0 { false } else { true } }
                Issue.record("\(member.id) did not receive \(peer)'s audio again; it saw \(seen)")
                throw error
            }
        }
        try await barrier(alice, from: bob.id, count: 3)
        #expect(await frames(alice, bob.id, .audio) > before)
    }

    /// The audio encoder thinned and made full again thousands of times while alice's audio flows
    /// (what ``AudioThinning`` does on a narrow link, here as fast as the engine takes it): bob
    /// goes on decoding her audio, and the process lives. Changing opusenc's frame size under a
    /// frame aborted it (`g_assert (size == bytes)`); the change now waits for the encoder to be
    /// between two frames.
    @Test func audioThinnedAndFullAgainWhileItFlows() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        _ = try await Self.connect(alice, [bob], mediaType: .audio)
        let changing = Task {
            var thin = true
            while !Task.isCancelled {
                try await alice.engine.thinAudio(thin)
                thin.toggle()
            }
        }
        try await Self.barrier(bob, from: alice.id, count: 20)
        changing.cancel()
        try await changing.value
        try await alice.engine.thinAudio(false)
        let before = await Self.frames(bob, alice.id, .audio)
        try await Self.barrier(bob, from: alice.id, count: 3)
        #expect(await Self.frames(bob, alice.id, .audio) > before)
        await server.stop()
    }

    /// Three members: each decodes the other two.
    @Test func aGroupCallIsAMesh() async throws {
        let server = try await TestServer.start()
        let (alice, bob, carol) = try await Self.mesh(server, mediaType: .audio)
        for member in [alice, bob, carol] {
            let statistics = await member.engine.statistics()
            #expect(statistics.peers.count == 2)
            #expect(statistics.peers.values.allSatisfy { $0.audio.framesDecoded > 0 })
        }
        await server.stop()
    }

    /// Video to one member of a mesh stops on that member's connection only, with no
    /// renegotiation (the valve ``VideoGate`` closes): bob's count of alice's frames stands still
    /// while carol's goes on and bob still hears alice; opened again, bob decodes alice's video
    /// again (from the key frame it asks the shared encoder for), and a screen shared meanwhile.
    @Test func videoToOneMemberOfAMeshStopsAndStartsAgain() async throws {
        let server = try await TestServer.start()
        let (alice, bob, carol) = try await Self.mesh(server, mediaType: .video)
        try await Self.expect(bob, .frameSize("alice", .video, width: 640, height: 360))
        try await Self.expect(carol, .frameSize("alice", .video, width: 640, height: 360))

        try await alice.engine.sendVideo(to: bob.id, false)
        // What was on the way arrives first.
        try await Self.barrier(bob, from: "alice", count: 5)
        let (bobVideo, bobAudio, carolVideo) = (
            await Self.frames(bob, "alice", .video), await Self.frames(bob, "alice", .audio),
            await Self.frames(carol, "alice", .video)
        )
        try await Self.barrier(bob, from: "alice")
        try await Self.barrier(carol, from: "alice", count: 3)
        #expect(await Self.frames(bob, "alice", .video) == bobVideo)
        #expect(await Self.frames(bob, "alice", .audio) > bobAudio)
        #expect(await Self.frames(carol, "alice", .video) > carolVideo)

        // A video track added while paused (a screen: a new send branch, after a renegotiation)
        // starts paused on that connection: carol decodes alice's screen, bob none of it.
        alice.client.deviceStore.startScreenShare(.testPattern)
        try await Self.expect(carol, .frameSize("alice", .screen, width: 480, height: 270))
        try await Self.barrier(bob, from: "alice")
        #expect(await Self.frames(bob, "alice", .screen) == 0)

        try await alice.engine.sendVideo(to: bob.id, true)
        try await Self.barrier(bob, from: "alice")
        #expect(await Self.frames(bob, "alice", .video) > bobVideo)
        try await Self.expect(bob, .frameSize("alice", .screen, width: 480, height: 270))
        await server.stop()
    }

    /// alice calls bob (tone 660) and carol (tone 880) in one call.
    static func mesh(_ server: TestServer, mediaType: CallMediaType) async throws -> (Member, Member, Member) {
        let alice = try await member(server, "alice")
        let bob = try await member(server, "bob", tone: 660)
        let carol = try await member(server, "carol", tone: 880)
        _ = try await connect(alice, [bob, carol], mediaType: mediaType)
        return (alice, bob, carol)
    }

    /// `endCall` returns once the call's media has ended, so a process may exit right after it:
    /// the recording is complete then (its WAV header counts every byte; wavenc writes the sizes
    /// at the end of the stream) and has its name, without waiting for the SDK's own end.
    @Test func endCallReturnsWithTheRecordingsComplete() async throws {
        let server = try await TestServer.start()
        let directory = server.directory.appendingPathComponent("recordings")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob", record: directory)
        let call = try await Self.connect(alice, [bob], mediaType: .audio)
        try await Self.barrier(bob, from: "alice", count: 5)

        await bob.engine.endCall(call)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["alice-audio.wav"])
        let wav = try Data(contentsOf: directory.appendingPathComponent("alice-audio.wav"))
        let riffSize = wav.dropFirst(4).prefix(4).enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
        #expect(wav.count > 48_000)
        #expect(riffSize == wav.count - 8)
        // A second end of the same call (the SDK's own, coming later) changes nothing.
        await bob.engine.endCall(call)
        try await alice.client.callStore.hangup()
        await server.stop()
    }

    /// A call's recordings are media files: played back as another member's audio and video
    /// sources, they arrive decoded at the other end.
    @Test func recordingsPlayBackAsFileSources() async throws {
        let server = try await TestServer.start()
        let directory = server.directory.appendingPathComponent("recordings")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let alice = try await Self.member(server, "alice", tone: 660)
        let bob = try await Self.member(server, "bob", record: directory)
        _ = try await Self.connect(alice, [bob], mediaType: .video)
        try await Self.expect(bob, .frameSize("alice", .video, width: 640, height: 360))
        // Six seconds of recording: carol plays the files once from the moment her media starts,
        // and a loaded CI run took more than two (the length this recorded before) from there to
        // dave's first decodable video frame, so the video had ended before dave could see it.
        try await Self.barrier(bob, from: "alice", count: 60)
        try await alice.client.callStore.hangup()
        try await Self.expect(bob, .trackEnded("alice", .video))
        try await Self.expect(bob, .trackEnded("alice", .audio))

        let carol = try await Self.member(
            server, "carol", audio: .file(directory.appendingPathComponent("alice-audio.wav").path),
            video: .file(directory.appendingPathComponent("alice-video.webm").path))
        let dave = try await Self.member(server, "dave")
        _ = try await Self.connect(carol, [dave], mediaType: .video)
        try await Self.expect(dave, "alice's recorded tone, sent by carol") {
            if case .audioLevel("carol", let level, _) = $0 { level > 10 } else { false }
        }
        try await Self.expect(dave, .frameSize("carol", .video, width: 640, height: 360))
        await server.stop()
    }

    /// One engine serves one call after another: each call starts its media afresh.
    @Test func callAfterCallOnTheSameEngines() async throws {
        // Eight invitations to bob in seconds: more than a callee takes by default (5 at once).
        let server = try await TestServer.start { $0.rateLimits.invitationsPerCallee = RateLimit(rate: 10, burst: 10) }
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        for round in 1...8 {
            let call = try await alice.client.callStore.calls(participantIds: ["bob"], mediaType: .audio)
            try await bob.calls.first(from: 0, timeout: Self.wait) {
                if case .onCallReceived(call.callId, _, _, _, _) = $0 { true } else { false }
            }
            try await bob.client.callStore.accept(callId: call.callId)
            for (member, peer) in [(alice, UserID("bob")), (bob, UserID("alice"))] {
                do {
                    _ = try await member.media.matches(round, from: 0, timeout: Self.wait) { $0 == .trackStarted(peer, .audio) }
                } catch {
                    let seen = member.media.values.filter { if case .audioLevel = $0 { false } else { true } }
                    Issue.record("call \(round): \(member.id) did not hear \(peer); it saw \(seen)")
                    throw error
                }
            }
            try await alice.client.callStore.hangup()
            for member in [alice, bob] {
                try await member.calls.matches(round, from: 0, timeout: Self.wait) {
                    if case .onCallEnded = $0 { true } else { false }
                }
            }
        }
        await server.stop()
    }
}
#endif
