import Switchboard
import SwitchboardProtocol
import SwitchboardTools
import Testing

/// A summary's figures are each member's as last read (``LastFigures``).
struct LastFiguresTests {
    static func reading(_ peers: [UserID: Int], published: Int? = nil) -> MediaStatistics {
        MediaStatistics(
            localAudioLevel: 7,
            peers: peers.mapValues { PeerStatistics(audio: TrackStatistics(bytesReceived: $0, framesDecoded: $0)) },
            published: published.map { PeerStatistics(audio: TrackStatistics(bytesSent: $0)) })
    }

    /// A reading after the call's media closed (a status tick between the hang-up and the end
    /// event) has no members: the members and what was sent stay as last read.
    @Test func aReadingAfterTheMediaClosedKeepsTheLastFigures() {
        var figures = LastFigures()
        figures.note(Self.reading(["bob": 100, "carol": 50], published: 900))
        figures.note(Self.reading(["bob": 200, "carol": 80], published: 1_000))
        figures.note(MediaStatistics())
        #expect(figures.statistics.peers["bob"]?.audio.bytesReceived == 200)
        #expect(figures.statistics.peers["carol"]?.audio.framesDecoded == 80)
        #expect(figures.statistics.published?.audio.bytesSent == 1_000)
    }

    /// A member who left keeps their figures; the others' are replaced.
    @Test func aMemberWhoLeftKeepsTheirs() {
        var figures = LastFigures()
        figures.note(Self.reading(["bob": 100, "carol": 50]))
        figures.note(Self.reading(["bob": 300]))
        #expect(figures.statistics.peers["bob"]?.audio.bytesReceived == 300)
        #expect(figures.statistics.peers["carol"]?.audio.bytesReceived == 50)
        #expect(figures.statistics.localAudioLevel == 7)
    }
}
