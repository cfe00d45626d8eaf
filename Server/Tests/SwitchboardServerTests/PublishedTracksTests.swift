import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

/// What the server reads from a member's publish offer: which section is the microphone, the
/// camera and the screen (by the media stream they share), and the camera's simulcast layers; and
/// which descriptions it refuses before they reach the SFU.
struct PublishedTracksTests {
    /// A browser's publish offer (Chromium's shape): microphone and camera in one stream, the
    /// camera in two simulcast layers, a screen in a stream of its own.
    static let offer = [
        "v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0 1 2",
        "m=audio 9 UDP/TLS/RTP/SAVPF 111", "a=mid:0", "a=sendonly", "a=msid:cam-stream mic-track", "a=rtpmap:111 opus/48000/2",
        "m=video 9 UDP/TLS/RTP/SAVPF 96", "a=mid:1", "a=sendonly", "a=msid:cam-stream cam-track", "a=rtpmap:96 VP8/90000",
        "a=rid:h send", "a=rid:l send", "a=simulcast:send h;l",
        "m=video 9 UDP/TLS/RTP/SAVPF 96", "a=mid:2", "a=sendonly", "a=msid:screen-stream screen-track", "a=rtpmap:96 VP8/90000",
        "",
    ].joined(separator: "\r\n")

    @Test func eachSectionIsNamedByItsStreamAndTheCameraByItsLayers() {
        let tracks = PublishedTracks.tracks(inOffer: Self.offer)
        #expect(tracks["0"] == PublishedTrack(source: .microphone, layers: 1))
        #expect(tracks["1"] == PublishedTrack(source: .camera, layers: 2))
        #expect(tracks["2"] == PublishedTrack(source: .screen, layers: 1))
    }

    @Test func aSectionThatSendsNothingIsLeftOut() {
        let stopped = Self.offer.replacingOccurrences(of: "a=mid:2\r\na=sendonly", with: "a=mid:2\r\na=inactive")
        #expect(PublishedTracks.tracks(inOffer: stopped)["2"] == nil)
        #expect(PublishedTracks.tracks(inOffer: stopped).count == 2)
    }

    /// webrtcbin's max-bundle offers (the GStreamer engine): sections after the first have port 0
    /// and `a=bundle-only` (RFC 8843), which is on the bundle's transport, not rejected. Port 0
    /// without it is rejected.
    @Test func aBundleOnlySectionWithPortZeroSends() {
        let bundled = Self.offer.replacingOccurrences(
            of: "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:1", with: "m=video 0 UDP/TLS/RTP/SAVPF 96\r\na=bundle-only\r\na=mid:1")
        #expect(PublishedTracks.tracks(inOffer: bundled)["1"] == PublishedTrack(source: .camera, layers: 2))
        let rejected = Self.offer.replacingOccurrences(
            of: "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:1", with: "m=video 0 UDP/TLS/RTP/SAVPF 96\r\na=mid:1")
        #expect(PublishedTracks.tracks(inOffer: rejected)["1"] == nil)
    }

    @Test func descriptionsTheSFUCannotTakeAreRefusedWithTheirCodes() {
        #expect(SFULimits.descriptionError(Self.offer, connection: .publish) == nil)
        let cases: [(String, SwitchboardError.Code)] = [
            ("hello", .invalidSessionDescription),
            ("v=0\r\ns=-\r\n", .invalidSessionDescription),
            ("v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=sendonly\r\n", .invalidSessionDescription),
            ("v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:\(String(repeating: "x", count: 33))\r\n", .invalidSessionDescription),
            (Self.offer + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:3\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:4\r\n", .tooManyPublishedTracks),
        ]
        for (sdp, code) in cases {
            #expect(SFULimits.descriptionError(sdp, connection: .publish)?.code == code, "\(sdp.prefix(40))")
        }
        // A subscribe answer has as many sections as the SFU offered.
        let many = Self.offer + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:3\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:4\r\n"
        #expect(SFULimits.descriptionError(many, connection: .subscribe) == nil)
    }
}
