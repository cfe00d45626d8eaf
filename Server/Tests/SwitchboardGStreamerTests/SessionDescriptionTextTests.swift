import Testing

@testable import SwitchboardGStreamer

/// What the engine reads from SDP (runs without GStreamer): sections, stream ids that tell a
/// screen from the camera, payload types, ICE credentials, candidates.
struct SessionDescriptionTextTests {
    /// The shape of a Chromium offer: a microphone and camera in one stream, a screen in another.
    static let chromium = [
        "v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0 1 2", "a=msid-semantic: WMS s1 s2",
        "m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9", "c=IN IP4 0.0.0.0", "a=ice-ufrag:abcd", "a=ice-pwd:x", "a=mid:0",
        "a=sendrecv", "a=msid:s1 mic", "a=rtpmap:111 opus/48000/2", "a=rtpmap:63 red/48000/2", "a=rtpmap:9 G722/8000",
        "m=video 9 UDP/TLS/RTP/SAVPF 96 97 98", "a=ice-ufrag:abcd", "a=mid:1", "a=sendrecv", "a=msid:s1 cam",
        "a=rtpmap:96 VP8/90000", "a=rtpmap:97 rtx/90000", "a=rtpmap:98 VP9/90000",
        "m=video 9 UDP/TLS/RTP/SAVPF 96", "a=ice-ufrag:abcd", "a=mid:2", "a=sendonly", "a=msid:s2 screen",
        "a=rtpmap:96 VP8/90000", "",
    ].joined(separator: "\r\n")

    @Test func readsSectionsStreamsAndPayloadTypes() {
        let sdp = SessionDescriptionText(Self.chromium)
        #expect(sdp.media.map(\.kind) == ["audio", "video", "video"])
        #expect(sdp.media.map(\.mid) == ["0", "1", "2"])
        #expect(sdp.media.map(\.direction) == ["sendrecv", "sendrecv", "sendonly"])
        #expect(sdp.media[0].payloadTypes == ["OPUS": 111, "RED": 63, "G722": 9])
        #expect(sdp.media[1].payloadTypes["VP8"] == 96)
        #expect(sdp.ufrag == "abcd")
        #expect(!sdp.isScreen(mid: "0"))
        #expect(!sdp.isScreen(mid: "1"))
        #expect(sdp.isScreen(mid: "2"))
        #expect(!sdp.isScreen(mid: "9"))
    }

    /// webrtcbin writes no `a=msid`; the engine adds one for each track it sends, after the mid.
    @Test func addsMsidLinesForTheTracksSent() {
        let gstreamer = [
            "v=0", "s=-", "m=audio 9 UDP/TLS/RTP/SAVPF 96", "a=mid:audio0", "a=sendrecv", "a=rtpmap:96 OPUS/48000/2",
            "a=ssrc:11 cname:x", "m=video 0 UDP/TLS/RTP/SAVPF 97", "a=bundle-only", "a=mid:video1", "a=rtpmap:97 VP8/90000",
            "a=ssrc:22 msid:user@host webrtctransceiver1", "a=ssrc:22 cname:user@host",
            "m=video 9 UDP/TLS/RTP/SAVPF 97", "a=mid:video2", "a=recvonly", "",
        ].joined(separator: "\r\n")
        let sent = SessionDescriptionText.addingMsid(
            [11: ("switchboard", "audio"), 22: ("switchboard-screen", "screen"), 33: ("x", "y")], to: gstreamer)
        #expect(sent.contains("a=rtpmap:96 OPUS/48000/2\r\na=msid:switchboard audio\r\na=ssrc:11 cname:x"))
        #expect(sent.contains("a=msid:switchboard-screen screen\r\na=ssrc:22 msid:user@host"))
        #expect(!sent.contains("a=mid:video2\r\na=recvonly\r\na=msid"))
        #expect(sent.hasSuffix("\r\n"))
        let parsed = SessionDescriptionText(sent)
        #expect(parsed.media.map(\.ssrcs) == [[11], [22], []])
        #expect(parsed.isScreen(mid: "video1"))
        #expect(!parsed.isScreen(mid: "audio0"))
        #expect(!parsed.media[1].rejected)
        // Sections that already have a=msid are left as they are.
        #expect(SessionDescriptionText.addingMsid([1: ("x", "y")], to: Self.chromium) == Self.chromium)
        // The ssrc form alone is read too.
        #expect(SessionDescriptionText("m=video 9 RTP 96\r\na=ssrc:22 msid:screen t\r\n").media[0].streamId == "screen")
    }

    /// The subscribe connection keeps its transceivers receiving (webrtcbin 1.22 cannot make an
    /// inactive one receive again): only the named sections change, the rest is left as it was.
    @Test func setsTheDirectionOfNamedSections() {
        let changed = SessionDescriptionText.settingDirection("inactive", ofSections: ["1", "2"], in: Self.chromium)
        let sdp = SessionDescriptionText(changed)
        #expect(sdp.media.map(\.direction) == ["sendrecv", "inactive", "inactive"])
        #expect(changed.components(separatedBy: "\r\n").count == Self.chromium.components(separatedBy: "\r\n").count)
        #expect(changed.hasSuffix("\r\n"))
        #expect(SessionDescriptionText.settingDirection("sendonly", ofSections: [], in: Self.chromium) == Self.chromium)
        #expect(SessionDescriptionText.settingDirection("sendonly", ofSections: ["0"], in: changed).contains("a=mid:0\r\na=sendonly"))
    }

    @Test func readsCandidates() {
        let host = CandidateLine("candidate:1 1 UDP 2015363327 127.0.0.1 40000 typ host")
        #expect(host == CandidateLine(address: "127.0.0.1", type: "host"))
        #expect(host?.isLoopback == true)
        #expect(CandidateLine("candidate:2 1 udp 1 172.17.0.2 5000 typ host generation 0")?.isLoopback == false)
        #expect(CandidateLine("candidate:3 1 udp 1 127.0.0.1 49160 typ relay raddr 0.0.0.0 rport 0")?.type == "relay")
        #expect(CandidateLine("") == nil)
        let sdp = "m=audio 9 RTP 111\r\na=candidate:1 1 udp 1 127.0.0.1 5 typ host\r\na=candidate:2 1 udp 1 192.0.2.2 6 typ host\r\na=mid:0\r\n"
        #expect(
            SessionDescriptionText.keepingLoopbackCandidates(sdp)
                == "m=audio 9 RTP 111\r\na=candidate:1 1 udp 1 127.0.0.1 5 typ host\r\na=mid:0\r\n")
        #expect(CandidateLine("not a candidate at all 1 2 3 4") == nil)
    }
}
