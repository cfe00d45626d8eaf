#if GStreamer
import Foundation
import SwitchboardTestServers
import SwitchboardTools
import Testing

/// Links that fail for real: `switchboard serve` and two `switchboard call` processes (the Swift SDK
/// with the GStreamer engine), each in its own network namespace behind a router namespace
/// (``TestNetwork``), while a test cuts a client's link, changes its address or squeezes it.
///
/// The server runs with a 1 s heartbeat and an 8 s reconnect grace instead of 10 s and 15 s, so the
/// suite stays short: a blackout of 2 s and one of 6 s stand for the issue's 3 s and 12 s (inside
/// the grace), and a blackout that lasts until the server ends the call stands for 40 s. Blackouts
/// are real time (the kernel's links and the server's timers run on the real clock); everything
/// else waits for events. Each test prints what it measured.
@Suite(.tags(.gstreamer), .enabled(if: NetworkNamespaces.available, NetworkNamespaces.skipMessage))
struct NetworkFailureTests {
    /// The server's reconnect grace and heartbeat here; SWITCHBOARD_NET_GRACE and
    /// SWITCHBOARD_NET_HEARTBEAT set others (the production defaults, 15 and 10, for the figures in
    /// docs/BENCHMARKS.md).
    static let grace = ProcessInfo.processInfo.environment["SWITCHBOARD_NET_GRACE"].flatMap { Int($0) } ?? 8
    static let heartbeat = ProcessInfo.processInfo.environment["SWITCHBOARD_NET_HEARTBEAT"].flatMap { Int($0) } ?? 1

    /// The two clients are in a call and each decodes the other's audio.
    @Test func aCallCrossesTheTestNetwork() async throws {
        let started = ContinuousClock.now
        let call = try await NetworkCall.start()
        defer { call.stop() }
        print("[network] call set up across namespaces in \(call.setUpTime), first run \(ContinuousClock.now - started)")
        try await call.hangUp()
    }

    /// A blackout inside the grace: the same call carries on and each side decodes the other's
    /// audio again (the SDK reconnects and restarts ICE where it noticed the drop).
    @Test(arguments: [2, 6]) func aBlackoutInsideTheGraceResumesTheCall(seconds: Int) async throws {
        let call = try await NetworkCall.start()
        defer { call.stop() }
        let before = call.alice.output.values.count
        try call.network.cut("alice")
        // Nothing arrives while the link is down (what is in flight has landed after a second):
        // the frames counted after the restore are new media, not concealment.
        try await Task.sleep(for: .seconds(1))
        let stalled = call.alice.output.values.count
        try await Task.sleep(for: .seconds(seconds - 1))
        let mark = call.alice.output.values.count
        let during = call.alice.output.values[stalled..<mark].compactMap { NetworkCall.frames($0, peer: "bob") }
        #expect(Set(during).count <= 1, "frames decoded while the link was down: \(during)")
        let back = ContinuousClock.now
        try call.network.restore("alice")
        let (aliceMedia, bobMedia) = try await call.mediaFlows(from: mark)
        let media = max(call.alice.arrival(of: aliceMedia), call.bob.arrival(of: bobMedia)) - back
        var signaling = "no reconnect needed"
        let lines = call.alice.output.values
        if let away = (before..<lines.count).first(where: { NetworkCall.connection(lines[$0]) == "reconnecting" }) {
            let again = try await call.alice.output.position(after: away) { NetworkCall.connection($0) == "loggedIn" } - 1
            signaling = "\(call.alice.arrival(of: again) - back)"
        }
        print("[network] blackout \(seconds) s: link back → signaling resumed \(signaling), → audio decoded on both sides \(media)")
        try await call.hangUp()
    }

