import SwitchboardProtocol

/// Members leaving, calls ending, and the timers and server requests that end them.
extension CallStateMachine {
    /// One member leaves; the call ends if that leaves fewer than two joined and nobody ringing.
    mutating func leave(
        _ call: inout Call, _ index: Int, result: CallRecordResult, reason: CallEndReason, by: UserID?,
        actingDevice: DeviceID?, now: Int64, out: inout CallOutput
    ) {
        let member = call.members[index]
        let key = call.key(member)
        let elsewhere = finish(
            &call, index, result: result, reason: reason, by: by, actingDevice: actingDevice, now: now, out: &out)
        let event = CallEndedEvent(callId: call.id, mediaType: call.mediaType, reason: reason, userId: by)
        if member.isScreened {
            // The call never reached the user's devices: they hear nothing of its end either.
        } else if let device = member.presence?.device {
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
            let update = ServerEvent.callUpdated(CallUpdatedEvent(call: call.info))
            for other in call.members where other.isActive {
                out.send(update, to: other, of: call)
            }
        }
    }

    /// Ends the call for every member still ringing or joined.
    mutating func endCall(_ call: inout Call, reason: CallEndReason, by: UserID?, now: Int64, out: inout CallOutput) {
        let event = ServerEvent.callEnded(
            CallEndedEvent(callId: call.id, mediaType: call.mediaType, reason: reason, userId: by))
        if let change = call.mediaChange {
            out.append(.cancelTimer(.mediaChange(call.id, change.id)))
            call.mediaChange = nil
        }
        for index in call.members.indices where call.members[index].isActive {
            let member = call.members[index]
            let result: CallRecordResult =
                if member.isJoined {
                    call.startTime != nil ? .answered : Call.unconnectedCallerResult(reason)
                } else {
                    .missed
                }
            let elsewhere = finish(&call, index, result: result, reason: reason, by: by, now: now, out: &out)
            out.send(event, to: member, of: call)
            out.append(contentsOf: elsewhere)
        }
        notify(of: &call, now: now, out: &out) { Self.endedEvent($0, reason: reason, by: by, now: now) }
    }

    /// Marks a member as left, adds up their time in the call and stops their timers. Returns the
    /// notices for the user's other devices (the call they saw elsewhere is over, a pushed ringing
    /// stops), which the caller sends after the member's own `callEnded`.
    mutating func finish(
        _ call: inout Call, _ index: Int, result: CallRecordResult, reason: CallEndReason, by: UserID?,
        actingDevice: DeviceID? = nil, now: Int64, out: inout CallOutput
    ) -> [CallAction] {
        let member = call.members[index]
        var elsewhere: [CallAction] = []
        switch member.phase {
        case .ringing(let pushed, _):
            out.append(.cancelTimer(.ring(call.id, member.userId)))
            if pushed {
                elsewhere.append(contentsOf: pushesAfterRinging(call, member, result: result, reason: reason, now: now))
            }
        case .screened:
            out.append(.cancelTimer(.ring(call.id, member.userId)))
        case .joined(let presence):
            if presence.isDown { out.append(.cancelTimer(.reconnectGrace(call.id, member.userId))) }
            if presence.moveOffer != nil { out.append(.cancelTimer(.moveOffer(call.id, member.userId))) }
            if let startTime = call.startTime {
                let from = max(startTime, presence.joinedAt)
                call.members[index].connectedMs += max(0, now - from)
                call.members[index].firstConnectedAt = member.firstConnectedAt ?? from
            }
            elsewhere.append(
                .send(
                    .callElsewhere(CallElsewhereEvent(call: call.info, deviceId: presence.device, active: false)),
                    to: .userExcept(call.key(member), presence.device)))
        case .left:
            return []
        }
        call.members[index].phase = .left(
            Member.Departure(
                at: now, result: result, reason: reason, by: by, device: member.presence?.device,
                blocksCaller: member.isScreened))
        roster.remove(call.key(member), from: call.id)
        if let event = Self.departureEvent(call.members[index], phase: member.phase, in: call) {
            notify(of: &call, now: now, out: &out) { _ in event }
        }
        return elsewhere
    }

    mutating func timerFired(_ key: TimerKey, now: Int64, out: inout CallOutput) {
        switch key {
        case .ring(let callId, let user):
            guard var call = calls[callId], let index = call.index(of: user) else { return }
            let (result, reason): (CallRecordResult, CallEndReason)
            switch call.members[index].phase {
            case .ringing:
                (result, reason) = (.missed, .noResponse)
            case .screened(let declineAt, let deadline):
                // Declines as a person would, unless the ringing timed out first.
                (result, reason) = declineAt < deadline ? (.rejected, .reject) : (.missed, .noResponse)
            case .joined, .left:
                return
            }
            leave(&call, index, result: result, reason: reason, by: user, actingDevice: nil, now: now, out: &out)
            store(call, now: now, out: &out)
        case .reconnectGrace(let callId, let user):
            guard var call = calls[callId], let index = call.index(of: user),
                call.members[index].presence?.isDown == true
            else { return }
            // The timer has fired: nothing left to cancel.
            call.members[index].updatePresence { $0.isDown = false }
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
            finishMediaChange(callId, result: .timedOut, now: now, out: &out)
        case .moveOffer(let callId, let user):
            moveOfferLapsed(callId, user, now: now, out: &out)
        }
    }

    mutating func endByServer(_ callId: CallID, now: Int64, out: inout CallOutput) {
        guard var call = calls[callId] else {
            out.answer(.failure(SwitchboardError(ended[callId] != nil ? .callAlreadyEnded : .callNotFound)))
            return
        }
        out.answer(.ok)
        endCall(&call, reason: .endByServer, by: nil, now: now, out: &out)
        store(call, now: now, out: &out)
    }
}
