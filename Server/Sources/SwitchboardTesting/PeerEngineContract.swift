import Foundation
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol

/// What every ``PeerMediaEngine`` must do, checked through the protocol alone, so it runs against
/// any engine: two engines of a kind, "alice" (who offers) and "bob", connected to each other in
/// process, with no server and no SDK. The fake and the GStreamer engine run it in this
/// repository's tests; an iOS app runs it against `WebRTCEngine` on a device (docs/IOS.md):
///
///     @Test(arguments: PeerEngineContract.Check.allCases)
///     func webRTC(_ check: PeerEngineContract.Check) async throws {
///         try await PeerEngineContract(carriesMedia: true) { _ in WebRTCEngine() }.run(check)
///     }
///
/// An engine that carries media (`carriesMedia`) must also show it in its ``MediaStatistics``:
/// audio packets from the other engine, and a shared screen's packets once negotiated. Waits
/// poll the engines' own answers until `timeout`; nothing waits for a set time.
public struct PeerEngineContract: Sendable {
    public enum Check: String, CaseIterable, Sendable, CustomStringConvertible {
        /// An offer and its answer take both ends through WebRTC's signaling states; media flows.
        case offerAndAnswer
        /// Both ends offer at once, mid-call: bob's offer is rolled back by alice's (implicit
        /// rollback), he answers, and both are stable with media still flowing. An engine that
        /// cannot roll back may answer on a new connection and then report ICE failed; the SDK
        /// then restarts ICE from the offerer's side, and so does this check. Either way audio
        /// reaches each end again within ``PeerEngineContract/crossingOffersAudioGap`` of the
        /// first crossing offer (engines that carry media): a call's sound may stop that long.
        case crossingOffers
        /// An offer with `iceRestart` has new ICE credentials; after its answer media flows again.
        case iceRestart
        /// Closing a connection whose offer was never answered returns, and the engine goes on:
        /// it forgets the member, ends the call, and connects the next call.
        case closeWithOfferOpen
        /// Every setting is taken before, during and after a call without disturbing it.
        case settingsAtAnyTime
        /// Steps for a member with no connection fail (or read `closed`) instead of waiting.
        case unknownPeer
        /// Sharing a screen asks for negotiation, and the screen's packets reach the other end
        /// (engines that carry media).
        case screenShareNegotiates

        public var description: String { rawValue }

        /// Whether the check needs real media (``PeerEngineContract/carriesMedia``).
        public var needsMedia: Bool { self == .screenShareNegotiates }
    }

    /// The checks for an engine that carries no media (a fake): all but those that need it.
    public static let signalingChecks = Check.allCases.filter { !$0.needsMedia }

    public let carriesMedia: Bool
    public let timeout: Duration
    /// How long audio may stop when offers cross mid-call: from alice's crossing offer until new
    /// audio packets reached both ends (``Check/crossingOffers``). 3 s by default: the GStreamer
    /// engine rolls back and its audio goes on (the check prints the time; 0.4 s here, most of it
    /// the negotiation itself and the statistics' polling); an engine that answers on a new
    /// connection and waits for ICE to fail (libnice and WebRTC take 5–30 s to call a path dead)
    /// breaks it.
    public let crossingOffersAudioGap: Duration
    let makeEngine: @Sendable (UserID) -> any PeerMediaEngine

    /// `makeEngine` makes a fresh engine for each member (its id is given for logs and fake SDP).
    public init(
        carriesMedia: Bool, timeout: Duration = .seconds(30), crossingOffersAudioGap: Duration = .seconds(3),
        makeEngine: @escaping @Sendable (UserID) -> any PeerMediaEngine
    ) {
        self.carriesMedia = carriesMedia
        self.timeout = timeout
        self.crossingOffersAudioGap = crossingOffersAudioGap
        self.makeEngine = makeEngine
    }