    /// A blackout beyond the grace: the server ends the call for both (`endByServer`, the member who
    /// dropped as `userId`), and both users' records of it agree.
    @Test func aBlackoutBeyondTheGraceEndsTheCall() async throws {
        let call = try await NetworkCall.start()
        defer { call.stop() }
        let cut = ContinuousClock.now
        try call.network.cut("alice")
        let bobSaw = try await call.bob.output.first(from: 0) { NetworkCall.callEvent($0)?.hasPrefix("onCallEnded") == true }
        let ended = ContinuousClock.now - cut
        try call.network.restore("alice")
        let (aliceStatus, aliceOutput) = await call.alice.finish()
        let (bobStatus, bobOutput) = await call.bob.finish()
        #expect(NetworkCall.callEvent(bobSaw)?.contains("reason=endByServer by alice") == true, "\(bobSaw)")
        let aliceSummary = try NetworkCall.summary(aliceOutput)
        let bobSummary = try NetworkCall.summary(bobOutput)
        #expect(aliceSummary["endReason"] as? String == "endByServer", "\(aliceOutput)")
        #expect(bobSummary["endReason"] as? String == "endByServer", "\(bobOutput)")
        #expect(aliceSummary["callId"] as? String == bobSummary["callId"] as? String)
        #expect(aliceStatus == 1 && bobStatus == 1)
        let callId = try #require(bobSummary["callId"] as? String)
        let aliceRecord = try call.record(of: "alice", callId: callId)
        let bobRecord = try call.record(of: "bob", callId: callId)
        #expect(aliceRecord["result"] as? String == bobRecord["result"] as? String, "\(aliceRecord) \(bobRecord)")
        #expect(aliceRecord["startTime"] as? Int == bobRecord["startTime"] as? Int)
        #expect(aliceRecord["duration"] as? Int == bobRecord["duration"] as? Int)
        print("[network] blackout beyond the grace (\(Self.grace) s): call ended for the other member \(ended) after the cut; records \(aliceRecord["result"] ?? "-")/\(bobRecord["result"] ?? "-"), \(bobRecord["duration"] ?? "-") s")
    }

    /// A new address mid-call (a phone moving from Wi-Fi to cellular): signaling reconnects from the
    /// new address, media comes back through an ICE restart, same call.
    @Test func anAddressChangeResumesTheCall() async throws {
        let call = try await NetworkCall.start()
        defer { call.stop() }
        let mark = call.alice.output.values.count
        let moved = ContinuousClock.now
        let address = try call.network.moveAddress("alice")
        let again = try await call.alice.output.position(after: mark) { NetworkCall.connection($0) == "loggedIn" } - 1
        let (aliceMedia, bobMedia) = try await call.mediaFlows(from: again)
        let media = max(call.alice.arrival(of: aliceMedia), call.bob.arrival(of: bobMedia)) - moved
        print("[network] address change to \(address): → signaling resumed \(call.alice.arrival(of: again) - moved), → audio decoded on both sides \(media)")
        try await call.hangUp()
    }

    /// No path between the members' addresses and no relay: the server hands out no TURN, or a
    /// TURN server neither client can reach (blackholed, as behind a firewall). The call connects
    /// on signaling, each side's engine reports its media connection failed (`connection to …:
    /// failed`), and from the first failure each side shows the other's network quality as
    /// `down`, with no audio decoded, instead of a call that is silent without a word. Prints how
    /// long that took.
    @Test(arguments: [false, true]) func noMediaPathIsReportedOnBothSides(unreachableTURN: Bool) async throws {
        let call = try await NetworkCall.start(isolated: true, unreachableTURN: unreachableTURN)
        defer { call.stop() }
        let sides = [(call.alice, "bob"), (call.bob, "alice")]
        let failures = try await sides.asyncMap { process, peer in
            do {
                // The engine's ICE timers decide this, not the machine's speed: 7-8 s mostly; up
                // to four attempts (the first and three restarts, each resetting the other side's
                // checks) on the offerer's side.
                return try await process.output.position(after: 0, timeout: .seconds(90)) {
                    NetworkCall.mediaSummary($0) == "connection to \(peer): failed"
                }
            } catch {
                let media = process.output.values.compactMap(NetworkCall.mediaSummary)
                Issue.record("no failure reported to \(peer)'s side; its media events: \(media)")
                throw error
            }
        }
        let failedAt = zip(sides, failures).map { side, position in side.0.arrival(of: position - 1) }
        // Down comes after the engine's first failure (the SDK gives up on later ones).
        let downAt = try await Array(zip(sides, failures)).asyncMap { side, failed in
            let (process, peer) = side
            let position = try await process.output.position(after: failed, timeout: .seconds(90)) {
                NetworkCall.quality($0, peer: peer) == "down"
            }
            return process.arrival(of: position - 1)
        }
        for (process, peer) in sides {
            #expect(!process.output.values.contains { (NetworkCall.frames($0, peer: peer) ?? 0) > 0 })
        }
        let connected = try #require(call.connectedAt)
        print(
            "[network] no media path\(unreachableTURN ? " (TURN unreachable)" : ""): each side's engine reported the connection failed \(failedAt.map { $0 - connected }) "
                + "and its status showed the other down \(downAt.map { $0 - connected }) after the call connected")
        try await call.hangUp()
    }

