import SwitchboardProtocol

/// The rules of ``MediaCoordinator`` as a value: which call the engine is in, when audio runs, which
/// peer connections and which SFU session exist, which signals reach them and which are dropped,
/// and which camera layers the server is asked for. Each input returns the actions that follow
/// from it, in the order they must happen; ``MediaCoordinator`` performs them (it owns the tasks,
/// queues and the engine) and nothing else decides.
///
/// - The engine is in the call this device's state shows connected (accepted). A different call
///   (or none) ends the old one first: its connections close, its status reports stop, audio
///   stops, then the engine hears the call ended; then the new call's reports start (their first
///   deadline is fixed before the engine hears of the call), the engine hears it connected, and
///   audio starts.
/// - Audio runs while a call is connected and either the SDK controls it (`automatic`) or the
///   system's audio session is active (`external`, the CallKit bridge).
/// - A mesh call has one peer connection per other member who accepted; one opens as soon as
///   the state shows the member, or when the member's first signal comes (a signal can come
///   before the state shows its sender), and closes when the member leaves. A new connection to
///   a member whose last one is still closing opens once that one closed (the engine knows
///   connections by member). At most ``closingLimit`` closing connections are remembered.
/// - Through the SFU there are no peer connections: the server's `sfuSession` opens a session
///   (after the one before it closed); an older or repeated session number is ignored.
/// - A signal for a call not connected here, or for an SFU session that is not the current one,
///   came too late (the server relays only to members who joined) and is dropped.
/// - A member who moved to another of their devices (`memberMoved`) gets a new connection: the
///   old one closes, the new one opens after it.
/// - An agreed media-type change tells every peer connection to expect the offerer's offer; a
///   reconnected signaling connection tells every one the network changed.
/// - In an SFU call the server is asked for each member's camera layer the device store wants,
///   once per change; a new call starts from nothing asked.
struct MediaCoordination: Equatable, Sendable {
    /// What the app's media engine can do.
    enum Engine: Int, Comparable, Sendable {
        /// Media of its own (joins a room; no negotiation through the SDK).
        case media
        /// One negotiated peer connection per member (``PeerMediaEngine``).
        case peers
        /// Peer connections and the SFU's two connections (``SFUMediaEngine``).
        case sfu

        static func < (lhs: Engine, rhs: Engine) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The connected call as media sees it.
    struct Connection: Equatable, Sendable {
        var callId: CallID
        var roomId: RoomID
        var mediaType: CallMediaType
        var me: UserID
        /// The other members in the call.
        var peers: Set<UserID>
        /// `sfu`: the media goes through the server's SFU (no connection per member).
        var media: CallMediaRoute?

        /// This device's connected call in `state` (nil: none).
        static func of(_ state: CallStore.State) -> Connection? {
            guard state.selfInfo.status == .accept, let call = state.activeCall else { return nil }
            let me = state.selfInfo.userId
            let peers = state.allParticipants.filter { $0.userId != me && $0.status == .accept }.map(\.userId)
            return Connection(
                callId: call.callId, roomId: call.roomId, mediaType: call.mediaType, me: me, peers: Set(peers),
                media: call.media)
        }
    }

    /// What one peer connection's task works through, in order.
    enum PeerInput: Equatable, Sendable {
        case start
        case signal(MediaSignalEvent)
        case localCandidate(IceCandidate)
        case negotiationNeeded
        case restartIce
        case iceConnected
        /// The network changed: restart ICE, with a fresh count of restarts.
        case networkChanged
        /// The media type is changing on both sides: the offerer negotiates.
        case expectOffer
    }

    /// What an SFU session's task works through, in order.
    enum SFUInput: Equatable, Sendable {
        case start
        case signal(SFUSignalEvent)
        case localCandidate(SFUConnection, IceCandidate)
        case negotiationNeeded
        case iceFailed(SFUConnection)
    }

    /// Why an input was dropped (logged).
    enum Dropped: Equatable, Sendable {
        case sfuSessionNotConnected(CallID)
        case sfuSignalForNoSession(CallID)
        case mediaSignalNotConnected(CallID)
        /// The call goes through an SFU and the engine cannot.
        case engineCannotSFU(CallID)
    }

