import Switchboard
import SwitchboardProtocol
import Testing

/// The platform-neutral rules the iOS engine (SwitchboardWebRTC) runs on: reading a W3C stats
/// report, picking the camera's format, telling a received screen from a camera.
struct WebRTCEngineRulesTests {
    typealias V = StandardStats.Value

    /// A connection's report as Google's WebRTC (and a browser's getStats) gives it: the member's
    /// microphone and camera and shared screen received, your microphone and screen sent.
    static let report = StandardStatsReport([
        StandardStats(id: "c-opus", type: "codec", values: ["mimeType": .string("audio/opus")]),
        StandardStats(id: "c-vp8", type: "codec", values: ["mimeType": .string("video/VP8")]),
        StandardStats(
            id: "in-a", type: "inbound-rtp",
            values: [
                "kind": .string("audio"), "trackIdentifier": .string("mic-r"), "packetsReceived": .number(100),
                "bytesReceived": .number(8_000), "packetsLost": .number(5), "jitter": .number(0.015625),
                "audioLevel": .number(0.5), "packetsDiscarded": .number(2), "codecId": .string("c-opus"),
            ]),
        StandardStats(
            id: "in-v", type: "inbound-rtp",
            values: [
                "kind": .string("video"), "trackIdentifier": .string("cam-r"), "packetsReceived": .number(300),
                "bytesReceived": .number(240_000), "framesDecoded": .number(30), "frameWidth": .number(640),
                "frameHeight": .number(360), "codecId": .string("c-vp8"),
            ]),
        StandardStats(
            id: "in-s", type: "inbound-rtp",
            values: [
                "kind": .string("video"), "trackIdentifier": .string("screen-r"), "packetsReceived": .number(50),
                "framesDecoded": .number(10), "frameWidth": .number(1280), "frameHeight": .number(720),
            ]),
        StandardStats(id: "ms-a", type: "media-source", values: ["kind": .string("audio"), "audioLevel": .number(0.25)]),
        StandardStats(id: "ms-s", type: "media-source", values: ["kind": .string("video"), "trackIdentifier": .string("screen")]),
        StandardStats(
            id: "out-a", type: "outbound-rtp",
            values: ["kind": .string("audio"), "mediaSourceId": .string("ms-a"), "packetsSent": .number(90), "bytesSent": .number(7_000)]),
        StandardStats(
            id: "out-s", type: "outbound-rtp",
            values: ["kind": .string("video"), "mediaSourceId": .string("ms-s"), "packetsSent": .number(40), "bytesSent": .number(50_000)]),
        StandardStats(id: "rin-a", type: "remote-inbound-rtp", values: ["kind": .string("audio"), "roundTripTime": .number(0.045)]),
        StandardStats(id: "t", type: "transport", values: ["selectedCandidatePairId": .string("cp1")]),
        StandardStats(
            id: "cp1", type: "candidate-pair",
            values: ["localCandidateId": .string("lc1"), "currentRoundTripTime": .number(0.05), "state": .string("succeeded")]),
        StandardStats(id: "lc1", type: "local-candidate", values: ["candidateType": .string("relay")]),
    ])