    /// A link squeezed to 300 kbit/s and then to 64 kbit/s, both ways, during a video call: audio
    /// keeps being decoded, the quality the other member sees goes down, and comes back once the
    /// limit is lifted. At 300 kbit/s the camera (500 kbps at 360p) lowers its bitrate and video
    /// keeps being decoded, coarser, instead of freezing (before the engine adapted its rate, bob
    /// decoded 2 frames of alice's in the 10 s after the squeeze; the test wants 30 within a minute).
    /// At 64 kbit/s even the camera's lowest rate does not fit beside the audio: alice's engine
    /// pauses her video to bob and thins her audio (``VideoGate``), audio goes on, and once the
    /// limit is lifted a trial sends video again and bob decodes it.
    @Test func aNarrowLinkLowersTheQualityAndAudioGoesOn() async throws {
        // The production heartbeat and grace (10 s, 15 s): with the suite's 1 s heartbeat the
        // signaling of a 64 kbit/s link starved in the seconds before the video paused, and the
        // server ended the call. What the signaling survives on a narrow link is the production
        // settings' question (docs/BENCHMARKS.md, "Networks that fail").
        let call = try await NetworkCall.start(grace: 15, heartbeat: 10, video: true)
        defer { call.stop() }
        do {
            try await Self.narrowLink(call)
        } catch {
            // What each engine did about its rate and its video, for the failure's reader.
            for (name, process) in [("alice", call.alice), ("bob", call.bob)] {
                let media = process.output.values.compactMap(NetworkCall.mediaSummary).filter { !$0.hasPrefix("receiving") }
                print("[network] narrow link failed; \(name)'s media lines: \(media)")
            }
            let frames = call.bob.output.values.compactMap { NetworkCall.videoFrames($0, peer: "alice") }
            print("[network] bob's count of alice's video frames, every 10th status: \(stride(from: 0, to: frames.count, by: 10).map { frames[$0] })")
            throw error
        }
    }

