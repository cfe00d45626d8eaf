import Foundation
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

@testable import Switchboard

/// The SDK's side of a group call through the SFU, against a real server and a real Janus: the
/// server's `sfuSession` opens the engine's two connections, the publish offer goes out and Janus's
/// answer comes back, and a Janus that dies gives every member a new session (the old connections
/// closed first). The engines are fakes with a browser-like publish offer (Janus checks its ICE
/// credentials and fingerprint); media through Janus is tested with the GStreamer engine
/// (GStreamerSFUTests) and in Chromium (Tests/Browser/sfu_tests.py, SFUTests).
@Suite(.serialized, .enabled(if: JanusProcess.isAvailable, "needs janus (scripts/test installs it)"))
struct SFUNegotiationTests {
    @Test func everyMemberPublishesToJanusAndStartsOverWhenJanusComesBack() async throws {
        let janus = try await JanusProcess.start()
        defer { janus.stop() }
        let server = try await TestServer.start { configuration in
            configuration.sfu = SFUConfiguration(urls: [janus.url], secret: JanusProcess.secret)
        }
        let alice = try await SFUTestMember.logIn("alice", to: server)
        let bob = try await SFUTestMember.logIn("bob", to: server)
        let carol = try await SFUTestMember.logIn("carol", to: server)
        _ = try await alice.client.callStore.calls(participantIds: ["bob", "carol"], mediaType: .video)
        for member in [bob, carol] {
            try await member.events.first(from: 0) { if case .onCallReceived = $0 { true } else { false } }
            try await member.client.callStore.accept()
        }
        var marks: [Int] = []
        for member in [alice, bob, carol] {
            try await member.media.calls.first(from: 0) { $0 == .sfuOpened(.publish) }
            try await member.media.calls.first(from: 0) { $0 == .sfuOpened(.subscribe) }
            marks.append(try await member.media.calls.position(after: 0, where: FakeMediaEngine.isPublishAnswer))
            // No connection per member in an SFU call.
            #expect(!member.media.calls.values.contains { if case .opened = $0 { true } else { false } })
        }

        // Janus dies and comes back: each member's old connections close, new ones open, and the
        // new publish offer is answered by the new Janus. The server connects again after its
        // first backoff (500 ms on its clock, which stands still until the test moves it): once
        // that timer is armed and Janus is back, the test moves the clock past it.
        let lost = server.clock.now()
        janus.kill()
        try await janus.restart()
        await server.clock.waitForSleeper(until: lost + 500)
        server.clock.advance(by: .milliseconds(500))
        for (index, member) in [alice, bob, carol].enumerated() {
            let closed = try await member.media.calls.position(after: marks[index]) { $0 == .sfuClosed(.publish) }
            let opened = try await member.media.calls.position(after: closed) { $0 == .sfuOpened(.publish) }
            try await member.media.calls.first(from: opened, where: FakeMediaEngine.isPublishAnswer)
        }
        await server.stop()
    }
}
