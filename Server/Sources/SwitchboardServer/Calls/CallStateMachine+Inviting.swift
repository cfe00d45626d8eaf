import SwitchboardProtocol

/// Placing a call and inviting people into it: who rings, who is busy, blocked or unreachable,
/// and the VoIP pushes that ring devices without a connection (only ever for a member who is
/// ringing: iOS punishes an app woken by a VoIP push that does not report a ringing call).
extension CallStateMachine {
    mutating func start(_ command: StartCallCommand, _ facts: CallFacts, now: Int64, out: inout CallOutput) {
        if let error = validate(command) {
            out.answer(.failure(error))
            return
        }
        let records: Bool
        switch recordsFromStart(command) {
        case .failure(let error):
            out.answer(.failure(error))
            return
        case .success(let answer):
            records = answer
        }
        let request = command.request
        let params = request.params ?? CallParams()
        let invitees = Self.deduplicated(request.participantIds)
        var call = Call(
            id: command.callId, app: command.caller.app, roomId: params.roomId ?? command.generatedRoomId,
            type: .oneToOne,
            mediaType: request.mediaType, callerId: command.caller.user, chatGroupId: params.chatGroupId,
            userData: params.userData, isEphemeral: params.isEphemeralCall ?? false,
            timeout: params.timeout ?? CallLimits.defaultTimeoutSeconds, createdAt: now,
            members: [
                Member(
                    userId: command.caller.user, inviterId: nil, isCaller: true,
                    phase: .joined(Member.Presence(device: command.device, joinedAt: now)),
                    cameraOn: request.mediaType == .video, profile: command.profiles[command.caller.user])
            ])
        call.pushConfig = params.pushConfig
        if invitees.count > 1 || params.chatGroupId != nil { call.becomeGroup(sfu: configuration.sfu) }
        if records {
            Self.beginRecording(&call, by: command.settings.recording.policy == .always ? nil : command.caller.user, now: now)
        }
        roster.add(command.caller, to: call.id)
        notify(of: &call, now: now, out: &out) { call in
            .callCreated(
                WebhookCallCreated(
                    callId: call.id, roomId: call.roomId, callType: call.type, mediaType: call.mediaType,
                    callerId: call.callerId, callerDeviceId: command.device, inviteeIds: invitees,
                    chatGroupId: call.chatGroupId, userData: call.userData, isEphemeral: call.isEphemeral,
                    timeout: call.timeout, createdAt: now))
        }
        let added = addInvitees(
            invitees, inviter: command.caller.user, to: &call, settings: command.settings, facts: facts,
            profiles: command.profiles, now: now, out: &out)
        let snapshot = call.info
        out.answer(
            .started(StartCallResponse(callId: call.id, roomId: call.roomId, busyUserIds: added.busy, call: snapshot)))
        out.append(
            .send(
                .callElsewhere(CallElsewhereEvent(call: snapshot, deviceId: command.device, active: true)),
                to: .userExcept(command.caller, command.device)))
        ring(
            added.ringing, in: &call, inviter: command.caller.user, snapshot: snapshot, online: facts.online, now: now,
            out: &out)
        if let (lastUnreachable, reason) = added.unreachable.last, call.ringingCount == 0 {
            endCall(&call, reason: reason, by: lastUnreachable, now: now, out: &out)
        }
        store(call, now: now, out: &out)
    }

    mutating func invite(_ command: InviteCommand, _ facts: CallFacts, now: Int64, out: inout CallOutput) {
        let found: Call
        let fresh: [UserID]
        switch validate(command) {
        case .failure(let error):
            out.answer(.failure(error))
            return
        case .success(let checked):
            (found, fresh) = checked
        }
        let inviter = command.command.user.user
        var call = found
        // An invitation makes a one-to-one call a group call for the rest of its life (``validate(_:)``),
        // and moves its media to the SFU where there is one.
        call.becomeGroup(sfu: configuration.sfu)
        let added = addInvitees(
            fresh, inviter: inviter, to: &call, settings: command.settings, facts: facts,
            profiles: command.profiles, now: now, out: &out)
        let snapshot = call.info
        out.answer(.invited(InviteToCallResponse(busyUserIds: added.busy, call: snapshot)))
        ring(added.ringing, in: &call, inviter: inviter, snapshot: snapshot, online: facts.online, now: now, out: &out)
        let newcomers = Set(added.ringing)
        let update = ServerEvent.callUpdated(CallUpdatedEvent(call: snapshot))
        for member in call.members where member.isActive && !newcomers.contains(member.userId) {
            out.send(update, to: member, of: call)
        }
        store(call, now: now, out: &out)
    }

