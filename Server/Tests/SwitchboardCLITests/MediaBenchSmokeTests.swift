#if GStreamer
import Foundation
import Testing

/// `switchboard bench media` in smoke mode (two calls, a second of CPU each): the scenario keeps
/// working; the numbers are not looked at.
struct MediaBenchSmokeTests {
    @Test(.tags(.gstreamer)) func media() throws {
        let results = try BenchSmokeTests.run("media")
        for side in ["calleeFirstAudio", "callerFirstAudio"] {
            #expect((BenchSmokeTests.latency(results[side])?["count"] as? Int ?? 0) == 2)
        }
        let cpu = try #require(results["cpu"] as? [[String: Any]])
        #expect(cpu.map { $0["kind"] as? String } == ["audio", "video 360p"])
        #expect(cpu.allSatisfy { $0["percentPerCall"] is Double })
    }
}
#endif
