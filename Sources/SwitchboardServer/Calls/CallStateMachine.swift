import SwitchboardProtocol

/// Every call rule of SPEC §3 in one value: events in, actions out, no I/O.
///
/// The machine holds all calls of this node and the index of which user is in which call, because
/// several rules look across calls (busy, call waiting). Its owner, ``CallEngine``, feeds it events
/// with the current time and performs the actions in order: replies first, then events, timers and
/// record writes. Tests feed events and compare the actions.
///
/// Members move through three phases: `ringing` (an invitee who has not answered), `joined` (the
/// caller from the start, a callee once they accepted) and `left`. On the wire a joined member is
/// `waiting` until the call connects (two members joined), then `accept`; a left member is `none`.
/// A call ends when fewer than two members are joined and nobody is ringing, or when the caller
/// hangs up before anybody answered (a cancel).
struct CallStateMachine: Sendable {
    struct Configuration: Sendable {
        /// How long a member's dropped device may take to come back before the server ends the
        /// member's part (`endByServer`).
        var reconnectGrace: Int64 = 15_000
        /// How long an ended call is remembered, to answer `callAlreadyEnded` instead of `callNotFound`.
        var endedCallRetention: Int64 = 10 * 60_000
        /// The most ended calls remembered at once.
        var maxEndedCalls = 100_000

        init(reconnectGrace: Int64 = 15_000) {
            self.reconnectGrace = reconnectGrace
        }
    }

    enum Phase: Equatable, Sendable {
        case ringing
        case joined
        case left
    }

    struct Member: Equatable, Sendable {
        let userId: UserID
        /// Who invited this member; nil for the caller.
        let inviterId: UserID?
        let isCaller: Bool
        var phase: Phase
        /// The device that answered (or placed) the call; events for a joined member go there only.
        var device: DeviceID?
        var joinedAt: Int64?
        var leftAt: Int64?
        var result: CallRecordResult?
        var endReason: CallEndReason?
        var microphoneOn = true
        var cameraOn: Bool
        /// The member's device dropped and the reconnect grace timer runs.
        var isDown = false
        var profile: UserProfile?
    }

    struct Call: Equatable, Sendable {
        let id: CallID
        let app: SdkAppID
        let roomId: RoomID
        let type: CallType
        var mediaType: CallMediaType
        let callerId: UserID
        let chatGroupId: String?
        let userData: String?
        let isEphemeral: Bool
        let timeout: Int
        let createdAt: Int64
        var startTime: Int64?
        var members: [Member]
        var isEnded = false

        func index(of user: UserID) -> Int? { members.firstIndex { $0.userId == user } }
        var joinedCount: Int { members.count { $0.phase == .joined } }
        var ringingCount: Int { members.count { $0.phase == .ringing } }
    }

    struct EndedCall: Equatable, Sendable {
        let app: SdkAppID
        let members: Set<UserID>
        let endedAt: Int64
    }

    let configuration: Configuration
    private(set) var calls: [CallID: Call] = [:]
    /// The calls in which each user is ringing or joined.
    private(set) var activeCalls: [UserKey: Set<CallID>] = [:]
    private var endedCalls: [CallID: EndedCall] = [:]
    private var endedOrder: [CallID] = []
    private var endedOrderHead = 0

    init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Applies one event at time `now` (Unix ms) and returns what to do, in order.
    mutating func handle(_ event: CallEvent, now: Int64) -> [CallAction] {
        forgetEndedCalls(now: now)
        var out: [CallAction] = []
        switch event {
        case .start(let command):
            start(command, now: now, out: &out)
        case .accept(let command):
            accept(command, now: now, out: &out)
        case .reject(let command):
            reject(command, now: now, out: &out)
        case .hangup(let command):
            hangup(command, now: now, out: &out)
        case .updateDevice(let command, let microphoneOn, let cameraOn):
            updateDevice(command, microphoneOn: microphoneOn, cameraOn: cameraOn, out: &out)
        case .timerFired(let key):
            timerFired(key, now: now, out: &out)
        case .endByServer(let callId):
            endByServer(callId, now: now, out: &out)
        case .deviceOnline(let user, let device):
            deviceOnline(user, device, now: now, out: &out)
        case .deviceOffline(let user, let device):
            deviceOffline(user, device, now: now, out: &out)
        case .logout(let user, let device):
            logout(user, device, now: now, out: &out)
        case .shutdown:
            for id in calls.keys.sorted() {
                guard var call = calls[id] else { continue }
                endCall(&call, reason: .endByServer, by: nil, now: now, out: &out)
                store(call, now: now, out: &out)
            }
        }
        return out
    }

