import ArgumentParser
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SwitchboardProtocol
import SwitchboardTools

/// `switchboard bench`: a load generator that drives a server in another process over real
/// WebSocket connections. Build it in release mode; each run prints a table and can write JSON.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Load-test a Switchboard server: latency, throughput, connections (see docs/BENCHMARKS.md).",
        discussion: """
            Without --server each scenario starts `switchboard serve` (this same binary) in a child process \
            on 127.0.0.1 with a temporary SQLite database and no abuse limits. With --server, pass the app's \
            --app-id and --secret and run the server with --no-rate-limits. Build with `swift build -c release`.
            """,
        subcommands: BenchCommand.scenarios)

    /// The scenarios; `media` needs the GStreamer trait.
    static var scenarios: [any ParsableCommand.Type] {
        var scenarios: [any ParsableCommand.Type] = [
            Echo.self, Invite.self, Lifecycle.self, Connections.self, Login.self, JSON.self, Cost.self,
        ]
        #if GStreamer
        scenarios.append(Media.self)
        #endif
        return scenarios
    }

    struct Options: ParsableArguments {
        @Option(help: "A running server, host:port (default: start one).")
        var server: String?

        @Option(name: .customLong("server-pid"), help: "Process id of --server, for its CPU time and memory.")
        var serverPid: Int32?

        @Option(name: .customLong("app-id"), help: "sdkAppID of the app on --server.")
        var appID: Int64?

        @Option(help: "secretKey of the app on --server.")
        var secret: String?

        @Option(help: "Write the results as JSON to this file.")
        var json: String?

        @Option(help: "Spread the load's connections over at least this many 127.0.0.x source addresses.")
        var sources = 4

        @Option(help: "Event-loop threads of the load generator (it shares the machine with the server).")
        var clientThreads = 1

        @Option(
            name: .customLong("server-binary"),
            help: "Start the servers from this switchboard binary instead of this one (another build or commit, side by side).")
        var serverBinary: String?

        @Option(help: "Event-loop threads of the server this bench starts (default: one per core).")
        var serverThreads: Int?

        @Option(help: "Commit interval (ms) of the servers this bench starts (default: serve's).")
        var serverCommitInterval: Int?

        @Flag(help: "The servers this bench starts post every event to a local receiver (one endpoint per app, all events).")
        var serverWebhook = false

        @Option(help: "Server nodes this bench starts, a cluster on --database (PostgreSQL) when more than one.")
        var nodes = 1

        @Option(
            help: "Database of the nodes this bench starts: postgresql://… (an empty database; needed for --nodes above 1), default a temporary SQLite file."
        )
        var database: String?

        @Flag(help: "A few seconds with tiny numbers: checks that the scenario works, measures nothing.")
        var smoke = false
    }

    // MARK: - scenarios

    struct Echo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The floor: round trips through a bare WebSocket echo server (same library, same client code).")
        @OptionGroup var options: Options
        @Option(help: "Round trips to time.") var messages = 50_000
        @Option(
            name: .customLong("interval-us"),
            help: "Pause after each reply before the next message, in µs (0: back to back; with a pause the threads sleep between round trips, as at a call rate).")
        var intervalMicros = 0

        func validate() throws {
            guard (0...1_000_000).contains(intervalMicros) else { throw ValidationError("--interval-us must be 0-1000000") }
        }

        func run() async throws {
            let bench = try await Bench(options)
            defer { bench.stop() }
            let count = options.smoke ? 200 : messages
            let report = try await bench.echo(messages: count, interval: .microseconds(Int64(intervalMicros)))
            Bench.table(
                "echo: \(count) sequential round trips of a \(report.messageBytes)-byte message"
                    + (intervalMicros > 0 ? ", \(intervalMicros) µs apart" : ", back to back"),
                LatencySummary.header, [["round trip"] + report.roundTrip.row])
            print("throughput \(Int(report.messagesPerSecond)) round trips/s on one connection")
            try bench.write(
                options.json, scenario: "echo", parameters: ["messages": count, "intervalMicros": intervalMicros],
                results: ["echo": report])
        }
    }

    struct Invite: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Calls paced at --rate between logged-in pairs: invitation, answer and hang-up delays.")
        @OptionGroup var options: Options
        @Option(help: "Calls per second.") var rate = 1000.0
        @Option(help: "Seconds of load.") var duration = 20.0
        @Option(help: "Caller-callee pairs (each has at most one call at a time).") var pairs = 200
        @Option(help: "Milliseconds each call stays connected before the caller hangs up; needs more than rate × hold pairs.")
        var holdMs = 0
        @Option(help: "Echo round trips measured first, for the ratio.") var echoMessages = 20_000

        func run() async throws {
            let bench = try await Bench(options)
            defer { bench.stop() }
            let (rate, seconds, pairCount) = options.smoke ? (50.0, 1.0, 5) : (rate, duration, pairs)
            let echo = try await bench.echo(messages: options.smoke ? 200 : echoMessages)
            let load = try await bench.callLoad(pairs: pairCount, hold: .milliseconds(Int64(max(0, holdMs))))
            print("== \(pairCount * 2) users logged in; \(Int(rate)) calls/s for \(seconds) s, each held \(holdMs) ms")
            _ = await load.run(rate: min(rate, 200), seconds: options.smoke ? 0.2 : 2)  // warm-up
            let lagBefore = await bench.loopLags()
            let (counters, cpu) = await CPUUse.measure(serverPids: bench.targets.compactMap(\.pid), database: bench.watchesDatabase) {
                await load.run(rate: rate, seconds: seconds)
            }
            let lagAfter = await bench.loopLags()
            let step = StepReport(rate: rate, seconds: seconds, load: load, counters: counters, cpu: cpu)
            Bench.printStep(step, echo: echo)
            let worst = zip(lagBefore, lagAfter).compactMap { before, after in before.flatMap { after?.worstSince($0) } }.max()
            let longest = lagAfter.compactMap { $0?.longestSinceStartMs }.max()
            print(
                "longest event-loop stall: during the load at most \(worst.map { "\($0) ms" } ?? "0.5 ms"); "
                    + "since the server started (start-up and logins too) \(longest.map { String(format: "%.1f ms", $0) } ?? "n/a")")
            try bench.write(
                options.json, scenario: "invite",
                parameters: ["rate": rate, "duration": seconds, "pairs": Double(pairCount), "holdMs": Double(holdMs)],
                results: InviteResults(
                    echo: echo, step: step, ratioP50: step.invite.ratio(to: echo.roundTrip), loopStallDuringLoadMs: worst ?? 0.5,
                    loopStallSinceStartMs: longest))
            if counters.errors > 0 || counters.unfinished > 0 { throw ExitCode(2) }
        }
    }

    struct Lifecycle: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Steps the call rate up until p99 invite delay passes 10 ms or calls or records fall behind.")
        @OptionGroup var options: Options
        @Option(parsing: .upToNextOption, help: "Rates to try, calls per second.")
        var rates: [Double] = [250, 500, 750, 1000, 1100, 1250, 1500, 2000, 2500, 3000]
        @Option(help: "Seconds per step.") var stepSeconds = 10.0
        @Option(help: "Caller-callee pairs.") var pairs = 400

        func run() async throws {
            let bench = try await Bench(options)
            defer { bench.stop() }
            let (rates, seconds, pairCount) = options.smoke ? ([20.0, 40.0], 1.0, 8) : (rates, stepSeconds, pairs)
            let echo = try await bench.echo(messages: options.smoke ? 200 : 20_000)
            let load = try await bench.callLoad(pairs: pairCount)
            _ = await load.run(rate: min(rates[0], 200), seconds: options.smoke ? 0.2 : 2)  // warm-up
            var steps: [StepReport] = []
            for rate in rates {
                let (counters, cpu) = await CPUUse.measure(serverPids: bench.targets.compactMap(\.pid), database: bench.watchesDatabase) {
                    await load.run(rate: rate, seconds: seconds)
                }
                let step = StepReport(rate: rate, seconds: seconds, load: load, counters: counters, cpu: cpu)
                steps.append(step)
                print(
                    "  \(Int(rate)) calls/s: \(step.callsPerSecond) completed/s, invite p99 \(Double(step.invite.p99) / 1000) ms, "
                        + "records durable p99 \(Double(step.hangupToRecordsDurable.p99) / 1000) ms, errors \(counters.errors) "
                        + (step.passes ? "✓" : "✗"))
                if !step.passes { break }
            }
            let best = steps.last(where: \.passes)
            Bench.table(
                "lifecycle: whole calls (invite, ring, accept, hang up, both records committed)",
                ["rate", "done/s", "invite p50", "p99", "connected p99", "ended p99", "records p99 (ms)", "errors", "pass"],
                steps.map { step in
                    [
                        "\(Int(step.rate))", "\(step.callsPerSecond)", ms(step.invite.p50), ms(step.invite.p99),
                        ms(step.acceptToConnected.p99), ms(step.hangupToEnded.p99), ms(step.hangupToRecordsDurable.p99),
                        "\(step.counters.errors + step.counters.unfinished + step.counters.recordsMissing)",
                        step.passes ? "yes" : "no",
                    ]
                })
            print("highest rate sustained: \(best.map { "\(Int($0.rate)) calls/s" } ?? "none of the steps")")
            print("echo round trip p50 \(ms(echo.roundTrip.p50)) ms in the same run")
            try bench.write(
                options.json, scenario: "lifecycle", parameters: ["stepSeconds": seconds, "pairs": Double(pairCount)],
                results: LifecycleResults(echo: echo, steps: steps, highestPassingRate: best?.rate))
        }
    }

    struct Connections: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Holds many logged-in idle connections with heartbeats; the server's memory per connection.")
        @OptionGroup var options: Options
        @Option(help: "Connections (each logged in as its own user).") var count = 19_000
        @Option(help: "Seconds to hold them, pinging every 10 s.") var hold = 60.0

        func run() async throws {
            let bench = try await Bench(options)
            defer { bench.stop() }
            let (count, hold) = options.smoke ? (50, 1.0) : (count, hold)
            let report = try await bench.connections(count: count, hold: hold)
            let kib = { (value: Int?) in value.map { "\($0) KiB" } ?? "n/a" }
            Bench.table(
                "connections: \(report.connections) logged-in idle connections over \(report.sources) source addresses",
                ["", "value"],
                [
                    ["connected and logged in in", String(format: "%.1f s", report.connectSeconds)],
                    ["held for", String(format: "%.0f s", report.holdSeconds)],
                    ["heartbeats answered", "\(report.pingsAnswered) / \(report.pingsSent)"],
                    ["closed by the server", "\(report.closedByServer)"],
                    ["server RSS before", kib(report.serverRSSBeforeKiB)],
                    ["server RSS connected", kib(report.serverRSSConnectedKiB)],
                    ["server RSS after holding", kib(report.serverRSSAfterHoldKiB)],
                    ["per connection", report.bytesPerConnection.map { String(format: "%.1f KiB", Double($0) / 1024) } ?? "n/a"],
                    ["load generator RSS", kib(report.loadGeneratorRSSKiB)],
                ])
            try bench.write(options.json, scenario: "connections", parameters: ["count": Double(count), "hold": hold], results: report)
            if report.closedByServer > 0 || report.pingsAnswered < report.pingsSent { throw ExitCode(2) }
        }
    }

    struct Login: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A storm of logins on fresh connections, each verifying a UserSig.")
        @OptionGroup var options: Options
        @Option(help: "Logins in the storm.") var count = 10_000

        func run() async throws {
            let bench = try await Bench(options)
            defer { bench.stop() }
            let count = options.smoke ? 50 : count
            let report = try await bench.loginStorm(count: count)
            Bench.table(
                "login: \(report.logins) logins sent at once on open connections",
                LatencySummary.header, [["login"] + report.latency.row])
            print(
                "\(Int(report.loginsPerSecond)) logins/s (\(report.logins) in \(String(format: "%.2f", report.seconds)) s), "
                    + "\(report.failures) failed")
            try bench.write(options.json, scenario: "login", parameters: ["count": count], results: report)
            if report.failures > 0 { throw ExitCode(2) }
        }
    }
}

