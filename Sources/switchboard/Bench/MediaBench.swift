#if GStreamer
import ArgumentParser
import Foundation
import Histogram
import Logging
import Switchboard
import SwitchboardGStreamer
import SwitchboardProtocol

extension BenchCommand {
    /// Media with the GStreamer engine: how soon a call is heard, and what a call costs in CPU.
    struct Media: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The GStreamer engine: accept → first decoded audio frame, and CPU per media call.",
            discussion: """
                Two SDK clients with the GStreamer engine in this process call each other through the server \
                (ICE on 127.0.0.1): --calls sequential audio calls time the callee's accept to the first audio \
                frame each side decodes; then --parallel calls at a time run --seconds each, audio and then \
                video at 360p, against as long with the clients idle, and the difference in this process's CPU \
                time is split over the calls.
                """)
        @OptionGroup var options: Options
        @Option(help: "Sequential calls timed.") var calls = 20
        @Option(help: "Calls at a time while CPU is measured.") var parallel = 2
        @Option(help: "Seconds of each CPU measurement.") var seconds = 10.0

        func run() async throws {
            let bench = try await Bench(options)
            defer { bench.stop() }
            let calls = options.smoke ? 2 : self.calls
            let seconds = options.smoke ? 1 : self.seconds
            let report = try await MediaBench(target: bench.target).run(
                calls: calls, parallel: max(1, parallel), seconds: seconds)
            Bench.table(
                "media: \(calls) sequential audio calls, accept → first decoded audio frame",
                LatencySummary.header,
                [["callee hears caller"] + report.calleeFirstAudio.row, ["caller hears callee"] + report.callerFirstAudio.row])
            Bench.table(
                "media: CPU of \(max(1, parallel)) calls at a time for \(seconds) s (both ends in this process)",
                ["", "% of a core per call", "per end"],
                report.cpu.map { [$0.kind, String(format: "%.1f", $0.percentPerCall), String(format: "%.1f", $0.percentPerCall / 2)] })
            try bench.write(
                options.json, scenario: "media",
                parameters: ["calls": calls, "parallel": max(1, parallel), "seconds": Int(seconds)], results: report)
        }
    }
}

/// What `bench media` measured.
struct MediaReport: Encodable {
    struct CPU: Encodable {
        var kind: String
        /// This process's CPU time while the calls ran, minus the same time idle, per call, in % of one core.
        var percentPerCall: Double
    }

    /// µs from the callee's accept to its first decoded audio frame from the caller.
    var calleeFirstAudio: LatencySummary
    /// µs from the callee's accept to the caller's first decoded audio frame from the callee.
    var callerFirstAudio: LatencySummary
    var cpu: [CPU]
}

/// The media scenario's clients and calls.
struct MediaBench {
    let target: BenchTarget

    struct Member {
        var id: UserID
        var client: SwitchboardClient
        var engine: GStreamerMediaEngine
    }

    func member(_ user: String) async throws -> Member {
        var logger = Logger(label: "switchboard.bench.media")
        logger.logLevel = .error
        let engine = GStreamerMediaEngine(configuration: .init(videoSource: .pattern("ball"), loopbackOnly: true), logger: logger)
        let client = SwitchboardClient(
            configuration: SwitchboardConfiguration(
                serverURL: URL(string: "ws://\(target.host):\(target.port)/v1/ws")!, platform: "bench", mediaEngine: engine,
                logger: logger))
        let sig = UserSig.generate(sdkAppID: target.sdkAppID, secretKey: target.secretKey, userID: user)
        try await client.loginStore.login(sdkAppID: target.sdkAppID, userID: user, userSig: sig)
        client.deviceStore.openLocalMicrophone()
        client.deviceStore.setVideoQuality(.p360)
        return Member(id: UserID(rawValue: user), client: client, engine: engine)
    }

