import Foundation
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Calls: place, answer, reject, hang up, invite, join; the active call's state with a live
/// duration; call events; call records. `CallStore.shared` is the store of ``SwitchboardClient/shared``.
public final class CallStore: Sendable {
    /// The store of the shared client.
    public static var shared: CallStore { SwitchboardClient.shared.callStore }

    let cell = StateCell(State(userId: ""))
    /// Published under the cell's lock, through the cell's outbox: events and states reach every
    /// observer in the order they happened.
    private let eventHub: Observers<CallStoreEvent>
    let signaling: SignalingClient
    private let configuration: NIOLockedValueBox<SwitchboardConfiguration>
    /// The configured clock (the call timer's).
    private var clock: any SwitchboardClock { configuration.withLockedValue { $0.clock } }
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
            apply { $0.update(with: response.call) }
        }
        reportDevices(for: id)
    }

    /// Joins a group call you were invited to or whose chat group you are in.
    public func join(callId: CallID) async throws {
        _ = try await signaling.send(JoinCallRequest(callId: callId)) { [self] response in
            apply { state in
                if state.calls[callId] == nil {
                    state.track(
                        State.Tracked(
                            info: response.call, direction: .incoming,
                            inviterId: response.call.participant(state.userId)?.inviterId ?? response.call.callerId))
                    return []
                }
                return state.update(with: response.call)
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
            apply { $0.update(with: response.call) }
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

    // MARK: - moving a call between your devices

    /// Offers the active call (or `callId`) to another of your devices (`deviceId`), or to all of
    /// them (nil): they see ``CallStoreEvent/onCallMoveOffered(callId:fromDeviceId:expiresAt:)``
    /// and may take it until the returned time (Unix ms, server clock). A new offer replaces the
    /// last one.
    @discardableResult
    public func offerMove(callId: CallID? = nil, to deviceId: DeviceID? = nil) async throws -> Int64 {
        try await signaling.send(OfferCallMoveRequest(callId: try currentCallId(callId), deviceId: deviceId)).expiresAt
    }

    /// Takes your call onto this device: offered to it, or (where the app allows) from
    /// ``State/callsOnOtherDevices``. The call goes on here, connected, with the same id, start
    /// time and members; the device it was on leaves it without ending it.
    public func take(callId: CallID) async throws {
        do {
            try await takeCall(callId)
        } catch let error as SwitchboardError where error.code == .moveNotOffered {
            // The server has no such offer (it lapsed, another device took it, or a server that
            // died before storing it forgot it): it is not shown any more.
            apply { state in
                state.moveOffers.removeAll { $0.call.callId == callId }
                return []
            }
            throw error
        }
    }

    private func takeCall(_ callId: CallID) async throws {
        _ = try await signaling.send(TakeCallRequest(callId: callId)) { [self] response in
            apply { state in
                state.moveOffers.removeAll { $0.call.callId == callId }
                state.callsOnOtherDevices.removeAll { $0.callId == callId }
                if state.calls[callId] == nil {
                    let me = state.userId
                    state.track(
                        State.Tracked(
                            info: response.call, direction: response.call.callerId == me ? .outgoing : .incoming,
                            inviterId: response.call.participant(me)?.inviterId ?? response.call.callerId))
                    state.calls[callId]?.announcedStart = response.call.startTime != nil
                    return []
                }
                return state.update(with: response.call)
            }
        }
        reportDevices(for: callId)
    }

    // MARK: - recording

    /// Asks the server to record the active call (or `callId`) from now on, where the app's
    /// recording policy lets this member (`recordingNotAllowed` otherwise; `recordingUnavailable`
    /// when the server cannot record now). Every member hears
    /// ``CallStoreEvent/onRecordingStarted(callId:startedBy:startedAt:)``, this device included,
    /// once; the call's media goes through the server's SFU while it is recorded. To record from
    /// the start, place the call with `CallParams(record: true)`.
    public func startRecording(callId: CallID? = nil) async throws {
        let id = try currentCallId(callId)
        _ = try await signaling.send(StartRecordingRequest(callId: id)) { [self] response in
            apply { $0.update(with: response.call) }
        }
    }

    /// Asks the server to stop recording the active call (or `callId`); what was recorded so far
    /// is kept. Refused with `recordingNotAllowed` where the app records every call, or where only
    /// the caller controls the recording.
    public func stopRecording(callId: CallID? = nil) async throws {
        let id = try currentCallId(callId)
        _ = try await signaling.send(StopRecordingRequest(callId: id)) { [self] response in
            apply { $0.recordingStopped(response.call) }
        }
    }

    // MARK: - media type

    /// Asks the other member of the active one-to-one call to switch to `mediaType`.
    @discardableResult
    public func requestMediaTypeChange(to mediaType: CallMediaType, callId: CallID? = nil) async throws -> TransactionID {
        let id = try currentCallId(callId)
        let response = try await signaling.send(ChangeMediaTypeRequest(callId: id, mediaType: mediaType)) { [self] response in
            apply { state in
                state.mediaTypeChange = MediaTypeChange(
                    callId: id, transactionId: response.transactionId, mediaType: mediaType, requesterId: state.userId)
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

    /// Media from a member stopped arriving for a while, or arrives again (``MediaStallWatch``):
    /// the member's network quality shows `down` meanwhile, whatever their last report said.
    func mediaFlowChanged(callId: CallID, userId: UserID, flowing: Bool) {
        apply { state in
            guard var call = state.calls[callId], let participant = call.info.participant(userId) else { return [] }
            let changed = flowing ? call.stalled.remove(userId) != nil : call.stalled.insert(userId).inserted
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
        switch push {
        case .incomingCall(let invitation):
            apply { state in
                guard state.calls[invitation.callId] == nil else { return [] }
                let inviter = invitation.inviterId ?? invitation.callerId
                let callee = invitation.userId ?? state.userId
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

    // MARK: - events from the server

    func loggedIn(as user: UserID, device: DeviceID) {
        apply { state in
            state.userId = user
            state.deviceId = device
            return []
        }
    }

    /// Forgets every call (after a logout).
    func reset() {
        apply { state in
            state = State(userId: state.userId)
            return []
        }
    }

    /// A server event: the state changes as ``CallStore/State/reduce(_:)`` says, the app hears
    /// its events, and an agreed switch of media type turns the camera on or off.
    func handle(_ event: ServerEvent) {
        var camera: Bool?
        var hangUp: CallID?
        apply { state in
            let reduction = state.reduce(event)
            camera = reduction.camera
            hangUp = reduction.hangUp
            return reduction.events
        }
        if let hangUp {
            let signaling = self.signaling
            Task { _ = try? await signaling.send(HangupCallRequest(callId: hangUp)) }
        }
        switch camera {
        case true?: devices.openLocalCamera()
        case false?: devices.closeLocalCamera()
        case nil: break
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
        let hub = eventHub
        cell.update { state in
            let events = change(&state)
            state.refresh()
            events.forEach(hub.publish)
        }
        afterChange()
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
