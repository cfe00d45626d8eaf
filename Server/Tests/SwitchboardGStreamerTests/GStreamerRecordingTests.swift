#if GStreamer
import Foundation
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

@testable import Switchboard
@testable import SwitchboardGStreamer

/// Janus's converter and FFmpeg, which the server's recording runs (scripts/janus install).
let recordingToolsAvailable = ["/usr/bin/janus-pp-rec", "/usr/bin/ffmpeg", "/usr/bin/ffprobe"].allSatisfy {
    FileManager.default.isExecutableFile(atPath: $0)
}

/// Server-side recording end to end (docs/RECORDING.md): two GStreamer engines sending known tones
/// and test patterns in a call recorded through a real Janus, the server converting with
/// `janus-pp-rec` and `ffmpeg`, the files fetched from the admin API and measured: each member's
/// file carries that member's tone (and not the other's) through the call, the mixed file both
/// and a video track, every duration within a second of the call's.
@Suite(
    .tags(.gstreamer), .serialized,
    .enabled(if: JanusProcess.isAvailable && recordingToolsAvailable, "needs janus, janus-pp-rec and ffmpeg (scripts/janus install)"))
struct GStreamerRecordingTests {
    typealias Member = GStreamerEngineTests.Member

    /// Janus, a server recording into a folder in its own directory (removed with it), the app's
    /// policy `onRequest`, and a webhook receiver for the recordings' events.
    static func start() async throws -> (JanusProcess, TestServer, TestWebhookReceiver) {
        let janus = try await JanusProcess.start()
        let receiver = try await TestWebhookReceiver.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-test-\(UUID().uuidString)")
        let server = try await TestServer.start(directory: directory) { configuration in
            configuration.webhooks.allowedNetworks = [IPNetwork("127.0.0.0/8")!]
            configuration.sfu = SFUConfiguration(
                urls: [janus.url], secret: JanusProcess.secret, recordings: Self.recordings(directory))
        }
        let app = server.app.sdkAppID.rawValue
        let settings = try await server.http("PUT", "/v1/apps/\(app)/settings", json: ["recording": ["policy": "onRequest"]])
        #expect(settings.status == 200)
        let endpoint = try await server.http(
            "POST", "/v1/apps/\(app)/webhooks", json: ["url": receiver.url, "events": ["recording.ready", "recording.failed"]])
        #expect(endpoint.status == 201)
        return (janus, server, receiver)
    }

    static func recordings(_ directory: URL) -> String { directory.appendingPathComponent("recordings").path }

