import Logging
import NIOConcurrencyHelpers
import SwitchboardProtocol
import SwitchboardTesting
import Testing

@testable import Switchboard

/// The negotiation rules of ``PeerLink`` step by step, with the order of messages fixed by the
/// test: who offers, both kinds of glare, restarts.
struct PeerLinkTests {
    final class Outbox: Sendable {
        let sent = NIOLockedValueBox<[SendMediaSignalRequest]>([])
        var kinds: [MediaSignalKind] { sent.withLockedValue { $0.map(\.kind) } }
        var last: SendMediaSignalRequest? { sent.withLockedValue { $0.last } }
        /// What the link reported of the peer's reachability, in order.
        let reachability = NIOLockedValueBox<[Bool]>([])
    }

    /// A link from `me` to `peer` over a fake engine, with the peer connection open.
    static func link(_ me: UserID, _ peer: UserID) -> (PeerLink, FakeMediaEngine, Outbox) {
        let engine = FakeMediaEngine(name: me.rawValue)
        engine.openPeer(peer, iceServers: [], events: PeerConnectionEvents(localCandidate: { _ in }, negotiationNeeded: {}, iceFailed: {}, iceConnected: {}))
        let outbox = Outbox()
        let link = PeerLink(
            callId: "c1", me: me, peer: peer, engine: engine, logger: Logger(label: "test"),
            send: { request in outbox.sent.withLockedValue { $0.append(request) } },
            reachability: { reachable in outbox.reachability.withLockedValue { $0.append(reachable) } })
        return (link, engine, outbox)
    }

    /// alice's link to bob and his to her, after her first offer and his answer.
    static func negotiatedPair() async -> (alice: PeerLink, aliceOut: Outbox, bob: PeerLink, bobOut: Outbox) {
        let (alice, _, aliceOut) = link("alice", "bob")
        let (bob, _, bobOut) = link("bob", "alice")
        await alice.start()
        await bob.receive(signal("alice", aliceOut.last!))
        await alice.receive(signal("bob", bobOut.last!))
        return (alice, aliceOut, bob, bobOut)
    }

    static func signal(_ from: UserID, _ request: SendMediaSignalRequest) -> MediaSignalEvent {
        MediaSignalEvent(callId: "c1", from: from, kind: request.kind, sdp: request.sdp, candidate: request.candidate)
    }

    @Test(arguments: [("alice", "bob", true), ("bob", "alice", false), ("Zed", "amy", true), ("user-10", "user-9", true)])
    func theFirstIdInByteOrderOffers(_ me: String, _ peer: String, _ offers: Bool) {
        #expect(PeerLink.isOfferer(UserID(rawValue: me), to: UserID(rawValue: peer)) == offers)
        #expect(PeerLink.isOfferer(UserID(rawValue: peer), to: UserID(rawValue: me)) == !offers)
    }

    @Test func onlyTheOffererStarts() async {
        let (alice, aliceEngine, aliceOut) = Self.link("alice", "bob")
        let (bob, _, bobOut) = Self.link("bob", "alice")
        await alice.start()
        await bob.start()
        #expect(aliceOut.kinds == [.offer])
        #expect(bobOut.kinds == [])
        await bob.receive(Self.signal("alice", aliceOut.last!))
        #expect(bobOut.kinds == [.answer])
        await alice.receive(Self.signal("bob", bobOut.last!))
        #expect(await aliceEngine.signalingState(peer: "bob") == .stable)
    }

