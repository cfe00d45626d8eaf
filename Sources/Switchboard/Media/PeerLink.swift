import Logging
import SwitchboardProtocol

/// One peer connection's negotiation, run against the engine: ``PeerLinkRules`` decides (who
/// offers, glare, ICE restarts and their bound, the peer's reachability), this actor asks the
/// engine, sends the signals and tells the app.
actor PeerLink {
    nonisolated let peer: UserID
    nonisolated let polite: Bool
    private let callId: CallID
    private let engine: any PeerMediaEngine
    private let send: @Sendable (SendMediaSignalRequest) async -> Void
    private let logger: Logger
    private var rules: PeerLinkRules
    /// Told when the peer becomes unreachable for media (false) and reachable again (true).
    private let reachability: @Sendable (Bool) -> Void

    /// Whether `me` makes the first offer to `peer`.
    nonisolated static func isOfferer(_ me: UserID, to peer: UserID) -> Bool {
        PeerLinkRules.isOfferer(me, to: peer)
    }

    init(
        callId: CallID, me: UserID, peer: UserID, engine: any PeerMediaEngine, logger: Logger,
        send: @escaping @Sendable (SendMediaSignalRequest) async -> Void,
        reachability: @escaping @Sendable (Bool) -> Void
    ) {
        self.reachability = reachability
        self.callId = callId
        self.peer = peer
        self.polite = !Self.isOfferer(me, to: peer)
        self.rules = PeerLinkRules(polite: polite)
        self.engine = engine
        self.send = send
        self.logger = logger
    }

    /// Both members are in the call: the offerer starts.
    func start() async {
        await run(rules.start())
    }

    /// The connection is closing: it no longer speaks for the peer's reachability.
    func close() {
        for action in rules.close() {
            if case .report(let reachable) = action { reachability(reachable) }
        }
    }

    /// Both sides are about to change their tracks together (``PeerLinkRules/expectOffer()``).
    func expectOffer() {
        rules.expectOffer()
    }

    /// The engine needs negotiation (or, with `iceRestart`, this side restarts ICE): an offer, if
    /// the rules allow one now.
    func negotiate(iceRestart: Bool) async {
        if iceRestart {
            await offer(iceRestart: true)
        } else {
            await run(rules.negotiationNeeded())
        }
    }

    /// ICE failed on this side.
    func iceFailed() async {
        if !rules.isClosed, rules.restartsExhausted {
            logger.info("ICE restarts stop at the bound", metadata: ["callId": "\(callId)", "peer": "\(peer)"])
        }
        await run(rules.iceFailed())
    }

    /// ICE connected.
    func iceConnected() async {
        await run(rules.iceConnected())
    }

    /// The device's network changed (or the signaling connection came back).
    func networkChanged() async {
        await run(rules.networkChanged())
    }

    /// A signal from the peer.
    func receive(_ signal: MediaSignalEvent) async {
        guard !rules.isClosed else { return }
        switch signal.kind {
        case .offer, .answer:
            guard let sdp = signal.sdp else { return }
            let kind: SessionDescription.Kind = signal.kind == .offer ? .offer : .answer
            let state = await engine.signalingState(peer: peer)
            guard rules.received(kind, engine: state) == .apply else {
                logger.debug("ignoring a colliding offer", metadata: ["callId": "\(callId)", "peer": "\(peer)"])
                return
            }
            do {
                defer { rules.applied() }
                try await engine.setRemoteDescription(SessionDescription(kind: kind, sdp: sdp), peer: peer)
            } catch {
                logger.info(
                    "applying a remote description failed",
                    metadata: ["callId": "\(callId)", "peer": "\(peer)", "error": "\(error)"])
                return
            }
            guard kind == .offer else { return }
            do {
                let answer = try await engine.setLocalDescription(peer: peer, iceRestart: false)
                await send(SendMediaSignalRequest(callId: callId, to: peer, kind: .answer, sdp: answer.sdp))
            } catch {
                logger.info(
                    "answering failed", metadata: ["callId": "\(callId)", "peer": "\(peer)", "error": "\(error)"])
                return
            }
            await run(rules.answered())
        case .candidate:
            guard let candidate = signal.candidate else { return }
            do {
                try await engine.addRemoteCandidate(candidate, peer: peer)
            } catch {
                // Candidates of an offer this side ignored fail by design.
                if !rules.ignoringOffer {
                    logger.info("a remote candidate failed", metadata: ["peer": "\(peer)", "error": "\(error)"])
                }
            }
        case .restart:
            await run(rules.restartAsked())
        }
    }

    /// Sends a local candidate to the peer.
    func trickle(_ candidate: IceCandidate) async {
        guard !rules.isClosed else { return }
        await send(SendMediaSignalRequest(callId: callId, to: peer, kind: .candidate, candidate: candidate))
    }

    // MARK: - running the rules' actions

    private func run(_ actions: [PeerLinkRules.Action]) async {
        for action in actions {
            switch action {
            case .offer(let iceRestart):
                await offer(iceRestart: iceRestart)
            case .askForRestart:
                guard !rules.isClosed else { return }
                await send(SendMediaSignalRequest(callId: callId, to: peer, kind: .restart))
            case .report(let reachable):
                if reachable {
                    logger.info("media path to the peer is back", metadata: ["callId": "\(callId)", "peer": "\(peer)"])
                } else {
                    logger.warning(
                        "no media path to the peer",
                        metadata: ["callId": "\(callId)", "peer": "\(peer)", "restarts": "\(rules.restartsInARow)"])
                }
                reachability(reachable)
            }
        }
    }

    /// Makes an offer. A plain one waits while an offer is open: WebRTC asks again once the
    /// connection is stable.
    private func offer(iceRestart: Bool) async {
        guard !rules.isClosed else { return }
        if !iceRestart, await engine.signalingState(peer: peer) != .stable { return }
        rules.offerStarted()
        defer { rules.offerDone() }
        do {
            let offer = try await engine.setLocalDescription(peer: peer, iceRestart: iceRestart)
            // An offer that crossed the peer's and was rolled back meanwhile (this side being
            // polite) is not sent: this side answered the peer's instead.
            guard offer.kind == .offer, !rules.isClosed, await engine.signalingState(peer: peer) == .haveLocalOffer
            else { return }
            await send(SendMediaSignalRequest(callId: callId, to: peer, kind: .offer, sdp: offer.sdp))
        } catch {
            logger.info("offer failed", metadata: ["callId": "\(callId)", "peer": "\(peer)", "error": "\(error)"])
        }
    }
}
