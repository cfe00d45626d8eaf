import Switchboard
import SwitchboardProtocol
import Testing

/// The platform-neutral rules an engine names what it receives through the SFU with: each
/// subscribe section's member and track (``SFUSections``), the videos and statistics per member,
/// what was published counting once in the status report, and the camera's layer bitrates.
struct SFUSectionsTests {
    typealias V = StandardStats.Value

    /// bob's microphone and camera, carol's microphone and screen, in the SFU's offer.
    static let sections = SFUSections([
        SFUTrack(mid: "0", userId: "bob", source: .microphone), SFUTrack(mid: "1", userId: "bob", source: .camera),
        SFUTrack(mid: "2", userId: "carol", source: .microphone), SFUTrack(mid: "3", userId: "carol", source: .screen),
    ])

    @Test func aSectionIsNamedByItsMid() {
        #expect(Self.sections[mid: "1"] == SFUTrack(mid: "1", userId: "bob", source: .camera))
        #expect(Self.sections[mid: "9"] == nil)
        #expect(Self.sections[mid: nil] == nil)
        // Of two sections with one mid the first counts.
        let twice = SFUSections([SFUTrack(mid: "0", userId: "bob", source: .camera), SFUTrack(mid: "0", userId: "eve", source: .screen)])
        #expect(twice[mid: "0"]?.userId == "bob")
    }

    @Test func aListLongerThanTheLimitKeepsItsFirstSections() {
        let tracks = (0..<(SFUSections.limit + 10)).map { SFUTrack(mid: "\($0)", userId: UserID(rawValue: "m\($0)"), source: .camera) }
        let sections = SFUSections(tracks)
        #expect(sections[mid: "\(SFUSections.limit - 1)"] != nil)
        #expect(sections[mid: "\(SFUSections.limit)"] == nil)
    }

    @Test func videosGoToTheirSectionsMembers() {
        let videos = Self.sections.videos([
            (mid: "0", track: "bob-mic"), (mid: "1", track: "bob-cam"), (mid: "3", track: "carol-screen"),
            // A section the offer did not name, and one with no mid yet: nobody's.
            (mid: "7", track: "stray"), (mid: nil, track: "unnegotiated"),
        ])
        #expect(videos == ["bob": [.camera: "bob-cam"], "carol": [.screen: "carol-screen"]])
        #expect(SFUSections().videos([(mid: "1", track: "bob-cam")]).isEmpty)
    }

    @Test(arguments: [(TrackSource.microphone, ReceivedVideoRole?.none), (.camera, .camera), (.screen, .screen)])
    func aSourceIsAVideoRole(_ source: TrackSource, _ role: ReceivedVideoRole?) {
        #expect(ReceivedVideoRole(source: source) == role)
    }

    /// A subscribe connection's report as Google's WebRTC (and a browser's getStats) gives it: one
    /// inbound stream per section, the connection's transport and candidate pair.
    static let report = StandardStatsReport([
        StandardStats(id: "c-opus", type: "codec", values: ["mimeType": .string("audio/opus")]),
        StandardStats(id: "c-vp8", type: "codec", values: ["mimeType": .string("video/VP8")]),
        StandardStats(
            id: "in-0", type: "inbound-rtp",
            values: [
                "kind": .string("audio"), "mid": .string("0"), "packetsReceived": .number(100), "bytesReceived": .number(8_000),
                "packetsLost": .number(4), "audioLevel": .number(0.5), "codecId": .string("c-opus"),
            ]),
        StandardStats(
            id: "in-1", type: "inbound-rtp",
            values: [
                "kind": .string("video"), "mid": .string("1"), "packetsReceived": .number(300), "bytesReceived": .number(240_000),
                "framesDecoded": .number(30), "frameWidth": .number(320), "frameHeight": .number(180), "codecId": .string("c-vp8"),
            ]),
        StandardStats(
            id: "in-2", type: "inbound-rtp",
            values: ["kind": .string("audio"), "mid": .string("2"), "packetsReceived": .number(50), "audioLevel": .number(0.1)]),
        StandardStats(
            id: "in-3", type: "inbound-rtp",
            values: [
                "kind": .string("video"), "mid": .string("3"), "packetsReceived": .number(80), "framesDecoded": .number(12),
                "frameWidth": .number(1280), "frameHeight": .number(720),
            ]),
        // A section the offer did not name: nobody's.
        StandardStats(id: "in-9", type: "inbound-rtp", values: ["kind": .string("video"), "mid": .string("9"), "packetsReceived": .number(7)]),
        StandardStats(id: "t", type: "transport", values: ["selectedCandidatePairId": .string("cp")]),
        StandardStats(
            id: "cp", type: "candidate-pair",
            values: ["localCandidateId": .string("lc"), "currentRoundTripTime": .number(0.02), "state": .string("succeeded")]),
        StandardStats(id: "lc", type: "local-candidate", values: ["candidateType": .string("srflx")]),
    ])

