#if GStreamer
import Testing

@testable import SwitchboardGStreamer

/// The delay-based rate of a video encoder, report by report (no media: the round trips are made up).
struct SendRateControllerTests {
    @Test func aQueueOnThePathLowersTheRateThenLetsItDrain() {
        var rate = SendRateController(maximumKbps: 500)
        rate.observe(roundTrip: 0.020)
        #expect(rate.kbps == 500)
        // 200 ms more than the path's own: a queue. Down 30 %.
        rate.observe(roundTrip: 0.220)
        #expect(rate.kbps == 350)
        // The same report read again is not news; the next reports still show the old queue
        // draining, and do not cut again.
        rate.observe(roundTrip: 0.220)
        for step in 1...SendRateController.cooldown { rate.observe(roundTrip: 0.220 + Double(step) * 0.001) }
        #expect(rate.kbps == 350)
        // Still queued after that: down again.
        rate.observe(roundTrip: 0.240)
        #expect(rate.kbps == 244)
    }

    @Test func aSmallQueueHoldsAndNoneRaisesUpToTheCeiling() {
        var rate = SendRateController(maximumKbps: 500)
        rate.observe(roundTrip: 0.020)
        rate.observe(roundTrip: 0.200)
        #expect(rate.kbps == 350)
        rate.observe(roundTrip: 0.070)
        #expect(rate.kbps == 350)
        rate.observe(roundTrip: 0.025)
        #expect(rate.kbps == 378)
        for step in 0..<30 { rate.observe(roundTrip: 0.021 + Double(step) * 0.0001) }
        #expect(rate.kbps == 500)
    }

    @Test func aDeepQueueHalvesTheRate() {
        var rate = SendRateController(maximumKbps: 500)
        rate.observe(roundTrip: 0.020)
        rate.observe(roundTrip: 0.400)
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
        let before = rate.kbps
        for nonsense in [0, -1, .nan, .infinity] { rate.observe(roundTrip: nonsense) }
        #expect(rate.kbps == before)
    }
}
#endif