    /// The wire snapshot of a call.
    func info(_ call: Call) -> CallInfo {
        CallInfo(
            callId: call.id, roomId: call.roomId, callType: call.type, mediaType: call.mediaType,
            callerId: call.callerId, chatGroupId: call.chatGroupId, userData: call.userData,
            isEphemeral: call.isEphemeral, timeout: call.timeout, createdAt: call.createdAt,
            startTime: call.startTime,
            participants: call.members.map { member in
                CallParticipant(
                    userId: member.userId, status: status(of: member, in: call), inviterId: member.inviterId,
                    microphoneOn: member.microphoneOn, cameraOn: member.cameraOn,
                    endReason: member.phase == .left ? member.endReason : nil,
                    nickname: member.profile?.nickname, avatarURL: member.profile?.avatarURL)
            })
    }

    /// Whether a call was seen recently enough to still be remembered, ended or not.
    func knows(_ callId: CallID) -> Bool { calls[callId] != nil || endedCalls[callId] != nil }

    /// Broken rules, for tests and the fuzzer; empty when the state is consistent.
    func invariantViolations() -> [String] {
        var problems: [String] = []
        var expected: [UserKey: Set<CallID>] = [:]
        for (id, call) in calls {
            if call.isEnded { problems.append("\(id) is ended but still stored") }
            if call.joinedCount < 2 && call.ringingCount == 0 {
                problems.append("\(id) should have ended: \(call.joinedCount) joined, nobody ringing")
            }
            if call.startTime == nil && !call.members.contains(where: { $0.isCaller && $0.phase == .joined }) {
                problems.append("\(id) is not connected and its caller is gone")
            }
            for member in call.members where member.phase != .left {
                expected[UserKey(app: call.app, user: member.userId), default: []].insert(id)
                if member.phase == .joined && member.device == nil {
                    problems.append("\(id): joined member \(member.userId) has no device")
                }
            }
        }
        for (user, ids) in expected {
            let joined = ids.filter { calls[$0]?.members.first { $0.userId == user.user }?.phase == .joined }
            if joined.count > 1 { problems.append("\(user) is joined in \(joined.count) calls") }
        }
        if expected != activeCalls.filter({ !$0.value.isEmpty }) {
            problems.append("the user index does not match the calls")
        }
        return problems
    }

    // MARK: - start

