#if GStreamer
import Testing

@testable import SwitchboardGStreamer

/// The gate on video towards one member, and the audio's thinning, second by second (no media:
/// the reports are made up).
struct VideoGateTests {
    /// One second of the engine: a fresh report (nil: none came) and the tick, in that order.
    struct Second: CustomTestStringConvertible, Sendable {
        var report: Bool?
        var changes: [VideoGate.Change]
        var testDescription: String { "\(report.map { $0 ? "starved" : "fine" } ?? "no report") → \(changes)" }
    }

    static func starved(_ changes: VideoGate.Change...) -> Second { Second(report: true, changes: changes) }
    static func fine(_ changes: VideoGate.Change...) -> Second { Second(report: false, changes: changes) }
    static func quiet(_ changes: VideoGate.Change...) -> Second { Second(report: nil, changes: changes) }

    /// Runs the seconds from second 1 and returns the gate.
    static func run(_ seconds: [Second]) -> VideoGate {
        var gate = VideoGate()
        for (index, second) in seconds.enumerated() {
            let now = index + 1
            var changes: [VideoGate.Change] = []
            if let starved = second.report, let change = gate.report(starved: starved, now: now) { changes.append(change) }
            if let change = gate.tick(now: now) { changes.append(change) }
            #expect(changes == second.changes, "second \(now): \(second.testDescription), got \(changes)")
        }
        return gate
    }

    static func repeated(_ second: Second, _ count: Int) -> [Second] { Array(repeating: second, count: count) }

    @Test(arguments: [
        // Two starved reports in a row pause; one, or two broken by a fine one, do not.
        ("two in a row pause", [starved(), starved(.pause)], VideoGate.Phase.paused(until: 12)),
        ("a fine report in between", [starved(), fine(), starved()], .open(starved: 1)),
        ("seconds with no report count for nothing", [starved(), quiet(), starved(.pause)], .paused(until: 13)),
        // Paused 10 s (reports then are the audio's and change nothing), then a trial.
        ("a pause ends in a trial", [starved(), starved(.pause)] + repeated(starved(), 9) + [quiet(.trial)], .trial(since: 12)),
        // A trial with no starved report for 5 s opens.
        ("a trial passes",
         [starved(), starved(.pause)] + repeated(quiet(), 9) + [quiet(.trial)] + repeated(fine(), 4) + [fine(.open)],
         .open(starved: 0)),
    ] as [(String, [Second], VideoGate.Phase)])
    func sequences(_ name: String, seconds: [Second], phase: VideoGate.Phase) {
        #expect(Self.run(seconds).phase == phase, "\(name)")
    }

    /// A trial that meets a queue pauses again at once, for 20 s, then 30 s, then 30 s again; a
    /// trial that passes starts the next pause at 10 s again.
    @Test func failedTrialsPauseLongerUpToTheLast() {
        var seconds = [Self.starved(), Self.starved(.pause)]  // 2: until 12
        seconds += Self.repeated(Self.quiet(), 9) + [Self.quiet(.trial), Self.starved(.pause)]  // 12 trial, 13: until 33
        seconds += Self.repeated(Self.quiet(), 19) + [Self.quiet(.trial), Self.starved(.pause)]  // 33 trial, 34: until 64
        seconds += Self.repeated(Self.quiet(), 29) + [Self.quiet(.trial), Self.starved(.pause)]  // 64 trial, 65: until 95
        #expect(Self.run(seconds).phase == .paused(until: 95))
        seconds += Self.repeated(Self.quiet(), 29) + [Self.quiet(.trial)] + Self.repeated(Self.fine(), 4) + [Self.fine(.open)]  // 95–100
        seconds += [Self.starved(), Self.starved(.pause)]  // 102: until 112
        #expect(Self.run(seconds).phase == .paused(until: 112))
    }

    @Test func aStarvedReportAfterTheTrialPassedNeedsTwoAgain() {
        var seconds = [Self.starved(), Self.starved(.pause)]
        seconds += Self.repeated(Self.quiet(), 9) + [Self.quiet(.trial)] + Self.repeated(Self.quiet(), 4) + [Self.quiet(.open)]
        seconds += [Self.starved()]
        let gate = Self.run(seconds)
        #expect(gate.phase == .open(starved: 1))
        #expect(gate.isOpen && !gate.paused)
    }

