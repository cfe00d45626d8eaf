import SwitchboardProtocol
import Testing

@testable import Switchboard

/// The signaling heartbeat's rule: which tick is silent, what the app hears, when the connection
/// counts as lost. `h`: a frame came before the tick; `-`: none did.
struct HeartbeatWatchTests {
    typealias Outcome = HeartbeatWatch.Outcome

    @Test(arguments: [
        // Frames before every tick: pings, nothing to tell.
        ("hhh", [Outcome.ping(notice: nil), .ping(notice: nil), .ping(notice: nil)]),
        // A new connection counts as heard: its first tick is not silent.
        ("-", [.ping(notice: nil)]),
        // One silent tick is told; the next frame ends it, and that is told too.
        ("--h", [.ping(notice: nil), .ping(notice: .missed), .ping(notice: .answered)]),
        ("--hh", [.ping(notice: nil), .ping(notice: .missed), .ping(notice: .answered), .ping(notice: nil)]),
        // Two silent ticks in a row: lost.
        ("---", [.ping(notice: nil), .ping(notice: .missed), .lost]),
        // Silent, heard, silent: never two in a row.
        ("--h-h-", [.ping(notice: nil), .ping(notice: .missed), .ping(notice: .answered), .ping(notice: .missed),
                    .ping(notice: .answered), .ping(notice: .missed)]),
    ])
    func ticks(_ script: String, _ expected: [Outcome]) {
        var watch = HeartbeatWatch()
        var outcomes: [Outcome] = []
        for (index, step) in script.enumerated() {
            // The first step is the new connection's first interval: heard or not, it starts heard.
            if step == "h" && index > 0 { watch.heard() }
            outcomes.append(watch.tick())
        }
        #expect(outcomes == expected, "\(script)")
    }

    @Test func framesBetweenTicksCountOnce() {
        var watch = HeartbeatWatch()
        _ = watch.tick()
        #expect(watch.tick() == .ping(notice: .missed))
        for _ in 0..<5 { watch.heard() }
        #expect(watch.tick() == .ping(notice: .answered))
        #expect(watch.tick() == .ping(notice: .missed))
        #expect(watch.tick() == .lost)
    }
}
