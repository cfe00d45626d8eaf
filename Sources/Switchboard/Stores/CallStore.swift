import Foundation
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Calls: place, answer, reject, hang up, invite, join; the active call's state with a live
/// duration; call events; call records. `CallStore.shared` is the store of ``SwitchboardClient/shared``.
public final class CallStore: Sendable {
    /// The store's one state value (STYLE habit 6).
    public struct State: Equatable, Sendable {
        /// The call on screen: the one you are in, else the newest one ringing; nil when idle.
        public var activeCall: ActiveCall?
        /// You, in the active call (`none` when idle).
        public var selfInfo: CallParticipantInfo
        /// Every member of the active call, you included, the caller first.
        public var allParticipants: [CallParticipantInfo]
        /// The member other than you who is speaking loudest in the active call (the pip layout
        /// shows them); it stays on the last speaker through silence.
        public var activeSpeakerId: UserID?
        /// Calls ringing while you are in another one (call waiting), newest last.
        public var waitingCalls: [CallInfo]
        /// An open media-type change in the active call.
        public var mediaTypeChange: MediaTypeChange?
        /// Calls you are in on another of your devices.
        public var callsOnOtherDevices: [CallInfo]

        /// Every call this device takes part in, by id.
        var calls: [CallID: Tracked] = [:]
        /// The order calls arrived in, to pick the newest.
        var arrival: [CallID] = []
        /// Your own quality and volume, from your reports.
        var ownStatus: OwnStatus?

        struct OwnStatus: Equatable, Sendable {
            var quality: NetworkQuality
            var volume: VolumeLevel
            var statistics: MemberStatistics
        }

        struct Tracked: Equatable, Sendable {
            var info: CallInfo
            var direction: CallDirection
            var inviterId: UserID
            var announcedStart = false
            /// The other members' last raw statistics (`memberStats`).
            var statistics: [UserID: MemberStatistics] = [:]
            /// Members this device has no media path to (its connection to them gave up restarting
            /// ICE): their network quality shows `down`, whatever their own reports say.
            var unreachable: Set<UserID> = []

            /// The quality to show for `userId`, given what they report.
            func quality(of userId: UserID, reported: NetworkQuality?) -> NetworkQuality {
                unreachable.contains(userId) ? .down : reported ?? .unknown
            }
        }

        /// A state as the store would publish it, for previews of call views and for tests of view
        /// logic; the store makes its own.
        public init(
            activeCall: ActiveCall?, selfInfo: CallParticipantInfo, allParticipants: [CallParticipantInfo],
            activeSpeakerId: UserID? = nil, waitingCalls: [CallInfo] = [], mediaTypeChange: MediaTypeChange? = nil,
            callsOnOtherDevices: [CallInfo] = []
        ) {
            self.activeCall = activeCall
            self.selfInfo = selfInfo
            self.allParticipants = allParticipants
            self.activeSpeakerId = activeSpeakerId
            self.waitingCalls = waitingCalls
            self.mediaTypeChange = mediaTypeChange
            self.callsOnOtherDevices = callsOnOtherDevices
        }

        init(userId: UserID) {
            self.activeCall = nil
            self.selfInfo = CallParticipantInfo(userId: userId)
            self.allParticipants = []
            self.activeSpeakerId = nil
            self.waitingCalls = []
            self.mediaTypeChange = nil
            self.callsOnOtherDevices = []
        }
    }

    /// The store of the shared client.
    public static var shared: CallStore { SwitchboardClient.shared.callStore }

    let cell = StateCell(State(userId: ""))
    /// Published under the cell's lock, through the cell's outbox: events and states reach every
    /// observer in the order they happened.
    private let eventHub: Observers<CallStoreEvent>
    private let signaling: SignalingClient
    private let configuration: NIOLockedValueBox<SwitchboardConfiguration>
    /// The configured clock (the call timer's).
    private var clock: any SwitchboardClock { configuration.withLockedValue { $0.clock } }
    private let selfId = NIOLockedValueBox<UserID>("")
    private let ticker = NIOLockedValueBox<(task: Task<Void, Never>?, startTime: Int64?)>((nil, nil))
    private let deviceReports = NIOLockedValueBox<Task<Void, Never>?>(nil)
    private let devices: DeviceStore

