#if GStreamer
import ArgumentParser
import Foundation
import Histogram
import Logging
import NIOConcurrencyHelpers
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
    /// Timed calls in which a side decoded no audio from the other within 20 s.
    var callsWithoutAudio: Int
    var cpu: [CPU]
}

/// Holds waiters until opened (then lets everyone through).
final class Gate: Sendable {
    private let state = NIOLockedValueBox<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLockedValue { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLockedValue { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }
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
        var logger = Logger(label: "switchboard.bench.media.\(user)")
        logger.logLevel = ProcessInfo.processInfo.environment["SWITCHBOARD_BENCH_LOG"].flatMap { Logger.Level(rawValue: $0) } ?? .error
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
        var withoutAudio = 0
        for _ in 0..<calls {
            do {
                let heard = try await call(caller, callee, mediaType: .audio) { _ in }
                calleeHears.record(heard.callee)
                callerHears.record(heard.caller)
            } catch let error as BenchError {
                withoutAudio += 1
                FileHandle.standardError.write(Data("a call: \(error)\n".utf8))
            }
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
                let done = Gate()
                for (a, b) in pairs {
                    group.addTask {
                        _ = try await call(a, b, mediaType: mediaType) { _ in
                            release.yield()
                            await done.wait()
                        }
                    }
                }
                var count = 0
                for await _ in started {
                    count += 1
                    if count == pairs.count { break }
                }
                let used = try await self.cpu(for: seconds)
                done.open()
                try await group.waitForAll()
                return used
            }
            cpu.append(
                MediaReport.CPU(
                    kind: mediaType == .audio ? "audio" : "video 360p", percentPerCall: max(0, busy - idle) * 100 / seconds
                        / Double(pairs.count)))
        }
        return MediaReport(
            calleeFirstAudio: LatencySummary(calleeHears), callerFirstAudio: LatencySummary(callerHears),
            callsWithoutAudio: withoutAudio, cpu: cpu)
    }

    /// This process's CPU seconds over `seconds` of wall time.
    func cpu(for seconds: Double) async throws -> Double {
        let pid = ProcessInfo.processInfo.processIdentifier
        let before = cpuSeconds(of: pid) ?? 0
        try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        return (cpuSeconds(of: pid) ?? 0) - before
    }

    /// One call: `a` calls `b`, `b` accepts; once each decodes the other's audio `during` runs,
    /// then `a` hangs up. Returns µs from the accept to each side's first decoded audio frame;
    /// throws a ``BenchError`` (after hanging up) when a side hears nothing within 20 s.
    func call(
        _ a: Member, _ b: Member, mediaType: CallMediaType, during: @Sendable (CallID) async throws -> Void
    ) async throws -> (callee: UInt64, caller: UInt64) {
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
        var heard: Result<(callee: Duration, caller: Duration), BenchError> = .failure(BenchError("not heard"))
        do {
            async let calleeHeard = Self.firstAudio(in: bMedia, from: a.id, by: accepted + .seconds(20))
            async let callerHeard = Self.firstAudio(in: aMedia, from: b.id, by: accepted + .seconds(20))
            heard = .success(try await (callee: calleeHeard - accepted, caller: callerHeard - accepted))
            try await during(placed.callId)
        } catch let error as BenchError {
            heard = .failure(error)
        }
        let ended = a.client.callStore.events
        try await a.client.callStore.hangup(callId: placed.callId)
        for await event in ended {
            if case .onCallEnded(placed.callId, _, _, _) = event { break }
        }
        func micros(_ duration: Duration) -> UInt64 { UInt64(max(0, duration / .microseconds(1))) }
        let times = try heard.get()
        return (micros(times.callee), micros(times.caller))
    }

    /// When `peer`'s first audio frame was decoded; a ``BenchError`` at `deadline` without one.
    private static func firstAudio(
        in events: AsyncStream<MediaEvent>, from peer: UserID, by deadline: ContinuousClock.Instant
    ) async throws -> ContinuousClock.Instant {
        try await withThrowingTaskGroup(of: ContinuousClock.Instant?.self) { group in
            group.addTask {
                for await event in events where event == .trackStarted(peer, .audio) { return .now }
                return nil
            }
            group.addTask {
                try? await Task.sleep(until: deadline)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            guard let first else { throw BenchError("no audio from \(peer) within 20 s of the accept") }
            return first
        }
    }
}
#endif
