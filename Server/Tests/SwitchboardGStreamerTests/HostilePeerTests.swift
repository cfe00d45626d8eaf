#if GStreamer
import Foundation
import Logging
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

@testable import Switchboard
@testable import SwitchboardGStreamer

/// A peer that offers, restarts and offers again while bob's own offer is unanswered must not freeze
/// bob's engine (issue 28: three sequences from an outside probe, each of which stopped the
/// engine's job queue for good: status lines stopped, the hang-up was never processed). bob is the
/// polite side of aaron's connection; carol, in the same call, is connected to bob through the SDK
/// and shows that bob's media to others goes on while aaron's connection is torn down and rebuilt.
@Suite(.tags(.gstreamer), .serialized)
struct HostilePeerTests {
    typealias Member = GStreamerEngineTests.Member

    /// Runs a wait; when it fails, the failure says which.
    static func step(
        _ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> some Any
    ) async throws {
        do {
            _ = try await body()
        } catch {
            Issue.record("\(what): \(error)", sourceLocation: sourceLocation)
            throw error
        }
    }

    @Test(.timeLimit(.minutes(2)), arguments: HostileNegotiation.allCases)
    func theEngineKeepsWorking(_ attack: HostileNegotiation) async throws {
        let server = try await TestServer.start()
        let bob = try await GStreamerEngineTests.member(server, "bob", tone: 660)
        let carol = try await GStreamerEngineTests.member(server, "carol", tone: 880)
        var logger = Logger(label: "switchboard.gstreamer.aaron")
        logger.logLevel = .critical
        let aaron = try await HandDrivenPeer(
            server, calling: [bob.id, carol.id],
            engine: GStreamerMediaEngine(configuration: .init(audioSource: .tone(frequency: 330), loopbackOnly: true), logger: logger))
        for member in [bob, carol] {
            try await member.calls.first(from: 0, timeout: GStreamerEngineTests.wait) {
                if case .onCallReceived = $0 { true } else { false }
            }
            try await member.client.callStore.accept(callId: aaron.callId)
        }
        // bob and carol connect through their SDKs, and bob shares his screen with them.
        try await GStreamerEngineTests.expect(carol, .trackStarted(bob.id, .audio))
        bob.client.deviceStore.startScreenShare(.testPattern)
        try await GStreamerEngineTests.expect(carol, .trackStarted(bob.id, .screen))
        // aaron's first offer to bob is a real one (audio only), and so is what follows.
        aaron.open(bob.id)
        var position = aaron.position
        try await aaron.offer(to: bob.id)
        try await aaron.apply(try await aaron.next(.answer, from: bob.id, after: position))
        try await GStreamerEngineTests.expect(bob, .trackStarted(HandDrivenPeer.id, .audio))

        switch attack {
        case .restartWhileOwnOfferIsOpen, .offerCrossingOwnOffer:
            // bob, polite, waited for aaron's offer; now he offers what it had no room for (his
            // screen), and aaron never answers.
            try await Self.step("bob offers his screen to aaron") { try await aaron.next(.offer, from: bob.id, after: position) }
            // A second of media through bob's tees while that offer is open.
            try await GStreamerEngineTests.barrier(carol, from: bob.id)
            position = aaron.position
            if attack == .restartWhileOwnOfferIsOpen {
                try await aaron.restart(bob.id)
                // bob restarts on a new connection: its offer comes.
                try await Self.step("bob restarts") { try await aaron.next(.offer, from: bob.id, after: position) }
            } else {
                try await aaron.offer(to: bob.id)
                // bob, polite, drops his offer and answers aaron's.
                try await Self.step("bob answers the crossing offer") { try await aaron.next(.answer, from: bob.id, after: position) }
            }
        case .twoRestarts:
            position = aaron.position
            try await aaron.restart(bob.id)
            try await aaron.next(.offer, from: bob.id, after: position)
            try await GStreamerEngineTests.barrier(carol, from: bob.id)
            position = aaron.position
            try await aaron.restart(bob.id)
            try await aaron.next(.offer, from: bob.id, after: position)
        }

        // bob's media to carol never stopped, and his engine still does what it is asked.
        let before = await GStreamerEngineTests.frames(carol, bob.id, .audio)
        try await GStreamerEngineTests.barrier(carol, from: bob.id)
        #expect(await GStreamerEngineTests.frames(carol, bob.id, .audio) > before)
        #expect(await bob.engine.statistics().peers[carol.id]?.audio.packetsSent ?? 0 > 0)

        // Fixed at the cause: nothing was left behind for the stall limit to catch.
        #expect(!bob.media.values.contains { if case .teardownStalled = $0 { true } else { false } })

        // bob hangs up: the call ends for him and his engine tears it down.
        try await bob.client.callStore.hangup()
        try await bob.calls.first(from: 0, timeout: GStreamerEngineTests.wait) { if case .onCallEnded = $0 { true } else { false } }
        try await GStreamerEngineTests.expect(carol, .trackEnded(bob.id, .audio))
        #expect(await bob.engine.statistics().peers.isEmpty)
        await aaron.close()
        await server.stop()
    }
}
#endif