    init(signaling: SignalingClient, configuration: NIOLockedValueBox<SwitchboardConfiguration>, devices: DeviceStore) {
        self.signaling = signaling
        self.configuration = configuration
        self.devices = devices
        self.eventHub = Observers(outbox: cell.observers.outbox)
    }

    /// The current state.
    public var state: State { cell.value }

    /// The current state, then every change.
    public var stateUpdates: AsyncStream<State> { cell.subscribe() }

    /// Call events from now on, after an `onCallReceived` for each call ringing for you already: a
    /// late subscriber (a view made after the invitation came) still learns of it.
    public var events: AsyncStream<CallStoreEvent> { AsyncStream.observing(observeEvents) }

    /// Calls `observer` with an `onCallReceived` for each call ringing for you, then with every
    /// event; returns what stops it.
    func observeEvents(_ observer: @escaping @Sendable (CallStoreEvent) -> Void) -> @Sendable () -> Void {
        let hub = eventHub
        let id = cell.withValue { state in hub.add(replay: state.ringingCalls, observer) }
        return { hub.remove(id) }
    }

    // MARK: - placing and answering

    /// Places a call: one participant for one-to-one, several for a group call.
    @discardableResult
    public func calls(
        participantIds: [String], mediaType: CallMediaType, params: CallParams = CallParams()
    ) async throws -> CallStartResult {
        try await calls(participantIds: participantIds, mediaType: mediaType, params: params, placed: { _ in })
    }

    /// Places a call; `placed` runs with the new call's id before the store or any observer hears
    /// of the call (the CallKit bridge pairs its UUID with the call there).
    package func calls(
        participantIds: [String], mediaType: CallMediaType, params: CallParams,
        placed: @escaping @Sendable (CallID) -> Void
    ) async throws -> CallStartResult {
        let request = StartCallRequest(
            participantIds: participantIds.map(UserID.init(rawValue:)), mediaType: mediaType, params: params)
        let response = try await signaling.send(request) { [self] response in
            placed(response.callId)
            apply {
                $0.track(State.Tracked(info: response.call, direction: .outgoing, inviterId: response.call.callerId))
                return [
                    .onCallPlaced(
                        callId: response.callId, participantIds: request.participantIds, mediaType: response.call.mediaType)
                ]
            }
        }
        reportDevices(for: response.callId)
        return CallStartResult(callId: response.callId, roomId: response.roomId, busyUserIds: response.busyUserIds)
    }

    /// Answers a ringing call (the active one when `callId` is nil). With call waiting, answering
    /// hangs up the call you are in.
    public func accept(callId: CallID? = nil) async throws {
        let id = try ringingCallId(callId)
        _ = try await signaling.send(AcceptCallRequest(callId: id)) { [self] response in
            let me = selfId.withLockedValue { $0 }
            apply { $0.update(with: response.call, selfId: me) }
        }
        reportDevices(for: id)
    }

    /// Joins a group call you were invited to or whose chat group you are in.
    public func join(callId: CallID) async throws {
        _ = try await signaling.send(JoinCallRequest(callId: callId)) { [self] response in
            let me = selfId.withLockedValue { $0 }
            apply { state in
                if state.calls[callId] == nil {
                    state.track(
                        State.Tracked(
                            info: response.call, direction: .incoming,
                            inviterId: response.call.participant(me)?.inviterId ?? response.call.callerId))
                    return []
                }
                return state.update(with: response.call, selfId: me)
            }
        }
        reportDevices(for: callId)
    }

