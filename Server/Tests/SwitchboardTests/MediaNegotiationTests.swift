import Foundation
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

@testable import Switchboard

/// The SDK negotiates peer connections for a ``PeerMediaEngine`` through a real server: who
/// offers, glare, ICE restarts, the mesh of a group call, ICE servers. The engines are fakes that
/// follow WebRTC's signaling-state rules with readable SDP.
struct MediaNegotiationTests {
    struct Member {
        var client: SwitchboardClient
        var media: FakeMediaEngine
        var events: Recorder<CallStoreEvent>
    }

    static func member(_ server: TestServer, _ user: String, url: URL? = nil) async throws -> Member {
        let media = FakeMediaEngine(name: user)
        let client = try await server.client(user, url: url, mediaEngine: media)
        return Member(client: client, media: media, events: Recorder(client.callStore.events))
    }

    /// `caller` calls `callee`, who answers; returns once both media connections are up.
    static func connect(_ caller: Member, _ callee: Member, _ callerId: UserID, _ calleeId: UserID) async throws -> CallID {
        let call = try await caller.client.callStore.calls(participantIds: [calleeId.rawValue], mediaType: .video)
        try await callee.events.first(from: 0, where: isReceived)
        try await callee.client.callStore.accept()
        try await caller.media.calls.first(from: 0) { if case .connected(calleeId, _, _) = $0 { true } else { false } }
        try await callee.media.calls.first(from: 0) { if case .connected(callerId, _, _) = $0 { true } else { false } }
        return call.callId
    }

    static func offers(_ media: FakeMediaEngine, to peer: UserID) -> [String] {
        media.calls.values.compactMap { call in
            if case .local(peer, let description) = call, description.kind == .offer { description.sdp } else { nil }
        }
    }

    @Test func theMemberWhoseIdSortsFirstOffers() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        let call = try await Self.connect(alice, bob, "alice", "bob")

