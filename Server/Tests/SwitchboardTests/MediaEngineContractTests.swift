import Foundation
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

@testable import Switchboard

/// What the SDK asks of every media engine beyond negotiation, through a real server: every
/// ``DeviceStore`` setting reaches the engine, the SDK reports the engine's statistics once a
/// second by itself, screen sharing and media-type changes reach the engine and the other members.
/// The engines are fakes; `SwitchboardGStreamerTests` and the browser tests hold real ones to it.
struct MediaEngineContractTests {
    typealias Member = MediaNegotiationTests.Member

    @Test func everyDeviceSettingReachesTheEngine() async throws {
        let server = try await TestServer.start()
        let alice = try await MediaNegotiationTests.member(server, "alice")
        let devices = alice.client.deviceStore
        // The first state goes to the engine whole.
        try await alice.media.calls.first(from: 0) { $0 == .audioOutput(AudioOutput()) }
        try await alice.media.calls.first(from: 0) { $0 == .screenShare(nil) }

        devices.openLocalMicrophone()
        devices.setMicrophoneVolume(40)
        devices.setMicrophoneVolume(140)
        devices.setMicrophoneVolume(40)
        devices.openLocalCamera(isFront: false)
        devices.setVideoQuality(.p360)
        devices.setAudioRoute(.speaker)
        // The route is the audio-route policy's answer to the choice, which comes a moment later.
        try await alice.media.calls.first(from: 0) { $0 == .audioOutput(AudioOutput(route: .speaker, volume: 100, remoteAudioMuted: false)) }
        devices.setAudioPlayoutVolume(30)
        devices.muteAllRemoteAudio(true)
        devices.startScreenShare(.testPattern)
        devices.stopScreenShare()
        let expected: [FakeMediaEngine.Call] = [
            .microphone(on: true), .microphoneVolume(40), .microphoneVolume(100), .microphoneVolume(40), .camera(on: true, front: false), .videoQuality(.p360),
            .audioOutput(AudioOutput(route: .speaker, volume: 100, remoteAudioMuted: false)),
            .audioOutput(AudioOutput(route: .speaker, volume: 30, remoteAudioMuted: false)),
            .audioOutput(AudioOutput(route: .speaker, volume: 30, remoteAudioMuted: true)),
            .screenShare(.testPattern), .screenShare(nil),
        ]
        try await alice.media.calls.first(from: 0) { $0 == .screenShare(.testPattern) }
        try await alice.media.calls.matches(2, from: 0) { $0 == .screenShare(nil) }
        let settings = alice.media.calls.values.drop { $0 != .microphone(on: true) }
        #expect(Array(settings) == expected)
        await server.stop()
    }

    /// No one calls `reportStatus`: each side's SDK reads its engine once a second of the test
    /// clock and the other side sees the quality and volume derived from it.
    @Test func statusReportsComeFromTheEngineOnceASecond() async throws {
        let server = try await TestServer.start()
        let alice = try await MediaNegotiationTests.member(server, "alice")
        let bob = try await MediaNegotiationTests.member(server, "bob")
        bob.client.deviceStore.openLocalMicrophone()
        var sample = PeerStatistics(
            audio: TrackStatistics(packetsSent: 50, bytesSent: 6_000, packetsReceived: 50, bytesReceived: 6_000),
            roundTripTimeMs: 40)
        bob.media.statisticsToReport = MediaStatistics(localAudioLevel: 60, peers: ["alice": sample])
        let call = try await MediaNegotiationTests.connect(alice, bob, "alice", "bob")
        try await bob.media.calls.first(from: 0) { $0 == .callConnected(call, .video) }
        try await alice.media.calls.first(from: 0) { $0 == .callConnected(call, .video) }

        server.clock.advance(by: .seconds(1))
        try await bob.media.calls.first(from: 0) { $0 == .statisticsRead }
        try await alice.events.first(from: 0) {
            $0 == .onMemberStatusChanged(callId: call, userId: "bob", networkQuality: .excellent, volumeLevel: .high)
        }
        // The second second: 40 more packets arrived and 10 were lost (20 %), the microphone went quiet.
        sample.audio.packetsReceived = 90
        sample.audio.packetsLost = 10
        bob.media.statisticsToReport = MediaStatistics(localAudioLevel: 0, peers: ["alice": sample])
        server.clock.advance(by: .seconds(1))
        try await alice.events.first(from: 0) {
            $0 == .onMemberStatusChanged(callId: call, userId: "bob", networkQuality: .veryBad, volumeLevel: .mute)
        }
        // bob sees his own levels; alice's engine (all zero) makes her excellent and silent.
        try await Recorder(bob.client.callStore.stateUpdates).first(from: 0) { $0.selfInfo.networkQuality == .veryBad }
        try await bob.events.first(from: 0) {
            $0 == .onMemberStatusChanged(callId: call, userId: "alice", networkQuality: .excellent, volumeLevel: .mute)
        }
        await server.stop()
    }