    /// Invites more people into the active call (or `callId`; a one-to-one call becomes a group call); returns who was busy.
    @discardableResult
    public func invite(participantIds: [String], callId: CallID? = nil) async throws -> [UserID] {
        let id = try currentCallId(callId)
        let response = try await signaling.send(
            InviteToCallRequest(callId: id, participantIds: participantIds.map(UserID.init(rawValue:)))
        ) { [self] response in
            let me = selfId.withLockedValue { $0 }
            apply { $0.update(with: response.call, selfId: me) }
        }
        return response.busyUserIds
    }

    /// Rejects a ringing call (the active one when `callId` is nil) on all your devices.
    public func reject(callId: CallID? = nil) async throws {
        _ = try await signaling.send(RejectCallRequest(callId: try ringingCallId(callId)))
    }

    /// Leaves a call (the active one when `callId` is nil): hang up when connected, cancel when
    /// calling, reject when ringing.
    public func hangup(callId: CallID? = nil) async throws {
        _ = try await signaling.send(HangupCallRequest(callId: try currentCallId(callId)))
    }

    // MARK: - media type

    /// Asks the other member of the active one-to-one call to switch to `mediaType`.
    @discardableResult
    public func requestMediaTypeChange(to mediaType: CallMediaType, callId: CallID? = nil) async throws -> TransactionID {
        let id = try currentCallId(callId)
        let me = selfId.withLockedValue { $0 }
        let response = try await signaling.send(ChangeMediaTypeRequest(callId: id, mediaType: mediaType)) { [self] response in
            apply { state in
                state.mediaTypeChange = MediaTypeChange(
                    callId: id, transactionId: response.transactionId, mediaType: mediaType, requesterId: me)
                return []
            }
        }
        return response.transactionId
    }

    /// Agrees to or declines the other member's media-type change.
    public func replyMediaTypeChange(transactionId: TransactionID, agree: Bool) async throws {
        guard let change = state.mediaTypeChange, change.transactionId == transactionId else {
            throw SwitchboardError(.transactionNotFound)
        }
        _ = try await signaling.send(
            ReplyMediaTypeChangeRequest(callId: change.callId, transactionId: transactionId, agree: agree))
    }

    /// Withdraws your own media-type change before the peer answers.
    public func cancelMediaTypeChange(transactionId: TransactionID) async throws {
        guard let change = state.mediaTypeChange, change.transactionId == transactionId else {
            throw SwitchboardError(.transactionNotFound)
        }
        _ = try await signaling.send(CancelMediaTypeChangeRequest(callId: change.callId, transactionId: transactionId))
    }

    // MARK: - live status

    /// Reports this member's media statistics. With a media engine the SDK does it once a second
    /// from the engine's statistics; without one, call it about once a second while in a call. The
    /// other members see your network quality and volume level.
    public func reportStatus(packetLoss: Double, rtt: Int, bitrate: Int, audioLevel: Int) async throws {
        let id = try currentCallId(nil)
        let microphoneOn = devices.state.microphoneStatus == .on
        _ = try await signaling.send(
            StatusReportRequest(callId: id, packetLoss: packetLoss, rtt: rtt, bitrate: bitrate, audioLevel: audioLevel)
        ) { [self] _ in
            apply { state in
                state.ownStatus = State.OwnStatus(
                    quality: NetworkQuality.from(packetLoss: packetLoss, rtt: rtt),
                    volume: VolumeLevel.from(audioLevel: audioLevel, microphoneOn: microphoneOn),
                    statistics: MemberStatistics(packetLoss: packetLoss, rtt: rtt, bitrate: bitrate, audioLevel: audioLevel))
                return []
            }
        }
    }

    /// The media connection to a member gave up (no path between the two devices, no relay) or
    /// came back (``PeerLink``): the member's network quality shows `down` meanwhile.
    func mediaPathChanged(callId: CallID, userId: UserID, reachable: Bool) {
        apply { state in
            guard var call = state.calls[callId], let participant = call.info.participant(userId) else { return [] }
            let changed = reachable ? call.unreachable.remove(userId) != nil : call.unreachable.insert(userId).inserted
            guard changed else { return [] }
            state.calls[callId] = call
            return [
                .onMemberStatusChanged(
                    callId: callId, userId: userId, networkQuality: call.quality(of: userId, reported: participant.networkQuality),
                    volumeLevel: participant.volumeLevel ?? .mute)
            ]
        }
    }

