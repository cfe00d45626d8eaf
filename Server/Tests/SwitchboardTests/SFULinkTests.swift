import Logging
import NIOConcurrencyHelpers
import SwitchboardProtocol
import SwitchboardTesting
import Testing

@testable import Switchboard

/// ``SFULink``'s publish offers, with the order of steps fixed by the test.
struct SFULinkTests {
    /// An offer with one section per track, and `extra` stopped sections more (what webrtcbin
    /// leaves after each screen shared).
    static func publishOffer(stoppedScreens extra: Int) -> String {
        var sdp = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n"
        sdp += "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:0\r\na=sendonly\r\n"
        sdp += "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:1\r\na=sendonly\r\n"
        for index in 0..<extra { sdp += "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:\(2 + index)\r\na=inactive\r\n" }
        sdp += "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:\(2 + extra)\r\na=sendonly\r\n"
        return sdp
    }

    static func link(publishing sdp: String) -> (SFULink, NIOLockedValueBox<[SendSFUSignalRequest]>) {
        let engine = FakeMediaEngine(name: "alice", publishSDP: sdp)
        let events = PeerConnectionEvents(localCandidate: { _ in }, negotiationNeeded: {}, iceFailed: {}, iceConnected: {})
        engine.openSFU(.publish, iceServers: [], events: events)
        let sent = NIOLockedValueBox<[SendSFUSignalRequest]>([])
        let link = SFULink(
            callId: "c1", session: 1, engine: engine, logger: Logger(label: "test"),
            send: { request in sent.withLockedValue { $0.append(request) } })
        return (link, sent)
    }

    /// Four sections (microphone, camera, a stopped screen, a screen): the offer goes out.
    @Test func anOfferWithinTheLimitGoesOut() async {
        let (link, sent) = Self.link(publishing: Self.publishOffer(stoppedScreens: 1))
        await link.start()
        #expect(sent.withLockedValue { $0.map(\.kind) } == [.offer])
    }

    /// Five sections, more than the SFU takes (7006): no offer; a new session is asked for instead.
    @Test func anOfferPastTheSectionLimitAsksForANewSessionInstead() async {
        let (link, sent) = Self.link(publishing: Self.publishOffer(stoppedScreens: 2))
        await link.start()
        #expect(sent.withLockedValue { $0.map(\.kind) } == [.restart])
        #expect(sent.withLockedValue { $0.first?.connection } == .publish)
    }
}
