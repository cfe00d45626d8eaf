import Logging
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Drives the app's media engine from the stores: the call's media while this device is in a
/// connected call, audio while (with external control) the system's audio session is active, every
/// ``DeviceStore`` setting, and, for a ``PeerMediaEngine``, one negotiated peer connection per
/// other member. While connected it reports the engine's statistics to the server once a second.
///
/// The rules are ``MediaCoordination``'s: this class hands it each input (the call store's
/// connected call and events, the device store's layers, the audio session, a reconnect) and
/// performs the actions it returns, owning what a value cannot hold: the engine, one task per
/// connection working through its inputs, and the status reports' task. The call store's changes
/// and events come one after another (its observers' one order), so their actions are performed
/// in the order they were decided.
final class MediaCoordinator: Sendable {
    typealias Connection = MediaCoordination.Connection
    typealias PeerInput = MediaCoordination.PeerInput
    typealias SFUInput = MediaCoordination.SFUInput

    /// A running connection: its inputs, and the task working through them.
    private struct Run<Input: Sendable> {
        var inputs: InputQueue<Input>
        var task: Task<Void, Never>
    }

    private struct State {
        var rules: MediaCoordination
        var peers: [UserID: Run<PeerInput>] = [:]
        /// Connections being closing, by member: a new connection to the same member opens once
        /// the old one is closed (the engine knows connections by member, so a late close or a
        /// late step of the old negotiation would otherwise hit the new connection).
        var closing: [UserID: Task<Void, Never>] = [:]
        var sfu: Run<SFUInput>?
        /// The last SFU session's task, closing its connections: the next session opens after it.
        var sfuClosing: Task<Void, Never>?
        /// Sends the status reports of the connected call.
        var reports: Task<Void, Never>?
        var iceServers: IceServersResponse?
    }

    /// Time between status reports, ms (SPEC §3: about once a second).
    static let reportInterval: Int64 = 1_000