    /// A member from whom nothing arrives shows as `down` 2–3 s after the last packet (one
    /// reading a second), whatever their last report said, and as they report once packets come
    /// again (issue 48: in a blackout the other side showed `excellent` until the server's
    /// heartbeat took the member for dropped, 13 s in).
    @Test func aMemberWhoseMediaStopsShowsAsDown() async throws {
        let server = try await TestServer.start()
        let alice = try await MediaNegotiationTests.member(server, "alice")
        let bob = try await MediaNegotiationTests.member(server, "bob")
        // alice sends: her microphone is on (a member who sends nothing by choice never stalls).
        alice.client.deviceStore.openLocalMicrophone()
        var fromAlice = PeerStatistics(audio: TrackStatistics(packetsReceived: 50, bytesReceived: 6_000), roundTripTimeMs: 40)
        bob.media.statisticsToReport = MediaStatistics(peers: ["alice": fromAlice])
        let call = try await MediaNegotiationTests.connect(alice, bob, "alice", "bob")
        try await bob.media.calls.first(from: 0) { $0 == .callConnected(call, .video) }
        try await alice.media.calls.first(from: 0) { $0 == .callConnected(call, .video) }
        let down: @Sendable (CallStoreEvent) -> Bool = { event in
            if case .onMemberStatusChanged(call, "alice", .down, _) = event { true } else { false }
        }
        // Readings at 1 s (packets came), 2 s and 3 s (none more): down at the third.
        for second in 1...2 {
            server.clock.advance(by: .seconds(1))
            try await bob.media.calls.matches(second, from: 0) { $0 == .statisticsRead }
        }
        #expect(!bob.events.values.contains(where: down))
        server.clock.advance(by: .seconds(1))
        try await bob.events.first(from: 0, where: down)
        #expect(bob.client.callStore.state.allParticipants.first { $0.userId == "alice" }?.networkQuality == .down)

        fromAlice.audio.packetsReceived = 60
        bob.media.statisticsToReport = MediaStatistics(peers: ["alice": fromAlice])
        server.clock.advance(by: .seconds(1))
        try await bob.events.first(from: 0) {
            if case .onMemberStatusChanged(call, "alice", let quality, _) = $0 { quality != .down } else { false }
        }
        await server.stop()
    }