    @Test func aReportBecomesTheMembersStatistics() {
        let peer = Self.report.peerStatistics(screenTrackIds: ["screen-r", "screen"], playoutVolume: 30)
        #expect(
            peer.audio
                == TrackStatistics(
                    packetsSent: 90, bytesSent: 7_000, packetsReceived: 100, bytesReceived: 8_000, packetsLost: 5, jitterMs: 15.625,
                    codec: "opus", level: 50, playoutLevel: 15, framesDecoded: 98))
        #expect(
            peer.video
                == TrackStatistics(
                    packetsReceived: 300, bytesReceived: 240_000, codec: "VP8", framesDecoded: 30, frameWidth: 640, frameHeight: 360))
        #expect(
            peer.screen
                == TrackStatistics(
                    packetsSent: 40, bytesSent: 50_000, packetsReceived: 50, framesDecoded: 10, frameWidth: 1280, frameHeight: 720))
        // The RTCP round trip wins over the candidate pair's.
        #expect(peer.roundTripTimeMs == 45)
        #expect(peer.localCandidateType == "relay")
        #expect(Self.report.localAudioLevel == 25)
    }

    @Test func withoutScreenTrackIdsEveryVideoIsTheCamera() {
        let peer = Self.report.peerStatistics(screenTrackIds: [])
        #expect(peer.video.packetsReceived == 350)
        #expect(peer.video.packetsSent == 40)
        #expect(peer.screen == TrackStatistics())
        #expect(peer.audio.playoutLevel == 50)
    }

    /// Without a transport's selected pair, the nominated pair that succeeded; its round trip
    /// when RTCP has none yet. Values out of range read as nothing.
    @Test func thePairInUseAndBadValues() {
        let report = StandardStatsReport([
            StandardStats(
                id: "cp0", type: "candidate-pair",
                values: ["localCandidateId": .string("l0"), "nominated": .bool(true), "state": .string("failed")]),
            StandardStats(
                id: "cp1", type: "candidate-pair",
                values: [
                    "localCandidateId": .string("l1"), "nominated": .bool(true), "state": .string("succeeded"),
                    "currentRoundTripTime": .number(0.0304),
                ]),
            StandardStats(id: "l0", type: "local-candidate", values: ["candidateType": .string("host")]),
            StandardStats(id: "l1", type: "local-candidate", values: ["candidateType": .string("srflx")]),
            StandardStats(
                id: "in", type: "inbound-rtp",
                values: [
                    "kind": .string("audio"), "packetsReceived": .number(-4), "packetsLost": .number(.infinity),
                    "audioLevel": .number(7), "bytesReceived": .string("12"),
                ]),
        ])
        let peer = report.peerStatistics(screenTrackIds: [])
        #expect(peer.roundTripTimeMs == 30)
        #expect(peer.localCandidateType == "srflx")
        #expect(peer.audio == TrackStatistics(level: 100, playoutLevel: 100))
        #expect(StandardStatsReport([]).peerStatistics(screenTrackIds: []) == PeerStatistics())
    }

    static let formats = [
        CaptureFormat(width: 640, height: 480, maxFrameRate: 30), CaptureFormat(width: 1280, height: 720, maxFrameRate: 30),
        CaptureFormat(width: 1920, height: 1080, maxFrameRate: 30), CaptureFormat(width: 1280, height: 720, maxFrameRate: 60),
        CaptureFormat(width: 3840, height: 2160, maxFrameRate: 30),
    ]

    @Test(arguments: [
        (VideoQuality.p360, formats, 0), (.p540, formats, 3), (.p720, formats, 3), (.p1080, formats, 2),
        // Nothing large enough: the largest there is.
        (.p1080, [CaptureFormat(width: 640, height: 480, maxFrameRate: 30)], 0),
        // Large enough but too slow loses to a larger one at the rate; too slow alone is still taken.
        (.p720, [CaptureFormat(width: 1280, height: 720, maxFrameRate: 10), CaptureFormat(width: 1920, height: 1080, maxFrameRate: 30)], 1),
        (.p720, [CaptureFormat(width: 1280, height: 720, maxFrameRate: 10), CaptureFormat(width: 640, height: 360, maxFrameRate: 30)], 0),
    ])
    func theCameraFormatCoversTheQuality(_ quality: VideoQuality, _ formats: [CaptureFormat], _ expected: Int) {
        #expect(quality.captureFormat(among: formats) == expected)
    }

    @Test func theCaptureRateIsTheQualitysUnlessTheFormatIsSlower() {
        #expect(VideoQuality.p720.captureFormat(among: []) == nil)
        #expect(VideoQuality.p720.captureFrameRate(for: CaptureFormat(width: 1280, height: 720, maxFrameRate: 60)) == 15)
        #expect(VideoQuality.p720.captureFrameRate(for: CaptureFormat(width: 1280, height: 720, maxFrameRate: 10)) == 10)
        #expect(VideoQuality.p720.captureFrameRate(for: CaptureFormat(width: 1280, height: 720, maxFrameRate: 0)) == 1)
    }

    @Test(arguments: [
        (String?.none, String?.some("switchboard"), ReceivedVideoRole.camera), ("switchboard", "switchboard", .camera),
        ("switchboard-screen", "switchboard", .screen), ("{a1b2}", nil, .screen),
    ])
    func aVideoOutsideTheMicrophonesStreamIsAScreen(_ stream: String?, _ audio: String?, _ role: ReceivedVideoRole) {
        #expect(ReceivedVideoRole.of(streamId: stream, audioStreamId: audio) == role)
    }
}
