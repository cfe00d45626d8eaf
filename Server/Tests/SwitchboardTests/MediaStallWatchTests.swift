import SwitchboardProtocol
import Testing

@testable import Switchboard

/// When a member's media counts as stalled (issue 48): readings once a second of the packets
/// received from each member, and who is expected to send; each row is what the watch says at
/// each reading.
struct MediaStallWatchTests {
    typealias Reading = (at: Int64, received: [UserID: Int], expected: Set<UserID>)

    static func run(_ readings: [Reading]) -> [[MediaStallWatch.Change]] {
        var watch = MediaStallWatch()
        return readings.map { watch.sample(received: $0.received, expected: $0.expected, now: $0.at) }
    }

    static let bob: Set<UserID> = ["bob"]

    @Test func packetsThatStopForTwoSecondsStallAndFlowAgainWhenTheyCome() {
        #expect(
            Self.run([
                (1000, ["bob": 50], Self.bob), (2000, ["bob": 100], Self.bob),
                (3000, ["bob": 100], Self.bob),  // 1 s without a packet: nothing yet
                (4000, ["bob": 100], Self.bob),  // 2 s: stalled
                (5000, ["bob": 100], Self.bob),  // said once
                (6000, ["bob": 101], Self.bob),
            ]) == [[], [], [], [.stalled("bob")], [], [.flowing("bob")]])
    }

    @Test func aMemberWhoSendsNothingByChoiceIsNotStalled() {
        // Microphone and camera off (the browser sends nothing then): never stalled; stalled
        // at once when they turn off after a stall began, no: flowing (nothing is due).
        #expect(
            Self.run([
                (1000, ["bob": 50], []), (2000, ["bob": 50], []), (3000, ["bob": 50], []), (4000, ["bob": 50], []),
            ]) == [[], [], [], []])
        #expect(
            Self.run([
                (1000, ["bob": 50], Self.bob), (3000, ["bob": 50], Self.bob), (4000, ["bob": 50], []),
            ]) == [[], [.stalled("bob")], [.flowing("bob")]])
        // Turning the microphone on again: 2 s from then, not from the last packet long ago.
        #expect(
            Self.run([
                (1000, ["bob": 50], []), (9000, ["bob": 50], Self.bob), (10000, ["bob": 50], Self.bob),
                (11000, ["bob": 50], Self.bob),
            ]) == [[], [], [], [.stalled("bob")]])
    }

    @Test func nothingBeforeTheFirstPacketAndNothingAfterTheMemberLeft() {
        // No packet ever came (the connection is still being made): not stalled.
        #expect(
            Self.run([(1000, ["bob": 0], Self.bob), (5000, ["bob": 0], Self.bob)]) == [[], []])
        // A stalled member who left flows (nothing is shown for them any more).
        #expect(
            Self.run([(1000, ["bob": 5], Self.bob), (3000, ["bob": 5], Self.bob), (4000, [:], Self.bob)])
                == [[], [.stalled("bob")], [.flowing("bob")]])
        // A new connection's counters start again from zero: what comes counts.
        #expect(
            Self.run([
                (1000, ["bob": 500], Self.bob), (2000, ["bob": 3], Self.bob), (3000, ["bob": 3], Self.bob),
                (4000, ["bob": 3], Self.bob),
            ]) == [[], [], [], [.stalled("bob")]])
    }

    @Test func eachMemberOnTheirOwn() {
        let both: Set<UserID> = ["bob", "carol"]
        #expect(
            Self.run([
                (1000, ["bob": 5, "carol": 5], both), (2000, ["bob": 6, "carol": 5], both),
                (3000, ["bob": 7, "carol": 5], both),
            ]) == [[], [], [.stalled("carol")]])
    }
}
