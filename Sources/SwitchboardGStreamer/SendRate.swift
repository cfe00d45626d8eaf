#if GStreamer
import SwitchboardProtocol

/// What a member may send towards one other member (audio and video together, headers
/// included), following the round-trip time the member's receiver reports show: a queue building
/// on the path (a link narrower than what is sent) lengthens it before packets are dropped.
/// webrtcbin has no congestion control of its own, so a camera at its full bitrate on a narrower
/// link loses most of its packets, keyframes included, and the picture freezes; within the budget
/// (``SendProfile`` turns it into a size, frame rate and bitrates) it goes on, coarser.
///
/// Loss would be the usual signal (Google Congestion Control's loss-based half), but webrtcbin
/// (GStreamer 1.22) does not give it for video: with audio and video bundled, it keeps one receiver
/// report per reporting member, and its loss counts are the same for every stream of a session
/// (measured: 1–3 % reported while the video lost half its packets). The round-trip time of any
/// stream crosses the same queue, so it is the signal here.
///
/// Each fresh round trip (a new receiver report; the same value again is not news): more than
/// 100 ms above the lowest of the last ``baseWindow`` lowers the rate by 30 % (by half beyond
/// 250 ms: a deep queue, most of it lost); less than 30 ms
/// above it raises it by 8 % (at least 10 kbps); between, it holds. After a cut the next
/// ``cooldown`` reports cannot cut again: the queue the old rate built takes that long to drain
/// (receivers report about once a second), and cutting for it again would take the rate far
/// below what the link carries. Reports that stop coming are a signal too (as in libwebrtc, whose
/// estimate falls when feedback times out): on a link far narrower than what is sent, the
/// receiver's reports are lost in the same queue, and with none the rate would stay where it was
/// for good (measured at 64 kbit/s: no change in 80 s, the picture frozen). So ``silenceLimit``
/// ticks in a row without a fresh report cut the rate by 30 %, and again after as many more.
/// The rate stays between the floor and the ceiling it was given (the least and the most send
/// profile of the app's quality).
struct SendRateController: Equatable, Sendable {
    /// Round trips the base (the path without a queue) is the lowest of: a path that changes
    /// (a relay, a new network) gets a new base within that many reports (about a minute), and a
    /// queue that stands that long is taken for the path.
    static let baseWindow = 60
    /// Reports after a cut that cannot cut again.
    static let cooldown = 2
    /// Ticks (``observe(roundTrip:)`` once a second) without a fresh report that cut the rate:
    /// receivers report every second, so three missing is loss, not chance.
    static let silenceLimit = 3

    private(set) var kbps: Int
    private(set) var minimumKbps: Int
    private(set) var maximumKbps: Int
    private var roundTrips: [Double] = []
    /// Reports still to come before the rate may be cut again.
    private var holding = 0
    /// Ticks since the last fresh report.
    private var silent = 0

    init(minimumKbps: Int, maximumKbps: Int) {
        self.minimumKbps = max(1, minimumKbps)
        self.maximumKbps = max(self.minimumKbps, maximumKbps)
        self.kbps = self.maximumKbps
    }

    /// The app chose another quality: its profiles' budgets are the new floor and ceiling (a
    /// higher ceiling does not raise the rate: it climbs to it as reports allow).
    mutating func setRange(minimumKbps: Int, maximumKbps: Int) {
        self.minimumKbps = max(1, minimumKbps)
        self.maximumKbps = max(self.minimumKbps, maximumKbps)
        kbps = min(self.maximumKbps, max(self.minimumKbps, kbps))
    }

    /// One tick (once a second): the round trip the latest receiver report gave, in seconds (0 or
    /// less: none yet; the same as last time: no fresh report since).
    mutating func observe(roundTrip seconds: Double) {
        guard seconds.isFinite, seconds > 0 else { return }
        guard seconds != roundTrips.last else {
            silent += 1
            if silent >= Self.silenceLimit {
                silent = 0
                kbps = max(minimumKbps, Int(Double(kbps) * 0.7))
            }
            return
        }
        silent = 0
        roundTrips.append(seconds)
        if roundTrips.count > Self.baseWindow { roundTrips.removeFirst(roundTrips.count - Self.baseWindow) }
        let queued = seconds - roundTrips.min()!
        let mayCut = holding == 0
        holding = max(0, holding - 1)
        if queued > 0.100 {
            guard mayCut else { return }
            kbps = max(minimumKbps, Int(Double(kbps) * (queued > 0.250 ? 0.5 : 0.7)))
            holding = Self.cooldown
        } else if queued < 0.030 {
            kbps = max(Int(Double(kbps) * 1.08), kbps + 10)
        }
        kbps = min(maximumKbps, max(minimumKbps, kbps))
    }
}
#endif