    // MARK: - push

    /// Tells the store about a VoIP push (the CallKit bridge hands each one over). An invitation
    /// shows as a ringing call right away, before the login that follows the push completes; the
    /// server then confirms it, or says how it ended meanwhile. An end push ends it.
    public func receivedPush(_ push: VoIPPush) {
        let me = selfId.withLockedValue { $0 }
        switch push {
        case .incomingCall(let invitation):
            apply { state in
                guard state.calls[invitation.callId] == nil else { return [] }
                let inviter = invitation.inviterId ?? invitation.callerId
                let callee = invitation.userId ?? me
                let info = CallInfo(
                    callId: invitation.callId, roomId: RoomID(rawValue: invitation.callId.rawValue),
                    callType: invitation.callType, mediaType: invitation.mediaType, callerId: invitation.callerId,
                    userData: invitation.userData, timeout: CallLimits.defaultTimeoutSeconds, createdAt: 0,
                    participants: [
                        CallParticipant(userId: invitation.callerId, status: .waiting, nickname: invitation.callerName),
                        CallParticipant(userId: callee, status: .waiting, inviterId: inviter),
                    ])
                state.track(State.Tracked(info: info, direction: .incoming, inviterId: inviter))
                return [
                    .onCallReceived(
                        callId: invitation.callId, callerId: invitation.callerId, inviterId: inviter,
                        mediaType: invitation.mediaType, userData: invitation.userData)
                ]
            }
        case .callEnded(let end):
            apply { state in
                guard let mediaType = state.calls[end.callId]?.info.mediaType, state.forget(end.callId) else { return [] }
                return [.onCallEnded(callId: end.callId, mediaType: end.mediaType ?? mediaType, reason: end.reason, userId: nil)]
            }
        }
    }

    // MARK: - blocking

    /// Blocks callers: their calls never ring for you. Returns everyone you block now.
    @discardableResult
    public func blockUsers(_ userIds: [String]) async throws -> [UserID] {
        try await signaling.send(BlockUsersRequest(userIds: userIds.map(UserID.init(rawValue:)))).userIds
    }

    /// Lets blocked callers call you again. Returns everyone you still block.
    @discardableResult
    public func unblockUsers(_ userIds: [String]) async throws -> [UserID] {
        try await signaling.send(UnblockUsersRequest(userIds: userIds.map(UserID.init(rawValue:)))).userIds
    }

    /// Everyone you block.
    public func blockedUsers() async throws -> [UserID] {
        try await signaling.send(BlockedUsersRequest()).userIds
    }

    // MARK: - records

    /// One page of your call records (count 1…100). Start with `syncTime` -1, continue with the
    /// returned `syncTime` while `hasMore`.
    public func queryRecords(syncTime: Int64 = -1, count: Int = 30, order: RecordOrder = .descending) async throws
        -> QueryRecordsResponse
    {
        try await signaling.send(QueryRecordsRequest(syncTime: syncTime, count: count, order: order))
    }

    /// Deletes your records of these calls (others keep theirs); returns how many were deleted.
    @discardableResult
    public func deleteRecords(callIds: [CallID]) async throws -> Int {
        try await signaling.send(DeleteRecordsRequest(callIds: callIds)).deleted
    }

    /// Deletes all your records; returns how many were deleted.
    @discardableResult
    public func deleteAllRecords() async throws -> Int {
        try await signaling.send(DeleteAllRecordsRequest()).deleted
    }

    // MARK: - events from the server

    func loggedIn(as user: UserID) {
        selfId.withLockedValue { $0 = user }
        apply { _ in [] }
    }