    private mutating func start(_ command: StartCallCommand, now: Int64, out: inout [CallAction]) {
        if let error = validate(command) {
            out.append(.reply(.failure(error)))
            return
        }
        let request = command.request
        let params = request.params ?? CallParams()
        var invitees: [UserID] = []
        for id in request.participantIds where !invitees.contains(id) { invitees.append(id) }
        let app = command.caller.app
        let cameraOn = request.mediaType == .video
        var call = Call(
            id: command.callId, app: app, roomId: params.roomId ?? command.generatedRoomId,
            type: invitees.count > 1 || params.chatGroupId != nil ? .group : .oneToOne,
            mediaType: request.mediaType, callerId: command.caller.user, chatGroupId: params.chatGroupId,
            userData: params.userData, isEphemeral: params.isEphemeralCall ?? false,
            timeout: params.timeout ?? CallLimits.defaultTimeoutSeconds, createdAt: now,
            members: [
                Member(
                    userId: command.caller.user, inviterId: nil, isCaller: true, phase: .joined,
                    device: command.device, joinedAt: now, cameraOn: cameraOn,
                    profile: command.profiles[command.caller.user])
            ])
        var busy: [UserID] = []
        var unreachable: [(UserID, CallEndReason)] = []
        for invitee in invitees {
            var member = Member(
                userId: invitee, inviterId: command.caller.user, isCaller: false, phase: .ringing, cameraOn: cameraOn,
                profile: command.profiles[invitee])
            let key = UserKey(app: app, user: invitee)
            if command.settings.busyPolicy == .reject, !(activeCalls[key]?.isEmpty ?? true) {
                member.phase = .left
                member.leftAt = now
                member.result = .busy
                member.endReason = .lineBusy
                busy.append(invitee)
                unreachable.append((invitee, .lineBusy))
            } else if !command.online.contains(invitee) {
                member.phase = .left
                member.leftAt = now
                member.result = .missed
                member.endReason = .offline
                unreachable.append((invitee, .offline))
            }
            call.members.append(member)
        }
        for member in call.members where member.phase != .left {
            activeCalls[UserKey(app: app, user: member.userId), default: []].insert(call.id)
        }
        let snapshot = info(call)
        out.append(
            .reply(.started(StartCallResponse(callId: call.id, roomId: call.roomId, busyUserIds: busy, call: snapshot))))
        let deadline = now + Int64(call.timeout) * 1000
        for member in call.members where member.phase == .ringing {
            let key = UserKey(app: app, user: member.userId)
            out.append(.send(.callReceived(CallReceivedEvent(call: snapshot, inviterId: command.caller.user)), to: .user(key)))
            out.append(.setTimer(.ring(call.id, member.userId), at: deadline))
        }
        if let (lastUnreachable, reason) = unreachable.last, call.ringingCount == 0 {
            endCall(&call, reason: reason, by: lastUnreachable, now: now, out: &out)
        }
        store(call, now: now, out: &out)
    }

    private func validate(_ command: StartCallCommand) -> SwitchboardError? {
        let request = command.request
        if !(activeCalls[command.caller]?.isEmpty ?? true) {
            return SwitchboardError(.alreadyInCall)
        }
        if request.participantIds.isEmpty {
            return SwitchboardError(.noParticipants)
        }
        if let bad = request.participantIds.first(where: { !$0.isValid }) {
            return SwitchboardError(.invalidUserID, "participantIds: '\(bad.rawValue.prefix(40))' is not a valid userID")
        }
        if request.participantIds.contains(command.caller.user) {
            return SwitchboardError(.cannotCallSelf)
        }
        let count = Set(request.participantIds).count + 1
        if count > command.settings.maxParticipants {
            return SwitchboardError(
                .tooManyParticipants, "at most \(command.settings.maxParticipants) members, the caller included")
        }
        let params = request.params ?? CallParams()
        if let timeout = params.timeout, !CallLimits.timeoutRange.contains(timeout) {
            return SwitchboardError(
                .invalidTimeout,
                "timeout must be \(CallLimits.timeoutRange.lowerBound)-\(CallLimits.timeoutRange.upperBound) seconds")
        }
        if let userData = params.userData, userData.utf8.count > CallLimits.maxUserDataBytes {
            return SwitchboardError(.userDataTooLarge, "userData is limited to \(CallLimits.maxUserDataBytes) bytes")
        }
        if let roomId = params.roomId, !Self.isValidToken(roomId.rawValue, maxLength: RoomID.maxLength) {
            return SwitchboardError(.invalidRoomID, "roomId must be 1-\(RoomID.maxLength) visible characters")
        }
        if let group = params.chatGroupId, !Self.isValidToken(group, maxLength: CallLimits.maxChatGroupIDLength) {
            return SwitchboardError(
                .invalidChatGroupID, "chatGroupId must be 1-\(CallLimits.maxChatGroupIDLength) visible characters")
        }
        return nil
    }