    @Test func theSampleOfAnIntervalUsesTheDifferenceOfTheCounters() throws {
        let before = MediaStatistics(
            localAudioLevel: 10,
            peers: [
                "bob": PeerStatistics(audio: TrackStatistics(bytesSent: 1_000, packetsReceived: 100), roundTripTimeMs: 30),
                "carol": PeerStatistics(video: TrackStatistics(bytesSent: 5_000, packetsReceived: 100)),
            ])
        let after = MediaStatistics(
            localAudioLevel: 130,
            peers: [
                "bob": PeerStatistics(
                    audio: TrackStatistics(bytesSent: 7_000, packetsReceived: 195, packetsLost: 5), roundTripTimeMs: 80),
                // carol's connection was replaced: her counters start again from zero.
                "carol": PeerStatistics(video: TrackStatistics(bytesSent: 500, packetsReceived: 48, packetsLost: 2)),
            ])
        let sample = StatusSample(from: before, to: after, milliseconds: 500)
        #expect(sample.packetLoss == 5)  // bob: 5 of 100; carol: 2 of 50 (4 %)
        #expect(sample.rtt == 80)
        #expect(sample.bitrate == (6_000 + 500) * 8 / 500)
        #expect(sample.audioLevel == 100)
        #expect(StatusSample(from: nil, to: MediaStatistics(), milliseconds: 0).bitrate == 0)
        // Per member: loss since the start, and what went each way in the interval.
        #expect(after.peers["bob"]?.audio.lossPercent == 2.5)  // 5 lost of 200 (195 received)
        let bob = try #require(after.peers["bob"]?.bitrate(since: before.peers["bob"], milliseconds: 500))
        #expect(bob.sent == 6_000 * 8 / 500 && bob.received == 0)
    }

    @Test func screenSharingReachesTheEngineAndTheOtherMember() async throws {
        let server = try await TestServer.start()
        let alice = try await MediaNegotiationTests.member(server, "alice")
        let bob = try await MediaNegotiationTests.member(server, "bob")
        let call = try await MediaNegotiationTests.connect(alice, bob, "alice", "bob")
        let bobStates = Recorder(bob.client.callStore.stateUpdates)

        alice.client.deviceStore.startScreenShare(.file("/tmp/slides.webm"))
        try await alice.media.calls.first(from: 0) { $0 == .screenShare(.file("/tmp/slides.webm")) }
        try await bob.events.first(from: 0) { $0 == .onRemoteScreenShareChanged(callId: call, userId: "alice", sharing: true) }
        try await bobStates.first(from: 0) { $0.allParticipants.first { $0.userId == "alice" }?.screenSharing == true }

        alice.client.deviceStore.stopScreenShare()
        try await bob.events.first(from: 0) { $0 == .onRemoteScreenShareChanged(callId: call, userId: "alice", sharing: false) }
        #expect(bob.client.callStore.state.allParticipants.first { $0.userId == "alice" }?.screenSharing == false)
        await server.stop()
    }

    /// An agreed switch to video tells both engines (which add the camera track) and turns the
    /// camera on, as CallPlus does; back to audio removes it again.
    @Test func anAgreedMediaTypeChangeReachesBothEngines() async throws {
        let server = try await TestServer.start()
        let alice = try await MediaNegotiationTests.member(server, "alice")
        let bob = try await MediaNegotiationTests.member(server, "bob")
        let call = try await alice.client.callStore.calls(participantIds: ["bob"], mediaType: .audio).callId
        try await bob.events.first(from: 0, where: isReceived)
        try await bob.client.callStore.accept()
        try await alice.media.calls.first(from: 0) { $0 == .callConnected(call, .audio) }

        let transaction = try await alice.client.callStore.requestMediaTypeChange(to: .video)
        try await bob.events.first(from: 0) { if case .onMediaTypeChangeRequested = $0 { true } else { false } }
        try await bob.client.callStore.replyMediaTypeChange(transactionId: transaction, agree: true)
        for member in [alice, bob] {
            try await member.media.calls.first(from: 0) { $0 == .mediaTypeChanged(call, .video) }
            try await member.media.calls.first(from: 0) { $0 == .camera(on: true, front: true) }
        }

        let back = try await bob.client.callStore.requestMediaTypeChange(to: .audio)
        try await alice.events.first(from: 0) { if case .onMediaTypeChangeRequested(_, back, _, _) = $0 { true } else { false } }
        try await alice.client.callStore.replyMediaTypeChange(transactionId: back, agree: true)
        for member in [alice, bob] {
            try await member.media.calls.first(from: 0) { $0 == .mediaTypeChanged(call, .audio) }
            try await member.media.calls.first(from: 0) { $0 == .camera(on: false, front: true) }
        }
        await server.stop()
    }
}
