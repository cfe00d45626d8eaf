#if GStreamer
import SwitchboardProtocol

/// The bitrate a video encoder sends at towards one member, following the round-trip time the
/// member's receiver reports show: a queue building on the path (a link narrower than what is
/// sent) lengthens it before packets are dropped. webrtcbin has no congestion control of its own,
/// so a camera at its full bitrate on a narrower link loses most of its packets, keyframes
/// included, and the picture freezes; at a lower bitrate it goes on, coarser.
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
/// below what the link carries. The rate stays between ``minimumKbps`` and the quality's bitrate.
struct SendRateController: Equatable, Sendable {
    /// The lowest rate: VP8 at 360p still decodes a coarse picture.
    static let minimumKbps = 20
    /// Round trips the base (the path without a queue) is the lowest of: a path that changes
    /// (a relay, a new network) gets a new base within that many reports (about a minute), and a
    /// queue that stands that long is taken for the path.
    static let baseWindow = 60
    /// Reports after a cut that cannot cut again.
    static let cooldown = 2

    private(set) var kbps: Int
    private(set) var maximumKbps: Int
    private var roundTrips: [Double] = []
    /// Reports still to come before the rate may be cut again.
    private var holding = 0

    init(maximumKbps: Int) {
        self.maximumKbps = max(Self.minimumKbps, maximumKbps)
        self.kbps = self.maximumKbps
    }

    /// The app chose another quality: its bitrate is the new ceiling.
    mutating func setMaximum(_ kbps: Int) {
        maximumKbps = max(Self.minimumKbps, kbps)
        self.kbps = min(self.kbps, maximumKbps)
    }

    /// The round trip the latest receiver report gave, in seconds (0 or less: none yet).
    mutating func observe(roundTrip seconds: Double) {
        guard seconds.isFinite, seconds > 0, seconds != roundTrips.last else { return }
        roundTrips.append(seconds)
        if roundTrips.count > Self.baseWindow { roundTrips.removeFirst(roundTrips.count - Self.baseWindow) }
        let queued = seconds - roundTrips.min()!
        let mayCut = holding == 0
        holding = max(0, holding - 1)
        if queued > 0.100 {
            guard mayCut else { return }
            kbps = max(Self.minimumKbps, Int(Double(kbps) * (queued > 0.250 ? 0.5 : 0.7)))
            holding = Self.cooldown
        } else if queued < 0.030 {
            kbps = max(Int(Double(kbps) * 1.08), kbps + 10)
        }
        kbps = min(maximumKbps, max(Self.minimumKbps, kbps))
    }
}
#endif
