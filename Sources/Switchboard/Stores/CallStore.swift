import Foundation
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Calls: place, answer, reject, hang up; the active call's state with a live duration; call
/// events; call records. `CallStore.shared` is the store of ``SwitchboardClient/shared``.
public final class CallStore: Sendable {
    /// The store's one state value (STYLE habit 6).
    public struct State: Equatable, Sendable {
        /// The call on screen: the one you are in, else the newest one ringing; nil when idle.
        public var activeCall: ActiveCall?
        /// You, in the active call (`none` when idle).
        public var selfInfo: CallParticipantInfo
        /// Every member of the active call, you included, the caller first.
        public var allParticipants: [CallParticipantInfo]
        /// Calls ringing while you are in another one (call waiting), newest last.
        public var waitingCalls: [CallInfo]

        /// Every call this device takes part in, by id.
        var calls: [CallID: Tracked] = [:]
        /// The order calls arrived in, to pick the newest.
        var arrival: [CallID] = []

        struct Tracked: Equatable, Sendable {
            var info: CallInfo
            var direction: CallDirection
            var inviterId: UserID
            var announcedStart = false
        }

        init(userId: UserID) {
            self.activeCall = nil
            self.selfInfo = CallParticipantInfo(userId: userId)
            self.allParticipants = []
            self.waitingCalls = []
        }
    }

    /// The store of the shared client.
    public static var shared: CallStore { SwitchboardClient.shared.callStore }

    private let cell = StateCell(State(userId: ""))
    private let broadcaster = Broadcaster<CallStoreEvent>()
    private let signaling: SignalingClient
    private let clock: any SwitchboardClock
    private let selfId = NIOLockedValueBox<UserID>("")
    private let ticker = NIOLockedValueBox<(task: Task<Void, Never>?, startTime: Int64?)>((nil, nil))
    private let deviceReports = NIOLockedValueBox<Task<Void, Never>?>(nil)
    private let devices: DeviceStore

    init(signaling: SignalingClient, clock: any SwitchboardClock, devices: DeviceStore) {
        self.signaling = signaling
        self.clock = clock
        self.devices = devices
    }

    /// The current state.
    public var state: State { cell.value }

    /// The current state, then every change.
    public var stateUpdates: AsyncStream<State> { cell.subscribe() }

    /// Call events from now on.
    public var events: AsyncStream<CallStoreEvent> { broadcaster.subscribe() }

    // MARK: - actions

    /// Places a call: one participant for one-to-one, several for a group call.
    @discardableResult
    public func calls(
        participantIds: [String], mediaType: CallMediaType, params: CallParams = CallParams()
    ) async throws -> CallStartResult {
        let request = StartCallRequest(
            participantIds: participantIds.map(UserID.init(rawValue:)), mediaType: mediaType, params: params)
        let response = try await signaling.send(request) { [self] response in
            cell.update { state in
                state.track(
                    State.Tracked(info: response.call, direction: .outgoing, inviterId: response.call.callerId))
                state.refresh(selfId: selfId.withLockedValue { $0 })
            }
            afterChange()
        }
        reportDevices(for: response.callId)
        return CallStartResult(callId: response.callId, roomId: response.roomId, busyUserIds: response.busyUserIds)
    }

    /// Answers a ringing call (the active one when `callId` is nil). With call waiting, answering
    /// hangs up the call you are in.
    public func accept(callId: CallID? = nil) async throws {
        let id = try ringingCallId(callId)
        _ = try await signaling.send(AcceptCallRequest(callId: id)) { [self] response in
            cell.update { state in
                state.calls[id]?.info = response.call
                state.refresh(selfId: selfId.withLockedValue { $0 })
            }
            afterChange()
        }
        reportDevices(for: id)
    }

    /// Rejects a ringing call (the active one when `callId` is nil) on all your devices.
    public func reject(callId: CallID? = nil) async throws {
        _ = try await signaling.send(RejectCallRequest(callId: try ringingCallId(callId)))
    }

    /// Leaves a call (the active one when `callId` is nil): hang up when connected, cancel when
    /// calling, reject when ringing.
    public func hangup(callId: CallID? = nil) async throws {
        guard let id = callId ?? state.activeCall?.callId else { throw SwitchboardError(.callNotFound, "no active call") }
        _ = try await signaling.send(HangupCallRequest(callId: id))
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
        cell.update { $0.refresh(selfId: user) }
    }

    /// Forgets every call (after a logout).
    func reset() {
        cell.update { state in
            state.calls = [:]
            state.arrival = []
            state.refresh(selfId: selfId.withLockedValue { $0 })
        }
        afterChange()
    }