        // alice (caller, first id) offered; bob only answered, and both saw the other's candidates.
        #expect(Self.offers(alice.media, to: "bob") == ["offer alice→bob #1 ice=alice-1"])
        #expect(Self.offers(bob.media, to: "alice").isEmpty)
        #expect(
            bob.media.calls.values.contains(
                .remote("alice", SessionDescription(kind: .offer, sdp: "offer alice→bob #1 ice=alice-1"))))
        #expect(
            alice.media.calls.values.contains(
                .remote("bob", SessionDescription(kind: .answer, sdp: "answer bob→alice #1 ice=bob-1"))))
        #expect(alice.media.calls.values.contains(.connected("bob", local: "alice-1", remote: "bob-1")))
        #expect(alice.media.calls.values.contains(.opened("bob", iceServers: [])))
        #expect(alice.media.calls.values.contains(.callConnected(call, .video)))

        // The call ends: each side closes its connection and the call's media.
        try await alice.client.callStore.hangup()
        try await alice.media.calls.first(from: 0) { $0 == .closed("bob") }
        try await bob.media.calls.first(from: 0) { $0 == .closed("alice") }
        try await bob.media.calls.first(from: 0) { $0 == .callEnded(call) }
        await server.stop()
    }

    @Test func aCalleeWhoseIdSortsFirstOffers() async throws {
        let server = try await TestServer.start()
        let zed = try await Self.member(server, "zed")
        let amy = try await Self.member(server, "amy")
        _ = try await Self.connect(zed, amy, "zed", "amy")
        #expect(Self.offers(amy.media, to: "zed") == ["offer amy→zed #1 ice=amy-1"])
        #expect(Self.offers(zed.media, to: "amy").isEmpty)
        await server.stop()
    }

    /// Both sides renegotiate at once: bob (polite) rolls his offer back and answers alice's,
    /// alice (impolite) ignores bob's; bob then offers again and both end up stable.
    ///
    /// The offers are made to cross: everything the server sends bob is held in a proxy until bob
    /// has made his own offer, so alice's offer reaches him while he waits for an answer, and his
    /// reaches her while she waits for hers.
    @Test func crossingOffersResolveWithoutRetries() async throws {
        let server = try await TestServer.start()
        let proxy = try await TCPProxy.start(targetPort: server.port)
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob", url: server.url(via: proxy))
        _ = try await Self.connect(alice, bob, "alice", "bob")
        @Sendable func isOffer(_ call: FakeMediaEngine.Call, to peer: UserID) -> Bool {
            if case .local(peer, let description) = call, description.kind == .offer { true } else { false }
        }
        @Sendable func isAnswer(_ call: FakeMediaEngine.Call, from peer: UserID) -> Bool {
            if case .remote(peer, let description) = call, description.kind == .answer { true } else { false }
        }

        proxy.holdDownstream = true
        alice.media.needsNegotiation(with: "bob")
        try await alice.media.calls.matches(2, from: 0) { isOffer($0, to: "bob") }
        bob.media.needsNegotiation(with: "alice")
        try await bob.media.calls.first(from: 0) { isOffer($0, to: "alice") }
        proxy.holdDownstream = false

        // bob rolled his offer back for alice's and answered it; alice never took bob's first offer.
        try await bob.media.calls.first(from: 0) { $0 == .rolledBack("alice") }
        try await alice.media.calls.matches(2, from: 0) { isAnswer($0, from: "bob") }
        // Once stable, bob offers again, and alice answers that one.
        try await bob.media.calls.matches(1, from: 0) { isAnswer($0, from: "alice") }
        let bobOffers = Self.offers(bob.media, to: "alice")
        #expect(bobOffers.count == 2)
        try await alice.media.calls.first(from: 0) { $0 == .remote("bob", SessionDescription(kind: .offer, sdp: bobOffers[1])) }
        #expect(!alice.media.calls.values.contains(.remote("bob", SessionDescription(kind: .offer, sdp: bobOffers[0]))))
        #expect(!alice.media.calls.values.contains(.rolledBack("bob")))
        #expect(await alice.media.signalingState(peer: "bob") == .stable)
        #expect(await bob.media.signalingState(peer: "alice") == .stable)
        proxy.stop()
        await server.stop()
    }

    /// An agreed switch to video: the polite side waits for the offerer's offer, which carries
    /// both cameras' changes, then offers its own camera. The server sends the result, then the
    /// call's new state, and the offer comes right behind; but this device applies call state
    /// through its state updates, which may come after the offer was taken (seen under load in the
    /// GStreamer tests: the polite side then waited for a second offer that never came, and its
    /// camera never went out). The offer must be taken as the one that carries the switch
    /// whenever the state shows up.
    ///
    /// Made to happen in that order: what bob's connection delivers is handed to him in that order
    /// here (the result and alice's offer, then the call's new state), as the client does.
    @Test func theOfferThatCarriesAnAgreedSwitchIsTakenAsSuchWhenTheStateComesLate() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        let call = try await alice.client.callStore.calls(participantIds: ["bob"], mediaType: .audio).callId
        try await bob.events.first(from: 0, where: isReceived)
        try await bob.client.callStore.accept()
        try await bob.media.calls.first(from: 0) { if case .connected("alice", _, _) = $0 { true } else { false } }
        let deliver = bob.client.signaling.handlers.withLockedValue { $0.event }
        var snapshot = try #require(bob.client.callStore.state.calls[call]?.info)
        snapshot.mediaType = .video

        deliver(
            .mediaTypeChangeResult(
                MediaTypeChangeResultEvent(
                    callId: call, transactionId: "switch", mediaType: .video, userId: "bob", result: .agreed)))
        deliver(
            .mediaSignal(
                MediaSignalEvent(callId: call, from: "alice", kind: .offer, sdp: "offer alice→bob #2 ice=alice-1")))
        try await bob.media.calls.matches(2, from: 0) { if case .local("alice", let d) = $0, d.kind == .answer { true } else { false } }
        deliver(.callUpdated(CallUpdatedEvent(call: snapshot)))

        // bob's engine adds his camera and asks to negotiate: he offers it.
        try await bob.media.calls.first(from: 0) { $0 == .mediaTypeChanged(call, .video) }
        bob.media.needsNegotiation(with: "alice")
        try await bob.media.calls.first(from: 0) { if case .local("alice", let d) = $0, d.kind == .offer { true } else { false } }
        await server.stop()
    }

    /// A call ends while its connection is still busy in the engine, and the next call with the
    /// same member starts at once: the new connection opens only once the old one is closed, so
    /// the old one's late close (the engine knows connections by member) does not take the new
    /// one with it. (Seen under load in the GStreamer tests: the eighth call in a row never
    /// connected.)
    @Test func aNewCallWithTheSameMemberWaitsForTheOldConnectionToClose() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        let first = try await Self.connect(alice, bob, "alice", "bob")

        // alice's engine is slow: the renegotiation she starts is still inside it at the hang-up.
        alice.media.holdOperations()
        alice.media.needsNegotiation(with: "bob")
        try await alice.client.callStore.hangup()
        try await alice.media.calls.first(from: 0) { $0 == .callEnded(first) }
        let second = try await alice.client.callStore.calls(participantIds: ["bob"], mediaType: .audio).callId
        try await bob.events.first(from: 0) { if case .onCallReceived(second, _, _, _, _) = $0 { true } else { false } }
        try await bob.client.callStore.accept()
        try await alice.media.calls.first(from: 0) { $0 == .callConnected(second, .audio) }
        alice.media.releaseOperations()

        // The old connection closes, then the new one opens and connects, and stays.
        try await alice.media.calls.matches(2, from: 0) { if case .connected("bob", _, _) = $0 { true } else { false } }
        try await bob.media.calls.matches(2, from: 0) { if case .connected("alice", _, _) = $0 { true } else { false } }
        let lifecycle = alice.media.calls.values.compactMap { call -> String? in
            switch call {
            case .opened("bob", _): "opened"
            case .closed("bob"): "closed"
            default: nil
            }
        }
        #expect(lifecycle == ["opened", "closed", "opened"])
        #expect(await alice.media.signalingState(peer: "bob") == .stable)
        await server.stop()
    }

    @Test func iceRestartsAreDrivenByTheOfferer() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        _ = try await Self.connect(alice, bob, "alice", "bob")

        // bob (the answerer) sees ICE fail: he asks alice, who offers with new ICE credentials.
        bob.media.failICE(with: "alice")
        try await alice.media.calls.first(from: 0) { $0 == .connected("bob", local: "alice-2", remote: "bob-2") }
        try await bob.media.calls.first(from: 0) { $0 == .connected("alice", local: "bob-2", remote: "alice-2") }
        #expect(Self.offers(bob.media, to: "alice").isEmpty)

        // alice sees it fail: she restarts herself.
        alice.media.failICE(with: "bob")
        try await bob.media.calls.first(from: 0) { $0 == .connected("alice", local: "bob-3", remote: "alice-3") }
        #expect(Self.offers(alice.media, to: "bob").count == 3)
        await server.stop()
    }

    /// The path between the two devices is cut for good: after three ICE restarts in a row that do
    /// not connect, each side stops restarting and shows the other's network quality as `down`
    /// (an event and the participant's state). When the path is back and the network changes, the
    /// next restart connects and the quality is the member's own report again.
    @Test func aPeerWithNoMediaPathShowsDown() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        let call = try await Self.connect(alice, bob, "alice", "bob")
        alice.media.cutPath(to: "bob", true)
        bob.media.cutPath(to: "alice", true)

        // Each failure on bob's side asks alice, who restarts (new credentials, a new offer).
        for round in 1...PeerLinkRules.iceRestartLimit {
            let (aliceMark, bobMark) = (alice.media.calls.values.count, bob.media.calls.values.count)
            bob.media.failICE(with: "alice")
            try await alice.media.calls.first(from: aliceMark) {
                if case .local("bob", let offer) = $0 { offer.sdp.hasSuffix("ice=alice-\(round + 1)") } else { false }
            }
            try await bob.media.calls.first(from: bobMark) {
                if case .local("alice", let answer) = $0 { answer.sdp.hasSuffix("ice=bob-\(round + 1)") } else { false }
            }
        }
        let aliceDown = CallStoreEvent.onMemberStatusChanged(callId: call, userId: "alice", networkQuality: .down, volumeLevel: .mute)
        let bobDown = CallStoreEvent.onMemberStatusChanged(callId: call, userId: "bob", networkQuality: .down, volumeLevel: .mute)
        bob.media.failICE(with: "alice")
        let bobGaveUp = try await bob.events.position(after: 0) { $0 == aliceDown }
        #expect(bob.client.callStore.state.allParticipants.first { $0.userId == "alice" }?.networkQuality == .down)
        alice.media.failICE(with: "bob")
        let aliceGaveUp = try await alice.events.position(after: 0) { $0 == bobDown }
        #expect(alice.client.callStore.state.allParticipants.first { $0.userId == "bob" }?.networkQuality == .down)

        // alice's own report says her network is excellent; bob, with no path to her, shows down.
        try await alice.client.callStore.reportStatus(packetLoss: 0, rtt: 20, bitrate: 0, audioLevel: 0)
        let report = try await bob.events.position(after: bobGaveUp) {
            if case .onMemberStatusChanged(call, "alice", _, _) = $0 { true } else { false }
        }
        #expect(bob.events.values[report - 1] == aliceDown)
        #expect(bob.client.callStore.state.allParticipants.first { $0.userId == "alice" }?.networkQuality == .down)
        // No restart beyond the bound on either side: alice made her first offer and three restarts.
        #expect(Self.offers(alice.media, to: "bob").count == 1 + PeerLinkRules.iceRestartLimit)
        #expect(bob.media.calls.values.filter { if case .local(_, let d) = $0 { d.kind == .answer } else { false } }.count == 1 + PeerLinkRules.iceRestartLimit)

        // The path is back and bob's network changed: his request makes alice restart, ICE
        // connects, and each shows the other's own quality again.
        alice.media.cutPath(to: "bob", false)
        bob.media.cutPath(to: "alice", false)
        bob.client.media.reconnected()
        let aliceBack = CallStoreEvent.onMemberStatusChanged(callId: call, userId: "alice", networkQuality: .excellent, volumeLevel: .mute)
        try await bob.events.first(from: report) { $0 == aliceBack }
        try await alice.events.first(from: aliceGaveUp) {
            if case .onMemberStatusChanged(call, "bob", let quality, _) = $0 { quality != .down } else { false }
        }
        #expect(bob.client.callStore.state.allParticipants.first { $0.userId == "alice" }?.networkQuality == .excellent)
        #expect(alice.client.callStore.state.allParticipants.first { $0.userId == "bob" }?.networkQuality != .down)
        await server.stop()
    }

    /// bob's engine is stuck while alice's side floods his connection with candidates: the signals
    /// waiting stop at the bound (the rest are dropped, not held), and once the engine moves again
    /// the connection still works: the restart bob's engine asks for at once (its own input, never
    /// dropped) connects.
    @Test func aFloodWhileTheEngineIsStuckStaysBounded() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        let call = try await Self.connect(alice, bob, "alice", "bob")
        bob.media.holdOperations()
        let flood = InputQueue<MediaCoordination.PeerInput>.limit + 1_000
        let candidate = IceCandidate(candidate: "candidate:alice-1 1 udp 1 127.0.0.1 9 typ host", sdpMid: "0", sdpMLineIndex: 0)
        for _ in 0..<flood {
            bob.client.media.handle(.mediaSignal(MediaSignalEvent(callId: call, from: "alice", kind: .candidate, candidate: candidate)))
        }
        // The task took the first and waits in the engine; at most the bound wait behind it.
        let dropped = try #require(bob.client.media.droppedInputs(to: "alice"))
        #expect(dropped >= flood - InputQueue<MediaCoordination.PeerInput>.limit - 1)
        bob.media.releaseOperations()

        let (aliceMark, bobMark) = (alice.media.calls.values.count, bob.media.calls.values.count)
        bob.media.failICE(with: "alice")
        try await alice.media.calls.first(from: aliceMark) { $0 == .connected("bob", local: "alice-2", remote: "bob-2") }
        try await bob.media.calls.first(from: bobMark) { $0 == .connected("alice", local: "bob-2", remote: "alice-2") }
        await server.stop()
    }

    /// The engine's and the SDK's own inputs have a bound of their own: a task stuck while
    /// thousands of network changes arrive keeps twice the signal bound at most and drops the rest.
    @Test func theSDKsOwnInputsAreBoundedToo() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        let call = try await Self.connect(alice, bob, "alice", "bob")
        bob.media.holdOperations()
        // A candidate from alice: bob's task takes it and waits in the engine; the rest queue.
        let candidate = IceCandidate(candidate: "candidate:alice-1 1 udp 1 127.0.0.1 9 typ host", sdpMid: "0", sdpMLineIndex: 0)
        bob.client.media.handle(.mediaSignal(MediaSignalEvent(callId: call, from: "alice", kind: .candidate, candidate: candidate)))
        let limit = InputQueue<MediaCoordination.PeerInput>.limit
        for _ in 0..<(2 * limit + 1_000) { bob.client.media.reconnected() }
        let dropped = try #require(bob.client.media.droppedInputs(to: "alice"))
        #expect(dropped >= 1_000 - 1)
        bob.media.releaseOperations()
        await server.stop()
    }

    /// The media coordinator hears of the call's state and of the server's events in one order,
    /// as the client's event path delivers them: a `callStarted` that shows bob in the call and,
    /// at once, a member's offer (the server relays a signal only to a member who joined, so it
    /// follows the event that connected him). The offer reaches a connection and is answered.
    /// (When the state reached the media on a stream of its own, the offer found no connected call
    /// and was lost, unless a buffer kept it.) The server is not told: bob's answer goes nowhere.
    @Test func anOfferRightAfterTheEventThatConnectsIsAnswered() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        let call = try await alice.client.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bob.events.first(from: 0, where: isReceived)
        var started = try #require(bob.client.callStore.state.calls[call.callId]?.info)
        let me = try #require(started.participants.firstIndex { $0.userId == "bob" })
        started.participants[me].status = .accept
        started.startTime = server.clock.now()
        // "aaron" sorts before bob, so he is the one who offers to bob.
        let offer = SessionDescription(kind: .offer, sdp: "offer aaron→bob #1 ice=aaron-1")
        let deliver = bob.client.signaling.handlers.withLockedValue { $0.event }
        deliver(.callStarted(CallStartedEvent(call: started)))
        deliver(.mediaSignal(MediaSignalEvent(callId: call.callId, from: "aaron", kind: .offer, sdp: offer.sdp)))
        try await bob.media.calls.first(from: 0) { $0 == .remote("aaron", offer) }
        try await bob.media.calls.first(from: 0) { if case .local("aaron", let answer) = $0 { answer.kind == .answer } else { false } }
        #expect(bob.media.calls.values.contains(.callConnected(call.callId, .audio)))
        await server.stop()
    }

    /// A signal for a call this device is not connected in (it came too late: the call ended
    /// here) opens nothing: the engine never hears of it.
    @Test func aSignalForACallNotConnectedHereIsDropped() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        let call = try await Self.connect(alice, bob, "alice", "bob")
        try await bob.client.callStore.hangup()
        try await bob.media.calls.first(from: 0) { $0 == .callEnded(call) }
        let deliver = bob.client.signaling.handlers.withLockedValue { $0.event }
        let late = SessionDescription(kind: .offer, sdp: "offer aaron→bob #1 ice=aaron-1")
        deliver(.mediaSignal(MediaSignalEvent(callId: call, from: "aaron", kind: .offer, sdp: late.sdp)))
        // A later call connects: by then the late offer would have been handed over.
        let (events, media) = (bob.events.values.count, bob.media.calls.values.count)
        let next = try await alice.client.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bob.events.first(from: events, where: isReceived)
        try await bob.client.callStore.accept()
        try await bob.media.calls.first(from: media) { $0 == .callConnected(next.callId, .audio) }
        try await bob.media.calls.first(from: media) { if case .connected("alice", _, _) = $0 { true } else { false } }
        #expect(!bob.media.calls.values.contains { if case .opened("aaron", _) = $0 { true } else { false } })
        #expect(!bob.media.calls.values.contains(.remote("aaron", late)))
        await server.stop()
    }

    @Test func aGroupCallIsAMeshWithOneOffererPerPair() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        let carol = try await Self.member(server, "carol")
        let call = try await alice.client.callStore.calls(participantIds: ["bob", "carol"], mediaType: .audio)
        try await bob.events.first(from: 0, where: isReceived)
        try await carol.events.first(from: 0, where: isReceived)
        try await bob.client.callStore.accept()
        try await carol.client.callStore.accept()
        for (member, peers) in [(alice, ["bob", "carol"]), (bob, ["alice", "carol"]), (carol, ["alice", "bob"])] {
            for peer in peers {
                let id = UserID(rawValue: peer)
                try await member.media.calls.first(from: 0) { if case .connected(id, _, _) = $0 { true } else { false } }
            }
        }
        #expect(Self.offers(alice.media, to: "bob").count == 1 && Self.offers(alice.media, to: "carol").count == 1)
        #expect(Self.offers(bob.media, to: "carol").count == 1 && Self.offers(bob.media, to: "alice").isEmpty)
        #expect(Self.offers(carol.media, to: "alice").isEmpty && Self.offers(carol.media, to: "bob").isEmpty)

        // carol leaves: the others close their connection to her; alice and bob go on.
        try await carol.client.callStore.hangup()
        try await alice.media.calls.first(from: 0) { $0 == .closed("carol") }
        try await bob.media.calls.first(from: 0) { $0 == .closed("carol") }
        try await carol.media.calls.first(from: 0) { $0 == .callEnded(call.callId) }
        #expect(!alice.media.calls.values.contains(.closed("bob")))
        await server.stop()
    }

    @Test func connectionsGetTheServersIceServers() async throws {
        let server = try await TestServer.start { configuration in
            configuration.apps = [AppCredentials(sdkAppID: 1_400_000_001, secretKey: "ice-test-app-secret")]
            configuration.ice.turnURLs = ["turn:127.0.0.1:3478?transport=udp"]
            configuration.ice.turnSecret = "north-sea-secret"
        }
        let alice = try await Self.member(server, "alice")
        let bob = try await Self.member(server, "bob")
        _ = try await Self.connect(alice, bob, "alice", "bob")
        let opened = alice.media.calls.values.compactMap { call -> [IceServer]? in
            if case .opened("bob", let servers) = call { servers } else { nil }
        }
        #expect(opened.first?.first?.urls == ["turn:127.0.0.1:3478?transport=udp"])
        #expect(opened.first?.first?.username == "1767312000:1400000001:alice")
        #expect(opened.first?.first?.credential == "FrGPTY7vjzNYMw63fDZ6GiKIbRU=")
        await server.stop()
    }

    /// After its connection to the server came back, a member restarts ICE (the network changed).
    @Test func aReconnectRestartsIce() async throws {
        let server = try await TestServer.start()
        let proxy = try await TCPProxy.start(targetPort: server.port)
        let alice = try await Self.member(server, "alice", url: server.url(via: proxy))
        let bob = try await Self.member(server, "bob")
        _ = try await Self.connect(alice, bob, "alice", "bob")
        let logins = Recorder(alice.client.loginStore.stateUpdates)
        proxy.cut()
        try await logins.first(from: 0) { $0.loginStatus == .reconnecting }
        server.clock.advance(by: .seconds(1))
        try await logins.first(from: 1) { $0.loginStatus == .loggedIn }
        try await bob.media.calls.first(from: 0) { $0 == .connected("alice", local: "bob-2", remote: "alice-2") }
        proxy.stop()
        await server.stop()
    }
}