    @Test func aRecordedCallIsDeliveredAsFilesThatCarryEachMembersTone() async throws {
        let (janus, server, receiver) = try await Self.start()
        defer { janus.stop() }
        let app = server.app.sdkAppID.rawValue
        let alice = try await GStreamerEngineTests.member(server, "alice", tone: 440)
        let bob = try await GStreamerEngineTests.member(server, "bob", tone: 880)
        let call = try await alice.client.callStore.calls(
            participantIds: ["bob"], mediaType: .video, params: CallParams(record: true))
        let placed = try #require(alice.client.callStore.state.activeCall)
        #expect(placed.media == .sfu)
        #expect(placed.recording?.startedBy == "alice")
        try await bob.calls.first(from: 0, timeout: GStreamerEngineTests.wait) { if case .onCallReceived = $0 { true } else { false } }
        // bob knew before answering: the invitation's snapshot says the call is recorded.
        #expect(bob.client.callStore.state.activeCall?.recording?.startedBy == "alice")
        bob.client.deviceStore.openLocalCamera()
        try await bob.client.callStore.accept(callId: call.callId)
        // The server's clock is the test's: it follows the media's real time below.
        let connected = ContinuousClock.now
        alice.client.deviceStore.openLocalCamera()
        for (member, other) in [(alice, bob.id), (bob, alice.id)] {
            try await GStreamerEngineTests.expect(member, "\(other)'s tone through Janus") {
                if case .audioLevel(other, let level, _) = $0 { level > 10 } else { false }
            }
        }
        // About six seconds of the call, counted in the media's own reports.
        try await GStreamerEngineTests.barrier(bob, from: alice.id, count: 60)
        server.clock.advance(by: ContinuousClock.now - connected)
        try await alice.client.callStore.hangup()

        let delivered = try await receiver.requests.first(from: 0, timeout: .seconds(180)) {
            $0.event?.type == .recordingReady || $0.event?.type == .recordingFailed
        }
        guard case .recordingReady(let recording) = try #require(delivered.event).data else {
            Issue.record("the recording failed: \(String(decoding: delivered.body, as: UTF8.self))")
            return
        }
        #expect(recording.callId == call.callId)
        #expect(recording.members == ["alice", "bob"])
        let files = try #require(recording.files)
        let aliceFile = try #require(files.first { $0.userId == "alice" })
        let bobFile = try #require(files.first { $0.userId == "bob" })
        let mixed = try #require(files.first { $0.kind == .mixed })
        #expect(!aliceFile.video && !bobFile.video && mixed.video)
        // The recording spans the call as connected: its duration and every file's within a second.
        let records = try await server.http("GET", "/v1/apps/\(app)/users/alice/records")
        let record = try #require(
            try SwitchboardJSON.decode(QueryRecordsResponse.self, from: records.body).records.first { $0.callId == call.callId })
        let callMs = record.endTime - (try #require(record.startTime))
        print("[recording] call \(callMs) ms, recording \(recording.duration) ms, files \(files.map { "\($0.name) \($0.duration) ms \($0.size) B" })")
        #expect(abs(recording.duration - callMs) <= 1000)
        for file in files { #expect(abs(file.duration - callMs) <= 1000, "\(file.name) lasts \(file.duration) ms") }

        // Each file as the admin API serves it, measured second by second.
        let base = "/v1/apps/\(app)/recordings/\(recording.recordingId)/files/"
        func tones(_ file: RecordedFile) async throws -> [(low: Double, high: Double)] {
            let fetched = try await server.http("GET", base + file.name)
            #expect(fetched.status == 200)
            #expect(Int64(fetched.body.count) == file.size)
            return try Self.tonesPerSecond(fetched.body)
        }
        let seconds = Int(callMs / 1000)
        let aliceTones = try await tones(aliceFile)
        let bobTones = try await tones(bobFile)
        let mixedTones = try await tones(mixed)
        func share(_ windows: [(low: Double, high: Double)], _ holds: ((low: Double, high: Double)) -> Bool) -> Double {
            Double(windows.filter(holds).count) / Double(max(1, windows.count))
        }
        print("[recording] seconds with alice's 440 Hz in her file \(share(aliceTones) { $0.low > 10 * $0.high }), bob's 880 Hz in his \(share(bobTones) { $0.high > 10 * $0.low }), both in the mix \(share(mixedTones) { $0.low > 0.05 * $0.high && $0.high > 0.05 * $0.low })")
        // The tone is there in all but the edges (the connection's set-up, the last packets).
        let expected = Double(seconds - 2) / Double(max(1, aliceTones.count))
        #expect(share(aliceTones) { $0.low > 10 * $0.high } >= expected)
        #expect(share(bobTones) { $0.high > 10 * $0.low } >= expected)
        #expect(share(mixedTones) { $0.low > 0.05 * $0.high && $0.high > 0.05 * $0.low } >= expected)

        // A range (a browser seeking), a signed link without the admin secret, and what is refused.
        let whole = try await server.http("GET", base + mixed.name)
        let part = try await server.http("GET", base + mixed.name, headers: ["Range": "bytes=100-1099"])
        #expect(part.status == 206)
        #expect(part.body == whole.body.subdata(in: 100..<1100))
        #expect(part.headers["content-range"] == "bytes 100-1099/\(whole.body.count)")
        #expect(try await server.http("GET", base + mixed.name, headers: ["Range": "bytes=\(whole.body.count)-"]).status == 416)
        let link = try await server.http("POST", base + mixed.name + "/link", json: ["expiresIn": 60])
        let url = try #require((try JSONSerialization.jsonObject(with: link.body) as? [String: Any])?["url"] as? String)
        let linked = try await server.http("GET", url, authorized: false)
        #expect(linked.status == 200 && linked.body == whole.body)
        let forged = url.replacingOccurrences(of: "signature=", with: "signature=0")
        #expect(try await server.http("GET", forged, authorized: false).status == 401)
        #expect(try await server.http("GET", base + mixed.name, authorized: false).status == 401)
        #expect(try await server.http("GET", base + "..%2F..%2Fswitchboard.sqlite").status == 404)
        #expect(try await server.http("GET", base + "t1-616c696365-s1-audio-0.mjr").status == 404)

        // Deleted: the files go, with recording.deleted.
        let deleted = try await server.http("DELETE", "/v1/apps/\(app)/recordings/\(recording.recordingId)")
        #expect(deleted.status == 200)
        #expect(try await server.http("GET", base + mixed.name).status == 404)
        await server.stop()
    }

    /// Janus dies in the middle of a recorded call and comes back: the call goes on through the new
    /// Janus with new SFU sessions, whose tracks are recorded into new files of the same take; the
    /// delivered files hold both segments: each member's tone is in their file at its start (before
    /// the kill) and at its end (after the restart).
    @Test func aRecordingKeepsWhatWasRecordedBeforeAndAfterJanusDies() async throws {
        let (janus, server, receiver) = try await Self.start()
        defer { janus.stop() }
        let alice = try await GStreamerEngineTests.member(server, "alice", tone: 440)
        let bob = try await GStreamerEngineTests.member(server, "bob", tone: 880)
        let call = try await alice.client.callStore.calls(
            participantIds: ["bob"], mediaType: .audio, params: CallParams(record: true))
        try await bob.calls.first(from: 0, timeout: GStreamerEngineTests.wait) { if case .onCallReceived = $0 { true } else { false } }
        try await bob.client.callStore.accept(callId: call.callId)
        let connected = ContinuousClock.now
        try await GStreamerEngineTests.barrier(bob, from: alice.id, count: 30)
        try await GStreamerEngineTests.barrier(alice, from: bob.id, count: 5)

        // Janus dies; the server connects to the new one after its first backoff (500 ms on its
        // clock, which the test moves once the timer is armed), places the room again and starts
        // new sessions.
        let lost = server.clock.now()
        janus.kill()
        try await janus.restart()
        await server.clock.waitForSleeper(until: lost + 500)
        server.clock.advance(by: .milliseconds(500))
        let back = alice.media.values.count
        try await alice.media.first(from: back, timeout: GStreamerEngineTests.wait) {
            if case .audioLevel(bob.id, let level, _) = $0 { level > 10 } else { false }
        }
        try await GStreamerEngineTests.barrier(bob, from: alice.id, count: 30)
        server.clock.advance(by: (ContinuousClock.now - connected) - .milliseconds(500))
        try await alice.client.callStore.hangup()

        let delivered = try await receiver.requests.first(from: 0, timeout: .seconds(180)) {
            $0.event?.type == .recordingReady || $0.event?.type == .recordingFailed
        }
        guard case .recordingReady(let recording) = try #require(delivered.event).data else {
            Issue.record("the recording failed: \(String(decoding: delivered.body, as: UTF8.self))")
            return
        }
        // Two segments per member on disk (one per SFU session), both in the delivered file.
        let folder = Self.recordings(server.directory) + "/" + call.callId.rawValue
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix("-audio-0.mjr") }
        for user in ["alice", "bob"] {
            let hex = user.utf8.map { String(format: "%02x", $0) }.joined()
            #expect(names.filter { $0.hasPrefix("t1-\(hex)-s") }.count == 2, "\(user)'s segments: \(names.sorted())")
        }
        let files = try #require(recording.files)
        let base = "/v1/apps/\(server.app.sdkAppID.rawValue)/recordings/\(recording.recordingId)/files/"
        for (user, own) in [("alice", true), ("bob", false)] {
            let file = try #require(files.first { $0.userId == UserID(rawValue: user) })
            let fetched = try await server.http("GET", base + file.name)
            let tones = try Self.tonesPerSecond(fetched.body)
            let present = tones.map { own ? $0.low > 10 * $0.high : $0.high > 10 * $0.low }
            print("[recording] \(user)'s tone second by second across Janus's restart: \(present.map { $0 ? "1" : "0" }.joined())")
            #expect(present.prefix(2).contains(true), "\(user)'s tone before the kill")
            #expect(present.suffix(3).contains(true), "\(user)'s tone after the restart")
        }
        await server.stop()
    }

    /// The power of 440 Hz and 880 Hz in each second of a file (Goertzel, on 8 kHz mono PCM that
    /// ffmpeg decodes the file to).
    static func tonesPerSecond(_ file: Data) throws -> [(low: Double, high: Double)] {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("recording-\(UUID().uuidString).webm")
        try file.write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let decoder = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/ffmpeg"),
            arguments: ["-v", "error", "-i", input.path, "-vn", "-f", "s16le", "-ac", "1", "-ar", "8000", "-"], output: .pipe)
        let pcm = decoder.output?.readDataToEndOfFile() ?? Data()
        #expect(decoder.waitForExit() == .exit(0))
        let samples = pcm.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        return stride(from: 0, to: samples.count - 7999, by: 8000).map { start in
            let window = samples[start..<(start + 8000)].map { Double($0) }
            return (goertzel(window, 440), goertzel(window, 880))
        }
    }

    static func goertzel(_ samples: [Double], _ frequency: Double, rate: Double = 8000) -> Double {
        let coefficient = 2 * cos(2 * Double.pi * frequency / rate)
        var (previous, beforePrevious) = (0.0, 0.0)
        for sample in samples {
            let current = sample + coefficient * previous - beforePrevious
            beforePrevious = previous
            previous = current
        }
        return previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
    }
}
#endif
