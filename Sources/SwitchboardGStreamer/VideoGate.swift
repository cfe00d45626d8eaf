#if GStreamer
/// Whether the link to one member can carry this side's video, from the receiver reports the
/// ``SendRateController`` reads: a link so narrow that a queue still stands on it with the camera
/// at or near its lowest rate (64 kbit/s here: the camera's floor and the audio together overfill it)
/// does not get a coarser picture, it gets a frozen one, and the audio behind the video's queue
/// arrives late. So when that happens for ``starvedReports`` reports in a row, the engine stops
/// sending video to that member (the branch to that connection drops it; the other members keep
/// it) and thins the call's audio; after a while it tries video again at the floor rate, and
/// pauses again, for longer each time up to ``pauses``' last, unless no report during the
/// ``trialSeconds`` of the trial showed a queue. The browser's page does the same from Chromium's
/// own estimate (`js/videogate.js`).
///
/// Time is the engine's seconds (its once-a-second tick on its clock). Phases: `open` (video on;
/// starved reports in a row), `paused` (until when), `trial` (video on again since when).
struct VideoGate: Equatable, Sendable {
    enum Phase: Equatable, Sendable {
        case open(starved: Int)
        case paused(until: Int)
        case trial(since: Int)
    }

    /// What the engine must do for the member.
    enum Change: Equatable, Sendable {
        /// Stop sending video to them.
        case pause
        /// Send video again, at the floor rate, on trial.
        case trial
        /// The trial passed: video stays on.
        case open
    }

    /// Reports in a row that must show a queue at the floor rate before video pauses.
    static let starvedReports = 2
    /// The pauses, in seconds: the first, the second, then the last one again and again.
    static let pauses = [10, 20, 30]
    /// How long a trial lasts, in seconds.
    static let trialSeconds = 5

    private(set) var phase = Phase.open(starved: 0)
    /// Pauses since video last stayed on (picks the next pause's length).
    private var pausedTimes = 0

    /// Whether video to the member is stopped now.
    var paused: Bool {
        if case .paused = phase { return true }
        return false
    }

    /// Whether video to the member is on and not on trial.
    var isOpen: Bool {
        if case .open = phase { return true }
        return false
    }

    /// A fresh receiver report at `now`: `starved` when it showed a queue with the rate at its floor.
    mutating func report(starved: Bool, now: Int) -> Change? {
        switch phase {
        case .open(let count):
            guard starved else {
                phase = .open(starved: 0)
                pausedTimes = 0
                return nil
            }
            guard count + 1 >= Self.starvedReports else {
                phase = .open(starved: count + 1)
                return nil
            }
            return pause(now: now)
        case .paused:
            // Reports while paused tell of the audio alone.
            return nil
        case .trial:
            return starved ? pause(now: now) : nil
        }
    }

    /// The engine's tick at `now`: a pause ends, a trial with no starved report passes.
    mutating func tick(now: Int) -> Change? {
        switch phase {
        case .open:
            return nil
        case .paused(let until):
            guard now >= until else { return nil }
            phase = .trial(since: now)
            return .trial
        case .trial(let since):
            guard now - since >= Self.trialSeconds else { return nil }
            phase = .open(starved: 0)
            pausedTimes = 0
            return .open
        }
    }

    private mutating func pause(now: Int) -> Change {
        phase = .paused(until: now + Self.pauses[min(pausedTimes, Self.pauses.count - 1)])
        pausedTimes += 1
        return .pause
    }
}
#endif

#if GStreamer
/// Whether the call's audio goes out thinned: Opus at 16 kbps in 60 ms frames, against 32 kbps
/// in 20 ms (a third of the packets, whose headers are most of a narrow link's audio). Thinned
/// while video to a member is paused or on trial, or the camera's rate towards a member that gets
/// it is under ``thinBelowKbps``: on such a link the audio's share decides whether the video's
/// floor fits beside it. Back to full once every gate is open and every rate reaches
/// ``fullFromKbps`` (apart, so that a rate hovering at one edge does not flip the audio each
/// second). The audio encoder is shared by every member of a mesh, so one narrow link thins it
/// for all.
enum AudioThinning {
    static let thinBelowKbps = 100
    static let fullFromKbps = 150
    /// The audio encoder's settings, thinned or full (full: `CaptureChain.audio`).
    static func encoding(thin: Bool) -> (kbps: Int, frameMilliseconds: Int) {
        thin ? (16, 60) : (32, 20)
    }

    /// Whether the audio is thin after this second: `lowestKbps` is the lowest video rate towards
    /// a member that gets video (nil: none does).
    static func thin(was: Bool, anyGateShut: Bool, lowestKbps: Int?) -> Bool {
        if anyGateShut { return true }
        guard let lowestKbps else { return false }
        return lowestKbps < (was ? fullFromKbps : thinBelowKbps)
    }
}
#endif
