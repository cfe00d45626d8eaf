import Logging
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Drives the app's media engine from the stores: the call's media while this device is in a
/// connected call, audio while (with external control) the system's audio session is active, every
/// ``DeviceStore`` setting, and, for a ``PeerMediaEngine``, one negotiated peer connection per
/// other member. While connected it reports the engine's statistics to the server once a second.
final class MediaCoordinator: Sendable {
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

    /// What an SFU session's task works through, in order.
    enum SFUInput: Sendable {
        case start
        case signal(SFUSignalEvent)
        case localCandidate(SFUConnection, IceCandidate)
        case negotiationNeeded
        case iceFailed(SFUConnection)
    }

    private struct SFURun {
        var link: SFULink
        var inputs: InputQueue<SFUInput>
        var task: Task<Void, Never>
    }

    /// What one peer connection's task works through, in order.
    enum PeerInput: Sendable {
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

    private struct Peer {
        var link: PeerLink
        var inputs: InputQueue<PeerInput>
        var task: Task<Void, Never>
    }

    private struct State {
        var control = AudioSessionControl.automatic
        var sessionActive = false
        var connected: Connection?
        var audioRunning = false
        var peers: [UserID: Peer] = [:]
        var iceServers: IceServersResponse?
        /// Sends the status reports of the connected call.
        var reports: Task<Void, Never>?
        /// Connections being closed, by member, oldest first: a new connection to the same member
        /// opens once the old one is closed (the engine knows connections by member, so a late
        /// close or a late step of the old negotiation would otherwise hit the new connection).
        var closing: [(user: UserID, task: Task<Void, Never>)] = []
        /// The SFU session of the connected call (an SFU call).
        var sfu: SFURun?
        /// The last SFU session's task, closing its connections: the next session opens after it.
        var sfuClosing: Task<Void, Never>?
        /// The layers of the members' cameras the server was asked for in the connected call.
        var sentLayers: [UserID: VideoLayer] = [:]
    }

    /// Most closing connections remembered; beyond that the oldest are forgotten (their close
    /// has long been done).
    static let closingLimit = 256
    /// Time between status reports, ms (SPEC §3: about once a second).
    static let reportInterval: Int64 = 1_000

    private let engine: (any MediaEngine)?
    private let signaling: SignalingClient
    private let callStore: CallStore
    private let deviceStore: DeviceStore
    private let clock: any SwitchboardClock
    private let logger: Logger
    private let state = NIOLockedValueBox(State())
    private let watchers = NIOLockedValueBox<[Task<Void, Never>]>([])
    /// Stops this coordinator hearing of the call store's changes.
    private let stopObserving = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)
    /// Layer requests, posted one after another in the order they were made (the last choice wins).
    private let layerRequests: AsyncStream<SetVideoLayerRequest>.Continuation

    init(
        engine: (any MediaEngine)?, signaling: SignalingClient, clock: any SwitchboardClock, callStore: CallStore,
        deviceStore: DeviceStore, logger: Logger
    ) {
        self.engine = engine
        self.signaling = signaling
        self.callStore = callStore
        self.deviceStore = deviceStore
        self.clock = clock
        self.logger = logger
        let (requests, layerRequests) = AsyncStream<SetVideoLayerRequest>.makeStream(bufferingPolicy: .bufferingNewest(1000))
        self.layerRequests = layerRequests
        let poster = Task { [signaling, logger] in
            for await request in requests {
                await signaling.post(request) { result in
                    if case .failure(let error) = result {
                        logger.info("a layer request was refused", metadata: ["error": "\(error)"])
                    }
                }
            }
        }
        watchers.withLockedValue { $0 = [poster] }
        guard let engine else { return }
        // The connected call as the state shows it, in the one order in which the call store's
        // observers hear of its changes and, after each event's changes, of the event itself
        // (``CallStore/afterChanges(_:)``): a media signal never finds its call's state behind.
        let last = NIOLockedValueBox<Connection??>(nil)
        let stop = callStore.cell.observe { [weak self] state in
            let connection = Connection.of(state)
            let changed = last.withLockedValue { last in
                defer { last = connection }
                return last != connection
            }
            if changed { self?.connect(connection) }
        }
        stopObserving.withLockedValue { $0 = stop }
        let devices = Task { [weak self] in
            var last: DeviceStore.State?
            for await device in deviceStore.stateUpdates {
                Self.apply(device, changedFrom: last, to: engine)
                if last?.remoteVideoLayers != device.remoteVideoLayers { self?.sendLayers(device.remoteVideoLayers) }
                last = device
            }
        }
        watchers.withLockedValue { $0 += [devices] }
    }