    func handle(_ event: ServerEvent) {
        let me = selfId.withLockedValue { $0 }
        var announce: [CallStoreEvent] = []
        switch event {
        case .callReceived(let e):
            cell.update { state in
                if state.calls[e.call.callId] == nil {
                    announce.append(
                        .onCallReceived(
                            callId: e.call.callId, callerId: e.call.callerId, inviterId: e.inviterId,
                            mediaType: e.call.mediaType, userData: e.call.userData))
                }
                state.track(State.Tracked(info: e.call, direction: .incoming, inviterId: e.inviterId))
                state.refresh(selfId: me)
            }
        case .callStarted(let e):
            cell.update { state in
                if state.calls[e.call.callId] == nil {
                    state.track(
                        State.Tracked(
                            info: e.call, direction: e.call.callerId == me ? .outgoing : .incoming,
                            inviterId: e.call.participant(me)?.inviterId ?? e.call.callerId))
                }
                state.calls[e.call.callId]?.info = e.call
                if state.calls[e.call.callId]?.announcedStart == false, let start = e.call.startTime {
                    state.calls[e.call.callId]?.announcedStart = true
                    announce.append(.onCallStarted(callId: e.call.callId, mediaType: e.call.mediaType, startTime: start))
                }
                state.refresh(selfId: me)
            }
        case .callUpdated(let e):
            cell.update { state in
                if state.calls[e.call.callId] == nil {
                    state.track(
                        State.Tracked(
                            info: e.call, direction: e.call.callerId == me ? .outgoing : .incoming,
                            inviterId: e.call.participant(me)?.inviterId ?? e.call.callerId))
                }
                state.calls[e.call.callId]?.info = e.call
                state.refresh(selfId: me)
            }
        case .callEnded(let e):
            cell.update { state in
                state.calls[e.callId] = nil
                state.arrival.removeAll { $0 == e.callId }
                state.refresh(selfId: me)
            }
            announce.append(.onCallEnded(callId: e.callId, mediaType: e.mediaType, reason: e.reason, userId: e.userId))
        case .callRecord(let e):
            announce.append(.onCallRecord(e.record))
        case .deviceChanged(let e):
            cell.update { state in
                if let index = state.calls[e.callId]?.info.participants.firstIndex(where: { $0.userId == e.userId }) {
                    state.calls[e.callId]?.info.participants[index].microphoneOn = e.microphoneOn
                    state.calls[e.callId]?.info.participants[index].cameraOn = e.cameraOn
                }
                state.refresh(selfId: me)
            }
            announce.append(
                .onRemoteDeviceChanged(
                    callId: e.callId, userId: e.userId, microphoneOn: e.microphoneOn, cameraOn: e.cameraOn))
        case .sessionEnded:
            break
        }
        afterChange()
        announce.forEach(broadcaster.publish)
    }

    // MARK: - internals

    private func ringingCallId(_ callId: CallID?) throws -> CallID {
        if let callId { return callId }
        let current = state
        if let active = current.activeCall, current.selfInfo.status == .waiting, active.direction == .incoming {
            return active.callId
        }
        if let waiting = current.waitingCalls.last { return waiting.callId }
        throw SwitchboardError(.callNotFound, "no ringing call")
    }

    /// Tells the other members this device's microphone and camera state once it is in a call,
    /// and again on every change while it stays in it.
    private func reportDevices(for callId: CallID) {
        let task = Task { [weak self, devices, signaling] in
            var last: (Bool, Bool)?
            for await deviceState in devices.stateUpdates {
                guard let self, self.state.activeCall?.callId == callId else { return }
                let current = (deviceState.microphoneStatus == .on, deviceState.cameraStatus == .on)
                if let last, last == current { continue }
                last = current
                _ = try? await signaling.send(
                    UpdateDeviceStateRequest(callId: callId, microphoneOn: current.0, cameraOn: current.1))
            }
        }
        deviceReports.withLockedValue { reports in
            reports?.cancel()
            reports = task
        }
    }

    /// Keeps the duration ticking while the active call is connected.
    private func afterChange() {
        let startTime = state.activeCall?.startTime
        let stale = ticker.withLockedValue { ticker -> Task<Void, Never>? in
            guard ticker.startTime != startTime else { return nil }
            let old = ticker.task
            ticker.startTime = startTime
            ticker.task = startTime.map(startTicker)
            return old
        }
        stale?.cancel()
        if startTime == nil {
            deviceReports.withLockedValue { reports in
                if state.activeCall == nil {
                    reports?.cancel()
                    reports = nil
                }
            }
        }
    }

    private func startTicker(_ startTime: Int64) -> Task<Void, Never> {
        Task { [weak self, clock, signaling] in
            while !Task.isCancelled {
                let offset = await signaling.clockOffset
                let elapsed = max(0, clock.now() + offset - startTime)
                let seconds = Int(elapsed / 1000)
                self?.cell.update { state in
                    if state.activeCall?.startTime == startTime { state.activeCall?.duration = seconds }
                }
                // Wake at the next whole second of call time.
                let next = startTime + Int64(seconds + 1) * 1000 - offset
                guard (try? await clock.sleep(until: next)) != nil else { return }
            }
        }
    }
}

extension CallStore.State {
    mutating func track(_ call: Tracked) {
        if calls[call.info.callId] == nil { arrival.append(call.info.callId) }
        var call = call
        call.announcedStart = calls[call.info.callId]?.announcedStart ?? false
        calls[call.info.callId] = call
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
            waitingCalls = []
            return
        }
        let duration = activeCall?.callId == current.info.callId ? activeCall?.duration ?? 0 : 0
        activeCall = ActiveCall(
            info: current.info, direction: current.direction, inviterId: current.inviterId,
            duration: current.info.startTime == nil ? 0 : duration)
        allParticipants = current.info.participants.map(CallParticipantInfo.init)
        selfInfo = allParticipants.first { $0.userId == selfId } ?? CallParticipantInfo(userId: selfId)
        waitingCalls = ordered.filter { $0.info.callId != current.info.callId }.map(\.info)
    }
}