    private static func narrowLink(_ call: NetworkCall) async throws {
        var report: [String] = []
        // The camera starts at a quarter of its bitrate and climbs while the link shows no queue.
        let ramp = ContinuousClock.now
        try await call.alice.output.first(from: 0, timeout: .seconds(60)) { NetworkCall.mediaSummary($0) == "sending video at 500 kbps" }
        report.append("alice's camera at its 500 kbps \(ContinuousClock.now - ramp) after the call connected")
        for rate in [300, 64] {
            let mark = call.alice.output.values.count
            let squeezed = ContinuousClock.now
            try call.network.limit("alice", kilobitsPerSecond: rate)
            let bobMark = call.bob.output.values.count
            let worse = try await call.bob.output.first(from: bobMark) {
                guard let quality = NetworkCall.quality($0, peer: "alice") else { return false }
                return !["unknown", "excellent", "good"].contains(quality)
            }
            let lowered = ContinuousClock.now - squeezed
            try await call.mediaFlows(from: mark)
            var video = ""
            if rate == 300 {
                let before = NetworkCall.videoFrames(worse, peer: "alice") ?? 0
                try await call.bob.output.first(from: bobMark, timeout: .seconds(60)) {
                    (NetworkCall.videoFrames($0, peer: "alice") ?? 0) >= before + 30
                }
                let sending = call.alice.output.values.compactMap(NetworkCall.mediaSummary).last { $0.hasPrefix("sending video at") }
                video = ", 30 more video frames decoded \(ContinuousClock.now - squeezed) after the squeeze (\(sending ?? "no rate change"))"
            }
            if rate == 64 {
                try await call.alice.output.first(from: mark, timeout: .seconds(60)) {
                    NetworkCall.mediaSummary($0) == "video to bob paused: the network is too weak for video"
                }
                let paused = ContinuousClock.now - squeezed
                // Video to bob stops: over 3 s of bob's status lines (one each 200 ms), after one
                // second for what was on the way, his count of alice's frames stands still.
                var line = call.bob.output.values.count
                var counts: [Int] = []
                for _ in 0..<20 {
                    line = try await call.bob.output.position(after: line) { NetworkCall.videoFrames($0, peer: "alice") != nil }
                    counts.append(NetworkCall.videoFrames(call.bob.output.values[line - 1], peer: "alice")!)
                }
                #expect(counts[5] == counts[19], "bob still decodes alice's video after the pause: \(counts)")
                let steps = call.alice.output.values[mark...].compactMap(NetworkCall.mediaSummary).filter { $0.hasPrefix("sending") }
                // Audio after the pause, thinned.
                let afterPause = call.alice.output.values.count
                try await call.mediaFlows(from: afterPause)
                let thinned = call.alice.output.values.compactMap(NetworkCall.mediaSummary).contains("sending audio at 16 kbps")
                video = ", video to bob paused \(paused) after the squeeze (\(steps)), bob's count of alice's frames then \(counts[5])…\(counts[19]), audio \(thinned ? "thinned" : "not thinned") and decoded after it"
                #expect(thinned)
            }
            report.append("\(rate) kbit/s: alice's quality for bob \(NetworkCall.quality(worse, peer: "alice")!) after \(lowered), audio still decoded\(video)")
        }
        let lifted = ContinuousClock.now
        let framesBefore = call.bob.output.values.compactMap { NetworkCall.videoFrames($0, peer: "alice") }.last ?? 0
        try call.network.limit("alice", kilobitsPerSecond: nil)
        let bobMark = call.bob.output.values.count
        let better = try await call.bob.output.first(from: bobMark) {
            ["excellent", "good"].contains(NetworkCall.quality($0, peer: "alice") ?? "")
        }
        report.append("limit lifted: \(NetworkCall.quality(better, peer: "alice")!) after \(ContinuousClock.now - lifted)")
        // The next trial comes within the longest pause (30 s), passes on the open link, and bob
        // decodes alice's video again.
        try await call.bob.output.first(from: bobMark, timeout: .seconds(50)) {
            (NetworkCall.videoFrames($0, peer: "alice") ?? 0) >= framesBefore + 30
        }
        let decoded = ContinuousClock.now - lifted
        let gate = call.alice.output.values.compactMap(NetworkCall.mediaSummary).filter { $0.contains("video to bob") }
        report.append("30 more video frames decoded \(decoded) after the lift (alice's video to bob, all along: \(gate))")
        print("[network] narrow link: " + report.joined(separator: "; "))
        try await call.hangUp()
    }
}

/// Whether the test network can be made here; outside CI a skip says so loudly on stderr (in CI
/// `RequiredPartsTests` fails instead).
enum NetworkNamespaces {
    static let available = TestNetwork.unavailableReason == nil
    static let skipMessage: Comment = {
        let reason = TestNetwork.unavailableReason ?? ""
        if !available {
            FileHandle.standardError.write(Data("NetworkFailureTests SKIPPED: \(reason)\n".utf8))
        }
        return Comment(rawValue: "network namespaces: \(reason)")
    }()
}

/// A server and two `switchboard call` processes (alice calls bob), each in its own namespace.
final class NetworkCall: Sendable {
    static let app = "1400000034:network-test-secret"
    let network: TestNetwork
    let server: ServerProcess
    let alice: Spawned
    let bob: Spawned
    let setUpTime: Duration
    /// When alice's process saw the call start.
    let connectedAt: ContinuousClock.Instant?
    let adminSecret = "network-admin-secret"
    let directory: URL