    public func run(_ check: Check) async throws {
        if check.needsMedia && !carriesMedia {
            throw ContractViolation("\(check) needs an engine that carries media")
        }
        let pair = EnginePair(alice: makeEngine("alice"), bob: makeEngine("bob"), timeout: timeout)
        defer { pair.end() }
        switch check {
        case .offerAndAnswer:
            pair.start(.audio)
            try await pair.negotiate(expectingStates: true)
            try await mediaFlows(pair)
        case .crossingOffers:
            pair.start(.audio)
            try await pair.negotiate()
            // Mid-call: the first connection carries media (its DTLS session is set up).
            try await mediaFlows(pair)
            let crossed = ContinuousClock.now
            let aliceOffer = try await pair.alice.setLocalDescription(peer: "bob", iceRestart: false)
            let bobOffer = try await pair.bob.setLocalDescription(peer: "alice", iceRestart: false)
            try expect(aliceOffer.kind == .offer && bobOffer.kind == .offer, "both ends offer")
            try await pair.bob.setRemoteDescription(aliceOffer, peer: "alice")
            try await pair.expectState(pair.bob, "alice", .haveRemoteOffer, "bob rolled his offer back for alice's")
            pair.remoteApplied(by: "bob")
            let answer = try await pair.bob.setLocalDescription(peer: "alice", iceRestart: false)
            try expect(answer.kind == .answer, "bob answers alice's crossing offer")
            try await pair.alice.setRemoteDescription(answer, peer: "bob")
            pair.remoteApplied(by: "alice")
            try await pair.expectState(pair.alice, "bob", .stable, "alice is stable after bob's answer")
            try await pair.expectState(pair.bob, "alice", .stable, "bob is stable after answering")
            if pair.restartRequests > 0 { try await pair.negotiate(iceRestart: true) }
            try await mediaFlows(
                pair, by: crossed.advanced(by: crossingOffersAudioGap),
                "within \(crossingOffersAudioGap) of the crossing offers")
            if carriesMedia { print("[contract] crossing offers: audio again at both ends \(ContinuousClock.now - crossed) after them") }
        case .iceRestart:
            pair.start(.audio)
            let first = try await pair.negotiate()
            try await mediaFlows(pair)
            let connected = (alice: pair.connectedReports(from: "alice"), bob: pair.connectedReports(from: "bob"))
            let restart = try await pair.negotiate(iceRestart: true)
            let (before, after) = (Self.iceUfrag(first.sdp), Self.iceUfrag(restart.sdp))
            try expect(before != nil && after != nil && before != after, "a restart offer has new ICE credentials (\(before ?? "none") → \(after ?? "none"))")
            try await mediaFlows(pair)
            if carriesMedia {
                try await pair.eventually("each end reports ICE connected again after the restart") {
                    pair.connectedReports(from: "alice") > connected.alice && pair.connectedReports(from: "bob") > connected.bob
                }
            }
        case .closeWithOfferOpen:
            pair.start(.audio)
            try await pair.negotiate()
            _ = try await pair.alice.setLocalDescription(peer: "bob", iceRestart: false)
            pair.alice.closePeer("bob")
            try await pair.expectState(pair.alice, "bob", .closed, "alice's closed connection reads closed")
            let statistics = await pair.alice.statistics()
            try expect(statistics.peers["bob"] == nil, "alice's statistics forget bob once closed")
            pair.bob.closePeer("alice")
            pair.endCall()
            _ = await pair.alice.statistics()
            // The next call on the same engines.
            pair.start(.audio)
            try await pair.negotiate(expectingStates: true)
            try await mediaFlows(pair)
        case .settingsAtAnyTime:
            Self.applyEverySetting(pair.alice)
            pair.start(.video)
            Self.applyEverySetting(pair.alice)
            try await pair.negotiate()
            Self.applyEverySetting(pair.alice)
            pair.alice.setMicrophone(on: true)
            pair.alice.setMicrophoneVolume(100)
            pair.alice.setAudioOutput(AudioOutput(route: .speaker))
            pair.alice.setScreenShare(nil)
            try await mediaFlows(pair)
            pair.endCall()
            Self.applyEverySetting(pair.alice)
            _ = await pair.alice.statistics()
        case .unknownPeer:
            pair.start(.audio)
            try expect(await pair.alice.signalingState(peer: "carol") == .closed, "a member with no connection reads closed")
            try await expectThrows("setLocalDescription for carol") {
                _ = try await pair.alice.setLocalDescription(peer: "carol", iceRestart: false)
            }
            try await expectThrows("setRemoteDescription for carol") {
                try await pair.alice.setRemoteDescription(SessionDescription(kind: .answer, sdp: "v=0\r\n"), peer: "carol")
            }
            try await expectThrows("addRemoteCandidate for carol") {
                try await pair.alice.addRemoteCandidate(
                    IceCandidate(candidate: "candidate:1 1 udp 1 127.0.0.1 9 typ host", sdpMid: "0", sdpMLineIndex: 0),
                    peer: "carol")
            }
        case .screenShareNegotiates:
            pair.start(.audio)
            try await pair.negotiate()
            let asked = pair.negotiationRequests(from: "alice")
            pair.alice.setScreenShare(.testPattern)
            try await pair.eventually("alice's engine asks for negotiation for her screen") {
                pair.negotiationRequests(from: "alice") > asked
            }
            try await pair.negotiate()
            try await pair.eventually("bob receives alice's screen") {
                await pair.bob.statistics().peers["alice"]?.screen.packetsReceived ?? 0 > 0
            }
        }
    }