    /// Adds (or re-invites) members: busy ones under the reject policy and unreachable ones leave
    /// at once; the others ring. An invitee who blocks the inviter is never reached: the inviter
    /// sees what the app's `blockedCallerSees` says and cannot tell it from the genuine case —
    /// `offline` at once, as for a callee with no device and no push token; or `reject`, as a
    /// person would: busy and unreachable as anyone, else screened (ringing to everyone else)
    /// until the drawn delay runs out.
    mutating func addInvitees(
        _ invitees: [UserID], inviter: UserID, to call: inout Call, settings: AppSettings, facts: CallFacts,
        profiles: [UserID: UserProfile], now: Int64, out: inout CallOutput
    ) -> (ringing: [UserID], busy: [UserID], unreachable: [(UserID, CallEndReason)]) {
        var ringing: [UserID] = []
        var busy: [UserID] = []
        var unreachable: [(UserID, CallEndReason)] = []
        for invitee in invitees {
            let key = UserKey(app: call.app, user: invitee)
            let previous = call.index(of: invitee).map { call.members[$0] }
            let blocks = facts.blockedBy.contains(invitee)
            let deadline = now + Int64(call.timeout) * 1000
            let phase: Member.Phase
            if blocks && settings.blockedCallerSees == .offline {
                phase = .left(Member.Departure(at: now, result: .missed, reason: .offline, blocksCaller: true))
                unreachable.append((invitee, .offline))
            } else if settings.busyPolicy == .reject, roster.isInAnyCall(key) {
                phase = .left(Member.Departure(at: now, result: .busy, reason: .lineBusy, blocksCaller: blocks))
                busy.append(invitee)
                unreachable.append((invitee, .lineBusy))
            } else if !facts.reachable.contains(invitee) {
                // No device and no push token: nothing can ring.
                phase = .left(Member.Departure(at: now, result: .missed, reason: .offline, blocksCaller: blocks))
                unreachable.append((invitee, .offline))
            } else if blocks {
                let delay = facts.declineDelays[invitee] ?? configuration.declineDelays.lowerBound
                phase = .screened(declineAt: now + delay, deadline: deadline)
                ringing.append(invitee)
            } else if facts.overBudget.contains(invitee) {
                // One invitation too many for them: as unreachable as a callee with nothing to ring.
                phase = .left(Member.Departure(at: now, result: .missed, reason: .offline, blocksCaller: false))
                unreachable.append((invitee, .offline))
            } else {
                phase = .ringing(pushed: facts.pushable.contains(invitee), deadline: deadline)
                ringing.append(invitee)
                roster.add(key, to: call.id)
                out.append(.countInvitation(key))
            }
            // A member who left is invited again; their call time so far is kept.
            let member = Member(
                userId: invitee, inviterId: inviter, isCaller: false, phase: phase, cameraOn: call.mediaType == .video,
                profile: profiles[invitee] ?? previous?.profile, connectedMs: previous?.connectedMs ?? 0,
                firstConnectedAt: previous?.firstConnectedAt)
            if let index = call.index(of: invitee) {
                call.members[index] = member
            } else {
                call.members.append(member)
            }
            notify(of: &call, now: now, out: &out) { call in
                .memberInvited(WebhookMemberInvited(callId: call.id, userId: invitee, inviterId: inviter))
            }
            // Not reached at all (busy, offline, or blocking the caller who sees them offline).
            if let missed = Self.departureEvent(member, phase: .ringing(pushed: false, deadline: deadline), in: call) {
                notify(of: &call, now: now, out: &out) { _ in missed }
            }
        }
        return (ringing, busy, unreachable)
    }