    private init(
        network: TestNetwork, server: ServerProcess, alice: Spawned, bob: Spawned, setUpTime: Duration, directory: URL,
        connectedAt: ContinuousClock.Instant?
    ) {
        self.connectedAt = connectedAt
        self.network = network
        self.server = server
        self.alice = alice
        self.bob = bob
        self.setUpTime = setUpTime
        self.directory = directory
    }

    static func start(
        grace: Int = NetworkFailureTests.grace, heartbeat: Int = NetworkFailureTests.heartbeat, video: Bool = false,
        isolated: Bool = false, unreachableTURN: Bool = false
    ) async throws -> NetworkCall {
        let started = ContinuousClock.now
        // For measuring what the path monitor saves: the clients notice drops by heartbeat only.
        let heartbeatOnly = ProcessInfo.processInfo.environment["SWITCHBOARD_NET_HEARTBEAT_ONLY"] == "1"
        let network = try TestNetwork(hosts: ["server", "alice", "bob"] + (unreachableTURN ? ["turn"] : []))
        if isolated { try network.isolate("alice", from: "bob") }
        // A TURN server's address the clients are given but cannot reach (nothing answers there either).
        var turn: [String] = []
        if unreachableTURN {
            for client in ["alice", "bob"] { try network.isolate(client, from: "turn") }
            turn = ["--turn-url", "turn:\(network.address(of: "turn")):3478?transport=udp", "--turn-secret", "unreachable-turn"]
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-net-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let server: ServerProcess
        do {
            server = try ServerProcess.launch(
                binary: CLITests.binary,
                arguments: [
                    "--host", network.address(of: "server"), "--app", app, "--database", "db.sqlite",
                    "--reconnect-grace", "\(grace)", "--heartbeat-interval", "\(heartbeat)",
                    "--admin-secret", "network-admin-secret",
                ] + turn,
                directory: directory, launcher: network.launcher(in: "server"))
        } catch {
            network.remove()
            throw error
        }
        let url = "ws://\(network.address(of: "server")):\(server.port)/v1/ws"
        func arguments(_ user: String) -> [String] {
            [
                "call", "--server", url, "--app-id", "1400000034", "--secret", "network-test-secret", "--user", user,
                "--json", "--status-interval", "0.2",
            ] + (heartbeatOnly ? ["--ignore-path-changes"] : [])
        }
        var processes: [Spawned] = []
        do {
            let bob = try Spawned(arguments("bob") + ["--answer"], launcher: network.launcher(in: "bob"))
            processes.append(bob)
            try await bob.output.first(from: 0) { $0.contains("\"waiting\"") }
            let alice = try Spawned(
                arguments("alice") + ["--to", "bob"] + (video ? ["--video"] : []), launcher: network.launcher(in: "alice"))
            processes.append(alice)
            // The caller's `onCallStarted`: the call is connected on signaling.
            let connected = try await alice.output.position(after: 0) { callEvent($0)?.hasPrefix("onCallStarted") == true }
            if !isolated {
                _ = try await framesRise(alice, peer: "bob", from: 0)
                _ = try await framesRise(bob, peer: "alice", from: 0)
            }
            return NetworkCall(
                network: network, server: server, alice: alice, bob: bob, setUpTime: ContinuousClock.now - started,
                directory: directory, connectedAt: alice.arrival(of: connected - 1))
        } catch {
            processes.forEach { $0.kill() }
            server.kill()
            network.remove()
            throw error
        }
    }

    /// Ends everything the call started, also after a failure: the processes, then the namespaces.
    func stop() {
        alice.kill()
        bob.kill()
        server.kill()
        network.remove()
        try? FileManager.default.removeItem(at: directory)
    }

    /// alice hangs up; both end normally with the same call id.
    func hangUp() async throws {
        alice.send("hangup")
        let (aliceStatus, aliceOutput) = await alice.finish()
        let (bobStatus, bobOutput) = await bob.finish()
        #expect(aliceStatus == 0, "\(aliceOutput)")
        #expect(bobStatus == 0, "\(bobOutput)")
        let aliceSummary = try Self.summary(aliceOutput)
        let bobSummary = try Self.summary(bobOutput)
        #expect(aliceSummary["callId"] as? String == bobSummary["callId"] as? String)
        #expect(bobSummary["endReason"] as? String == "hangup")
    }

    /// Waits until each side's decoded audio frames from the other rise between two status lines
    /// after position `mark` of alice's output (and bob's lines from now); returns the positions of
    /// the lines that showed it.
    @discardableResult
    func mediaFlows(from mark: Int) async throws -> (alice: Int, bob: Int) {
        let bobMark = bob.output.values.count
        return (
            try await Self.framesRise(alice, peer: "bob", from: mark),
            try await Self.framesRise(bob, peer: "alice", from: bobMark)
        )
    }

    private static func framesRise(_ process: Spawned, peer: String, from mark: Int) async throws -> Int {
        var position = mark
        var last: Int?
        while true {
            position = try await process.output.position(after: position) { frames($0, peer: peer) != nil }
            let count = frames(process.output.values[position - 1], peer: peer)!
            if let last, count > last { return position - 1 }
            last = count
        }
    }

    /// The audio frames decoded from `peer` in a status line.
    static func frames(_ line: String, peer: String) -> Int? {
        guard let object = json(line), object["event"] as? String == "status",
            let member = (object["members"] as? [String: Any])?[peer] as? [String: Any]
        else { return nil }
        return Int(member["audioFrames"] as? String ?? "")
    }

    /// The video frames decoded from `peer` in a status line.
    static func videoFrames(_ line: String, peer: String) -> Int? {
        guard let object = json(line), object["event"] as? String == "status",
            let member = (object["members"] as? [String: Any])?[peer] as? [String: Any]
        else { return nil }
        return Int(member["videoFrames"] as? String ?? "")
    }

    /// The network quality of `peer` in a status line.
    static func quality(_ line: String, peer: String) -> String? {
        guard let object = json(line), object["event"] as? String == "status",
            let member = (object["members"] as? [String: Any])?[peer] as? [String: Any]
        else { return nil }
        return member["quality"] as? String
    }

    /// The summary of a `media` line (an engine event).
    static func mediaSummary(_ line: String) -> String? {
        guard let object = json(line), object["event"] as? String == "media" else { return nil }
        return object["summary"] as? String
    }

    /// The state in a `connection` line.
    static func connection(_ line: String) -> String? {
        guard let object = json(line), object["event"] as? String == "connection" else { return nil }
        return object["state"] as? String
    }

    /// The summary of a `call` line (a CallStore event).
    static func callEvent(_ line: String) -> String? {
        guard let object = json(line), object["event"] as? String == "call" else { return nil }
        return object["summary"] as? String
    }

    static func json(_ line: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }

    /// The last line of a finished run: its summary.
    static func summary(_ output: String) throws -> [String: Any] {
        let last = try #require(output.split(separator: "\n").last)
        return try #require(json(String(last)), "\(output)")
    }

    /// The user's record of the call, from the admin API (asked from inside the server's namespace).
    func record(of user: String, callId: String) throws -> [String: Any] {
        let url = "http://\(network.address(of: "server")):\(server.port)/v1/apps/1400000034/users/\(user)/records"
        let curl = try network.start(
            in: "server", executable: URL(fileURLWithPath: "/usr/bin/curl"),
            arguments: ["-sS", "-H", "Authorization: Bearer \(adminSecret)", url], output: .pipe)
        let data = curl.output!.readDataToEndOfFile()
        _ = curl.waitForExit()
        let page = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(String(decoding: data, as: UTF8.self))")
        let records = try #require(page["records"] as? [[String: Any]], "\(page)")
        return try #require(records.first { $0["callId"] as? String == callId }, "\(records)")
    }
}

extension Array where Element: Sendable {
    /// `map` with an async transform, one element after the other.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
#endif