    deinit {
        stopObserving.withLockedValue { $0?() }
        layerRequests.finish()
        watchers.withLockedValue { $0.forEach { $0.cancel() } }
        state.withLockedValue { state in
            state.peers.values.forEach { $0.task.cancel() }
            state.sfu?.task.cancel()
            state.reports?.cancel()
        }
    }

    /// Hands the engine every setting that changed (all of them the first time).
    static func apply(_ device: DeviceStore.State, changedFrom last: DeviceStore.State?, to engine: any MediaEngine) {
        if last?.microphoneStatus != device.microphoneStatus {
            engine.setMicrophone(on: device.microphoneStatus == .on)
        }
        if last?.microphoneVolume != device.microphoneVolume {
            engine.setMicrophoneVolume(device.microphoneVolume)
        }
        if last?.cameraStatus != device.cameraStatus || last?.isFrontCamera != device.isFrontCamera {
            engine.setCamera(on: device.cameraStatus == .on, front: device.isFrontCamera)
        }
        if last?.videoQuality != device.videoQuality {
            engine.setVideoQuality(device.videoQuality)
        }
        if last?.audioOutput != device.audioOutput {
            engine.setAudioOutput(device.audioOutput)
        }
        if last == nil || last?.screenShare != device.screenShare {
            engine.setScreenShare(device.screenShare)
        }
    }

    var control: AudioSessionControl {
        get { state.withLockedValue { $0.control } }
        set { update { $0.control = newValue } }
    }

    func audioSession(active: Bool) {
        update { $0.sessionActive = active }
    }

    /// A server event, heard after the state changes it caused (``CallStore/afterChanges(_:)``):
    /// media signals go to their peer connection, and so does an agreed change of media type,
    /// with the signals, in the order the server sent them (the offerer's offer that carries the
    /// change comes right after it, and a polite side must know of the change before it answers).
    ///
    /// The server relays a signal only to a member who joined, and answers a device's accept or
    /// join before it sends that device anything of the call: so a signal for a call this device's
    /// state does not show connected is one that came too late (the call ended here, or the
    /// session is an old one), and is dropped.
    func handle(_ event: ServerEvent) {
        guard engine is any PeerMediaEngine else { return }
        switch event {
        case .sfuSession(let session):
            state.withLockedValue { state in
                guard let connected = state.connected, connected.callId == session.callId, connected.media == .sfu else {
                    logger.debug("an SFU session for a call not connected here", metadata: ["callId": "\(session.callId)"])
                    return
                }
                startSFU(session, in: &state)
            }
        case .sfuSignal(let signal):
            state.withLockedValue { state in
                guard let run = state.sfu, run.link.session == signal.session, state.connected?.callId == signal.callId
                else {
                    logger.debug("an SFU signal for no current session", metadata: ["callId": "\(signal.callId)"])
                    return
                }
                run.inputs.yieldSignal(.signal(signal))
            }
        case .mediaSignal(let signal):
            state.withLockedValue { state in
                guard state.connected?.callId == signal.callId else {
                    logger.debug("a media signal for a call not connected here", metadata: ["callId": "\(signal.callId)"])
                    return
                }
                peer(signal.from, callId: signal.callId, in: &state)?.yieldSignal(.signal(signal))
            }
        case .mediaTypeChangeResult(let change) where change.result == .agreed:
            state.withLockedValue { state in
                guard state.connected?.callId == change.callId else { return }
                for peer in state.peers.values { peer.inputs.yield(.expectOffer) }
            }
        default:
            break
        }
    }

    /// Signals dropped so far by the connection to `user` (tests).
    func droppedInputs(to user: UserID) -> Int? {
        state.withLockedValue { $0.peers[user]?.inputs.droppedCount }
    }