    /// Audio reaches each end from the other, and keeps coming, and each end reported ICE
    /// connected (engines that carry media); by `deadline` where given, else within the timeout.
    func mediaFlows(_ pair: EnginePair, by deadline: ContinuousClock.Instant? = nil, _ when: String = "") async throws {
        guard carriesMedia else { return }
        let deadline = deadline ?? ContinuousClock.now.advanced(by: timeout)
        try await pair.eventually("each end reports ICE connected (events.iceConnected) \(when)", by: deadline) {
            pair.connectedReports(from: "alice") > 0 && pair.connectedReports(from: "bob") > 0
        }
        for (engine, name, peer) in [(pair.alice, "alice", UserID("bob")), (pair.bob, "bob", UserID("alice"))] {
            let before = await engine.statistics().peers[peer]?.audio.packetsReceived ?? 0
            try await pair.eventually("\(name) receives more audio from \(peer) (after \(before) packets) \(when)", by: deadline) {
                await engine.statistics().peers[peer]?.audio.packetsReceived ?? 0 > before
            }
        }
    }

    static func applyEverySetting(_ engine: any PeerMediaEngine) {
        engine.setMicrophone(on: false)
        engine.setMicrophoneVolume(0)
        engine.setCamera(on: true, front: false)
        engine.setCamera(on: false, front: true)
        for quality in VideoQuality.allCases { engine.setVideoQuality(quality) }
        for route in AudioRoute.allCases { engine.setAudioOutput(AudioOutput(route: route, volume: 30, remoteAudioMuted: true)) }
        engine.setAudioOutput(AudioOutput())
        engine.setScreenShare(.testPattern)
        engine.setScreenShare(nil)
    }

    /// The ICE username fragment of a description: `a=ice-ufrag:` in SDP, `ice=` in the fake's.
    static func iceUfrag(_ sdp: String) -> String? {
        for line in sdp.split(whereSeparator: \.isNewline) where line.hasPrefix("a=ice-ufrag:") {
            return String(line.dropFirst("a=ice-ufrag:".count))
        }
        return sdp.range(of: "ice=").map { String(sdp[$0.upperBound...].prefix { !$0.isWhitespace }) }
    }

    func expect(_ condition: Bool, _ what: String) throws {
        if !condition { throw ContractViolation(what) }
    }

    func expectThrows(_ what: String, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            return
        }
        throw ContractViolation("\(what) succeeded without a connection")
    }
}

/// A broken rule of ``PeerEngineContract``.
public struct ContractViolation: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}

/// Two engines wired to each other as the SDK and the server would: candidates go to the other end
/// once it applied a description (earlier ones wait), negotiation requests are counted.
final class EnginePair: Sendable {
    let alice: any PeerMediaEngine
    let bob: any PeerMediaEngine
    let timeout: Duration
    private let callId = NIOLockedValueBox<CallID?>(nil)
    private let calls = NIOLockedValueBox(0)

    private struct Relay {
        /// Candidates for an end that applied no description of the other yet.
        var held: [UserID: [IceCandidate]] = [:]
        var ready: Set<UserID> = []
        var negotiationRequests: [UserID: Int] = [:]
        /// Times either end reported ICE failed (the SDK restarts ICE then).
        var restartRequests = 0
        /// Times each end reported ICE connected (the SDK's count of restarts starts again then).
        var connectedReports: [UserID: Int] = [:]
    }

    private let relay = NIOLockedValueBox(Relay())

    init(alice: any PeerMediaEngine, bob: any PeerMediaEngine, timeout: Duration) {
        self.alice = alice
        self.bob = bob
        self.timeout = timeout
    }

    func engine(_ user: UserID) -> any PeerMediaEngine { user == "alice" ? alice : bob }

