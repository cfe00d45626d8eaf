import Logging
import SwitchboardProtocol

/// The negotiation of one peer connection: who offers, and what happens when both sides offer at
/// once (glare). The one place these rules live; the browser client (Web/js/media.js) follows the
/// same ones.
///
/// - In each pair of members, the one whose user id sorts first (byte order) makes the first
///   offer as soon as both are in the call, and is the *impolite* peer; the other waits for that
///   offer and is *polite*: until it has answered it, its own needs for negotiation wait too
///   (an engine that asks as soon as tracks are added, as webrtcbin does, would otherwise make
///   every first negotiation a collision).
/// - Later renegotiation (a camera added, an ICE restart) may start on either side. When two
///   offers cross, the impolite peer ignores the one it receives and the polite peer rolls its own
///   back and answers: W3C's "perfect negotiation", so neither side has to retry.
/// - ICE restart: the side that sees ICE fail restarts it if it is the offerer, or asks the
///   offerer to (a `restart` signal), so one side drives every restart.
/// - ICE failing reports the peer unreachable for media at once (the member shows `down` while no
///   media path exists), and reachable again when ICE connects; restarts go on meanwhile.
/// - At most ``iceRestartLimit`` restarts in a row that do not connect, on each side: with no path
///   between the two and no relay, each restart would start the other side's checks over and
///   neither would ever settle. Each side counts the restarts it makes or asks for; at the bound
///   it stops on its own failures. The offerer still honours a request (counting it): the asking
///   side bounds its requests, and one that follows its network change is how the pair recovers.
///   ICE connecting after all, or a change of network (``networkChanged()``), starts the count
///   again.
/// - An agreed media-type change adds (or removes) a camera on both sides at once: the polite
///   side waits for the offerer's offer again, which carries both changes, instead of making the
///   collision certain. (Not every engine can roll back: GStreamer's webrtcbin cannot.)
actor PeerLink {
    nonisolated let peer: UserID
    nonisolated let polite: Bool
    private let callId: CallID
    private let engine: any PeerMediaEngine
    private let send: @Sendable (SendMediaSignalRequest) async -> Void
    private let logger: Logger
    private var makingOffer = false
    private var ignoreOffer = false
    private var settingRemoteAnswerPending = false
    private var closed = false
    /// The first offer was made (impolite) or answered (polite).
    private var started: Bool
    /// The polite side needed negotiation before it started.
    private var negotiationWaiting = false
    /// ICE restarts made (offerer) or asked for (polite) since ICE last connected.
    private var restartsInARow = 0
    /// What this side knows of the media path to the peer.
    private var path = MediaPath.unknown
    /// Told when the peer becomes unreachable for media (false) and reachable again (true).
    private let reachability: @Sendable (Bool) -> Void

    /// Restarts in a row that do not bring ICE back before the link gives up. Each takes the
    /// engine's ICE timeout (5–10 s with libnice and WebRTC), so a side gives up within about half
    /// a minute.
    static let iceRestartLimit = 3

    /// Whether `me` makes the first offer to `peer`.
    nonisolated static func isOfferer(_ me: UserID, to peer: UserID) -> Bool {
        Array(me.rawValue.utf8).lexicographicallyPrecedes(Array(peer.rawValue.utf8))
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
        self.started = !polite
        self.engine = engine
        self.send = send
        self.logger = logger
    }

    /// Both members are in the call: the offerer starts.
    func start() async {
        if !polite { await negotiate(iceRestart: false) }
    }

    /// The connection is closing: it no longer speaks for the peer's reachability.
    func close() {
        closed = true
        if path == .down { reachability(true) }
        path = .unknown
    }

    /// Both sides are about to change their tracks together: the polite side's own needs for
    /// negotiation wait for the offerer's next offer, as at the start.
    func expectOffer() {
        if polite { started = false }
    }

    /// Makes an offer (the connection needs negotiation, or ICE must restart). A plain need for
    /// negotiation waits while an offer is open: WebRTC asks again once the connection is stable.
    func negotiate(iceRestart: Bool) async {
        guard !closed else { return }
        guard started || iceRestart else {
            negotiationWaiting = true
            return
        }
        if !iceRestart, await engine.signalingState(peer: peer) != .stable { return }
        makingOffer = true
        defer { makingOffer = false }
        do {
            let offer = try await engine.setLocalDescription(peer: peer, iceRestart: iceRestart)
            // An offer that crossed the peer's and was rolled back meanwhile (this side being
            // polite) is not sent: this side answered the peer's instead.
            guard offer.kind == .offer, !closed, await engine.signalingState(peer: peer) == .haveLocalOffer else { return }
            await send(SendMediaSignalRequest(callId: callId, to: peer, kind: .offer, sdp: offer.sdp))
        } catch {
            logger.info("offer failed", metadata: ["callId": "\(callId)", "peer": "\(peer)", "error": "\(error)"])
        }
    }

    /// ICE failed on this side: the peer is unreachable until ICE connects; restart it, or ask the
    /// offerer to.
    func iceFailed() async {
        guard !closed else { return }
        pathDown()
        await restart()
    }

    /// The path is down: reported once, until ICE connects.
    private func pathDown() {
        guard path != .down else { return }
        path = .down
        logger.warning(
            "no media path to the peer", metadata: ["callId": "\(callId)", "peer": "\(peer)", "restarts": "\(restartsInARow)"])
        reachability(false)
    }

    /// Restarts ICE, or asks the offerer to, unless the restarts in a row reached the bound.
    private func restart() async {
        guard !closed, takeRestart() else { return }
        if polite {
            await send(SendMediaSignalRequest(callId: callId, to: peer, kind: .restart))
        } else {
            await negotiate(iceRestart: true)
        }
    }

    /// A signal from the peer.
    func receive(_ signal: MediaSignalEvent) async {
        guard !closed else { return }
        switch signal.kind {
        case .offer, .answer:
            guard let sdp = signal.sdp else { return }
            let kind: SessionDescription.Kind = signal.kind == .offer ? .offer : .answer
            let state = await engine.signalingState(peer: peer)
            let readyForOffer = !makingOffer && (state == .stable || settingRemoteAnswerPending)
            let collision = kind == .offer && !readyForOffer
            ignoreOffer = !polite && collision
            if ignoreOffer {
                logger.debug("ignoring a colliding offer", metadata: ["callId": "\(callId)", "peer": "\(peer)"])
                return
            }
            do {
                settingRemoteAnswerPending = kind == .answer
                try await engine.setRemoteDescription(SessionDescription(kind: kind, sdp: sdp), peer: peer)
                settingRemoteAnswerPending = false
                if kind == .offer {
                    let answer = try await engine.setLocalDescription(peer: peer, iceRestart: false)
                    await send(SendMediaSignalRequest(callId: callId, to: peer, kind: .answer, sdp: answer.sdp))
                    if !started {
                        started = true
                        if negotiationWaiting {
                            negotiationWaiting = false
                            await negotiate(iceRestart: false)
                        }
                    }
                }
            } catch {
                settingRemoteAnswerPending = false
                logger.info(
                    "applying a remote description failed",
                    metadata: ["callId": "\(callId)", "peer": "\(peer)", "error": "\(error)"])
            }
        case .candidate:
            guard let candidate = signal.candidate else { return }
            do {
                try await engine.addRemoteCandidate(candidate, peer: peer)
            } catch {
                // Candidates of an offer this side ignored fail by design.
                if !ignoreOffer {
                    logger.info("a remote candidate failed", metadata: ["peer": "\(peer)", "error": "\(error)"])
                }
            }
        case .restart:
            // The peer's ICE failed. Unless this side's ICE is connected (the peer's network
            // changed, or its signaling came back, and the path may well hold), there is none.
            if path != .up { pathDown() }
            restartsInARow += 1
            await negotiate(iceRestart: true)
        }
    }

    /// ICE connected: the peer is reachable, and restarts count from zero again.
    func iceConnected() {
        restartsInARow = 0
        guard !closed else { return }
        let wasDown = path == .down
        path = .up
        guard wasDown else { return }
        logger.info("media path to the peer is back", metadata: ["callId": "\(callId)", "peer": "\(peer)"])
        reachability(true)
    }

    /// The device's network changed (or the signaling connection came back): a path may exist now
    /// even if none did, so the link restarts ICE with a fresh count.
    func networkChanged() async {
        restartsInARow = 0
        await restart()
    }

    /// Counts one more restart in a row; false at the bound.
    private func takeRestart() -> Bool {
        guard restartsInARow < Self.iceRestartLimit else {
            logger.info("ICE restarts stop at the bound", metadata: ["callId": "\(callId)", "peer": "\(peer)"])
            return false
        }
        restartsInARow += 1
        return true
    }

    /// Sends a local candidate to the peer.
    func trickle(_ candidate: IceCandidate) async {
        guard !closed else { return }
        await send(SendMediaSignalRequest(callId: callId, to: peer, kind: .candidate, candidate: candidate))
    }
}

/// The media path to the peer as one side of a ``PeerLink`` knows it.
enum MediaPath: Equatable, Sendable {
    /// ICE has not connected yet (and has not failed).
    case unknown
    /// ICE connected, and has not failed since.
    case up
    /// ICE failed here, or the peer's did while this side had no path: the peer is reported
    /// unreachable until ICE connects.
    case down
}