    /// Forgets every call (after a logout).
    func reset() {
        apply { state in
            state = State(userId: state.selfInfo.userId)
            return []
        }
    }

    func handle(_ event: ServerEvent) {
        let me = selfId.withLockedValue { $0 }
        switch event {
        case .callReceived(let e):
            apply { state in
                let isNew = state.calls[e.call.callId] == nil
                state.track(State.Tracked(info: e.call, direction: .incoming, inviterId: e.inviterId))
                return isNew
                    ? [
                        .onCallReceived(
                            callId: e.call.callId, callerId: e.call.callerId, inviterId: e.inviterId,
                            mediaType: e.call.mediaType, userData: e.call.userData)
                    ] : []
            }
        case .callStarted(let e):
            apply { state in
                var events: [CallStoreEvent] = []
                if state.calls[e.call.callId] == nil {
                    state.track(State.Tracked(info: e.call, direction: Self.direction(e.call, me), inviterId: Self.inviter(e.call, me)))
                } else {
                    events = state.update(with: e.call, selfId: me)
                }
                if state.calls[e.call.callId]?.announcedStart == false, let start = e.call.startTime {
                    state.calls[e.call.callId]?.announcedStart = true
                    events.append(.onCallStarted(callId: e.call.callId, mediaType: e.call.mediaType, startTime: start))
                }
                return events
            }
        case .callUpdated(let e):
            apply { state in
                if state.calls[e.call.callId] == nil {
                    state.track(State.Tracked(info: e.call, direction: Self.direction(e.call, me), inviterId: Self.inviter(e.call, me)))
                    return []
                }
                return state.update(with: e.call, selfId: me)
            }
        case .callEnded(let e):
            apply { state in
                // Ends of calls this device never knew (replayed after a login) are not news.
                guard state.forget(e.callId) else { return [] }
                return [.onCallEnded(callId: e.callId, mediaType: e.mediaType, reason: e.reason, userId: e.userId)]
            }
        case .callsSynced(let e):
            apply { state in
                // After a login everything missed has been replayed: a call still shown but not
                // listed ended longer ago than the server remembers.
                let current = Set(e.callIds)
                let stale = state.arrival.filter { !current.contains($0) }
                let events = stale.compactMap { id -> CallStoreEvent? in
                    guard let mediaType = state.calls[id]?.info.mediaType, state.forget(id) else { return nil }
                    return .onCallEnded(callId: id, mediaType: mediaType, reason: .endByServer, userId: nil)
                }
                let elsewhere = Set(e.elsewhereCallIds)
                state.callsOnOtherDevices.removeAll { !elsewhere.contains($0.callId) }
                return events
            }
        case .callRecord(let e):
            apply { _ in [.onCallRecord(e.record)] }
        case .deviceChanged(let e):
            apply { state in
                let wasSharing = state.calls[e.callId]?.info.participant(e.userId)?.screenSharing ?? nil
                state.updateParticipant(e.callId, e.userId) {
                    $0.microphoneOn = e.microphoneOn
                    $0.cameraOn = e.cameraOn
                    $0.screenSharing = e.screenSharing ? true : nil
                }
                var events: [CallStoreEvent] = [
                    .onRemoteDeviceChanged(
                        callId: e.callId, userId: e.userId, microphoneOn: e.microphoneOn, cameraOn: e.cameraOn)
                ]
                if (wasSharing ?? false) != e.screenSharing {
                    events.append(.onRemoteScreenShareChanged(callId: e.callId, userId: e.userId, sharing: e.screenSharing))
                }
                return events
            }
        case .memberStatus(let e):
            apply { state in
                state.updateParticipant(e.callId, e.userId) {
                    $0.networkQuality = e.networkQuality == .unknown ? nil : e.networkQuality
                    $0.volumeLevel = e.volumeLevel
                }
                let quality = state.calls[e.callId]?.quality(of: e.userId, reported: e.networkQuality) ?? e.networkQuality
                return [
                    .onMemberStatusChanged(callId: e.callId, userId: e.userId, networkQuality: quality, volumeLevel: e.volumeLevel)
                ]
            }
        case .memberStats(let e):
            apply { state in
                // Only members in the call report; the table has one entry per member at most.
                guard state.calls[e.callId]?.info.participant(e.userId) != nil else { return [] }
                state.calls[e.callId]?.statistics[e.userId] = MemberStatistics(
                    packetLoss: e.packetLoss, rtt: e.rtt, bitrate: e.bitrate, audioLevel: e.audioLevel)
                return []
            }
        case .mediaTypeChangeRequested(let e):
            apply { state in
                state.mediaTypeChange = MediaTypeChange(
                    callId: e.callId, transactionId: e.transactionId, mediaType: e.mediaType, requesterId: e.userId)
                return [
                    .onMediaTypeChangeRequested(
                        callId: e.callId, transactionId: e.transactionId, mediaType: e.mediaType, userId: e.userId)
                ]
            }
        case .mediaTypeChangeResult(let e):
            apply { state in
                if state.mediaTypeChange?.transactionId == e.transactionId { state.mediaTypeChange = nil }
                return [
                    .onMediaTypeChangeResult(
                        callId: e.callId, transactionId: e.transactionId, mediaType: e.mediaType, userId: e.userId,
                        result: e.result)
                ]
            }
            // CallPlus: switching to audio turns the camera off, switching to video turns it on.
            if e.result == .agreed {
                if e.mediaType == .audio { devices.closeLocalCamera() } else { devices.openLocalCamera() }
            }
        case .callElsewhere(let e):
            apply { state in
                state.callsOnOtherDevices.removeAll { $0.callId == e.call.callId }
                if e.active { state.callsOnOtherDevices.append(e.call) }
                return [.onCallElsewhere(callId: e.call.callId, deviceId: e.deviceId, active: e.active)]
            }
        case .sessionEnded, .mediaSignal, .sfuSession, .sfuSignal:
            // Media signals go to the media session (SwitchboardClient routes them).
            break
        }
    }