    /// Offers cross (both renegotiate after the first exchange): the impolite side ignores the
    /// other's offer, the polite side rolls back and answers; nothing else is sent.
    @Test func crossingOffers() async throws {
        let (alice, aliceEngine, aliceOut) = Self.link("alice", "bob")
        let (bob, bobEngine, bobOut) = Self.link("bob", "alice")
        await alice.start()
        await bob.receive(Self.signal("alice", aliceOut.last!))
        await alice.receive(Self.signal("bob", bobOut.last!))

        await alice.negotiate(iceRestart: false)
        await bob.negotiate(iceRestart: false)
        let aliceOffer = try #require(aliceOut.last)
        let bobOffer = try #require(bobOut.last)
        #expect(aliceOut.kinds == [.offer, .offer])
        #expect(bobOut.kinds == [.answer, .offer])

        await alice.receive(Self.signal("bob", bobOffer))
        #expect(aliceOut.kinds == [.offer, .offer])
        #expect(await aliceEngine.signalingState(peer: "bob") == .haveLocalOffer)

        await bob.receive(Self.signal("alice", aliceOffer))
        try await bobEngine.calls.first(from: 0) { $0 == .rolledBack("alice") }
        #expect(bobOut.kinds == [.answer, .offer, .answer])
        await alice.receive(Self.signal("bob", bobOut.last!))
        #expect(await aliceEngine.signalingState(peer: "bob") == .stable)
        #expect(await bobEngine.signalingState(peer: "alice") == .stable)
    }

    /// The polite side's own need for negotiation (an engine that asks as soon as its tracks are
    /// added) waits for the offerer's first offer, then follows the answer; a need while an offer
    /// is open waits for the engine to ask again.
    @Test func thePoliteSideNegotiatesOnlyAfterTheFirstOffer() async throws {
        let (alice, aliceEngine, aliceOut) = Self.link("alice", "bob")
        let (bob, _, bobOut) = Self.link("bob", "alice")
        await bob.negotiate(iceRestart: false)
        #expect(bobOut.kinds == [])

        await alice.start()
        await alice.negotiate(iceRestart: false)
        #expect(aliceOut.kinds == [.offer])
        #expect(await aliceEngine.signalingState(peer: "bob") == .haveLocalOffer)

        await bob.receive(Self.signal("alice", aliceOut.last!))
        #expect(bobOut.kinds == [.answer, .offer])
        await alice.receive(Self.signal("bob", bobOut.sent.withLockedValue { $0[0] }))
        await alice.receive(Self.signal("bob", bobOut.last!))
        #expect(aliceOut.kinds == [.offer, .answer])
    }

    @Test func aRestartRequestMakesTheOffererRestart() async throws {
        let (alice, aliceOut, bob, bobOut) = await Self.negotiatedPair()

        await bob.iceFailed()
        #expect(bobOut.kinds == [.answer, .restart])
        await alice.receive(Self.signal("bob", bobOut.last!))
        #expect(aliceOut.last?.sdp == "offer alice→bob #2 ice=alice-2")
        await bob.receive(Self.signal("alice", aliceOut.last!))
        #expect(bobOut.last?.sdp == "answer bob→alice #2 ice=bob-2")
        await alice.receive(Self.signal("bob", bobOut.last!))
        await alice.iceFailed()
        #expect(aliceOut.kinds == [.offer, .offer, .offer])
        #expect(aliceOut.last?.sdp == "offer alice→bob #3 ice=alice-3")
    }