    /// A new call: both ends connected to it, with audio started and the microphone on, and a
    /// connection to each other.
    func start(_ mediaType: CallMediaType) {
        let number = calls.withLockedValue { calls in
            calls += 1
            return calls
        }
        let call = CallID(rawValue: "contract-call-\(number)")
        callId.withLockedValue { $0 = call }
        relay.withLockedValue { $0 = Relay() }
        for (user, peer) in [(UserID("alice"), UserID("bob")), (UserID("bob"), UserID("alice"))] {
            let engine = engine(user)
            engine.callConnected(callId: call, roomId: RoomID(rawValue: "contract-room-\(number)"), mediaType: mediaType)
            engine.startAudio()
            engine.setMicrophone(on: true)
            if mediaType == .video { engine.setCamera(on: true, front: true) }
            engine.openPeer(
                peer, iceServers: [],
                events: PeerConnectionEvents(
                    localCandidate: { [self] candidate in send(candidate, to: peer) },
                    negotiationNeeded: { [self] in relay.withLockedValue { $0.negotiationRequests[user, default: 0] += 1 } },
                    iceFailed: { [self] in relay.withLockedValue { $0.restartRequests += 1 } },
                    iceConnected: { [self] in relay.withLockedValue { $0.connectedReports[user, default: 0] += 1 } }))
        }
    }

    /// Ends the call on both ends.
    func endCall() {
        guard let call = callId.withLockedValue({ $0 }) else { return }
        for engine in [alice, bob] {
            engine.callEnded(callId: call)
            engine.stopAudio()
        }
        callId.withLockedValue { $0 = nil }
    }

    func end() { endCall() }

    var restartRequests: Int { relay.withLockedValue { $0.restartRequests } }

    func connectedReports(from user: UserID) -> Int {
        relay.withLockedValue { $0.connectedReports[user] ?? 0 }
    }

    func negotiationRequests(from user: UserID) -> Int {
        relay.withLockedValue { $0.negotiationRequests[user] ?? 0 }
    }

    /// alice offers (restarting ICE when asked), bob answers; returns alice's offer. With
    /// `expectingStates`, each end's signaling state is checked at every step.
    @discardableResult
    func negotiate(iceRestart: Bool = false, expectingStates: Bool = false) async throws -> SessionDescription {
        let offer = try await alice.setLocalDescription(peer: "bob", iceRestart: iceRestart)
        guard offer.kind == .offer else { throw ContractViolation("alice's setLocalDescription in stable made an \(offer.kind)") }
        if expectingStates { try await expectState(alice, "bob", .haveLocalOffer, "alice has a local offer") }
        try await bob.setRemoteDescription(offer, peer: "alice")
        remoteApplied(by: "bob")
        if expectingStates { try await expectState(bob, "alice", .haveRemoteOffer, "bob has alice's offer") }
        let answer = try await bob.setLocalDescription(peer: "alice", iceRestart: false)
        guard answer.kind == .answer else { throw ContractViolation("bob's setLocalDescription after an offer made an \(answer.kind)") }
        if expectingStates { try await expectState(bob, "alice", .stable, "bob is stable after answering") }
        try await alice.setRemoteDescription(answer, peer: "bob")
        remoteApplied(by: "alice")
        if expectingStates { try await expectState(alice, "bob", .stable, "alice is stable after bob's answer") }
        return offer
    }

    func expectState(_ engine: any PeerMediaEngine, _ peer: UserID, _ state: PeerSignalingState, _ what: String) async throws {
        let actual = await engine.signalingState(peer: peer)
        if actual != state { throw ContractViolation("\(what): \(actual), not \(state)") }
    }

    /// `user` applied a description of the other end: the candidates held for it go now.
    func remoteApplied(by user: UserID) {
        let held = relay.withLockedValue { relay -> [IceCandidate] in
            relay.ready.insert(user)
            return relay.held.removeValue(forKey: user) ?? []
        }
        for candidate in held { deliver(candidate, to: user) }
    }

    private func send(_ candidate: IceCandidate, to user: UserID) {
        let now = relay.withLockedValue { relay -> Bool in
            if relay.ready.contains(user) { return true }
            relay.held[user, default: []].append(candidate)
            return false
        }
        if now { deliver(candidate, to: user) }
    }

    private func deliver(_ candidate: IceCandidate, to user: UserID) {
        let engine = engine(user)
        let from: UserID = user == "alice" ? "bob" : "alice"
        // A candidate the engine refuses (one of a replaced ICE generation) is what a real
        // relay would see too; the checks look at what the engines report, not at this.
        Task { try? await engine.addRemoteCandidate(candidate, peer: from) }
    }

    /// Asks `condition` until it holds, at most `timeout` or until `deadline`.
    func eventually(
        _ what: String, by deadline: ContinuousClock.Instant? = nil, _ condition: @Sendable () async -> Bool
    ) async throws {
        let clock = ContinuousClock()
        let deadline = deadline ?? clock.now.advanced(by: timeout)
        while clock.now < deadline {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        if await condition() { return }
        throw ContractViolation("\(what): not in time")
    }
}