    private let engine: (any MediaEngine)?
    private let signaling: SignalingClient
    private let callStore: CallStore
    private let clock: any SwitchboardClock
    private let logger: Logger
    private let state: NIOLockedValueBox<State>
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
        self.clock = clock
        self.logger = logger
        let kind: MediaCoordination.Engine =
            engine is any SFUMediaEngine ? .sfu : engine is any PeerMediaEngine ? .peers : .media
        state = NIOLockedValueBox(State(rules: MediaCoordination(engine: kind)))
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
            if changed { self?.run { $0.connectionChanged(to: connection) } }
        }
        stopObserving.withLockedValue { $0 = stop }
        let devices = Task { [weak self] in
            var last: DeviceStore.State?
            for await device in deviceStore.stateUpdates {
                Self.apply(device, changedFrom: last, to: engine)
                if last?.remoteVideoLayers != device.remoteVideoLayers {
                    self?.run { $0.layersWanted(device.remoteVideoLayers) }
                }
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
        get { state.withLockedValue { $0.rules.control } }
        set { run { $0.controlChanged(to: newValue) } }
    }

    func audioSession(active: Bool) {
        run { $0.audioSession(active: active) }
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
        run { $0.serverEvent(event) }
    }

    /// Signals dropped so far by the connection to `user` (tests).
    func droppedInputs(to user: UserID) -> Int? {
        state.withLockedValue { $0.peers[user]?.inputs.droppedCount }
    }

    /// The signaling connection came back: ICE may not have survived the network change.
    func reconnected() {
        run { $0.reconnected() }
    }

    // MARK: - the driver

    /// Decides `input` and performs its actions, in order.
    private func run(_ input: (inout MediaCoordination) -> [MediaCoordination.Action]) {
        for action in state.withLockedValue({ input(&$0.rules) }) { perform(action) }
    }

    private func perform(_ action: MediaCoordination.Action) {
        switch action {
        case .stopReports:
            state.withLockedValue { state in
                state.reports?.cancel()
                state.reports = nil
            }
        case .startAudio: engine?.startAudio()
        case .stopAudio: engine?.stopAudio()
        case .engineCallEnded(let callId): engine?.callEnded(callId: callId)
        case .startReports(let callId):
            guard let engine else { return }
            // The first report's deadline is fixed before the engine hears of the call.
            let reports = reportStatus(engine: engine, callId: callId)
            state.withLockedValue { $0.reports = reports }
        case .engineCallConnected(let connection):
            engine?.callConnected(callId: connection.callId, roomId: connection.roomId, mediaType: connection.mediaType)
        case .engineMediaTypeChanged(let callId, let mediaType):
            engine?.callMediaTypeChanged(callId: callId, mediaType: mediaType)
        case .openPeer(let user, let callId, let me, let afterClosing):
            openPeer(user, callId: callId, me: me, afterClosing: afterClosing)
        case .closePeer(let user):
            // Finishing the inputs lets the task close its connection after what it is doing.
            state.withLockedValue { state in
                guard let run = state.peers.removeValue(forKey: user) else { return }
                state.closing[user] = run.task
                run.inputs.finish()
            }
        case .forgetClosing(let user):
            _ = state.withLockedValue { $0.closing.removeValue(forKey: user) }
        case .toPeer(let user, let input):
            state.withLockedValue { state in
                guard let inputs = state.peers[user]?.inputs else { return }
                if case .signal = input { inputs.yieldSignal(input) } else { inputs.yield(input) }
            }
        case .openSFU(let session, let afterClosing):
            openSFU(session, afterClosing: afterClosing)
        case .closeSFU:
            state.withLockedValue { state in
                guard let run = state.sfu else { return }
                run.inputs.finish()
                state.sfuClosing = run.task
                state.sfu = nil
            }
        case .toSFU(let input):
            state.withLockedValue { state in
                guard let inputs = state.sfu?.inputs else { return }
                if case .signal = input { inputs.yieldSignal(input) } else { inputs.yield(input) }
            }
        case .requestLayer(let request):
            layerRequests.yield(request)
        case .drop(let reason):
            switch reason {
            case .sfuSessionNotConnected(let callId):
                logger.debug("an SFU session for a call not connected here", metadata: ["callId": "\(callId)"])
            case .sfuSignalForNoSession(let callId):
                logger.debug("an SFU signal for no current session", metadata: ["callId": "\(callId)"])
            case .mediaSignalNotConnected(let callId):
                logger.debug("a media signal for a call not connected here", metadata: ["callId": "\(callId)"])
            case .engineCannotSFU(let callId):
                logger.warning("the call goes through an SFU and the media engine cannot", metadata: ["callId": "\(callId)"])
            }
        }
    }

    /// Opens the connection to `user`: one task works through its inputs in order, so
    /// negotiation steps never interleave and candidates follow the description they belong to.
    private func openPeer(_ user: UserID, callId: CallID, me: UserID, afterClosing: Bool) {
        guard let engine = engine as? any PeerMediaEngine else { return }
        let inputs = InputQueue<PeerInput>("peer \(user)", logger: logger)
        let stream = inputs.stream
        let signaling = self.signaling
        let logger = self.logger
        let callStore = self.callStore
        let link = PeerLink(
            callId: callId, me: me, peer: user, engine: engine, logger: logger,
            send: { request in
                await signaling.post(request) { result in
                    if case .failure(let error) = result {
                        logger.info("a media signal was refused", metadata: ["peer": "\(user)", "error": "\(error)"])
                    }
                }
            },
            reachability: { reachable in callStore.mediaPathChanged(callId: callId, userId: user, reachable: reachable) })
        let events = PeerConnectionEvents(
            localCandidate: { inputs.yield(.localCandidate($0)) },
            negotiationNeeded: { inputs.yield(.negotiationNeeded) },
            iceFailed: { inputs.yield(.restartIce) },
            iceConnected: { inputs.yield(.iceConnected) })
        inputs.yield(.start)
        state.withLockedValue { state in
            let previous = afterClosing ? state.closing.removeValue(forKey: user) : nil
            let task = Task { [weak self] in
                await previous?.value
                let servers = await self?.iceServers() ?? []
                engine.openPeer(user, iceServers: servers, events: events)
                for await input in stream {
                    switch input {
                    case .start: await link.start()
                    case .signal(let signal):
                        inputs.signalTaken()
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
            state.peers[user] = Run(inputs: inputs, task: task)
        }
    }

    /// Opens `session`'s two connections once the session before it closed, and offers.
    private func openSFU(_ session: SFUSessionEvent, afterClosing: Bool) {
        guard let engine = engine as? any SFUMediaEngine else { return }
        let inputs = InputQueue<SFUInput>("SFU session \(session.session)", logger: logger)
        let stream = inputs.stream
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
                localCandidate: { inputs.yield(.localCandidate(connection, $0)) },
                negotiationNeeded: { if connection == .publish { inputs.yield(.negotiationNeeded) } },
                iceFailed: { inputs.yield(.iceFailed(connection)) }, iceConnected: {})
        }
        inputs.yield(.start)
        state.withLockedValue { state in
            let previous = afterClosing ? state.sfuClosing : nil
            let task = Task { [weak self] in
                await previous?.value
                let servers = await self?.iceServers() ?? []
                engine.openSFU(.publish, iceServers: servers, events: events(.publish))
                engine.openSFU(.subscribe, iceServers: servers, events: events(.subscribe))
                for await input in stream {
                    switch input {
                    case .start: await link.start()
                    case .signal(let signal):
                        inputs.signalTaken()
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
            state.sfu = Run(inputs: inputs, task: task)
        }
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
}
