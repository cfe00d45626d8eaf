#if GStreamer
import Testing

@testable import SwitchboardGStreamer

/// The delay-based rate of a video encoder, report by report (no media: the round trips are made up).
struct SendRateControllerTests {
    /// A controller raised to its ceiling by reports that show no queue (a path of 10 ms).
    static func atCeiling(_ maximumKbps: Int) -> SendRateController {
        var rate = SendRateController(maximumKbps: maximumKbps)
        var step = 0
        while rate.kbps < maximumKbps, step < 100 {
            rate.observe(roundTrip: 0.010 + Double(step % 2) * 0.0001)
            step += 1
        }
        return rate
    }

    /// A quarter of the ceiling at first, up by 25 % with each report that shows no queue until
    /// the first queue, by 8 % (at least 10 kbps) after it.
    @Test func theRateStartsLowAndClimbsWhileNoQueueShows() {
        var rate = SendRateController(maximumKbps: 500)
        #expect(rate.kbps == 125)
        #expect(SendRateController.startKbps(maximum: 500) == 125)
        #expect(SendRateController.startKbps(maximum: 40) == SendRateController.minimumKbps)
        var climb: [Int] = []
        for step in 0..<8 {
            rate.observe(roundTrip: 0.010 + Double(step % 2) * 0.0001)
            climb.append(rate.kbps)
        }
        #expect(climb == [156, 195, 243, 303, 378, 472, 500, 500])
        // After a queue, the climb is 8 % a report.
        rate.observe(roundTrip: 0.300)
        rate.observe(roundTrip: 0.301)
        #expect(rate.kbps == 250)
        rate.observe(roundTrip: 0.011)
        #expect(rate.kbps == 270)
    }

    @Test func aQueueOnThePathLowersTheRateThenLetsItDrain() {
        var rate = Self.atCeiling(500)
        #expect(rate.kbps == 500)
        // 200 ms more than the path's own, in one report: a burst, not yet a queue.
        rate.observe(roundTrip: 0.220)
        #expect(rate.kbps == 500)
        // In a second report too: a queue. Down 30 %.
        rate.observe(roundTrip: 0.221)
        #expect(rate.kbps == 350)
        // The same report read again is not news; the next report still shows the old queue
        // draining, and does not cut again.
        rate.observe(roundTrip: 0.221)
        for step in 1...SendRateController.cooldown { rate.observe(roundTrip: 0.221 + Double(step) * 0.001) }
        #expect(rate.kbps == 350)
        // Still queued after that: down again.
        rate.observe(roundTrip: 0.240)
        #expect(rate.kbps == 244)
    }

    /// A key frame through a narrow link's small buffer: one report in two reads a deep queue.
    /// The rate holds; the reports between the bursts raise it.
    @Test func burstsBetweenCleanReportsDoNotCut() {
        var rate = Self.atCeiling(500)
        rate.setMaximum(600)
        for step in 0..<10 { rate.observe(roundTrip: step % 2 == 0 ? 0.450 : 0.011) }
        #expect(rate.kbps == 600)
    }

    @Test func aSmallQueueHoldsAndNoneRaisesUpToTheCeiling() {
        var rate = Self.atCeiling(500)
        rate.observe(roundTrip: 0.200)
        rate.observe(roundTrip: 0.201)
        #expect(rate.kbps == 350)
        rate.observe(roundTrip: 0.070)
        #expect(rate.kbps == 350)
        rate.observe(roundTrip: 0.025)
        #expect(rate.kbps == 378)
        for step in 0..<30 { rate.observe(roundTrip: 0.021 + Double(step) * 0.0001) }
        #expect(rate.kbps == 500)
    }

    @Test func aDeepQueueHalvesTheRate() {
        var rate = Self.atCeiling(500)
        rate.observe(roundTrip: 0.400)
        rate.observe(roundTrip: 0.401)
        #expect(rate.kbps == 250)
    }

    @Test func theRateStaysBetweenTheFloorAndTheQualitysBitrate() {
        var rate = SendRateController(maximumKbps: 500)
        rate.observe(roundTrip: 0.010)
        // A queue that stays (within the base window): a cut every cooldown, down to the floor.
        for step in 0..<(SendRateController.baseWindow - 2) { rate.observe(roundTrip: 0.500 + Double(step) * 0.001) }
        #expect(rate.kbps == SendRateController.minimumKbps)
        // A lower quality lowers the ceiling, and the rate with it; a higher one does not raise it.
        for step in 0..<80 { rate.observe(roundTrip: 0.010 + Double(step % 10) * 0.001) }
        #expect(rate.kbps == 500)
        rate.setMaximum(300)
        #expect(rate.kbps == 300)
        rate.setMaximum(900)
        #expect(rate.kbps == 300)
    }

    /// A path that changes for good (a relay far away): once the old round trips have left the
    /// window, the new one is the base and the rate climbs again.
    @Test func aLongerPathBecomesTheNewBase() {
        var rate = SendRateController(maximumKbps: 500)
        rate.observe(roundTrip: 0.010)
        for step in 0..<SendRateController.baseWindow { rate.observe(roundTrip: 0.300 + Double(step) * 0.0001) }
        let low = rate.kbps
        #expect(low < 500)
        rate.observe(roundTrip: 0.3001)
        #expect(rate.kbps > low)
    }

    @Test func noReportOrNonsenseChangesNothing() {
        var rate = SendRateController(maximumKbps: 500)
        rate.observe(roundTrip: 0.010)
        rate.observe(roundTrip: 0.400)
        rate.observe(roundTrip: 0.401)
        let before = rate.kbps
        for nonsense in [0, -1, .nan, .infinity] { rate.observe(roundTrip: nonsense) }
        #expect(rate.kbps == before)
    }
}
#endif