    /// 1…`maxLength` bytes of visible ASCII (no spaces or control characters).
    static func isValidToken(_ value: String, maxLength: Int) -> Bool {
        let bytes = value.utf8
        return !bytes.isEmpty && bytes.count <= maxLength && bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    // MARK: - member actions

    /// Finds the call and the member for a command, or the error to answer with.
    private func lookup(_ command: CallCommand) -> Result<(Call, Int), SwitchboardError> {
        guard let call = calls[command.callId], call.app == command.user.app else {
            if let ended = endedCalls[command.callId], ended.app == command.user.app {
                return .failure(
                    SwitchboardError(ended.members.contains(command.user.user) ? .callAlreadyEnded : .notInCall))
            }
            return .failure(SwitchboardError(.callNotFound))
        }
        guard let index = call.index(of: command.user.user) else {
            return .failure(SwitchboardError(.notInCall))
        }
        return .success((call, index))
    }

    private mutating func accept(_ command: CallCommand, now: Int64, out: inout [CallAction]) {
        let found: Call
        let index: Int
        switch lookup(command) {
        case .failure(let error):
            out.append(.reply(.failure(error)))
            return
        case .success(let match):
            (found, index) = match
        }
        switch found.members[index].phase {
        case .joined:
            out.append(.reply(.failure(SwitchboardError(.alreadyAccepted))))
            return
        case .left:
            out.append(.reply(.failure(SwitchboardError(.invalidCallState, "you already left this call"))))
            return
        case .ringing:
            break
        }
        // Call waiting: answering hangs up the call the user is in (no hold), as CallPlus does.
        var pending: [CallAction] = []
        for otherId in (activeCalls[command.user] ?? []).sorted() where otherId != command.callId {
            guard var other = calls[otherId], let otherIndex = other.index(of: command.user.user),
                other.members[otherIndex].phase == .joined
            else { continue }
            memberHangup(&other, otherIndex, actingDevice: command.device, now: now, out: &pending)
            store(other, now: now, out: &pending)
        }
        guard var call = calls[command.callId] else { return }
        let key = command.user
        out.append(.cancelTimer(.ring(call.id, key.user)))
        call.members[index].phase = .joined
        call.members[index].device = command.device
        call.members[index].joinedAt = now
        let connectsNow = call.startTime == nil
        if connectsNow { call.startTime = now }
        let snapshot = info(call)
        out.append(.reply(.call(snapshot)))
        out.append(contentsOf: pending)
        out.append(
            .send(
                .callEnded(
                    CallEndedEvent(callId: call.id, mediaType: call.mediaType, reason: .otherDeviceAccepted, userId: key.user)),
                to: .userExcept(key, command.device)))
        for member in call.members where member.phase != .left {
            let recipient = self.recipient(member, app: call.app)
            if member.phase == .joined && (connectsNow || member.userId == key.user) {
                out.append(.send(.callStarted(CallStartedEvent(call: snapshot)), to: recipient))
            } else {
                out.append(.send(.callUpdated(CallUpdatedEvent(call: snapshot)), to: recipient))
            }
        }
        store(call, now: now, out: &out)
    }

    private mutating func reject(_ command: CallCommand, now: Int64, out: inout [CallAction]) {
        switch lookup(command) {
        case .failure(let error):
            out.append(.reply(.failure(error)))
        case .success(let (found, index)):
            guard found.members[index].phase == .ringing else {
                out.append(
                    .reply(
                        .failure(
                            SwitchboardError(
                                .invalidCallState,
                                found.members[index].phase == .joined
                                    ? "only a ringing call can be rejected; hang up instead"
                                    : "you already left this call"))))
                return
            }
            var call = found
            out.append(.reply(.ok))
            leave(
                &call, index, result: .rejected, reason: .reject, by: command.user.user, actingDevice: command.device,
                now: now, out: &out)
            store(call, now: now, out: &out)
        }
    }

    private mutating func hangup(_ command: CallCommand, now: Int64, out: inout [CallAction]) {
        switch lookup(command) {
        case .failure(let error):
            out.append(.reply(.failure(error)))
        case .success(let (found, index)):
            guard found.members[index].phase != .left else {
                out.append(.reply(.failure(SwitchboardError(.invalidCallState, "you already left this call"))))
                return
            }
            var call = found
            out.append(.reply(.ok))
            memberHangup(&call, index, actingDevice: command.device, now: now, out: &out)
            store(call, now: now, out: &out)
        }
    }

    /// A hang-up means reject for a ringing member, cancel for a caller nobody answered yet, and
    /// leaving for everyone else.
    private mutating func memberHangup(
        _ call: inout Call, _ index: Int, actingDevice: DeviceID, now: Int64, out: inout [CallAction]
    ) {
        let member = call.members[index]
        switch member.phase {
        case .ringing:
            leave(
                &call, index, result: .rejected, reason: .reject, by: member.userId, actingDevice: actingDevice,
                now: now, out: &out)
        case .joined where member.isCaller && call.startTime == nil:
            endCall(&call, reason: .canceled, by: member.userId, now: now, out: &out)
        case .joined:
            leave(&call, index, result: .answered, reason: .hangup, by: member.userId, actingDevice: nil, now: now, out: &out)
        case .left:
            break
        }
    }

    private mutating func updateDevice(
        _ command: CallCommand, microphoneOn: Bool?, cameraOn: Bool?, out: inout [CallAction]
    ) {
        switch lookup(command) {
        case .failure(let error):
            out.append(.reply(.failure(error)))
        case .success(let (found, index)):
            guard found.members[index].phase == .joined else {
                out.append(.reply(.failure(SwitchboardError(.invalidCallState, "answer the call first"))))
                return
            }
            var call = found
            if let microphoneOn { call.members[index].microphoneOn = microphoneOn }
            if let cameraOn { call.members[index].cameraOn = cameraOn }
            calls[call.id] = call
            out.append(.reply(.ok))
            let member = call.members[index]
            let event = ServerEvent.deviceChanged(
                DeviceChangedEvent(
                    callId: call.id, userId: member.userId, microphoneOn: member.microphoneOn, cameraOn: member.cameraOn))
            for other in call.members where other.phase != .left && other.userId != member.userId {
                out.append(.send(event, to: recipient(other, app: call.app)))
            }
        }
    }

    // MARK: - timers and the server

    private mutating func timerFired(_ key: TimerKey, now: Int64, out: inout [CallAction]) {
        switch key {
        case .ring(let callId, let user):
            guard var call = calls[callId], let index = call.index(of: user), call.members[index].phase == .ringing
            else { return }
            leave(&call, index, result: .missed, reason: .noResponse, by: user, actingDevice: nil, now: now, out: &out)
            store(call, now: now, out: &out)
        case .reconnectGrace(let callId, let user):
            guard var call = calls[callId], let index = call.index(of: user), call.members[index].phase == .joined,
                call.members[index].isDown
            else { return }
            call.members[index].isDown = false
            if call.members[index].isCaller && call.startTime == nil {
                endCall(&call, reason: .endByServer, by: user, now: now, out: &out)
            } else {
                leave(
                    &call, index, result: .answered, reason: .endByServer, by: user, actingDevice: nil, now: now,
                    out: &out)
            }
            store(call, now: now, out: &out)
        }
    }

    private mutating func endByServer(_ callId: CallID, now: Int64, out: inout [CallAction]) {
        guard var call = calls[callId] else {
            out.append(
                .reply(.failure(SwitchboardError(endedCalls[callId] != nil ? .callAlreadyEnded : .callNotFound))))
            return
        }
        out.append(.reply(.ok))
        endCall(&call, reason: .endByServer, by: nil, now: now, out: &out)
        store(call, now: now, out: &out)
    }

    // MARK: - devices

    private mutating func deviceOnline(_ user: UserKey, _ device: DeviceID, now: Int64, out: inout [CallAction]) {
        for callId in (activeCalls[user] ?? []).sorted() {
            guard var call = calls[callId], let index = call.index(of: user.user) else { continue }
            let member = call.members[index]
            switch member.phase {
            case .ringing:
                // A pending invitation: a device that logs in while the call rings rings too.
                out.append(
                    .send(
                        .callReceived(CallReceivedEvent(call: info(call), inviterId: member.inviterId ?? call.callerId)),
                        to: .device(user, device)))
            case .joined where member.device == device:
                // The same device is back: resume the call where it was.
                if member.isDown {
                    call.members[index].isDown = false
                    out.append(.cancelTimer(.reconnectGrace(call.id, user.user)))
                    calls[call.id] = call
                }
                let snapshot = info(call)
                out.append(
                    .send(
                        call.startTime != nil
                            ? .callStarted(CallStartedEvent(call: snapshot)) : .callUpdated(CallUpdatedEvent(call: snapshot)),
                        to: .device(user, device)))
            case .joined, .left:
                break
            }
        }
    }

    private mutating func deviceOffline(_ user: UserKey, _ device: DeviceID, now: Int64, out: inout [CallAction]) {
        for callId in (activeCalls[user] ?? []).sorted() {
            guard var call = calls[callId], let index = call.index(of: user.user) else { continue }
            let member = call.members[index]
            guard member.phase == .joined, member.device == device, !member.isDown else { continue }
            call.members[index].isDown = true
            calls[call.id] = call
            out.append(.setTimer(.reconnectGrace(call.id, user.user), at: now + configuration.reconnectGrace))
        }
    }

    private mutating func logout(_ user: UserKey, _ device: DeviceID, now: Int64, out: inout [CallAction]) {
        for callId in (activeCalls[user] ?? []).sorted() {
            guard var call = calls[callId], let index = call.index(of: user.user) else { continue }
            guard call.members[index].phase == .joined, call.members[index].device == device else { continue }
            memberHangup(&call, index, actingDevice: device, now: now, out: &out)
            store(call, now: now, out: &out)
        }
    }

    // MARK: - leaving and ending

    /// One member leaves; the call ends if that leaves fewer than two joined and nobody ringing.
    private mutating func leave(
        _ call: inout Call, _ index: Int, result: CallRecordResult, reason: CallEndReason, by: UserID?,
        actingDevice: DeviceID?, now: Int64, out: inout [CallAction]
    ) {
        let member = call.members[index]
        let key = UserKey(app: call.app, user: member.userId)
        finish(&call, index, result: result, reason: reason, now: now, out: &out)
        let event = CallEndedEvent(callId: call.id, mediaType: call.mediaType, reason: reason, userId: by)
        if let device = member.device {
            out.append(.send(.callEnded(event), to: .device(key, device)))
        } else if let actingDevice {
            out.append(.send(.callEnded(event), to: .device(key, actingDevice)))
            var others = event
            if reason == .reject { others.reason = .otherDeviceReject }
            out.append(.send(.callEnded(others), to: .userExcept(key, actingDevice)))
        } else {
            out.append(.send(.callEnded(event), to: .user(key)))
        }
        if call.joinedCount < 2 && call.ringingCount == 0 {
            endCall(&call, reason: reason, by: by, now: now, out: &out)
        } else {
            let update = ServerEvent.callUpdated(CallUpdatedEvent(call: info(call)))
            for other in call.members where other.phase != .left {
                out.append(.send(update, to: recipient(other, app: call.app)))
            }
        }
    }

    /// Ends the call for every member still ringing or joined.
    private mutating func endCall(
        _ call: inout Call, reason: CallEndReason, by: UserID?, now: Int64, out: inout [CallAction]
    ) {
        let event = ServerEvent.callEnded(
            CallEndedEvent(callId: call.id, mediaType: call.mediaType, reason: reason, userId: by))
        for index in call.members.indices where call.members[index].phase != .left {
            let member = call.members[index]
            let result: CallRecordResult
            if member.phase == .joined {
                result = call.startTime != nil ? .answered : Self.unconnectedCallerResult(reason)
            } else {
                result = .missed
            }
            finish(&call, index, result: result, reason: reason, now: now, out: &out)
            out.append(.send(event, to: recipient(member, app: call.app)))
        }
        call.isEnded = true
    }

    /// What an unanswered call was for its caller, by the reason it ended.
    static func unconnectedCallerResult(_ reason: CallEndReason) -> CallRecordResult {
        switch reason {
        case .reject, .otherDeviceReject: .rejected
        case .noResponse: .missed
        case .lineBusy: .busy
        case .offline: .offline
        case .canceled, .endByServer, .hangup: .canceled
        case .unknown, .otherDeviceAccepted: .unknown
        }
    }

    /// Marks a member as left and stops their timers.
    private mutating func finish(
        _ call: inout Call, _ index: Int, result: CallRecordResult, reason: CallEndReason, now: Int64,
        out: inout [CallAction]
    ) {
        let member = call.members[index]
        if member.phase == .ringing { out.append(.cancelTimer(.ring(call.id, member.userId))) }
        if member.isDown { out.append(.cancelTimer(.reconnectGrace(call.id, member.userId))) }
        call.members[index].phase = .left
        call.members[index].leftAt = now
        call.members[index].result = result
        call.members[index].endReason = reason
        call.members[index].isDown = false
        let key = UserKey(app: call.app, user: member.userId)
        activeCalls[key]?.remove(call.id)
        if activeCalls[key]?.isEmpty == true { activeCalls[key] = nil }
    }

    /// Saves a changed call; an ended one is forgotten (but remembered as ended) and its records written.
    private mutating func store(_ call: Call, now: Int64, out: inout [CallAction]) {
        guard call.isEnded else {
            calls[call.id] = call
            return
        }
        calls[call.id] = nil
        endedCalls[call.id] = EndedCall(app: call.app, members: Set(call.members.map(\.userId)), endedAt: now)
        endedOrder.append(call.id)
        if !call.isEphemeral {
            out.append(.writeRecords(records(of: call, now: now)))
        }
    }

    private func records(of call: Call, now: Int64) -> [RecordDraft] {
        let participantIds = call.members.map(\.userId)
        return call.members.map { member in
            let end = member.leftAt ?? now
            var start: Int64?
            if member.result == .answered, let startTime = call.startTime, let joinedAt = member.joinedAt {
                start = max(startTime, joinedAt)
            }
            return RecordDraft(
                owner: UserKey(app: call.app, user: member.userId),
                record: CallRecord(
                    callId: call.id, roomId: call.roomId, callType: call.type, mediaType: call.mediaType,
                    callerId: call.callerId, inviterId: member.inviterId ?? call.callerId,
                    participantIds: participantIds, chatGroupId: call.chatGroupId,
                    direction: member.isCaller ? .outgoing : .incoming, result: member.result ?? .unknown,
                    startTime: start, endTime: end, duration: start.map { Int(max(0, end - $0) / 1000) } ?? 0,
                    endReason: member.endReason ?? .unknown, syncTime: 0))
        }
    }

    private mutating func forgetEndedCalls(now: Int64) {
        let horizon = now - configuration.endedCallRetention
        while endedOrderHead < endedOrder.count {
            let id = endedOrder[endedOrderHead]
            guard let ended = endedCalls[id] else {
                endedOrderHead += 1
                continue
            }
            guard ended.endedAt < horizon || endedOrder.count - endedOrderHead > configuration.maxEndedCalls else {
                break
            }
            endedCalls[id] = nil
            endedOrderHead += 1
        }
        if endedOrderHead > 1024 && endedOrderHead * 2 > endedOrder.count {
            endedOrder.removeFirst(endedOrderHead)
            endedOrderHead = 0
        }
    }

    // MARK: - helpers

    private func status(of member: Member, in call: Call) -> CallParticipantStatus {
        switch member.phase {
        case .ringing: .waiting
        case .joined: call.startTime == nil ? .waiting : .accept
        case .left: .none
        }
    }

    /// A joined member hears about the call on the device that answered; a ringing one on all.
    private func recipient(_ member: Member, app: SdkAppID) -> Recipient {
        let key = UserKey(app: app, user: member.userId)
        return member.device.map { .device(key, $0) } ?? .user(key)
    }
}
