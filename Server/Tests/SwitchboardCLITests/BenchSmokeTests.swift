import Foundation
import Testing

/// Every `switchboard bench` scenario in smoke mode (seconds, tiny numbers) against a server in
/// another process, so the load generator never rots. The numbers are not looked at; the JSON's
/// shape and the absence of errors are.
@Suite(.serialized) struct BenchSmokeTests {
    static func run(_ scenario: String, _ extra: [String] = []) throws -> [String: Any] {
        let json = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(scenario)-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: json) }
        let output = try CLITests.run(["bench", scenario, "--smoke", "--json", json.path] + extra)
        #expect(output.status == 0, "bench \(scenario) failed:\n\(output.stdout)\n\(output.stderr)")
        let data = try Data(contentsOf: json)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["scenario"] as? String == scenario)
        #expect(object["smoke"] as? Bool == true)
        return try #require(object["results"] as? [String: Any])
    }

    static func latency(_ object: Any?) -> [String: Any]? { object as? [String: Any] }

    @Test func echo() throws {
        let results = try Self.run("echo")
        let echo = try #require(results["echo"] as? [String: Any])
        #expect((Self.latency(echo["roundTrip"])?["count"] as? Int ?? 0) == 200)
        #expect(echo["intervalMicros"] as? Int == 0)
    }

    /// With a pause between round trips (the threads sleep, as between the frames of calls at a low rate).
    @Test func echoWithPauses() throws {
        let results = try Self.run("echo", ["--interval-us", "200"])
        let echo = try #require(results["echo"] as? [String: Any])
        #expect((Self.latency(echo["roundTrip"])?["count"] as? Int ?? 0) == 200)
        #expect(echo["intervalMicros"] as? Int == 200)
        let refused = try CLITests.run(["bench", "echo", "--smoke", "--interval-us=-1"])
        #expect(refused.status != 0 && refused.stderr.contains("--interval-us must be 0-1000000"), "\(refused.stderr)")
    }

    @Test func invite() throws {
        // Also the plumbing of held calls and of the server's commit interval.
        let results = try Self.run("invite", ["--hold-ms", "20", "--server-commit-interval", "0"])
        let step = try #require(results["step"] as? [String: Any])
        let counters = try #require(step["counters"] as? [String: Any])
        #expect(counters["errors"] as? Int == 0 && counters["unfinished"] as? Int == 0)
        #expect((counters["completed"] as? Int ?? 0) > 0)
        #expect((Self.latency(step["invite"])?["count"] as? Int ?? 0) > 0)
        #expect((Self.latency(step["hangupToRecordsDurable"])?["count"] as? Int ?? 0) > 0)
        #expect(results["ratioP50"] is Double)
        #expect(step["serverCPUPerCallMicros"] is Double && step["generatorCPUPerCallMicros"] is Double)
        let total = try #require(step["serverCPUPerCallMicros"] as? Double)
        let kernel = try #require(step["serverKernelCPUPerCallMicros"] as? Double)
        #expect(kernel >= 0 && kernel <= total)
    }

    @Test func lifecycle() throws {
        let results = try Self.run("lifecycle", ["--server-threads", "1"])  // also the server option plumbing
        let steps = try #require(results["steps"] as? [[String: Any]])
        #expect(!steps.isEmpty)
        #expect(steps.allSatisfy { (($0["counters"] as? [String: Any])?["errors"] as? Int) == 0 })
    }

    @Test func connections() throws {
        let results = try Self.run("connections")
        #expect(results["connections"] as? Int == 50)
        #expect(results["closedByServer"] as? Int == 0)
        #expect(results["pingsAnswered"] as? Int == results["pingsSent"] as? Int)
        #expect(results["serverRSSConnectedKiB"] is Int)
    }

    @Test func login() throws {
        let results = try Self.run("login")
        #expect(results["logins"] as? Int == 50 && results["failures"] as? Int == 0)
    }

    @Test func json() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bench-json-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: path) }
        let output = try CLITests.run(["bench", "json", "--smoke", "--json", path.path])
        #expect(output.status == 0, "bench json failed:\n\(output.stdout)\n\(output.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: path)) as? [String: Any])
        let rows = try #require(object["rows"] as? [[String: Any]])
        #expect(rows.count == 2)
        #expect(rows.allSatisfy { ($0["wireEncoderNanos"] as? Double ?? 0) > 0 && ($0["bytes"] as? Int ?? 0) > 300 })
    }

    /// A load the machine cannot carry is refused up front, naming the limit.
    @Test func anImpossibleLoadNamesTheLimit() throws {
        let output = try CLITests.run(["bench", "connections", "--count", "10000000", "--hold", "1"])
        #expect(output.status != 0)
        #expect((output.stdout + output.stderr).contains("open files"))
    }
}
