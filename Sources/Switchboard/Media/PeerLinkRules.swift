import SwitchboardProtocol

/// The rules of one peer connection's negotiation, as a value: who offers, what happens when both
/// sides offer at once (glare), when ICE restarts, and when the peer counts as unreachable for
/// media. The one place these rules live; ``PeerLink`` runs them against the engine, and the
/// browser client (Web/js/peer.js) follows the same ones.
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
struct PeerLinkRules: Equatable, Sendable {
    enum Phase: Equatable, Sendable {
        /// The polite side waits for the offerer's offer; `needed`: it needed negotiation meanwhile.
        case awaitingOffer(needed: Bool)
        /// The first offer was made (impolite) or answered (polite): either side may negotiate.
        case negotiating
        /// The connection is closing: nothing more is sent, and the link no longer speaks for the
        /// peer's reachability.
        case closed
    }

    enum Action: Equatable, Sendable {
        /// Make an offer (the engine permitting: a plain one only from a stable state).
        case offer(iceRestart: Bool)
        /// Ask the offerer to restart ICE.
        case askForRestart
        /// Tell the app whether the peer is reachable for media.
        case report(reachable: Bool)
    }

    /// What to do with a description the peer sent.
    enum Incoming: Equatable, Sendable {
        case apply
        /// An offer that collided with this impolite side's own: ignored, with its candidates.
        case ignore
    }

    /// Restarts in a row that do not bring ICE back before the link gives up. Each takes the
    /// engine's ICE timeout (5–10 s with libnice and WebRTC), so a side gives up within about half
    /// a minute.
    static let iceRestartLimit = 3

    let polite: Bool
    private(set) var phase: Phase
    /// What this side knows of the media path to the peer.
    private(set) var path = MediaPath.unknown
    /// ICE restarts made (offerer) or asked for (polite) since ICE last connected.
    private(set) var restartsInARow = 0
    /// Perfect negotiation's own state: an offer of this side's is being made, an answer of the
    /// peer's is being applied, the last offer received was ignored.
    private(set) var makingOffer = false
    private(set) var applyingAnswer = false
    private(set) var ignoringOffer = false

    init(polite: Bool) {
        self.polite = polite
        phase = polite ? .awaitingOffer(needed: false) : .negotiating
    }

    /// Whether `me` makes the first offer to `peer`.
    static func isOfferer(_ me: UserID, to peer: UserID) -> Bool {
        Array(me.rawValue.utf8).lexicographicallyPrecedes(Array(peer.rawValue.utf8))
    }

    var isClosed: Bool { phase == .closed }

    /// Both members are in the call: the offerer starts.
    func start() -> [Action] {
        phase == .negotiating && !polite ? [.offer(iceRestart: false)] : []
    }

    /// The engine needs negotiation: an offer now, or, on the polite side before its first
    /// answer, once it has answered.
    mutating func negotiationNeeded() -> [Action] {
        switch phase {
        case .negotiating:
            return [.offer(iceRestart: false)]
        case .awaitingOffer:
            phase = .awaitingOffer(needed: true)
            return []
        case .closed:
            return []
        }
    }

    /// Both sides are about to change their tracks together: the polite side's needs for
    /// negotiation wait for the offerer's next offer, as at the start.
    mutating func expectOffer() {
        if polite, phase == .negotiating { phase = .awaitingOffer(needed: false) }
    }

    mutating func offerStarted() { makingOffer = true }
    mutating func offerDone() { makingOffer = false }

    /// A description came from the peer while the engine is in `state`: apply it, or (an offer
    /// colliding with this impolite side's own) ignore it.
    mutating func received(_ kind: SessionDescription.Kind, engine state: PeerSignalingState) -> Incoming {
        let readyForOffer = !makingOffer && (state == .stable || applyingAnswer)
        ignoringOffer = !polite && kind == .offer && !readyForOffer
        if ignoringOffer { return .ignore }
        applyingAnswer = kind == .answer
        return .apply
    }

    /// The peer's description was applied (or failed to be).
    mutating func applied() { applyingAnswer = false }

    /// This side answered the peer's offer: the polite side's wait is over, and a need it had
    /// meanwhile is met now.
    mutating func answered() -> [Action] {
        guard case .awaitingOffer(let needed) = phase else { return [] }
        phase = .negotiating
        return needed ? [.offer(iceRestart: false)] : []
    }

    /// ICE failed on this side: the peer is unreachable until ICE connects; restart it, or ask
    /// the offerer to.
    mutating func iceFailed() -> [Action] {
        guard !isClosed else { return [] }
        return pathDown() + restart()
    }

    /// The peer's ICE failed and it asks this side (the offerer) to restart. Unless this side's ICE
    /// is connected (the peer's network changed, or its signaling came back, and the path may well
    /// hold), there is no path. Honoured even at the bound, and counted.
    mutating func restartAsked() -> [Action] {
        guard !isClosed else { return [] }
        let down = path == .up ? [] : pathDown()
        restartsInARow += 1
        return down + [.offer(iceRestart: true)]
    }

    /// ICE connected: the peer is reachable, and restarts count from zero again.
    mutating func iceConnected() -> [Action] {
        restartsInARow = 0
        guard !isClosed else { return [] }
        let wasDown = path == .down
        path = .up
        return wasDown ? [.report(reachable: true)] : []
    }

    /// The device's network changed (or the signaling connection came back): a path may exist
    /// now even if none did, so the link restarts ICE with a fresh count.
    mutating func networkChanged() -> [Action] {
        restartsInARow = 0
        return restart()
    }

    /// The connection is closing.
    mutating func close() -> [Action] {
        let wasDown = path == .down
        phase = .closed
        path = .unknown
        return wasDown ? [.report(reachable: true)] : []
    }

    /// Whether a side that wants to restart has reached the bound.
    var restartsExhausted: Bool { restartsInARow >= Self.iceRestartLimit }

    /// The path is down: reported once, until ICE connects.
    private mutating func pathDown() -> [Action] {
        guard path != .down else { return [] }
        path = .down
        return [.report(reachable: false)]
    }

    /// Restarts ICE, or asks the offerer to, unless the restarts in a row reached the bound.
    private mutating func restart() -> [Action] {
        guard !isClosed, !restartsExhausted else { return [] }
        restartsInARow += 1
        return [polite ? .askForRestart : .offer(iceRestart: true)]
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