    enum Action: Equatable, Sendable {
        /// Stop the status reports of the call that ended.
        case stopReports
        case startAudio
        case stopAudio
        case engineCallEnded(CallID)
        /// Start the status reports of `CallID` (before the engine hears of it).
        case startReports(CallID)
        case engineCallConnected(Connection)
        case engineMediaTypeChanged(CallID, CallMediaType)
        /// Open the connection to a member, with `.start` queued; `afterClosing`: once that
        /// member's closing connection closed.
        case openPeer(UserID, callId: CallID, me: UserID, afterClosing: Bool)
        /// Finish the connection's inputs: it closes after what it is doing.
        case closePeer(UserID)
        /// The closing connection to this member is no longer remembered (the bound).
        case forgetClosing(UserID)
        case toPeer(UserID, PeerInput)
        /// Open `session`'s two connections, with `.start` queued; `afterClosing`: once the
        /// session before it closed.
        case openSFU(SFUSessionEvent, afterClosing: Bool)
        /// Finish the current session's inputs: its connections close after what it is doing.
        case closeSFU
        case toSFU(SFUInput)
        case requestLayer(SetVideoLayerRequest)
        case drop(Dropped)
    }

    /// Most closing connections remembered; beyond that the oldest are forgotten (their close
    /// has long been done).
    static let closingLimit = 256

    let engine: Engine
    private(set) var control = AudioSessionControl.automatic
    private(set) var sessionActive = false
    private(set) var connected: Connection?
    private(set) var audioRunning = false
    /// Members with an open peer connection.
    private(set) var peers: Set<UserID> = []
    /// Members whose connection is closing, oldest first.
    private(set) var closing: [UserID] = []
    /// The SFU session open now.
    private(set) var sfuSession: Int?
    /// Whether an SFU session was closed (the next one opens after it).
    private(set) var sfuClosed = false
    /// The camera layers the device store wants, and those the server was asked for in this call.
    private(set) var wantedLayers: [UserID: VideoLayer] = [:]
    private(set) var sentLayers: [UserID: VideoLayer] = [:]

    init(engine: Engine) {
        self.engine = engine
    }

    // MARK: - inputs

    /// The device's connected call in the state is now `connection` (nil: none).
    mutating func connectionChanged(to connection: Connection?) -> [Action] {
        let previous = connected
        var actions: [Action] = []
        if let previous, previous.callId != connection?.callId {
            actions += closePeers(peers) + closeSFU()
            connected = nil
            sentLayers = [:]
            actions += [.stopReports] + audio() + [.engineCallEnded(previous.callId)]
        }
        guard let connection else { return actions }
        connected = connection
        if connection.callId != previous?.callId {
            actions += [.startReports(connection.callId), .engineCallConnected(connection)] + audio()
        } else if previous?.mediaType != connection.mediaType {
            // The peer connections were told to expect the offerer's offer when the change was
            // agreed (``serverEvent(_:)``).
            actions.append(.engineMediaTypeChanged(connection.callId, connection.mediaType))
        }
        guard engine >= .peers else { return actions }
        if connection.media == .sfu {
            // Through the SFU (from the start, or since the call became a group call): no
            // connection per member; the server's `sfuSession` starts the media.
            return actions + closePeers(peers) + layerRequests()
        }
        // Only members who left are closed: a connection a member's signal opened before this
        // device's state showed them in the call stays.
        if let previous, previous.callId == connection.callId {
            actions += closePeers(previous.peers.subtracting(connection.peers))
        }
        for peer in connection.peers.sorted(by: { $0.rawValue < $1.rawValue }) {
            actions += openPeer(peer, callId: connection.callId)
        }
        return actions
    }

