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

    /// webrtcbin names streams only in `a=ssrc` lines; browsers read `a=msid`.
    @Test func addsMsidLinesWhereOnlySsrcLinesNameTheStream() {
        let gstreamer = [
            "v=0", "s=-", "m=audio 9 UDP/TLS/RTP/SAVPF 96", "a=mid:audio0", "a=sendrecv", "a=rtpmap:96 OPUS/48000/2",
            "a=ssrc:11 msid:switchboard audio0trans", "a=ssrc:11 cname:x",
            "m=video 9 UDP/TLS/RTP/SAVPF 97", "a=mid:video1", "a=rtpmap:97 VP8/90000",
            "a=ssrc:22 msid:switchboard-screen video1trans", "",
        ].joined(separator: "\r\n")
        let sent = SessionDescriptionText.addingMsidLines(to: gstreamer)
        #expect(sent.contains("a=rtpmap:96 OPUS/48000/2\r\na=msid:switchboard audio0trans\r\na=ssrc:11 msid:"))
        #expect(sent.contains("a=msid:switchboard-screen video1trans\r\na=ssrc:22"))
        #expect(sent.hasSuffix("\r\n"))
        let parsed = SessionDescriptionText(sent)
        #expect(parsed.isScreen(mid: "video1"))
        // Sections that already have a=msid, or no stream at all, are left as they are.
        #expect(SessionDescriptionText.addingMsidLines(to: Self.chromium) == Self.chromium)
        // The ssrc form alone is read too.
        #expect(SessionDescriptionText(gstreamer).media[1].streamId == "switchboard-screen")
    }

    @Test func readsCandidates() {
        let host = CandidateLine("candidate:1 1 UDP 2015363327 127.0.0.1 40000 typ host")
        #expect(host == CandidateLine(address: "127.0.0.1", type: "host"))
        #expect(host?.isLoopback == true)
        #expect(CandidateLine("candidate:2 1 udp 1 172.17.0.2 5000 typ host generation 0")?.isLoopback == false)
        #expect(CandidateLine("candidate:3 1 udp 1 127.0.0.1 49160 typ relay raddr 0.0.0.0 rport 0")?.type == "relay")
        #expect(CandidateLine("") == nil)
        #expect(CandidateLine("not a candidate at all 1 2 3 4") == nil)
    }
}
