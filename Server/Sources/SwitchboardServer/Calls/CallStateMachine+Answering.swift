import SwitchboardProtocol

/// Answering, joining, rejecting and hanging up.
extension CallStateMachine {
    mutating func accept(_ command: CallCommand, now: Int64, out: inout CallOutput) {
        switch lookup(command, .anyDevice) {
        case .failure(let error):
            out.answer(.failure(error))
        case .success(let (call, index)):
            switch call.members[index].phase {
            case .joined:
                out.answer(.failure(SwitchboardError(.alreadyAccepted)))
            case .left:
                out.answer(.failure(SwitchboardError(.invalidCallState, "you already left this call")))
            case .ringing:
                admit(command, profile: nil, now: now, out: &out)
            case .screened:
                // lookup refuses a screened member first: the call never reached them.
                out.answer(.failure(SwitchboardError(.notInCall)))
            }
        }
    }

    mutating func join(_ join: JoinCommand, _ facts: CallFacts, now: Int64, out: inout CallOutput) {
        let command = join.command
        let call: Call
        switch findCall(command.callId, app: command.user.app, user: command.user.user) {
        case .failure(let error):
            // Someone outside an ended call learns nothing more than for a missing one.
            out.answer(.failure(error.code == .notInCall ? SwitchboardError(.callNotFound) : error))
            return
        case .success(let found):
            call = found
        }
        guard call.type == .group else {
            out.answer(.failure(SwitchboardError(.groupCallOnly, "only group calls can be joined")))
            return
        }
        // A screened invitee was never invited as far as they know: only the chat group lets them in.
        let existing = call.index(of: command.user.user).map { call.members[$0] }.flatMap { $0.isScreened ? nil : $0 }
        if existing?.isJoined == true {
            out.answer(.failure(SwitchboardError(.alreadyAccepted)))
            return
        }
        guard existing != nil || facts.isChatGroupMember else {
            out.answer(.failure(SwitchboardError(.joinNotAllowed, "you were not invited and are not in its chat group")))
            return
        }
        if existing?.isActive != true, call.activeCount + 1 > join.settings.maxParticipants {
            out.answer(.failure(SwitchboardError(.tooManyParticipants)))
            return
        }
        if join.settings.busyPolicy == .reject, !joinedCalls(of: command.user, except: call.id).isEmpty {
            out.answer(.failure(SwitchboardError(.alreadyInCall)))
            return
        }
        admit(command, profile: join.profile, now: now, out: &out)
    }

    /// Puts a ringing, left or new member into the call on `command.device`: hangs up the user's
    /// other call (call waiting), connects the call if this is its second member, and tells everyone.
    mutating func admit(_ command: CallCommand, profile: UserProfile?, now: Int64, out: inout CallOutput) {
        // Call waiting: answering hangs up the call the user is in (no hold), as CallPlus does.
        // Its events follow the answer.
        var waiting = CallOutput()
        for otherId in joinedCalls(of: command.user, except: command.callId) {
            guard var other = calls[otherId], let otherIndex = other.index(of: command.user.user) else { continue }
            memberHangup(&other, otherIndex, actingDevice: command.device, now: now, out: &waiting)
            store(other, now: now, out: &waiting)
        }
        guard var call = calls[command.callId] else { return }
        let key = command.user
        let presence = Member.Phase.joined(Member.Presence(device: command.device, joinedAt: now))
        let index: Int
        // Set when the invitation rang the user's devices (true: through a push); a screened
        // member was waiting for an answer too, but no device of theirs heard of the call.
        var pushed: Bool?
        var wasRinging = false
        if let existing = call.index(of: key.user) {
            index = existing
            wasRinging = call.members[index].isRinging
            if case .ringing(let wasPushed, _) = call.members[index].phase { pushed = wasPushed }
            call.members[index].phase = presence
            if let profile { call.members[index].profile = profile }
        } else {
            // A chat-group member who was never invited.
            call.members.append(
                Member(
                    userId: key.user, inviterId: nil, isCaller: false, phase: presence,
                    cameraOn: call.mediaType == .video, profile: profile))
            index = call.members.count - 1
        }
        if wasRinging { out.append(.cancelTimer(.ring(call.id, key.user))) }
        roster.add(key, to: call.id)
        let connectsNow = call.startTime == nil
        if connectsNow { call.startTime = now }
        let entered = WebhookMemberEntered(
            callId: call.id, userId: key.user, deviceId: command.device, callStartTime: call.startTime ?? now)
        // Answered: the invitation rang the user's devices; joined: anyone else who came in.
        notify(of: &call, now: now, out: &out) { _ in pushed != nil ? .memberAnswered(entered) : .memberJoined(entered) }
        let snapshot = call.info
        out.answer(.call(snapshot))
        out.append(contentsOf: waiting.actions)
        if pushed != nil {
            out.append(
                .send(
                    .callEnded(
                        CallEndedEvent(
                            callId: call.id, mediaType: call.mediaType, reason: .otherDeviceAccepted, userId: key.user)),
                    to: .userExcept(key, command.device)))
            if pushed == true {
                out.append(
                    contentsOf: pushesAfterRinging(
                        call, call.members[index], result: .answered, reason: .otherDeviceAccepted, now: now))
            }
        }
        out.append(
            .send(
                .callElsewhere(CallElsewhereEvent(call: snapshot, deviceId: command.device, active: true)),
                to: .userExcept(key, command.device)))
        for member in call.members where member.isActive {
            if member.isJoined && (connectsNow || member.userId == key.user) {
                out.send(.callStarted(CallStartedEvent(call: snapshot)), to: member, of: call)
            } else {
                out.send(.callUpdated(CallUpdatedEvent(call: snapshot)), to: member, of: call)
            }
        }
        store(call, now: now, out: &out)
    }

    mutating func reject(_ command: CallCommand, now: Int64, out: inout CallOutput) {
        switch lookup(command, .anyDevice) {
        case .failure(let error):
            out.answer(.failure(error))
        case .success(let (found, index)):
            guard found.members[index].isRinging else {
                out.answer(
                    .failure(
                        SwitchboardError(
                            .invalidCallState,
                            found.members[index].isJoined
                                ? "only a ringing call can be rejected; hang up instead" : "you already left this call")))
                return
            }
            var call = found
            out.answer(.ok)
            leave(
                &call, index, result: .rejected, reason: .reject, by: command.user.user, actingDevice: command.device,
                now: now, out: &out)
            store(call, now: now, out: &out)
        }
    }

    mutating func hangup(_ command: CallCommand, now: Int64, out: inout CallOutput) {
        switch lookup(command) {
        case .failure(let error):
            out.answer(.failure(error))
        case .success(let (found, index)):
            guard found.members[index].isActive else {
                out.answer(.failure(SwitchboardError(.invalidCallState, "you already left this call")))
                return
            }
            var call = found
            out.answer(.ok)
            memberHangup(&call, index, actingDevice: command.device, now: now, out: &out)
            store(call, now: now, out: &out)
        }
    }

    /// A hang-up means reject for a ringing member, cancel for a caller nobody answered yet, and
    /// leaving for everyone else.
    mutating func memberHangup(
        _ call: inout Call, _ index: Int, actingDevice: DeviceID, now: Int64, out: inout CallOutput
    ) {
        let member = call.members[index]
        switch member.phase {
        case .ringing, .screened:
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
}