    /// The signaling connection came back: ICE may not have survived the network change.
    func reconnected() {
        let peers = state.withLockedValue { Array($0.peers.values) }
        for peer in peers { peer.inputs.yield(.networkChanged) }
    }

    // MARK: - the connected call

    private func connect(_ connection: Connection?) {
        guard let engine else { return }
        let previous = state.withLockedValue { $0.connected }
        if let previous, previous.callId != connection?.callId {
            closePeers(nil)
            closeSFU()
            update { state in
                state.connected = nil
                state.sentLayers = [:]
                state.reports?.cancel()
                state.reports = nil
            }
            engine.callEnded(callId: previous.callId)
        }
        guard let connection else { return }
        if connection.callId != previous?.callId {
            // The first report's deadline is fixed before the engine hears of the call.
            let reports = reportStatus(engine: engine, callId: connection.callId)
            engine.callConnected(callId: connection.callId, roomId: connection.roomId, mediaType: connection.mediaType)
            update { state in
                state.connected = connection
                state.reports = reports
            }
        } else {
            state.withLockedValue { $0.connected = connection }
            if previous?.mediaType != connection.mediaType {
                // The peer connections were told to expect the offerer's offer when the change was
                // agreed (``handle(_:)``).
                engine.callMediaTypeChanged(callId: connection.callId, mediaType: connection.mediaType)
            }
        }
        guard engine is any PeerMediaEngine else { return }
        if connection.media == .sfu {
            // Through the SFU (from the start, or since the call became a group call): no
            // connection per member; the server's `sfuSession` starts the media.
            closePeers(nil)
            sendLayers(deviceStore.state.remoteVideoLayers)
            return
        }
        // Only members who left are closed: a connection a member's signal opened before this
        // device's state showed them in the call stays.
        if let previous, previous.callId == connection.callId {
            closePeers(previous.peers.subtracting(connection.peers))
        }
        state.withLockedValue { state in
            for peer in connection.peers.sorted(by: { $0.rawValue < $1.rawValue }) {
                _ = self.peer(peer, callId: connection.callId, in: &state)
            }
        }
    }

    /// The input of the connection to `user` in the connected call, opened on first use (a
    /// signal can come before this device's state shows the sender in the call). Called with the
    /// state locked, so that signals reach their connection in the order they came.
    private func peer(_ user: UserID, callId: CallID, in state: inout State) -> InputQueue<PeerInput>? {
        guard let engine = engine as? any PeerMediaEngine else { return nil }
        guard let connection = state.connected, connection.callId == callId, user != connection.me,
            connection.media != .sfu
        else { return nil }
        if let existing = state.peers[user] { return existing.inputs }
        let continuation = InputQueue<PeerInput>("peer \(user)", logger: logger)
        let inputs = continuation.stream
        let previous = state.closing.firstIndex { $0.user == user }.map { state.closing.remove(at: $0).task }
        let signaling = self.signaling
        let logger = self.logger
        let callStore = self.callStore
        let link = PeerLink(
            callId: callId, me: connection.me, peer: user, engine: engine, logger: logger,
            send: { request in
                await signaling.post(request) { result in
                    if case .failure(let error) = result {
                        logger.info("a media signal was refused", metadata: ["peer": "\(user)", "error": "\(error)"])
                    }
                }
            },
            reachability: { reachable in callStore.mediaPathChanged(callId: callId, userId: user, reachable: reachable) })
        let events = PeerConnectionEvents(
            localCandidate: { continuation.yield(.localCandidate($0)) },
            negotiationNeeded: { continuation.yield(.negotiationNeeded) },
            iceFailed: { continuation.yield(.restartIce) },
            iceConnected: { continuation.yield(.iceConnected) })
        // One task per connection works through its inputs in order: negotiation steps never
        // interleave, and candidates follow the description they belong to.
        let task = Task { [weak self] in
            await previous?.value
            let servers = await self?.iceServers() ?? []
            engine.openPeer(user, iceServers: servers, events: events)
            for await input in inputs {
                switch input {
                case .start: await link.start()
                case .signal(let signal):
                    continuation.signalTaken()
                    await link.receive(signal)
                case .localCandidate(let candidate): await link.trickle(candidate)
                case .negotiationNeeded: await link.negotiate(iceRestart: false)
                case .restartIce: await link.iceFailed()
                case .iceConnected: await link.iceConnected()
                case .networkChanged: await link.networkChanged()
                case .expectOffer: await link.expectOffer()
                }
            }
            await link.close()
            engine.closePeer(user)
        }
        continuation.yield(.start)
        state.peers[user] = Peer(link: link, inputs: continuation, task: task)
        return continuation
    }

