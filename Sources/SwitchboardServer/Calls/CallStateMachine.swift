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
        /// How long the peer has to answer a media-type change.
        var mediaChangeTimeout = Int64(CallLimits.mediaChangeTimeoutSeconds) * 1000
        /// How long an ended call is remembered, to answer `callAlreadyEnded` instead of `callNotFound`.
        var endedCallRetention: Int64 = 10 * 60_000
        /// The most ended calls remembered at once.
        var maxEndedCalls = 100_000

        init(reconnectGrace: Int64 = 15_000) {
            self.reconnectGrace = reconnectGrace
        }
    }

    enum Phase: String, Codable, Equatable, Sendable {
        case ringing
        case joined
        case left
    }

    struct Member: Codable, Equatable, Sendable {
        let userId: UserID
        /// Who invited this member; nil for the caller and for chat-group members who joined.
        var inviterId: UserID?
        let isCaller: Bool
        var phase: Phase
        /// The device that answered (or placed) the call; events for a joined member go there only.
        var device: DeviceID?
        var joinedAt: Int64?
        var leftAt: Int64?
        var result: CallRecordResult?
        var endReason: CallEndReason?
        /// Who caused the member's end (the `userId` of their `callEnded`).
        var endedBy: UserID?
        var microphoneOn = true
        var cameraOn: Bool
        /// Shares a screen (optional: journals from before screen sharing lack it).
        var screenSharing: Bool?
        /// The member's device dropped and the reconnect grace timer runs.
        var isDown = false
        var profile: UserProfile?
        /// Time spent in the connected call, over every time the member joined.
        var connectedMs: Int64 = 0
        /// When the call first connected for this member.
        var firstConnectedAt: Int64?
        var quality: NetworkQuality = .unknown
        var volume: VolumeLevel?
        /// A callee who blocks the caller: the call never reached them, so they get no record.
        var blocksCaller: Bool?
        /// Rang through a VoIP push: when the ringing stops, a follow-up push says so.
        var pushed: Bool?
    }

    struct MediaChange: Codable, Equatable, Sendable {
        let id: TransactionID
        let requester: UserID
        let mediaType: CallMediaType
    }

    /// A call in progress; journaled as JSON so that a restart after a crash can end it properly.
    struct Call: Codable, Equatable, Sendable {
        let id: CallID
        let app: SdkAppID
        let roomId: RoomID
        let type: CallType
        var mediaType: CallMediaType
        let callerId: UserID
        let chatGroupId: ChatGroupID?
        let userData: String?
        let isEphemeral: Bool
        let timeout: Int
        let createdAt: Int64
        var startTime: Int64?
        var members: [Member]
        var mediaChange: MediaChange?
        var isEnded = false

        func index(of user: UserID) -> Int? { members.firstIndex { $0.userId == user } }
        var joinedCount: Int { members.count { $0.phase == .joined } }
        /// Fewer than two members in the call and nobody ringing, or nobody in the call at all
        /// (ringing into an empty call would connect nobody).
        var isOver: Bool { joinedCount == 0 || (joinedCount < 2 && ringingCount == 0) }
        var ringingCount: Int { members.count { $0.phase == .ringing } }
        var activeCount: Int { members.count { $0.phase != .left } }
    }

    /// What is remembered of an ended call: enough to answer `callAlreadyEnded` and to tell a
    /// device that comes back how the call ended for it.
    struct EndedCall: Equatable, Sendable {
        struct Member: Equatable, Sendable {
            var reason: CallEndReason
            var endedBy: UserID?
            var result: CallRecordResult
            /// The device the member was in the call on, if any.
            var device: DeviceID?
        }
        let app: SdkAppID
        let mediaType: CallMediaType
        let members: [UserID: Member]
        let endedAt: Int64

        /// The end a device of `user` should hear about when it comes back, and who caused it.
        func end(for user: UserID, device: DeviceID) -> (CallEndReason, UserID?)? {
            guard let member = members[user] else { return nil }
            if member.device == device { return (member.reason, member.endedBy) }
            switch member.result {
            case .answered where member.device != nil: return (.otherDeviceAccepted, user)
            case .rejected: return (.otherDeviceReject, user)
            default: return (member.reason, member.endedBy)
            }
        }
    }

    let configuration: Configuration
    private(set) var calls: [CallID: Call] = [:]
    /// The calls in which each user is ringing or joined.
    private(set) var activeCalls: [UserKey: Set<CallID>] = [:]
    private var endedCalls: [CallID: EndedCall] = [:]
    /// The remembered ended calls of each user, oldest first.
    private var endedByUser: [UserKey: [CallID]] = [:]
    private var endedOrder: [CallID] = []
    private var endedOrderHead = 0
    /// Calls whose membership changed since the owner last journaled them.
    private var journalPending: [CallID] = []
    private var journalPendingSet: Set<CallID> = []

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
        case .invite(let command):
            invite(command, now: now, out: &out)
        case .join(let command):
            join(command, now: now, out: &out)
        case .accept(let command):
            accept(command, now: now, out: &out)
        case .reject(let command):
            reject(command, now: now, out: &out)
        case .hangup(let command):
            hangup(command, now: now, out: &out)
        case .updateDevice(let command, let microphoneOn, let cameraOn, let screenSharing):
            updateDevice(command, microphoneOn: microphoneOn, cameraOn: cameraOn, screenSharing: screenSharing, out: &out)
        case .changeMediaType(let command, let mediaType, let transaction):
            changeMediaType(command, mediaType, transaction, now: now, out: &out)
        case .replyMediaType(let command, let transaction, let agree):
            replyMediaType(command, transaction, agree: agree, out: &out)
        case .cancelMediaType(let command, let transaction):
            cancelMediaType(command, transaction, out: &out)
        case .statusReport(let command, let report):
            statusReport(command, report, out: &out)
        case .mediaSignal(let command, let signal):
            mediaSignal(command, signal, out: &out)
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
                    nickname: member.profile?.nickname, avatarURL: member.profile?.avatarURL,
                    networkQuality: member.phase == .joined && member.quality != .unknown ? member.quality : nil,
                    volumeLevel: member.phase == .joined ? member.volume : nil,
                    screenSharing: member.phase == .joined && member.screenSharing == true ? true : nil)
            })
    }

    /// The calls in progress whose membership changed since the last call, for the journal.
    mutating func takeJournalChanges() -> [Call] {
        defer {
            journalPending = []
            journalPendingSet = []
        }
        return journalPending.compactMap { calls[$0] }
    }

    /// Ends a call found in the journal after a crash: with `endByServer` at `endTime` (about when
    /// the server stopped), records for every member, and remembered so that its members' devices
    /// hear how it ended when they come back.
    mutating func recover(_ journaled: Call, endTime: Int64) -> [CallAction] {
        guard calls[journaled.id] == nil, endedCalls[journaled.id] == nil else { return [] }
        var call = journaled
        for member in call.members where member.phase != .left {
            activeCalls[UserKey(app: call.app, user: member.userId), default: []].insert(call.id)
        }
        var out: [CallAction] = []
        endCall(&call, reason: .endByServer, by: nil, now: endTime, out: &out)
        store(call, now: endTime, out: &out)
        // Nobody is connected yet: only the timers to cancel and the records remain.
        return out.filter { if case .send = $0 { false } else { true } }
    }

    /// The chat group of a call in progress in `app`.
    func chatGroup(of callId: CallID, app: SdkAppID) -> ChatGroupID? {
        calls[callId].flatMap { $0.app == app ? $0.chatGroupId : nil }
    }

    /// Broken rules, for tests and the fuzzer; empty when the state is consistent.
    func invariantViolations() -> [String] {
        var problems: [String] = []
        var expected: [UserKey: Set<CallID>] = [:]
        for (id, call) in calls {
            if call.isEnded { problems.append("\(id) is ended but still stored") }
            if call.isOver {
                problems.append("\(id) should have ended: \(call.joinedCount) joined, \(call.ringingCount) ringing")
            }
            if call.startTime == nil && !call.members.contains(where: { $0.isCaller && $0.phase == .joined }) {
                problems.append("\(id) is not connected and its caller is gone")
            }
            if let change = call.mediaChange, call.type != .oneToOne || call.index(of: change.requester) == nil {
                problems.append("\(id) has a media change it cannot have")
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

    // MARK: - start and invite

    private mutating func start(_ command: StartCallCommand, now: Int64, out: inout [CallAction]) {
        if let error = validate(command) {
            out.append(.reply(.failure(error)))
            return
        }
        let request = command.request
        let params = request.params ?? CallParams()
        let invitees = Self.deduplicated(request.participantIds)
        let app = command.caller.app
        var call = Call(
            id: command.callId, app: app, roomId: params.roomId ?? command.generatedRoomId,
            type: invitees.count > 1 || params.chatGroupId != nil ? .group : .oneToOne,
            mediaType: request.mediaType, callerId: command.caller.user, chatGroupId: params.chatGroupId,
            userData: params.userData, isEphemeral: params.isEphemeralCall ?? false,
            timeout: params.timeout ?? CallLimits.defaultTimeoutSeconds, createdAt: now,
            members: [
                Member(
                    userId: command.caller.user, inviterId: nil, isCaller: true, phase: .joined,
                    device: command.device, joinedAt: now, cameraOn: request.mediaType == .video,
                    profile: command.profiles[command.caller.user])
            ])
        activeCalls[command.caller, default: []].insert(call.id)
        let added = addInvitees(
            invitees, inviter: command.caller.user, to: &call, settings: command.settings, online: command.online,
            pushable: command.pushable, blockedBy: command.blockedBy, profiles: command.profiles, now: now)
        let snapshot = info(call)
        out.append(
            .reply(
                .started(
                    StartCallResponse(callId: call.id, roomId: call.roomId, busyUserIds: added.busy, call: snapshot))))
        out.append(
            .send(
                .callElsewhere(CallElsewhereEvent(call: snapshot, deviceId: command.device, active: true)),
                to: .userExcept(command.caller, command.device)))
        ring(added.ringing, in: call, inviter: command.caller.user, snapshot: snapshot, now: now, out: &out)
        if let (lastUnreachable, reason) = added.unreachable.last, call.ringingCount == 0 {
            endCall(&call, reason: reason, by: lastUnreachable, now: now, out: &out)
        }
        store(call, now: now, out: &out)
    }

    private func validate(_ command: StartCallCommand) -> SwitchboardError? {
        let request = command.request
        if !(activeCalls[command.caller]?.isEmpty ?? true) {
            return SwitchboardError(.alreadyInCall)
        }
        if let error = validateInvitees(request.participantIds, inviter: command.caller.user) { return error }
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
        if let group = params.chatGroupId,
            !Self.isValidToken(group.rawValue, maxLength: CallLimits.maxChatGroupIDLength)
        {
            return SwitchboardError(
                .invalidChatGroupID, "chatGroupId must be 1-\(CallLimits.maxChatGroupIDLength) visible characters")
        }
        return nil
    }

    private func validateInvitees(_ invitees: [UserID], inviter: UserID) -> SwitchboardError? {
        if invitees.isEmpty {
            return SwitchboardError(.noParticipants)
        }
        if let bad = invitees.first(where: { !$0.isValid }) {
            return SwitchboardError(.invalidUserID, "participantIds: '\(bad.rawValue.prefix(40))' is not a valid userID")
        }
        if invitees.contains(inviter) {
            return SwitchboardError(.cannotCallSelf)
        }
        return nil
    }

    /// 1…`maxLength` bytes of visible ASCII (no spaces or control characters).
    static func isValidToken(_ value: String, maxLength: Int) -> Bool {
        let bytes = value.utf8
        return !bytes.isEmpty && bytes.count <= maxLength && bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    static func deduplicated(_ ids: [UserID]) -> [UserID] {
        var seen = Set<UserID>()
        return ids.filter { seen.insert($0).inserted }
    }

    /// Adds (or re-invites) members: those who block the inviter, busy ones under the reject policy
    /// and offline ones leave at once; the others ring.
    private mutating func addInvitees(
        _ invitees: [UserID], inviter: UserID, to call: inout Call, settings: AppSettings, online: Set<UserID>,
        pushable: Set<UserID>, blockedBy: Set<UserID>, profiles: [UserID: UserProfile], now: Int64
    ) -> (ringing: [UserID], busy: [UserID], unreachable: [(UserID, CallEndReason)]) {
        var ringing: [UserID] = []
        var busy: [UserID] = []
        var unreachable: [(UserID, CallEndReason)] = []
        for invitee in invitees {
            let key = UserKey(app: call.app, user: invitee)
            var member = Member(
                userId: invitee, inviterId: inviter, isCaller: false, phase: .ringing,
                cameraOn: call.mediaType == .video, profile: profiles[invitee])
            if let index = call.index(of: invitee) {
                // A member who left is invited again; their call time so far is kept.
                member.connectedMs = call.members[index].connectedMs
                member.firstConnectedAt = call.members[index].firstConnectedAt
                member.profile = member.profile ?? call.members[index].profile
            }
            if blockedBy.contains(invitee) {
                // The blocked caller sees a rejection, or nobody online, as the app chose.
                let reason: CallEndReason = settings.blockedCallerSees == .reject ? .reject : .offline
                member.phase = .left
                member.leftAt = now
                member.result = reason == .reject ? .rejected : .missed
                member.endReason = reason
                member.endedBy = invitee
                member.blocksCaller = true
                unreachable.append((invitee, reason))
            } else if settings.busyPolicy == .reject, !(activeCalls[key]?.isEmpty ?? true) {
                member.phase = .left
                member.leftAt = now
                member.result = .busy
                member.endReason = .lineBusy
                busy.append(invitee)
                unreachable.append((invitee, .lineBusy))
            } else if !online.contains(invitee) && !pushable.contains(invitee) {
                // No device and no push token: nothing can ring.
                member.phase = .left
                member.leftAt = now
                member.result = .missed
                member.endReason = .offline
                unreachable.append((invitee, .offline))
            } else {
                member.pushed = online.contains(invitee) ? nil : true
                ringing.append(invitee)
                activeCalls[key, default: []].insert(call.id)
            }
            if let index = call.index(of: invitee) {
                call.members[index] = member
            } else {
                call.members.append(member)
            }
        }
        return (ringing, busy, unreachable)
    }

    /// Sends the invitations (VoIP pushes to invitees without a connected device) and sets the ring timers.
    private func ring(
        _ invitees: [UserID], in call: Call, inviter: UserID, snapshot: CallInfo, now: Int64, out: inout [CallAction]
    ) {
        let deadline = now + Int64(call.timeout) * 1000
        let inviterName = call.index(of: inviter).flatMap { call.members[$0].profile?.nickname }
        for invitee in invitees {
            let key = UserKey(app: call.app, user: invitee)
            out.append(.send(.callReceived(CallReceivedEvent(call: snapshot, inviterId: inviter)), to: .user(key)))
            out.append(.setTimer(.ring(call.id, invitee), at: deadline))
            if call.index(of: invitee).map({ call.members[$0].pushed == true }) == true {
                let push = IncomingCallPush(
                    callId: call.id, sdkAppID: call.app, userId: invitee, callerId: call.callerId,
                    callerName: inviter == call.callerId ? inviterName : call.members.first?.profile?.nickname,
                    mediaType: call.mediaType, callType: call.type, inviterId: inviter, deadline: deadline)
                out.append(.push(PushMessage(user: key, push: .incomingCall(push), expiration: deadline)))
            }
        }
    }

    /// The follow-up push that stops a pushed invitation ringing on the user's other devices.
    private func stopPush(_ call: Call, _ member: Member, reason: CallEndReason, except device: DeviceID?, now: Int64)
        -> CallAction
    {
        .push(
            PushMessage(
                user: UserKey(app: call.app, user: member.userId),
                push: .callEnded(CallEndedPush(callId: call.id, sdkAppID: call.app, reason: reason, mediaType: call.mediaType)),
                expiration: now + 60_000, exceptDevice: device))
    }

    private mutating func invite(_ command: InviteCommand, now: Int64, out: inout [CallAction]) {
        let found: Call
        let index: Int
        switch lookup(command.command) {
        case .failure(let error):
            out.append(.reply(.failure(error)))
            return
        case .success(let match):
            (found, index) = match
        }
        guard found.type == .group else {
            out.append(.reply(.failure(SwitchboardError(.groupCallOnly, "only group calls take more members"))))
            return
        }
        guard found.members[index].phase == .joined else {
            out.append(.reply(.failure(SwitchboardError(.invalidCallState, "join the call before inviting"))))
            return
        }
        let inviter = command.command.user.user
        if let error = validateInvitees(command.invitees, inviter: inviter) {
            out.append(.reply(.failure(error)))
            return
        }
        // Members already ringing or in the call are left as they are.
        let fresh = Self.deduplicated(command.invitees).filter { id in
            found.index(of: id).map { found.members[$0].phase == .left } ?? true
        }
        if found.activeCount + fresh.count > command.settings.maxParticipants {
            out.append(
                .reply(
                    .failure(
                        SwitchboardError(
                            .tooManyParticipants, "at most \(command.settings.maxParticipants) members at once"))))
            return
        }
        var call = found
        let added = addInvitees(
            fresh, inviter: inviter, to: &call, settings: command.settings, online: command.online,
            pushable: command.pushable, blockedBy: command.blockedBy, profiles: command.profiles, now: now)
        let snapshot = info(call)
        out.append(.reply(.invited(InviteToCallResponse(busyUserIds: added.busy, call: snapshot))))
        ring(added.ringing, in: call, inviter: inviter, snapshot: snapshot, now: now, out: &out)
        let newcomers = Set(added.ringing)
        let update = ServerEvent.callUpdated(CallUpdatedEvent(call: snapshot))
        for member in call.members where member.phase != .left && !newcomers.contains(member.userId) {
            out.append(.send(update, to: recipient(member, app: call.app)))
        }
        store(call, now: now, out: &out)
    }

    // MARK: - answering and joining

    /// Finds the call and the member for a command, or the error to answer with.
    /// The call and the commanding member's index; with `joined`, only once that member answered.
    private func lookup(_ command: CallCommand, joined: Bool = false) -> Result<(Call, Int), SwitchboardError> {
        switch findCall(command.callId, app: command.user.app, user: command.user.user) {
        case .failure(let error):
            return .failure(error)
        case .success(let call):
            guard let index = call.index(of: command.user.user) else {
                return .failure(SwitchboardError(.notInCall))
            }
            if joined, call.members[index].phase != .joined {
                return .failure(SwitchboardError(.invalidCallState, "answer the call first"))
            }
            return .success((call, index))
        }
    }

    private func findCall(_ callId: CallID, app: SdkAppID, user: UserID) -> Result<Call, SwitchboardError> {
        guard let call = calls[callId], call.app == app else {
            if let ended = endedCalls[callId], ended.app == app {
                return .failure(SwitchboardError(ended.members[user] != nil ? .callAlreadyEnded : .notInCall))
            }
            return .failure(SwitchboardError(.callNotFound))
        }
        return .success(call)
    }

    private mutating func accept(_ command: CallCommand, now: Int64, out: inout [CallAction]) {
        switch lookup(command) {
        case .failure(let error):
            out.append(.reply(.failure(error)))
        case .success(let (call, index)):
            switch call.members[index].phase {
            case .joined:
                out.append(.reply(.failure(SwitchboardError(.alreadyAccepted))))
            case .left:
                out.append(.reply(.failure(SwitchboardError(.invalidCallState, "you already left this call"))))
            case .ringing:
                admit(command, index: index, profile: nil, now: now, out: &out)
            }
        }
    }

    private mutating func join(_ join: JoinCommand, now: Int64, out: inout [CallAction]) {
        let command = join.command
        let call: Call
        switch findCall(command.callId, app: command.user.app, user: command.user.user) {
        case .failure(let error):
            // Someone outside an ended call learns nothing more than for a missing one.
            out.append(
                .reply(.failure(error.code == .notInCall ? SwitchboardError(.callNotFound) : error)))
            return
        case .success(let found):
            call = found
        }
        guard call.type == .group else {
            out.append(.reply(.failure(SwitchboardError(.groupCallOnly, "only group calls can be joined"))))
            return
        }
        let existing = call.index(of: command.user.user)
        if let existing, call.members[existing].phase == .joined {
            out.append(.reply(.failure(SwitchboardError(.alreadyAccepted))))
            return
        }
        guard existing != nil || join.isChatGroupMember else {
            out.append(
                .reply(.failure(SwitchboardError(.joinNotAllowed, "you were not invited and are not in its chat group"))))
            return
        }
        if existing.map({ call.members[$0].phase == .left }) ?? true,
            call.activeCount + 1 > join.settings.maxParticipants
        {
            out.append(.reply(.failure(SwitchboardError(.tooManyParticipants))))
            return
        }
        let inOtherCall = (activeCalls[command.user] ?? []).contains { id in
            id != call.id && calls[id]?.index(of: command.user.user).map { calls[id]!.members[$0].phase == .joined } == true
        }
        if inOtherCall && join.settings.busyPolicy == .reject {
            out.append(.reply(.failure(SwitchboardError(.alreadyInCall))))
            return
        }
        var updated = call
        let index: Int
        if let existing {
            index = existing
        } else {
            updated.members.append(
                Member(
                    userId: command.user.user, inviterId: nil, isCaller: false, phase: .left,
                    cameraOn: call.mediaType == .video, profile: join.profile))
            index = updated.members.count - 1
        }
        calls[call.id] = updated
        admit(command, index: index, profile: join.profile, now: now, out: &out)
    }

    /// Puts a ringing, left or new member into the call on `command.device`: hangs up the user's
    /// other call (call waiting), connects the call if this is its second member, and tells everyone.
    private mutating func admit(
        _ command: CallCommand, index: Int, profile: UserProfile?, now: Int64, out: inout [CallAction]
    ) {
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
        let wasRinging = call.members[index].phase == .ringing
        if wasRinging { out.append(.cancelTimer(.ring(call.id, key.user))) }
        call.members[index].phase = .joined
        call.members[index].device = command.device
        call.members[index].joinedAt = now
        call.members[index].leftAt = nil
        call.members[index].result = nil
        call.members[index].endReason = nil
        call.members[index].isDown = false
        call.members[index].quality = .unknown
        call.members[index].volume = nil
        if let profile { call.members[index].profile = profile }
        activeCalls[key, default: []].insert(call.id)
        let connectsNow = call.startTime == nil
        if connectsNow { call.startTime = now }
        let snapshot = info(call)
        out.append(.reply(.call(snapshot)))
        out.append(contentsOf: pending)
        if wasRinging {
            out.append(
                .send(
                    .callEnded(
                        CallEndedEvent(
                            callId: call.id, mediaType: call.mediaType, reason: .otherDeviceAccepted, userId: key.user)),
                    to: .userExcept(key, command.device)))
            if call.members[index].pushed == true {
                out.append(stopPush(call, call.members[index], reason: .otherDeviceAccepted, except: command.device, now: now))
                call.members[index].pushed = nil
            }
        }
        out.append(
            .send(
                .callElsewhere(CallElsewhereEvent(call: snapshot, deviceId: command.device, active: true)),
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

    // MARK: - in the call

    private mutating func updateDevice(
        _ command: CallCommand, microphoneOn: Bool?, cameraOn: Bool?, screenSharing: Bool?, out: inout [CallAction]
    ) {
        switch lookup(command, joined: true) {
        case .failure(let error):
            out.append(.reply(.failure(error)))
        case .success(let (found, index)):
            var call = found
            if let microphoneOn { call.members[index].microphoneOn = microphoneOn }
            if let cameraOn { call.members[index].cameraOn = cameraOn }
            if let screenSharing { call.members[index].screenSharing = screenSharing }
            let mutedNow = microphoneOn == false && call.members[index].volume.map { $0 != .mute } == true
            if mutedNow { call.members[index].volume = .mute }
            calls[call.id] = call
            out.append(.reply(.ok))
            let member = call.members[index]
            let event = ServerEvent.deviceChanged(
                DeviceChangedEvent(
                    callId: call.id, userId: member.userId, microphoneOn: member.microphoneOn, cameraOn: member.cameraOn,
                    screenSharing: member.screenSharing == true))
            for other in call.members where other.phase != .left && other.userId != member.userId {
                out.append(.send(event, to: recipient(other, app: call.app)))
            }
            if mutedNow { broadcastStatus(of: member, in: call, out: &out) }
        }
    }

    /// Relays a media signal between two members who are both in the call, from the sender's
    /// device in the call to the peer's.
    private func mediaSignal(_ command: CallCommand, _ signal: SendMediaSignalRequest, out: inout [CallAction]) {
        switch lookup(command, joined: true) {
        case .failure(let error):
            out.append(.reply(.failure(error)))
        case .success(let (call, index)):
            let sender = call.members[index]
            guard sender.device == command.device else {
                out.append(.reply(.failure(SwitchboardError(.notInCall, "this device is not the one in the call"))))
                return
            }
            guard signal.to != sender.userId, let peer = call.index(of: signal.to).map({ call.members[$0] }),
                peer.phase == .joined
            else {
                out.append(.reply(.failure(SwitchboardError(.peerNotInCall))))
                return
            }
            out.append(.reply(.ok))
            let event = MediaSignalEvent(
                callId: call.id, from: sender.userId, kind: signal.kind, sdp: signal.sdp, candidate: signal.candidate)
            out.append(.send(.mediaSignal(event), to: recipient(peer, app: call.app)))
        }
    }

    private mutating func statusReport(_ command: CallCommand, _ report: StatusReport, out: inout [CallAction]) {
        switch lookup(command, joined: true) {
        case .failure(let error):
            out.append(.reply(.failure(error)))
        case .success(let (found, index)):
            guard (0...100).contains(report.packetLoss), report.rtt >= 0, report.bitrate >= 0,
                (0...100).contains(report.audioLevel)
            else {
                out.append(
                    .reply(
                        .failure(
                            SwitchboardError(
                                .invalidParams, "packetLoss and audioLevel must be 0-100, rtt and bitrate >= 0"))))
                return
            }
            var call = found
            let member = call.members[index]
            let quality = NetworkQuality.from(packetLoss: report.packetLoss, rtt: report.rtt)
            let volume = VolumeLevel.from(audioLevel: report.audioLevel, microphoneOn: member.microphoneOn)
            out.append(.reply(.ok))
            guard quality != member.quality || volume != member.volume else { return }
            call.members[index].quality = quality
            call.members[index].volume = volume
            calls[call.id] = call
            broadcastStatus(of: call.members[index], in: call, out: &out)
        }
    }

    /// Tells the other joined members a member's quality and volume.
    private func broadcastStatus(of member: Member, in call: Call, out: inout [CallAction]) {
        let event = ServerEvent.memberStatus(
            MemberStatusEvent(
                callId: call.id, userId: member.userId, networkQuality: member.quality,
                volumeLevel: member.volume ?? .mute))
        for other in call.members where other.phase == .joined && other.userId != member.userId {
            out.append(.send(event, to: recipient(other, app: call.app)))
        }
    }

    private mutating func changeMediaType(
        _ command: CallCommand, _ mediaType: CallMediaType, _ transaction: TransactionID, now: Int64,
        out: inout [CallAction]
    ) {
        switch lookup(command) {
        case .failure(let error):
            out.append(.reply(.failure(error)))
        case .success(let (found, index)):
            var call = found
            let refusal: SwitchboardError? =
                if call.type != .oneToOne {
                    SwitchboardError(.oneToOneOnly, "media type changes are for one-to-one calls")
                } else if call.members[index].phase != .joined || call.startTime == nil {
                    SwitchboardError(.invalidCallState, "the call is not connected")
                } else if call.mediaChange != nil {
                    SwitchboardError(.mediaChangeInProgress)
                } else if call.mediaType == mediaType {
                    SwitchboardError(.invalidParams, "the call is already \(mediaType.rawValue)")
                } else {
                    nil
                }
            if let refusal {
                out.append(.reply(.failure(refusal)))
                return
            }
            call.mediaChange = MediaChange(id: transaction, requester: command.user.user, mediaType: mediaType)
            calls[call.id] = call
            out.append(.reply(.mediaChange(transaction)))
            let event = ServerEvent.mediaTypeChangeRequested(
                MediaTypeChangeRequestedEvent(
                    callId: call.id, transactionId: transaction, mediaType: mediaType, userId: command.user.user))
            for other in call.members where other.phase == .joined && other.userId != command.user.user {
                out.append(.send(event, to: recipient(other, app: call.app)))
            }
            out.append(.setTimer(.mediaChange(call.id, transaction), at: now + configuration.mediaChangeTimeout))
        }
    }

    private mutating func replyMediaType(
        _ command: CallCommand, _ transaction: TransactionID, agree: Bool, out: inout [CallAction]
    ) {
        switch lookup(command) {
        case .failure(let error):
            out.append(.reply(.failure(error)))
        case .success(let (call, index)):
            guard let change = call.mediaChange, change.id == transaction else {
                out.append(.reply(.failure(SwitchboardError(.transactionNotFound))))
                return
            }
            guard change.requester != command.user.user, call.members[index].phase == .joined else {
                out.append(.reply(.failure(SwitchboardError(.invalidCallState, "only the other member answers"))))
                return
            }
            out.append(.reply(.ok))
            finishMediaChange(call.id, result: agree ? .agreed : .declined, out: &out)
        }
    }

    private mutating func cancelMediaType(_ command: CallCommand, _ transaction: TransactionID, out: inout [CallAction]) {
        switch lookup(command) {
        case .failure(let error):
            out.append(.reply(.failure(error)))
        case .success(let (call, _)):
            guard let change = call.mediaChange, change.id == transaction else {
                out.append(.reply(.failure(SwitchboardError(.transactionNotFound))))
                return
            }
            guard change.requester == command.user.user else {
                out.append(.reply(.failure(SwitchboardError(.invalidCallState, "only the requester cancels"))))
                return
            }
            out.append(.reply(.ok))
            finishMediaChange(call.id, result: .canceled, out: &out)
        }
    }

    /// Closes the open media change: both members hear the result; an agreement changes the call.
    private mutating func finishMediaChange(_ callId: CallID, result: MediaTypeChangeResult, out: inout [CallAction]) {
        guard var call = calls[callId], let change = call.mediaChange else { return }
        call.mediaChange = nil
        out.append(.cancelTimer(.mediaChange(call.id, change.id)))
        if result == .agreed { call.mediaType = change.mediaType }
        calls[call.id] = call
        if result == .agreed, journalPendingSet.insert(call.id).inserted { journalPending.append(call.id) }
        let event = ServerEvent.mediaTypeChangeResult(
            MediaTypeChangeResultEvent(
                callId: call.id, transactionId: change.id, mediaType: change.mediaType, userId: change.requester,
                result: result))
        let snapshot = result == .agreed ? ServerEvent.callUpdated(CallUpdatedEvent(call: info(call))) : nil
        for member in call.members where member.phase == .joined {
            out.append(.send(event, to: recipient(member, app: call.app)))
        }
        if let snapshot {
            for member in call.members where member.phase == .joined {
                out.append(.send(snapshot, to: recipient(member, app: call.app)))
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
            // The timer has fired: nothing left to cancel.
            call.members[index].isDown = false
            if call.members[index].isCaller && call.startTime == nil {
                endCall(&call, reason: .endByServer, by: user, now: now, out: &out)
            } else {
                leave(
                    &call, index, result: .answered, reason: .endByServer, by: user, actingDevice: nil, now: now,
                    out: &out)
            }
            store(call, now: now, out: &out)
        case .mediaChange(let callId, let transaction):
            guard calls[callId]?.mediaChange?.id == transaction else { return }
            finishMediaChange(callId, result: .timedOut, out: &out)
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
        // Calls that ended while the device was away (or before it ever connected, when a push woke
        // it): it hears how they ended. Clients drop ends of calls they never knew.
        for callId in endedByUser[user] ?? [] {
            guard let ended = endedCalls[callId], let (reason, by) = ended.end(for: user.user, device: device) else {
                continue
            }
            out.append(
                .send(
                    .callEnded(CallEndedEvent(callId: callId, mediaType: ended.mediaType, reason: reason, userId: by)),
                    to: .device(user, device)))
        }
        var current: [CallID] = []
        var elsewhere: [CallID] = []
        for callId in (activeCalls[user] ?? []).sorted() {
            guard var call = calls[callId], let index = call.index(of: user.user) else { continue }
            let member = call.members[index]
            switch member.phase {
            case .ringing:
                // A pending invitation: a device that logs in while the call rings rings too.
                current.append(call.id)
                out.append(
                    .send(
                        .callReceived(CallReceivedEvent(call: info(call), inviterId: member.inviterId ?? call.callerId)),
                        to: .device(user, device)))
            case .joined where member.device == device:
                // The same device is back: resume the call where it was.
                current.append(call.id)
                if member.isDown {
                    call.members[index].isDown = false
                    call.members[index].quality = .unknown
                    out.append(.cancelTimer(.reconnectGrace(call.id, user.user)))
                    calls[call.id] = call
                    broadcastStatus(of: call.members[index], in: call, out: &out)
                }
                let snapshot = info(call)
                out.append(
                    .send(
                        call.startTime != nil
                            ? .callStarted(CallStartedEvent(call: snapshot)) : .callUpdated(CallUpdatedEvent(call: snapshot)),
                        to: .device(user, device)))
            case .joined:
                if let bound = member.device {
                    elsewhere.append(call.id)
                    out.append(
                        .send(
                            .callElsewhere(CallElsewhereEvent(call: info(call), deviceId: bound, active: true)),
                            to: .device(user, device)))
                }
            case .left:
                break
            }
        }
        out.append(
            .send(.callsSynced(CallsSyncedEvent(callIds: current, elsewhereCallIds: elsewhere)), to: .device(user, device)))
    }

    private mutating func deviceOffline(_ user: UserKey, _ device: DeviceID, now: Int64, out: inout [CallAction]) {
        for callId in (activeCalls[user] ?? []).sorted() {
            guard var call = calls[callId], let index = call.index(of: user.user) else { continue }
            let member = call.members[index]
            guard member.phase == .joined, member.device == device, !member.isDown else { continue }
            call.members[index].isDown = true
            call.members[index].quality = .down
            calls[call.id] = call
            out.append(.setTimer(.reconnectGrace(call.id, user.user), at: now + configuration.reconnectGrace))
            broadcastStatus(of: call.members[index], in: call, out: &out)
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
        let elsewhere = finish(
            &call, index, result: result, reason: reason, by: by, actingDevice: actingDevice, now: now, out: &out)
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
        out.append(contentsOf: elsewhere)
        if call.isOver {
            endCall(&call, reason: reason, by: by, now: now, out: &out)
        } else {
            if call.mediaChange?.requester == member.userId { call.mediaChange = nil }
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
        if let change = call.mediaChange {
            out.append(.cancelTimer(.mediaChange(call.id, change.id)))
            call.mediaChange = nil
        }
        for index in call.members.indices where call.members[index].phase != .left {
            let member = call.members[index]
            let result: CallRecordResult
            if member.phase == .joined {
                result = call.startTime != nil ? .answered : Self.unconnectedCallerResult(reason)
            } else {
                result = .missed
            }
            let elsewhere = finish(&call, index, result: result, reason: reason, by: by, now: now, out: &out)
            out.append(.send(event, to: recipient(member, app: call.app)))
            out.append(contentsOf: elsewhere)
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

    /// Marks a member as left, adds up their time in the call and stops their timers. Returns the
    /// notice for the user's other devices that the call they saw elsewhere is over, which the
    /// caller sends after the member's own `callEnded`.
    private mutating func finish(
        _ call: inout Call, _ index: Int, result: CallRecordResult, reason: CallEndReason, by: UserID?,
        actingDevice: DeviceID? = nil, now: Int64, out: inout [CallAction]
    ) -> [CallAction] {
        let member = call.members[index]
        let key = UserKey(app: call.app, user: member.userId)
        if member.phase == .ringing { out.append(.cancelTimer(.ring(call.id, member.userId))) }
        if member.isDown { out.append(.cancelTimer(.reconnectGrace(call.id, member.userId))) }
        if member.phase == .joined, let startTime = call.startTime, let joinedAt = member.joinedAt {
            let from = max(startTime, joinedAt)
            call.members[index].connectedMs += max(0, now - from)
            call.members[index].firstConnectedAt = member.firstConnectedAt ?? from
        }
        var elsewhere: [CallAction] = []
        if member.phase == .ringing, member.pushed == true {
            // The lock screen that a push woke must stop ringing too (Twilio does the same).
            let pushReason: CallEndReason = reason == .reject ? .otherDeviceReject : reason
            elsewhere.append(stopPush(call, member, reason: pushReason, except: actingDevice, now: now))
            call.members[index].pushed = nil
        }
        if member.phase == .joined, let device = member.device {
            elsewhere.append(
                .send(
                    .callElsewhere(CallElsewhereEvent(call: info(call), deviceId: device, active: false)),
                    to: .userExcept(key, device)))
        }
        call.members[index].phase = .left
        call.members[index].leftAt = now
        call.members[index].result = result
        call.members[index].endReason = reason
        call.members[index].endedBy = by
        call.members[index].isDown = false
        activeCalls[key]?.remove(call.id)
        if activeCalls[key]?.isEmpty == true { activeCalls[key] = nil }
        return elsewhere
    }

    /// Saves a changed call; an ended one is forgotten (but remembered as ended) and its records written.
    private mutating func store(_ call: Call, now: Int64, out: inout [CallAction]) {
        guard call.isEnded else {
            calls[call.id] = call
            if journalPendingSet.insert(call.id).inserted { journalPending.append(call.id) }
            return
        }
        calls[call.id] = nil
        var members: [UserID: EndedCall.Member] = [:]
        for member in call.members {
            members[member.userId] = EndedCall.Member(
                reason: member.endReason ?? .unknown, endedBy: member.endedBy,
                result: member.firstConnectedAt != nil ? .answered : member.result ?? .unknown, device: member.device)
            endedByUser[UserKey(app: call.app, user: member.userId), default: []].append(call.id)
        }
        endedCalls[call.id] = EndedCall(app: call.app, mediaType: call.mediaType, members: members, endedAt: now)
        endedOrder.append(call.id)
        // Also for ephemeral calls (without records): the end removes the call from the journal.
        out.append(.writeRecords(call.id, call.isEphemeral ? [] : records(of: call, now: now)))
    }

    private func records(of call: Call, now: Int64) -> [RecordDraft] {
        let participantIds = call.members.map(\.userId)
        return call.members.filter { $0.blocksCaller != true }.map { member in
            let connected = member.firstConnectedAt != nil
            return RecordDraft(
                owner: UserKey(app: call.app, user: member.userId),
                record: CallRecord(
                    callId: call.id, roomId: call.roomId, callType: call.type, mediaType: call.mediaType,
                    callerId: call.callerId, inviterId: member.inviterId ?? call.callerId,
                    participantIds: participantIds, chatGroupId: call.chatGroupId,
                    direction: member.isCaller ? .outgoing : .incoming,
                    result: connected ? .answered : member.result ?? .unknown,
                    startTime: member.firstConnectedAt, endTime: member.leftAt ?? now,
                    duration: Int(member.connectedMs / 1000), endReason: member.endReason ?? .unknown, syncTime: 0))
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
            for user in ended.members.keys {
                let key = UserKey(app: ended.app, user: user)
                endedByUser[key]?.removeAll { $0 == id }
                if endedByUser[key]?.isEmpty == true { endedByUser[key] = nil }
            }
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