    @Test func aSubscribeReportIsSplitByMember() {
        let members = Self.report.memberStatistics(Self.sections, playoutVolume: 50)
        #expect(Set(members.keys) == ["bob", "carol"])
        let bob = members["bob"]
        #expect(
            bob?.audio
                == TrackStatistics(
                    packetsReceived: 100, bytesReceived: 8_000, packetsLost: 4, codec: "opus", level: 50, playoutLevel: 25,
                    framesDecoded: 100))
        #expect(
            bob?.video
                == TrackStatistics(
                    packetsReceived: 300, bytesReceived: 240_000, codec: "VP8", framesDecoded: 30, frameWidth: 320, frameHeight: 180))
        #expect(bob?.screen == TrackStatistics())
        // carol's video is her screen, as her section says (no track ids needed).
        let carol = members["carol"]
        #expect(carol?.audio == TrackStatistics(packetsReceived: 50, level: 10, playoutLevel: 5, framesDecoded: 50))
        #expect(carol?.video == TrackStatistics())
        #expect(carol?.screen == TrackStatistics(packetsReceived: 80, framesDecoded: 12, frameWidth: 1280, frameHeight: 720))
        // One path to the SFU: every member has its round trip and candidate.
        #expect(bob?.roundTripTimeMs == 20 && carol?.roundTripTimeMs == 20)
        #expect(bob?.localCandidateType == "srflx" && carol?.localCandidateType == "srflx")
        // Without sections, nothing is anyone's.
        #expect(Self.report.memberStatistics(SFUSections()).isEmpty)
    }

    @Test func whatWasPublishedCountsOnceInTheStatusReport() {
        let before = MediaStatistics(
            peers: ["bob": PeerStatistics(audio: TrackStatistics(packetsReceived: 100))],
            published: PeerStatistics(audio: TrackStatistics(bytesSent: 1_000), video: TrackStatistics(bytesSent: 10_000)))
        let after = MediaStatistics(
            localAudioLevel: 40,
            peers: [
                "bob": PeerStatistics(audio: TrackStatistics(packetsReceived: 190, packetsLost: 10), roundTripTimeMs: 20),
                "carol": PeerStatistics(audio: TrackStatistics(packetsReceived: 50), roundTripTimeMs: 20),
            ],
            published: PeerStatistics(
                audio: TrackStatistics(bytesSent: 3_000), video: TrackStatistics(bytesSent: 60_000), roundTripTimeMs: 35))
        let sample = StatusSample(from: before, to: after, milliseconds: 1_000)
        #expect(sample.bitrate == (2_000 + 50_000) * 8 / 1_000)
        #expect(sample.rtt == 35)
        #expect(sample.packetLoss == 10)  // bob: 10 of 100
        #expect(sample.audioLevel == 40)
        // A new session's publish connection counts from zero.
        let restarted = MediaStatistics(published: PeerStatistics(video: TrackStatistics(bytesSent: 4_000)))
        #expect(StatusSample(from: after, to: restarted, milliseconds: 1_000).bitrate == 4_000 * 8 / 1_000)
    }

    @Test(arguments: [
        (VideoQuality.p720, 1, 1_500), (.p720, 2, 375), (.p360, 2, 125), (.p1080, 4, 156),
        // Out of range: a scale below 1 is 1, a huge one is capped and never traps.
        (.p720, 0, 1_500), (.p720, -3, 1_500), (.p720, Int.max, 1),
    ])
    func aLayersBitrateFollowsItsPixels(_ quality: VideoQuality, _ scaleDown: Int, _ kbps: Int) {
        #expect(SFUCameraLayers.bitrateKbps(quality, scaleDown: scaleDown) == kbps)
    }

    @Test func theLayersTogetherSendAQuarterMoreThanOneStream() {
        for quality in VideoQuality.allCases {
            let total = SFUCameraLayers.layers.map { SFUCameraLayers.bitrateKbps(quality, scaleDown: $0.scaleDown) }.reduce(0, +)
            #expect(total * 100 <= quality.bitrateKbps * 125)
        }
    }
}