    /// Closes the connections to `users` (nil: all).
    private func closePeers(_ users: Set<UserID>?) {
        let closing = state.withLockedValue { state -> [Peer] in
            let gone = state.peers.filter { users?.contains($0.key) ?? true }
            for (user, peer) in gone {
                state.peers[user] = nil
                state.closing.removeAll { $0.user == user }
                state.closing.append((user, peer.task))
            }
            if state.closing.count > Self.closingLimit { state.closing.removeFirst(state.closing.count - Self.closingLimit) }
            return Array(gone.values)
        }
        // Finishing the inputs lets each task close its connection after what it is doing.
        for peer in closing { peer.inputs.finish() }
    }

    // MARK: - the SFU

    /// Starts `session` (called with the state locked): the session before it closes its two
    /// connections first, then this one opens them and offers.
    private func startSFU(_ session: SFUSessionEvent, in state: inout State) {
        guard let engine = engine as? any SFUMediaEngine else {
            logger.warning("the call goes through an SFU and the media engine cannot", metadata: ["callId": "\(session.callId)"])
            return
        }
        if let current = state.sfu, current.link.session >= session.session { return }
        if let current = state.sfu {
            current.inputs.finish()
            state.sfuClosing = current.task
        }
        let previous = state.sfuClosing
        let continuation = InputQueue<SFUInput>("SFU session \(session.session)", logger: logger)
        let inputs = continuation.stream
        let signaling = self.signaling
        let logger = self.logger
        let link = SFULink(
            callId: session.callId, session: session.session, engine: engine, logger: logger,
            send: { request in
                await signaling.post(request) { result in
                    if case .failure(let error) = result {
                        logger.info("an SFU signal was refused", metadata: ["error": "\(error)"])
                    }
                }
            })
        func events(_ connection: SFUConnection) -> PeerConnectionEvents {
            PeerConnectionEvents(
                localCandidate: { continuation.yield(.localCandidate(connection, $0)) },
                negotiationNeeded: { if connection == .publish { continuation.yield(.negotiationNeeded) } },
                iceFailed: { continuation.yield(.iceFailed(connection)) }, iceConnected: {})
        }
        let task = Task { [weak self] in
            await previous?.value
            let servers = await self?.iceServers() ?? []
            engine.openSFU(.publish, iceServers: servers, events: events(.publish))
            engine.openSFU(.subscribe, iceServers: servers, events: events(.subscribe))
            for await input in inputs {
                switch input {
                case .start: await link.start()
                case .signal(let signal):
                    continuation.signalTaken()
                    await link.receive(signal)
                case .localCandidate(let connection, let candidate): await link.trickle(connection, candidate)
                case .negotiationNeeded: await link.negotiate()
                case .iceFailed(let connection): await link.iceFailed(connection)
                }
            }
            await link.close()
            engine.closeSFU(.subscribe)
            engine.closeSFU(.publish)
        }
        continuation.yield(.start)
        state.sfu = SFURun(link: link, inputs: continuation, task: task)
    }

    /// Closes the SFU session's connections (after what its task is doing).
    private func closeSFU() {
        state.withLockedValue { state in
            guard let run = state.sfu else { return }
            run.inputs.finish()
            state.sfuClosing = run.task
            state.sfu = nil
        }
    }