    /// Runs `work` once every observer of the state has heard of the changes made so far, in
    /// the one order in which they hear of changes (on this thread, or on the one delivering them).
    /// The media coordinator hears of each server event this way, after the state changes the
    /// event caused.
    func afterChanges(_ work: @escaping @Sendable () -> Void) {
        cell.observers.outbox.enqueue(work)
        cell.observers.outbox.drain()
    }

    // MARK: - internals

    /// Changes the state and publishes the events the change produced, in one critical section
    /// (so a late subscriber's replay and the events never overlap), then keeps the ticker right.
    private func apply(_ change: (inout State) -> [CallStoreEvent]) {
        let me = selfId.withLockedValue { $0 }
        let hub = eventHub
        cell.update { state in
            let events = change(&state)
            state.refresh(selfId: me)
            events.forEach(hub.publish)
        }
        afterChange()
    }

    private static func direction(_ call: CallInfo, _ me: UserID) -> CallDirection {
        call.callerId == me ? .outgoing : .incoming
    }

    private static func inviter(_ call: CallInfo, _ me: UserID) -> UserID {
        call.participant(me)?.inviterId ?? call.callerId
    }

    private func ringingCallId(_ callId: CallID?) throws -> CallID {
        if let callId { return callId }
        let current = state
        if let active = current.activeCall, current.selfInfo.status == .waiting, active.direction == .incoming {
            return active.callId
        }
        if let waiting = current.waitingCalls.last { return waiting.callId }
        throw SwitchboardError(.callNotFound, "no ringing call")
    }

    private func currentCallId(_ callId: CallID?) throws -> CallID {
        guard let id = callId ?? state.activeCall?.callId else { throw SwitchboardError(.callNotFound, "no active call") }
        return id
    }