    /// A server event, heard after the state changes it caused.
    mutating func serverEvent(_ event: ServerEvent) -> [Action] {
        guard engine >= .peers else { return [] }
        switch event {
        case .sfuSession(let session):
            guard let connected, connected.callId == session.callId, connected.media == .sfu else {
                return [.drop(.sfuSessionNotConnected(session.callId))]
            }
            guard engine >= .sfu else { return [.drop(.engineCannotSFU(session.callId))] }
            if let current = sfuSession, current >= session.session { return [] }
            let actions = closeSFU()
            sfuSession = session.session
            return actions + [.openSFU(session, afterClosing: sfuClosed)]
        case .sfuSignal(let signal):
            guard sfuSession == signal.session, connected?.callId == signal.callId else {
                return [.drop(.sfuSignalForNoSession(signal.callId))]
            }
            return [.toSFU(.signal(signal))]
        case .mediaSignal(let signal):
            guard connected?.callId == signal.callId else { return [.drop(.mediaSignalNotConnected(signal.callId))] }
            let open = openPeer(signal.from, callId: signal.callId)
            guard peers.contains(signal.from) else { return open }
            return open + [.toPeer(signal.from, .signal(signal))]
        case .memberMoved(let moved):
            // The member is on another device now: the connection to them starts over (the new
            // one opens once the old one closed; the engine knows connections by member).
            guard let connected, connected.callId == moved.callId, peers.contains(moved.userId) else { return [] }
            return closePeers([moved.userId]) + openPeer(moved.userId, callId: moved.callId)
        case .mediaTypeChangeResult(let change) where change.result == .agreed:
            guard connected?.callId == change.callId else { return [] }
            return toEveryPeer(.expectOffer)
        default:
            return []
        }
    }

    /// Who controls call audio changed.
    mutating func controlChanged(to control: AudioSessionControl) -> [Action] {
        self.control = control
        return audio()
    }

    /// The system's audio session became active or inactive.
    mutating func audioSession(active: Bool) -> [Action] {
        sessionActive = active
        return audio()
    }

    /// The device store wants these layers of the members' cameras.
    mutating func layersWanted(_ layers: [UserID: VideoLayer]) -> [Action] {
        wantedLayers = layers
        return layerRequests()
    }

    /// The signaling connection came back: ICE may not have survived the network change.
    func reconnected() -> [Action] {
        toEveryPeer(.networkChanged)
    }

    // MARK: - rules

    /// Starts or stops audio when the state decides it.
    private mutating func audio() -> [Action] {
        let shouldRun = connected != nil && (control == .automatic || sessionActive)
        guard shouldRun != audioRunning else { return [] }
        audioRunning = shouldRun
        return [shouldRun ? .startAudio : .stopAudio]
    }

    /// Opens the connection to `user` in the connected call unless it is open (or cannot be:
    /// this device's own user, an SFU call).
    private mutating func openPeer(_ user: UserID, callId: CallID) -> [Action] {
        guard let connected, connected.callId == callId, user != connected.me, connected.media != .sfu,
            !peers.contains(user)
        else { return [] }
        let afterClosing = closing.contains(user)
        closing.removeAll { $0 == user }
        peers.insert(user)
        return [.openPeer(user, callId: callId, me: connected.me, afterClosing: afterClosing)]
    }

    private mutating func closePeers(_ users: Set<UserID>) -> [Action] {
        var actions: [Action] = []
        for user in users.intersection(peers).sorted(by: { $0.rawValue < $1.rawValue }) {
            peers.remove(user)
            closing.removeAll { $0 == user }
            closing.append(user)
            actions.append(.closePeer(user))
        }
        while closing.count > Self.closingLimit { actions.append(.forgetClosing(closing.removeFirst())) }
        return actions
    }

    private mutating func closeSFU() -> [Action] {
        guard sfuSession != nil else { return [] }
        sfuSession = nil
        sfuClosed = true
        return [.closeSFU]
    }

    private func toEveryPeer(_ input: PeerInput) -> [Action] {
        peers.sorted { $0.rawValue < $1.rawValue }.map { .toPeer($0, input) }
    }

    /// Asks for the wanted layers of the connected SFU call's members that the server was not
    /// asked for yet (it keeps a choice for the rest of the call).
    private mutating func layerRequests() -> [Action] {
        guard let connected, connected.media == .sfu else { return [] }
        let changed = wantedLayers.filter { connected.peers.contains($0.key) && sentLayers[$0.key] != $0.value }
            .sorted { $0.key.rawValue < $1.key.rawValue }
        for (user, layer) in changed { sentLayers[user] = layer }
        return changed.map { .requestLayer(SetVideoLayerRequest(callId: connected.callId, userId: $0.key, layer: $0.value)) }
    }
}