    /// No path between the two: each side reports the peer unreachable at its first failure, or
    /// (the offerer, whose checks the requests start over) at the first request while it has no
    /// path of its own, once; after three restarts in a row that did not connect, neither side
    /// restarts on its own failures; the offerer still honours a request (the asking side bounds
    /// those). ICE connecting after all makes the peer reachable; a network change restarts afresh.
    @Test func restartsStopAtTheBoundUntilICEConnectsOrTheNetworkChanges() async throws {
        let (alice, aliceOut, bob, bobOut) = await Self.negotiatedPair()

        for round in 1...PeerLinkRules.iceRestartLimit {
            await bob.iceFailed()
            #expect(bobOut.kinds.filter { $0 == .restart }.count == round)
            // Unreachable from the first failure on, reported once.
            #expect(bobOut.reachability.withLockedValue { $0 } == [false])
            await alice.receive(Self.signal("bob", bobOut.last!))
            // alice never connected either: bob's first request says there is no path.
            #expect(aliceOut.reachability.withLockedValue { $0 } == [false])
            #expect(aliceOut.kinds.filter { $0 == .offer }.count == 1 + round)
            await bob.receive(Self.signal("alice", aliceOut.last!))
            await alice.receive(Self.signal("bob", bobOut.last!))
        }
        // bob's bound: no fourth request, and alice is still unreachable for him (said once).
        await bob.iceFailed()
        await bob.iceFailed()
        #expect(bobOut.kinds.filter { $0 == .restart }.count == PeerLinkRules.iceRestartLimit)
        #expect(bobOut.reachability.withLockedValue { $0 } == [false])
        // alice's bound: her three restarts were bob's requests; her own failure now restarts
        // nothing, and bob stays unreachable for her (said once).
        await alice.iceFailed()
        #expect(aliceOut.kinds.filter { $0 == .offer }.count == 1 + PeerLinkRules.iceRestartLimit)
        #expect(aliceOut.reachability.withLockedValue { $0 } == [false])

        // ICE connects after all on bob's side: alice is reachable, and his count starts again.
        await bob.iceConnected()
        #expect(bobOut.reachability.withLockedValue { $0 } == [false, true])
        await bob.iceFailed()
        #expect(bobOut.kinds.filter { $0 == .restart }.count == PeerLinkRules.iceRestartLimit + 1)
        #expect(bobOut.reachability.withLockedValue { $0 } == [false, true, false])

        // bob's request still makes alice restart (his network may have changed).
        await alice.receive(Self.signal("bob", bobOut.last!))
        #expect(aliceOut.kinds.filter { $0 == .offer }.count == 2 + PeerLinkRules.iceRestartLimit)
        await bob.receive(Self.signal("alice", aliceOut.last!))
        await alice.receive(Self.signal("bob", bobOut.last!))

        // alice's network changes: she restarts at once, with a fresh count; a change is no
        // failure, so it reports nothing.
        await alice.networkChanged()
        #expect(aliceOut.kinds.filter { $0 == .offer }.count == 3 + PeerLinkRules.iceRestartLimit)
        #expect(aliceOut.reachability.withLockedValue { $0 } == [false])
    }

    /// A request for a restart while this side's ICE is connected (the peer's network changed,
    /// or its signaling came back) restarts ICE and reports nothing: the path may well hold.
    @Test func aRequestOverAConnectedPathReportsNothing() async throws {
        let (alice, aliceOut, bob, bobOut) = await Self.negotiatedPair()
        await alice.iceConnected()
        await bob.iceConnected()

        await bob.networkChanged()
        #expect(bobOut.last?.kind == .restart)
        await alice.receive(Self.signal("bob", bobOut.last!))
        #expect(aliceOut.kinds.filter { $0 == .offer }.count == 2)
        #expect(aliceOut.reachability.withLockedValue { $0 }.isEmpty)
        #expect(bobOut.reachability.withLockedValue { $0 }.isEmpty)
        // Her own failure later does report it.
        await alice.iceFailed()
        #expect(aliceOut.reachability.withLockedValue { $0 } == [false])
    }

    /// A link that shows its peer down and then closes (the member left, the call ended) no
    /// longer holds the member down.
    @Test func closingALinkWithThePeerDownReportsThePeerReachable() async {
        let (bob, _, bobOut) = Self.link("bob", "alice")
        for _ in 0...PeerLinkRules.iceRestartLimit { await bob.iceFailed() }
        #expect(bobOut.reachability.withLockedValue { $0 } == [false])
        await bob.close()
        #expect(bobOut.reachability.withLockedValue { $0 } == [false, true])
    }

    @Test func aClosedLinkSendsNothing() async {
        let (alice, _, aliceOut) = Self.link("alice", "bob")
        await alice.close()
        await alice.start()
        await alice.trickle(IceCandidate(candidate: ""))
        #expect(aliceOut.kinds == [])
    }
}
