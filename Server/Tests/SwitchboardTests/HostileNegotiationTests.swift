import Foundation
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

@testable import Switchboard

/// What the SDK and any engine must do against a peer that negotiates badly (issue 28): the polite
/// side answers what it should, restarts when asked, and its hang-up and the call's end are
/// processed whatever the peer did, even while its engine is stuck. Here with ``FakeMediaEngine``
/// on both ends; `HostilePeerTests` (SwitchboardGStreamerTests) holds the GStreamer engine to the
/// same sequences with real media.
struct HostileNegotiationTests {
    typealias Member = MediaNegotiationTests.Member

    /// bob accepts aaron's call and answers his first offer; both ends are connected.
    static func connected(_ server: TestServer) async throws -> (Member, HandDrivenPeer) {
        let bob = try await MediaNegotiationTests.member(server, "bob")
        let aaron = try await HandDrivenPeer(server, calling: ["bob"], engine: FakeMediaEngine(name: "aaron"))
        try await bob.events.first(from: 0, where: isReceived)
        try await bob.client.callStore.accept(callId: aaron.callId)
        aaron.open("bob")
        let position = aaron.position
        try await aaron.offer(to: "bob")
        try await aaron.apply(try await aaron.next(.answer, from: "bob", after: position))
        try await bob.media.calls.first(from: 0) { $0 == .connected("aaron", local: "bob-1", remote: "aaron-1") }
        return (bob, aaron)
    }

    @Test(arguments: HostileNegotiation.allCases)
    func thePoliteSideKeepsNegotiatingAndHangsUp(_ attack: HostileNegotiation) async throws {
        let server = try await TestServer.start()
        let (bob, aaron) = try await Self.connected(server)
        var position = aaron.position
        switch attack {
        case .restartWhileOwnOfferIsOpen, .offerCrossingOwnOffer:
            // bob's tracks change: he offers, and aaron never answers.
            bob.media.needsNegotiation(with: "aaron")
            try await aaron.next(.offer, from: "bob", after: position)
            position = aaron.position
            if attack == .restartWhileOwnOfferIsOpen {
                try await aaron.restart("bob")
                try await aaron.next(.offer, from: "bob", after: position)
            } else {
                try await aaron.offer(to: "bob")
                // bob, polite, rolls his offer back and answers aaron's.
                try await bob.media.calls.first(from: 0) { $0 == .rolledBack("aaron") }
                try await aaron.next(.answer, from: "bob", after: position)
            }
        case .twoRestarts:
            try await aaron.restart("bob")
            try await aaron.next(.offer, from: "bob", after: position)
            position = aaron.position
            try await aaron.restart("bob")
            try await aaron.next(.offer, from: "bob", after: position)
        }

        try await bob.client.callStore.hangup()
        try await bob.events.first(from: 0) { if case .onCallEnded(aaron.callId, _, .hangup, _) = $0 { true } else { false } }
        try await bob.media.calls.first(from: 0) { $0 == .callEnded(aaron.callId) }
        try await bob.media.calls.first(from: 0) { $0 == .closed("aaron") }
        await aaron.close()
        await server.stop()
    }

    /// An engine that never finishes a step (held here; a GStreamer teardown once hung so) stops
    /// negotiation with that peer, not the call: bob's hang-up is processed and his engine is told
    /// the call ended.
    @Test func aStuckEngineDoesNotStopTheHangUp() async throws {
        let server = try await TestServer.start()
        let (bob, aaron) = try await Self.connected(server)
        bob.media.holdOperations()
        try await aaron.restart("bob")
        try await aaron.restart("bob")
        try await bob.client.callStore.hangup()
        try await bob.events.first(from: 0) { if case .onCallEnded(aaron.callId, _, .hangup, _) = $0 { true } else { false } }
        try await bob.media.calls.first(from: 0) { $0 == .callEnded(aaron.callId) }
        bob.media.releaseOperations()
        try await bob.media.calls.first(from: 0) { $0 == .closed("aaron") }
        await aaron.close()
        await server.stop()
    }
}