extension BenchCommand {
    struct JSON: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "json",
            abstract: "In this process: encoding a call's frames (the server's encoder and Foundation's), decoding a request.")
        @Option(help: "Encodings per round (5 rounds, median).") var iterations = 20_000
        @Option(help: "Write the results as JSON to this file.") var json: String?
        @Flag(help: "Tiny numbers: checks that it works, measures nothing.") var smoke = false

        func run() throws {
            let report = try JSONBench.run(iterations: smoke ? 50 : iterations)
            Bench.table(
                "json: nanoseconds per frame, median of 5 rounds of \(report.iterations)",
                ["message", "bytes", "WireEncoder", "JSONEncoder", "speed-up"],
                report.rows.map {
                    [$0.message, "\($0.bytes)", "\(Int($0.wireEncoderNanos))", "\(Int($0.foundationEncoderNanos))", "\($0.speedup)×"]
                })
            print("decoding a call.start request (JSONDecoder): \(Int(report.decodeRequestNanos)) ns")
            try Bench.writeJSON(report, to: json)
        }
    }
}

/// The JSON a run writes.
struct BenchOutput<Parameters: Encodable, Results: Encodable>: Encodable {
    var scenario: String
    var command: String
    var date: String
    var smoke: Bool
    var cores: Int
    var limits: SystemLimits
    var parameters: Parameters
    var results: Results
}

struct InviteResults: Codable {
    var echo: EchoReport
    var step: StepReport
    /// Invite delay p50 over echo round trip p50.
    var ratioP50: Double
    /// The longest event-loop stall of any node during the load (the bound of its histogram bucket).
    var loopStallDuringLoadMs: Double?
    /// The longest since the nodes started.
    var loopStallSinceStartMs: Double?
}

struct LifecycleResults: Codable {
    var echo: EchoReport
    var steps: [StepReport]
    var highestPassingRate: Double?
}

extension LatencySummary {
    func ratio(to other: LatencySummary) -> Double {
        other.p50 == 0 ? 0 : (Double(p50) / Double(other.p50) * 100).rounded() / 100
    }
}

func ms(_ micros: UInt64) -> String {
    String(format: "%.3f", Double(micros) / 1000)
}