    @Test(arguments: [
        // (was thin, a gate shut, lowest rate) → thin
        (false, false, nil, false),
        (false, true, nil, true),
        (false, true, 500, true),
        (false, false, 99, true),
        (false, false, 100, false),
        (true, false, 149, true),
        (true, false, 150, false),
        (true, false, nil, false),
        (true, true, 500, true),
    ] as [(Bool, Bool, Int?, Bool)])
    func audioThinning(was: Bool, anyGateShut: Bool, lowestKbps: Int?, thin: Bool) {
        #expect(AudioThinning.thin(was: was, anyGateShut: anyGateShut, lowestKbps: lowestKbps) == thin)
    }
}

/// What the rate controller tells the gate: a queue with the rate at or near its floor.
struct SendRateStarvationTests {
    @Test func aQueueNearTheFloorIsStarvationAndAReportReadTwiceIsNotNews() {
        var rate = SendRateController(maximumKbps: 40)
        #expect(rate.kbps == SendRateController.minimumKbps)
        #expect(rate.observe(roundTrip: 0.020) == false)
        #expect(rate.kbps == 30)
        // One report with a queue: a burst, not starvation.
        #expect(rate.observe(roundTrip: 0.400) == false)
        // Two: a queue, cut to the floor.
        #expect(rate.observe(roundTrip: 0.401) == true)
        #expect(rate.kbps == SendRateController.minimumKbps)
        #expect(rate.observe(roundTrip: 0.401) == nil)
        // Within the cooldown, still near the floor with a queue.
        #expect(rate.observe(roundTrip: 0.410) == true)
        // No queue: the rate climbs, not starved.
        #expect(rate.observe(roundTrip: 0.021) == false)
        #expect(rate.kbps == 30)
    }

    @Test func aQueueWellAboveTheFloorIsNotStarvation() {
        var rate = SendRateController(maximumKbps: 500)
        rate.observe(roundTrip: 0.020)
        rate.observe(roundTrip: 0.200)
        #expect(rate.observe(roundTrip: 0.201) == false)
        #expect(rate.kbps == 109)
        #expect(rate.kbps > SendRateController.starvedKbps)
    }

    /// On a full link the reports themselves get lost: seconds with none, after a report that
    /// showed a queue, count as a queue.
    @Test func reportsLostInTheQueueCountAsAQueue() {
        var rate = SendRateController(maximumKbps: 500)
        rate.observe(roundTrip: 0.010)
        #expect(rate.kbps == 156)
        // One report with a queue (a burst as far as the rate goes), then silence.
        #expect(rate.observe(roundTrip: 0.300) == false)
        #expect(rate.observeSilence() == nil)
        #expect(rate.observeSilence() == nil)
        #expect(rate.observeSilence() == false)
        #expect(rate.kbps == 78)
        // The next silent stretch spends the cooldown; the one after halves again, to the floor's
        // neighbourhood: starved.
        for _ in 0..<SendRateController.silenceLimit { #expect(rate.observeSilence() == nil) }
        for _ in 0..<(SendRateController.silenceLimit - 1) { #expect(rate.observeSilence() == nil) }
        #expect(rate.observeSilence() == true)
        #expect(rate.kbps == 39)
    }

    @Test func silenceAfterACleanReportIsNotAQueue() {
        var rate = SendRateController(maximumKbps: 500)
        rate.observe(roundTrip: 0.010)
        rate.observe(roundTrip: 0.011)
        for _ in 0..<10 { #expect(rate.observeSilence() == nil) }
        #expect(rate.kbps == 195)
    }

    @Test func aTrialStartsAtTheFloorAndMayCutAtOnce() {
        var rate = SendRateController(maximumKbps: 500)
        rate.observe(roundTrip: 0.020)
        rate.observe(roundTrip: 0.400)
        rate.observe(roundTrip: 0.401)
        rate.restartAtFloor()
        #expect(rate.kbps == SendRateController.minimumKbps)
        // The cooldown of the last cut is forgotten: a queue now reads as starvation.
        #expect(rate.observe(roundTrip: 0.300) == true)
    }
}
#endif
