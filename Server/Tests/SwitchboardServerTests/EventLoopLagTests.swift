import Foundation
import NIOPosix
import Prometheus
import Testing

@testable import SwitchboardServer

/// The event-loop lag probe on a loop of its own: work that holds the loop shows up as lag.
struct EventLoopLagTests {
    @Test func aLoopHeldByLongWorkShowsAsLag() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let registry = PrometheusCollectorRegistry()
        let probe = EventLoopLagProbe(registry: registry)
        probe.start(on: group)
        // Work that does not give the loop back for 80 ms.
        _ = try await group.next().submit { usleep(80_000) }.get()
        // The probe runs on the real clock (it is about threads): its next run after the work
        // records the lag. Looked at until it has, with a limit against a hang.
        let deadline = ContinuousClock.now + .seconds(10)
        while probe.longestNanoseconds < 60_000_000, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(probe.longestNanoseconds >= 60_000_000)
        let text = registry.emitToString()
        #expect(text.contains("switchboard_event_loop_lag_max_seconds"))
        #expect(text.contains(#"switchboard_event_loop_lag_seconds_bucket{le="0.1"}"#))
        probe.stop()
        try await group.shutdownGracefully()
    }
}
