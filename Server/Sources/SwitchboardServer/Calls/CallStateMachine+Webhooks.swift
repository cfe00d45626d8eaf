import SwitchboardProtocol

/// The events of a call for the app's webhooks (docs/WEBHOOKS.md): the handlers report each
/// change as they make it, and the machine numbers them per call.
extension CallStateMachine {
    /// Numbers an event of `call` and asks the owner to report it (``CallAction/notify(_:)``).
    /// The call is journaled with its new count in the same commit as the event: were the count
    /// not kept with the event, a call restored after a crash would number a later event the same.
    /// An app without a webhook endpoint has its events numbered (an endpoint made during the call
    /// sees the numbers go on) but not made: most calls' apps want none, and making every event of
    /// every call to drop it in the engine was a share of each call's cost (docs/BENCHMARKS.md).
    mutating func notify(
        of call: inout Call, now: Int64, out: inout CallOutput, _ make: (Call) -> WebhookEventData
    ) {
        let sequence = (call.eventSequence ?? 0) + 1
        call.eventSequence = sequence
        markForJournal(call.id)
        guard webhookApps.contains(call.app) else { return }
        var data = make(call)
        data.setSequence(sequence)
        out.append(.notify(WebhookNotice(id: "evt_\(call.id.rawValue)_\(sequence)", app: call.app, time: now, data: data)))
    }

    /// How a member's part ended, as its webhook reports it: a ringing member rejected or missed
    /// the call, a joined one left it. `phase` is the member's phase before leaving.
    static func departureEvent(_ member: Member, phase: Member.Phase, in call: Call) -> WebhookEventData? {
        guard let departure = member.departure else { return nil }
        switch phase {
        case .ringing, .screened:
            let blocks: Bool? = departure.blocksCaller ? true : nil
            if departure.result == .rejected {
                return .memberRejected(
                    WebhookMemberRejected(callId: call.id, userId: member.userId, reason: departure.reason, blocksCaller: blocks))
            }
            return .memberMissed(
                WebhookMemberMissed(
                    callId: call.id, userId: member.userId, result: departure.result, reason: departure.reason,
                    blocksCaller: blocks))
        case .joined where member.firstConnectedAt == nil:
            // Never in a connected call (the caller of a call nobody answered, a member who
            // joined a group call that never connected): `call.member.left` is for a member who
            // was in the call; `call.ended` has this one's outcome (issue 48).
            return nil
        case .joined:
            return .memberLeft(
                WebhookMemberLeft(
                    callId: call.id, userId: member.userId, deviceId: departure.device,
                    result: member.firstConnectedAt != nil ? .answered : departure.result, reason: departure.reason,
                    by: departure.by, connectedMs: member.connectedMs))
        case .left:
            return nil
        }
    }

    /// `call.ended`: the call's end, duration and every member's outcome (once all have left).
    static func endedEvent(_ call: Call, reason: CallEndReason, by: UserID?, now: Int64) -> WebhookEventData {
        let members = call.members.map { member in
            let departure = member.departure
            return WebhookCallEnded.Member(
                userId: member.userId, isCaller: member.isCaller, inviterId: member.inviterId,
                result: member.firstConnectedAt != nil ? .answered : departure?.result ?? .unknown,
                reason: departure?.reason ?? reason, by: departure?.by, firstConnectedAt: member.firstConnectedAt,
                connectedMs: member.connectedMs, leftAt: departure?.at ?? now,
                blocksCaller: departure?.blocksCaller == true ? true : nil)
        }
        let duration = call.startTime.map { Int(max(0, now - $0) / 1000) } ?? 0
        return .callEnded(
            WebhookCallEnded(
                callId: call.id, roomId: call.roomId, callType: call.type, mediaType: call.mediaType,
                callerId: call.callerId, chatGroupId: call.chatGroupId, reason: reason, by: by, createdAt: call.createdAt,
                startTime: call.startTime, endTime: now, duration: duration, isEphemeral: call.isEphemeral,
                members: members))
    }
}