    /// Tells the other members this device's microphone, camera and screen-sharing state once it
    /// is in a call, and again on every change while it stays in it.
    private func reportDevices(for callId: CallID) {
        let task = Task { [weak self, devices, signaling] in
            var last: (Bool, Bool, Bool)?
            for await deviceState in devices.stateUpdates {
                guard let self, self.state.activeCall?.callId == callId else { return }
                let current = (
                    deviceState.microphoneStatus == .on, deviceState.cameraStatus == .on, deviceState.screenShare != nil
                )
                if let last, last == current { continue }
                last = current
                _ = try? await signaling.send(
                    UpdateDeviceStateRequest(
                        callId: callId, microphoneOn: current.0, cameraOn: current.1, screenSharing: current.2))
            }
        }
        deviceReports.withLockedValue { reports in
            reports?.cancel()
            reports = task
        }
    }

    /// Keeps the duration ticking while the active call is connected.
    private func afterChange() {
        let current = state
        let startTime = current.activeCall?.startTime
        let stale = ticker.withLockedValue { ticker -> Task<Void, Never>? in
            guard ticker.startTime != startTime else { return nil }
            let old = ticker.task
            ticker.startTime = startTime
            ticker.task = startTime.map(startTicker)
            return old
        }
        stale?.cancel()
        if current.activeCall == nil {
            deviceReports.withLockedValue { reports in
                reports?.cancel()
                reports = nil
            }
        }
    }

    private func startTicker(_ startTime: Int64) -> Task<Void, Never> {
        Task { [weak self, clock, signaling] in
            while !Task.isCancelled {
                let offset = await signaling.clockOffset
                // The start time and the offset come from the server: pinned, never trapped on.
                let elapsed = max(0, clock.now().clampedAdding(offset).clampedSubtracting(startTime))
                let seconds = Int(elapsed / 1000)
                self?.cell.update { state in
                    if state.activeCall?.startTime == startTime { state.activeCall?.duration = seconds }
                }
                // Wake at the next whole second of call time.
                let next = startTime.clampedAdding((elapsed - elapsed % 1000).clampedAdding(1000)).clampedSubtracting(offset)
                guard (try? await clock.sleep(until: next)) != nil else { return }
            }
        }
    }
}

extension CallStore.State {
    /// An `onCallReceived` for each call ringing for you, oldest first.
    var ringingCalls: [CallStoreEvent] {
        arrival.compactMap { id -> CallStoreEvent? in
            guard let call = calls[id], call.direction == .incoming,
                call.info.participant(selfInfo.userId)?.status == .waiting
            else { return nil }
            return .onCallReceived(
                callId: id, callerId: call.info.callerId, inviterId: call.inviterId, mediaType: call.info.mediaType,
                userData: call.info.userData)
        }
    }

    /// Stops tracking a call; false when it was not tracked.
    mutating func forget(_ callId: CallID) -> Bool {
        guard calls.removeValue(forKey: callId) != nil else { return false }
        arrival.removeAll { $0 == callId }
        if mediaTypeChange?.callId == callId { mediaTypeChange = nil }
        return true
    }

    mutating func track(_ call: Tracked) {
        if calls[call.info.callId] == nil { arrival.append(call.info.callId) }
        var call = call
        call.announcedStart = calls[call.info.callId]?.announcedStart ?? false
        calls[call.info.callId] = call
    }

