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
/// Each fresh round trip (a new receiver report; the same value again is not news): the queue is
/// how far the lowest of the last ``standingReports`` lies above the base, the lowest of the last
/// ``baseWindow``. A queue that stands only in one report is a burst (a key frame drains through a
/// narrow link's small buffer in a few hundred milliseconds, and a report queued behind it reads
/// as a deep queue): on a 300 kbit/s link such bursts alone took the rate from 145 to the floor.
/// More than 100 ms of queue lowers the rate by 30 % (by half beyond 250 ms: a deep queue, most
/// of it lost); a latest report less than 30 ms above the base raises it by 8 % (at least
/// 10 kbps; by 25 % until the first queue); between, it holds. After a cut the next ``cooldown`` reports cannot cut again: the
/// queue the old rate built takes that long to drain (receivers report about once a second), and
/// cutting for it again would take the rate far below what the link carries. The rate stays
/// between ``minimumKbps`` and the quality's bitrate.
///
/// A report that shows a queue with the rate already at or near the floor (``starvedKbps``) says
/// the link cannot carry video at all: ``observe(roundTrip:)`` returns that for the ``VideoGate``.
struct SendRateController: Equatable, Sendable {
    /// The lowest rate: VP8 at 360p still decodes a coarse picture.
    static let minimumKbps = 20
    /// Round trips the base (the path without a queue) is the lowest of: a path that changes
    /// (a relay, a new network) gets a new base within that many reports (about a minute), and a
    /// queue that stands that long is taken for the path.
    static let baseWindow = 60
    /// Reports after a cut that cannot cut again.
    static let cooldown = 1
    /// Reports a queue must show in a row to count: the lowest of them is the queue that stands.
    static let standingReports = 2
    /// At or under this rate, a queue that still stands says the link cannot carry video.
    static let starvedKbps = 2 * minimumKbps

    /// Where a new encoder or a new member starts: a quarter of the quality's bitrate, raised by
    /// the reports that show no queue (as congestion controllers start low and probe up). A
    /// camera that starts at its full rate on a link already narrow fills the queue before the
    /// first report, and that report, taken for the path's own round trip, hides the queue from
    /// every later one (measured: a base of 0.17–0.38 s on a path of 1 ms).
    static func startKbps(maximum: Int) -> Int { max(minimumKbps, maximum / 4) }

    private(set) var kbps: Int
    private(set) var maximumKbps: Int
    private var roundTrips: [Double] = []
    /// Reports still to come before the rate may be cut again.
    private var holding = 0
    /// No queue seen yet in this call: the rate climbs by ``probingStep`` instead of 8 %, as a
    /// congestion controller's start does, so that a camera that starts at a quarter of its
    /// bitrate reaches it in about 7 reports instead of 19.
    private var probing = true
    static let probingStep = 1.25
    /// Seconds since the last fresh report, and whether that report showed a queue.
    private var silentSeconds = 0
    private var lastShowedQueue = false
    /// Seconds with no fresh report, after one that showed a queue, that count as a queue.
    static let silenceLimit = 3

    init(maximumKbps: Int) {
        self.maximumKbps = max(Self.minimumKbps, maximumKbps)
        self.kbps = Self.startKbps(maximum: maximumKbps)
    }

    /// The app chose another quality: its bitrate is the new ceiling.
    mutating func setMaximum(_ kbps: Int) {
        maximumKbps = max(Self.minimumKbps, kbps)
        self.kbps = min(self.kbps, maximumKbps)
    }

    /// Video starts again after a pause: at the floor, free to cut at once.
    mutating func restartAtFloor() {
        kbps = Self.minimumKbps
        holding = 0
        silentSeconds = 0
    }

    /// The round trip the latest receiver report gave, in seconds (0 or less: none yet). Returns
    /// nil when the report is not news, else whether a queue stands with the rate at its floor
    /// (after this report's cut).
    @discardableResult
    mutating func observe(roundTrip seconds: Double) -> Bool? {
        guard seconds.isFinite, seconds > 0, seconds != roundTrips.last else { return nil }
        roundTrips.append(seconds)
        if roundTrips.count > Self.baseWindow { roundTrips.removeFirst(roundTrips.count - Self.baseWindow) }
        let base = roundTrips.min()!
        silentSeconds = 0
        lastShowedQueue = seconds - base > 0.100
        let queued = roundTrips.suffix(Self.standingReports).min()! - base
        let mayCut = holding == 0
        holding = max(0, holding - 1)
        if queued > 0.100 {
            probing = false
            if mayCut {
                kbps = max(Self.minimumKbps, Int(Double(kbps) * (queued > 0.250 ? 0.5 : 0.7)))
                holding = Self.cooldown
            }
        } else if seconds - base < 0.030 {
            kbps = max(Int(Double(kbps) * (probing ? Self.probingStep : 1.08)), kbps + 10)
        }
        kbps = min(maximumKbps, max(Self.minimumKbps, kbps))
        return queued > 0.100 && kbps <= Self.starvedKbps
    }

    /// A second with no fresh report. On a link full enough, the reports are lost or stuck in
    /// the queue too (measured at 64 kbit/s: the rate stuck at 47 kbps for a minute, its last
    /// report showing a queue): ``silenceLimit`` such seconds after a report that showed one
    /// count as a standing queue, and halve the rate (outside the cooldown). Returns nil when
    /// nothing was decided, else whether the rate is at or near its floor.
    mutating func observeSilence() -> Bool? {
        silentSeconds += 1
        guard lastShowedQueue, silentSeconds >= Self.silenceLimit else { return nil }
        silentSeconds = 0
        probing = false
        guard holding == 0 else {
            holding -= 1
            return kbps <= Self.starvedKbps ? true : nil
        }
        kbps = max(Self.minimumKbps, kbps / 2)
        holding = Self.cooldown
        return kbps <= Self.starvedKbps
    }
}
#endif