    /// Tells the server the layers asked for the members of the connected SFU call that it was
    /// not told yet (the server keeps a choice for the rest of the call).
    private func sendLayers(_ wanted: [UserID: VideoLayer]) {
        let changes = state.withLockedValue { state -> (CallID, [(UserID, VideoLayer)])? in
            guard let connection = state.connected, connection.media == .sfu else { return nil }
            let changed = wanted.filter { connection.peers.contains($0.key) && state.sentLayers[$0.key] != $0.value }
                .sorted { $0.key.rawValue < $1.key.rawValue }
            for (user, layer) in changed { state.sentLayers[user] = layer }
            return (connection.callId, changed)
        }
        guard let (callId, layers) = changes else { return }
        for (user, layer) in layers { layerRequests.yield(SetVideoLayerRequest(callId: callId, userId: user, layer: layer)) }
    }

    /// The ICE servers for this user, fetched once and reused while the TURN credentials have an
    /// hour left. Without an answer, host candidates only.
    private func iceServers() async -> [IceServer] {
        let now = clock.now()
        if let cached = state.withLockedValue({ $0.iceServers }), (cached.expiresAt ?? .max) > now + 3_600_000 {
            return cached.iceServers
        }
        do {
            let response = try await signaling.send(IceServersRequest())
            state.withLockedValue { $0.iceServers = response }
            return response.iceServers
        } catch {
            logger.info("no ICE servers", metadata: ["error": "\(error)"])
            return []
        }
    }

    // MARK: - status reports

    /// Once a second on the SDK's clock: the engine's statistics, as a status report for the
    /// server (the others see this member's network quality and volume from it). The next
    /// deadline is fixed before the report goes out, and a clock that jumps ahead gets one report,
    /// not one per second it skipped.
    ///
    /// The same reading tells which members' media stopped arriving (``MediaStallWatch``): the
    /// store shows them `down` until packets come again.
    private func reportStatus(engine: any MediaEngine, callId: CallID) -> Task<Void, Never> {
        let start = clock.now()
        return Task { [clock, callStore, logger] in
            var previous: (statistics: MediaStatistics?, at: Int64) = (nil, start)
            var next = start + Self.reportInterval
            var stalls = MediaStallWatch()
            while !Task.isCancelled {
                guard (try? await clock.sleep(until: next)) != nil, !Task.isCancelled else { return }
                let now = clock.now()
                next = now + Self.reportInterval
                let statistics = await engine.statistics()
                let sample = StatusSample(from: previous.statistics, to: statistics, milliseconds: now - previous.at)
                previous = (statistics, now)
                let senders = callStore.state.allParticipants.filter { $0.microphoneOn || $0.cameraOn || $0.screenSharing }
                for change in stalls.sample(
                    received: statistics.peers.mapValues(\.packetsReceived), expected: Set(senders.map(\.userId)), now: now)
                {
                    switch change {
                    case .stalled(let user): callStore.mediaFlowChanged(callId: callId, userId: user, flowing: false)
                    case .flowing(let user): callStore.mediaFlowChanged(callId: callId, userId: user, flowing: true)
                    }
                }
                do {
                    try await callStore.reportStatus(
                        packetLoss: sample.packetLoss, rtt: sample.rtt, bitrate: sample.bitrate,
                        audioLevel: sample.audioLevel)
                } catch {
                    logger.debug("a status report failed", metadata: ["error": "\(error)"])
                }
            }
        }
    }

    // MARK: - audio

    /// Applies a change and starts or stops audio when the change decides it.
    private func update(_ change: (inout State) -> Void) {
        let action = state.withLockedValue { state -> Bool? in
            change(&state)
            let shouldRun = state.connected != nil && (state.control == .automatic || state.sessionActive)
            guard shouldRun != state.audioRunning else { return nil }
            state.audioRunning = shouldRun
            return shouldRun
        }
        switch action {
        case true?: engine?.startAudio()
        case false?: engine?.stopAudio()
        case nil: break
        }
    }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
    /// The values of `key` for each element, without repeats.
    func removingDuplicates<Key: Equatable & Sendable>(
        _ key: @escaping @Sendable (Element) -> Key
    ) -> AsyncStream<Key> {
        AsyncStream { continuation in
            let task = Task {
                var last: Key?
                do {
                    for try await element in self {
                        let value = key(element)
                        if value != last { continuation.yield(value) }
                        last = value
                    }
                } catch {}
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
