#if GStreamer
import Foundation
import Testing

/// `switchboard bench media` in smoke mode (two calls, a second of CPU each): the scenario keeps
/// working, and what it reports is what happened. Every call was heard both ways (none without
/// audio, each first-audio time above zero), and a call that carries media costs CPU: more with
/// video than with audio alone (360p VP8 encoded and decoded against Opus: several times more
/// here). A bench whose calls carried nothing would report costs of about zero.
struct MediaBenchSmokeTests {
    @Test(.tags(.gstreamer)) func media() throws {
        let results = try BenchSmokeTests.run("media")
        #expect(results["callsWithoutAudio"] as? Int == 0)
        for side in ["calleeFirstAudio", "callerFirstAudio"] {
            let latency = try #require(BenchSmokeTests.latency(results[side]), "\(side)")
            #expect(latency["count"] as? Int == 2)
            #expect((latency["p50"] as? Int ?? 0) > 0, "\(side): \(latency)")
        }
        let cpu = try #require(results["cpu"] as? [[String: Any]])
        #expect(cpu.map { $0["kind"] as? String } == ["audio", "video 360p"])
        let percent = cpu.map { $0["percentPerCall"] as? Double ?? 0 }
        #expect(percent.count == 2 && percent[0] > 0 && percent[1] > percent[0], "CPU per call (audio, video): \(percent)")
    }
}
#endif