    /// Replaces a tracked call's snapshot, returning an event for each member whose status changed
    /// and, for the other members in the call, each change of device or of status report.
    mutating func update(with info: CallInfo, selfId: UserID) -> [CallStoreEvent] {
        guard let old = calls[info.callId]?.info else { return [] }
        calls[info.callId]?.info = info
        var events: [CallStoreEvent] = []
        for participant in info.participants {
            let before = old.participant(participant.userId)
            if before?.status != participant.status {
                events.append(
                    .onParticipantStatusChanged(
                        callId: info.callId, userId: participant.userId, status: participant.status,
                        reason: participant.endReason))
            }
            // What the snapshot says of the others that their events would have said: a device
            // that was away (a reconnect, a server restart) learns what it missed.
            guard let before, participant.userId != selfId, participant.status == .accept else { continue }
            if before.microphoneOn != participant.microphoneOn || before.cameraOn != participant.cameraOn {
                events.append(
                    .onRemoteDeviceChanged(
                        callId: info.callId, userId: participant.userId, microphoneOn: participant.microphoneOn,
                        cameraOn: participant.cameraOn))
            }
            if (before.screenSharing ?? false) != (participant.screenSharing ?? false) {
                events.append(
                    .onRemoteScreenShareChanged(
                        callId: info.callId, userId: participant.userId, sharing: participant.screenSharing ?? false))
            }
            if before.networkQuality != participant.networkQuality || before.volumeLevel != participant.volumeLevel {
                let quality = calls[info.callId]?.quality(of: participant.userId, reported: participant.networkQuality)
                events.append(
                    .onMemberStatusChanged(
                        callId: info.callId, userId: participant.userId,
                        networkQuality: quality ?? .unknown, volumeLevel: participant.volumeLevel ?? .mute))
            }
        }
        return events
    }

    /// Changes one participant of a tracked call's snapshot.
    mutating func updateParticipant(_ callId: CallID, _ userId: UserID, _ change: (inout CallParticipant) -> Void) {
        guard let index = calls[callId]?.info.participants.firstIndex(where: { $0.userId == userId }) else { return }
        change(&calls[callId]!.info.participants[index])
    }

    /// Recomputes the public fields from the tracked calls.
    mutating func refresh(selfId: UserID) {
        func isIn(_ call: Tracked) -> Bool {
            guard let me = call.info.participant(selfId) else { return false }
            return me.status == .accept || (call.direction == .outgoing && me.status == .waiting)
        }
        let ordered = arrival.compactMap { calls[$0] }
        let current = ordered.last(where: isIn) ?? ordered.last
        guard let current else {
            activeCall = nil
            selfInfo = CallParticipantInfo(userId: selfId)
            allParticipants = []
            activeSpeakerId = nil
            waitingCalls = []
            mediaTypeChange = nil
            ownStatus = nil
            return
        }
        let duration = activeCall?.callId == current.info.callId ? activeCall?.duration ?? 0 : 0
        activeCall = ActiveCall(
            info: current.info, direction: current.direction, inviterId: current.inviterId,
            duration: current.info.startTime == nil ? 0 : duration)
        allParticipants = current.info.participants.map { participant in
            var info = CallParticipantInfo(participant)
            info.statistics = current.statistics[participant.userId]
            if current.unreachable.contains(participant.userId) { info.networkQuality = .down }
            return info
        }
        if let ownStatus, let index = allParticipants.firstIndex(where: { $0.userId == selfId }) {
            allParticipants[index].networkQuality = ownStatus.quality
            allParticipants[index].volumeLevel = ownStatus.volume
            allParticipants[index].statistics = ownStatus.statistics
        }
        selfInfo = allParticipants.first { $0.userId == selfId } ?? CallParticipantInfo(userId: selfId)
        waitingCalls = ordered.filter { $0.info.callId != current.info.callId }.map(\.info)
        activeSpeakerId = Self.speaker(allParticipants, previous: activeSpeakerId, selfId: selfId)
    }

    /// The loudest other member in the call; through silence (or a tie) the previous speaker stays.
    static func speaker(_ participants: [CallParticipantInfo], previous: UserID?, selfId: UserID) -> UserID? {
        let others = participants.filter { $0.userId != selfId && $0.status == .accept }
        guard !others.isEmpty else { return nil }
        let loudest = others.max { $0.volumeLevel < $1.volumeLevel }!
        if let previous, let current = others.first(where: { $0.userId == previous }),
            current.volumeLevel >= loudest.volumeLevel || loudest.volumeLevel == .mute
        {
            return previous
        }
        return loudest.volumeLevel == .mute ? others.first?.userId : loudest.userId
    }
}