    /// Sends the invitations (over every connected device, and as pushes to the devices without a
    /// connection that have a ringing token) and sets the ring timers (for a screened invitee, only
    /// the timer of their decline: the call never reaches them, and no webhook says it rings).
    mutating func ring(
        _ invitees: [UserID], in call: inout Call, inviter: UserID, snapshot: CallInfo, online: Set<UserID>, now: Int64,
        out: inout CallOutput
    ) {
        let inviterName = call.index(of: inviter).flatMap { call.members[$0].profile?.displayableNickname }
        let callerName = call.members.first?.profile?.displayableNickname
        for invitee in invitees {
            guard let index = call.index(of: invitee) else { continue }
            let pushed: Bool
            let deadline: Int64
            switch call.members[index].phase {
            case .ringing(let viaPush, let until):
                (pushed, deadline) = (viaPush, until)
            case .screened(let declineAt, let until):
                out.append(.setTimer(.ring(call.id, invitee), at: min(declineAt, until)))
                continue
            case .joined, .left:
                continue
            }
            let key = UserKey(app: call.app, user: invitee)
            out.append(.send(.callReceived(CallReceivedEvent(call: snapshot, inviterId: inviter)), to: .user(key)))
            out.append(.setTimer(.ring(call.id, invitee), at: deadline))
            notify(of: &call, now: now, out: &out) { call in
                .memberRinging(
                    WebhookMemberRinging(
                        callId: call.id, userId: invitee, connected: online.contains(invitee), pushed: pushed,
                        ringsUntil: deadline))
            }
            if pushed {
                let push = IncomingCallPush(
                    callId: call.id, sdkAppID: call.app, userId: invitee, callerId: call.callerId,
                    callerName: inviter == call.callerId ? inviterName : callerName,
                    mediaType: call.mediaType, callType: call.type, inviterId: inviter, deadline: deadline,
                    userData: call.userData, pushConfig: call.pushConfig)
                out.append(.push(PushMessage(user: key, content: .ring(push), expiration: deadline)))
            }
        }
    }

    /// When a pushed invitee stops ringing: the invitation push's retries stop, and the devices
    /// that show the ringing themselves (browsers, Android apps, iPhones without CallKit) are told
    /// once: of the missed call when the caller asked for that (``PushConfig/missedCallAlert``;
    /// it replaces the ringing notification), else that the ringing ended.
    func pushesAfterRinging(_ call: Call, _ member: Member, result: CallRecordResult, reason: CallEndReason, now: Int64)
        -> [CallAction]
    {
        let key = call.key(member)
        if result == .missed, call.pushConfig?.missedCallAlert == true {
            let alert = MissedCallPush(
                callId: call.id, sdkAppID: call.app, userId: member.userId, callerId: call.callerId,
                callerName: call.members.first?.profile?.displayableNickname, mediaType: call.mediaType,
                callType: call.type, reason: reason, userData: call.userData, pushConfig: call.pushConfig)
            return [.push(PushMessage(user: key, content: .missedCall(alert), expiration: now + Self.missedCallAlertLifetime))]
        }
        let stopped = CallEndedPush(callId: call.id, sdkAppID: call.app, reason: reason, mediaType: call.mediaType)
        return [.push(PushMessage(user: key, content: .ringStopped(stopped), expiration: now + Self.stopPushLifetime))]
    }

    /// How long APNs keeps trying to deliver a missed-call alert to a phone that is off.
    static let missedCallAlertLifetime: Int64 = 24 * 3_600_000

    /// How long a push service keeps the end of a ringing for a device that is off: longer than
    /// any invitation it may still hold (a call rings at most 600 s), so a device that comes back
    /// gets both and does not ring on.
    static let stopPushLifetime: Int64 = 15 * 60_000

}
