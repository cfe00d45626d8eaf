import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTestServers
import SwitchboardTesting
import SwitchboardTools
import Testing

extension Tag {
    /// Long-running tests against a real server process; run by scripts/test (SWITCHBOARD_SOAK=1).
    @Tag static var soak: Self
}

/// Issue 12, finding 2, against the real `switchboard serve` process: a member who stops reading
/// while the other member streams 32,000-byte offers at it. The server's memory stays flat, the
/// slow reader is closed, and a call between two other users works all along.
@Suite(.serialized, .tags(.soak), .enabled(if: ProcessInfo.processInfo.environment["SWITCHBOARD_SOAK"] == "1"))
struct SlowReaderSoakTests {
    /// Offers sent: 3,000 × 32,000 bytes, about 96 MB that a server without an outgoing budget keeps.
    static let offers = 3_000
    /// How far the server's resident memory may rise above where it started, in bytes.
    static let allowedGrowth = 48 << 20

    static func residentBytes(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").compactMap({ Int($0) }).first
        else { return nil }
        return kilobytes * 1024
    }

    @Test func theServerStaysFlatWhileAMemberStopsReading() async throws {
        let directory = try ServerProcessTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ServerProcess.launch(
            binary: CLITests.binary,
            arguments: [
                "--app", ServerProcessTests.app, "--database", "db.sqlite",
                // The offers come as fast as the socket takes them; none may be refused: every one
                // is relayed (the request rate and the relay budget would refuse all but the first).
                "--no-rate-limits",
                // The sloth answers no ping either: the outgoing budget, not the heartbeat, must be
                // what closes it, however long the offers take.
                "--heartbeat-interval", "300",
            ], directory: directory)
        let sig = { (user: String) in
            UserSig.generate(
                sdkAppID: ServerProcessTests.sdkAppID, secretKey: "process-test-secret", userID: user, expire: 3600)
        }
        func login(_ socket: RawWebSocket, _ user: String) async throws {
            let answer = try await socket.request(
                LoginRequest(sdkAppID: ServerProcessTests.sdkAppID, userID: UserID(rawValue: user), userSig: sig(user)),
                id: "login")
            #expect(answer["result"] != nil)
        }

        // A call between two others, kept busy all along.
        let carol = try await ServerProcessTests.client("carol", url: server.url)
        let dave = try await ServerProcessTests.client("dave", url: server.url)
        let carolEvents = Recorder(carol.callStore.events)
        let daveEvents = Recorder(dave.callStore.events)
        let other = try await ServerProcessTests.connect(carol, dave, "dave", carolEvents, daveEvents)

        let alice = try await RawWebSocket.connect(port: server.port)
        let sloth = try await RawWebSocket.connect(port: server.port)
        try await login(alice, "alice")
        try await login(sloth, "sloth")
        let started = try await alice.request(StartCallRequest(participantIds: ["sloth"], mediaType: .video), id: "s")
        let callId = CallID(rawValue: try #require((started["result"] as? [String: Any])?["callId"] as? String))
        #expect(try await sloth.request(AcceptCallRequest(callId: callId), id: "a")["result"] != nil)
        await sloth.stopReading()

        let baseline = try #require(Self.residentBytes(server.processIdentifier))
        var peak = baseline
        let sdp = "v=0\r\n" + String(repeating: "a=x\r\n", count: 6_398)
        let offer = try SwitchboardJSON.encodeString(
            RequestEnvelope(id: "o", data: SendMediaSignalRequest(callId: callId, to: "sloth", kind: .offer, sdp: sdp)))
        for batch in 0..<Self.offers / 100 {
            for _ in 0..<100 { try await alice.send(text: offer) }
            // The sender is answered all along...
            #expect(try await alice.request(PingRequest(), id: "p\(batch)")["result"] != nil)
            // ...and so are the others.
            if batch % 5 == 0 {
                try await carol.callStore.reportStatus(packetLoss: 0, rtt: 10, bitrate: 100, audioLevel: 10)
            }
            peak = max(peak, Self.residentBytes(server.processIdentifier) ?? 0)
        }
        print("soak: baseline \(baseline >> 20) MiB, peak \(peak >> 20) MiB after \(Self.offers) offers of 32,000 bytes")
        #expect(peak - baseline < Self.allowedGrowth, "RSS rose \((peak - baseline) >> 20) MiB")
        // The slow reader was closed: alice sees it down (reconnect grace), as after a drop.
        let down = try await alice.waitForText { text in
            text.contains(#""event":"memberStatus""#) && text.contains(#""userId":"sloth""#)
                && text.contains(#""networkQuality":"down""#)
        }
        #expect(down != nil)

        // The other call still works to its end.
        try await dave.callStore.hangup()
        #expect(
            try await carolEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: other, mediaType: .audio, reason: .hangup, userId: "dave"))
        server.terminate()
        #expect(await server.waitForExit() == 0)
    }
}