    func run(calls: Int, parallel: Int, seconds: Double) async throws -> MediaReport {
        let tag = runTag()
        let caller = try await member("mc\(tag)")
        let callee = try await member("md\(tag)")
        var calleeHears = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        var callerHears = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        for _ in 0..<calls {
            let (heard, answered) = try await call(caller, callee, mediaType: .audio) { _ in }
            calleeHears.record(heard.callee)
            callerHears.record(heard.caller)
            _ = answered
        }
        var pairs: [(Member, Member)] = []
        for index in 0..<parallel {
            pairs.append((try await member("mp\(index)a\(tag)"), try await member("mp\(index)b\(tag)")))
        }
        let idle = try await cpu(for: seconds)
        var cpu: [MediaReport.CPU] = []
        for mediaType in [CallMediaType.audio, .video] {
            let busy = try await withThrowingTaskGroup(of: Void.self) { group -> Double in
                let (started, release) = AsyncStream<Void>.makeStream()
                let (done, finish) = AsyncStream<Void>.makeStream()
                for (a, b) in pairs {
                    group.addTask {
                        _ = try await call(a, b, mediaType: mediaType) { _ in
                            release.yield()
                            for await _ in done { break }
                        }
                    }
                }
                var count = 0
                for await _ in started {
                    count += 1
                    if count == pairs.count { break }
                }
                let used = try await self.cpu(for: seconds)
                for _ in pairs { finish.yield() }
                finish.finish()
                try await group.waitForAll()
                return used
            }
            cpu.append(
                MediaReport.CPU(
                    kind: mediaType == .audio ? "audio" : "video 360p", percentPerCall: max(0, busy - idle) * 100 / seconds
                        / Double(pairs.count)))
        }
        return MediaReport(
            calleeFirstAudio: LatencySummary(calleeHears), callerFirstAudio: LatencySummary(callerHears), cpu: cpu)
    }

    /// This process's CPU seconds over `seconds` of wall time.
    func cpu(for seconds: Double) async throws -> Double {
        let pid = ProcessInfo.processInfo.processIdentifier
        let before = cpuSeconds(of: pid) ?? 0
        try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        return (cpuSeconds(of: pid) ?? 0) - before
    }

    /// One call: `a` calls `b`, `b` accepts; once each decodes the other's audio `during` runs,
    /// then `a` hangs up. Returns µs from the accept to each side's first decoded audio frame.
    func call(
        _ a: Member, _ b: Member, mediaType: CallMediaType, during: @Sendable (CallID) async throws -> Void
    ) async throws -> (heard: (callee: UInt64, caller: UInt64), callId: CallID) {
        let aMedia = a.engine.events
        let bMedia = b.engine.events
        let bCalls = b.client.callStore.events
        if mediaType == .video {
            a.client.deviceStore.openLocalCamera()
            b.client.deviceStore.openLocalCamera()
        } else {
            a.client.deviceStore.closeLocalCamera()
            b.client.deviceStore.closeLocalCamera()
        }
        let placed = try await a.client.callStore.calls(participantIds: [b.id.rawValue], mediaType: mediaType)
        for await event in bCalls {
            if case .onCallReceived(placed.callId, _, _, _, _) = event { break }
        }
        let accepted = ContinuousClock.now
        try await b.client.callStore.accept(callId: placed.callId)
        async let calleeHeard = Self.firstAudio(in: bMedia, from: a.id)
        async let callerHeard = Self.firstAudio(in: aMedia, from: b.id)
        let heard = try await (callee: calleeHeard - accepted, caller: callerHeard - accepted)
        try await during(placed.callId)
        let ended = a.client.callStore.events
        try await a.client.callStore.hangup(callId: placed.callId)
        for await event in ended {
            if case .onCallEnded(placed.callId, _, _, _) = event { break }
        }
        func micros(_ duration: Duration) -> UInt64 { UInt64(max(0, duration / .microseconds(1))) }
        return ((micros(heard.callee), micros(heard.caller)), placed.callId)
    }

    private static func firstAudio(in events: AsyncStream<MediaEvent>, from peer: UserID) async throws -> ContinuousClock.Instant {
        for await event in events where event == .trackStarted(peer, .audio) { return .now }
        throw BenchError("the media events ended before \(peer)'s audio")
    }
}
#endif
