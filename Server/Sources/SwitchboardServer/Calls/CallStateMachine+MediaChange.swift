import SwitchboardProtocol

/// Switching a connected one-to-one call between audio and video: request, answer or cancel,
/// and a timeout that counts as a decline.
extension CallStateMachine {
    mutating func changeMediaType(
        _ command: CallCommand, _ mediaType: CallMediaType, _ transaction: TransactionID, now: Int64,
        out: inout CallOutput
    ) {
        switch lookup(command) {
        case .failure(let error):
            out.answer(.failure(error))
        case .success(let (found, index)):
            var call = found
            let refusal: SwitchboardError? =
                if call.type != .oneToOne {
                    SwitchboardError(.oneToOneOnly, "media type changes are for one-to-one calls")
                } else if !call.members[index].isJoined || call.startTime == nil {
                    SwitchboardError(.invalidCallState, "the call is not connected")
                } else if call.mediaChange != nil {
                    SwitchboardError(.mediaChangeInProgress)
                } else if call.mediaType == mediaType {
                    SwitchboardError(.invalidParams, "the call is already \(mediaType.rawValue)")
                } else {
                    nil
                }
            if let refusal {
                out.answer(.failure(refusal))
                return
            }
            call.mediaChange = MediaChange(id: transaction, requester: command.user.user, mediaType: mediaType)
            calls[call.id] = call
            out.answer(.mediaChange(transaction))
            let event = ServerEvent.mediaTypeChangeRequested(
                MediaTypeChangeRequestedEvent(
                    callId: call.id, transactionId: transaction, mediaType: mediaType, userId: command.user.user))
            for other in call.members where other.isJoined && other.userId != command.user.user {
                out.send(event, to: other, of: call)
            }
            out.append(.setTimer(.mediaChange(call.id, transaction), at: now + configuration.mediaChangeTimeout))
        }
    }

    mutating func replyMediaType(
        _ command: CallCommand, _ transaction: TransactionID, agree: Bool, now: Int64, out: inout CallOutput
    ) {
        switch lookup(command) {
        case .failure(let error):
            out.answer(.failure(error))
        case .success(let (call, index)):
            guard let change = call.mediaChange, change.id == transaction else {
                out.answer(.failure(SwitchboardError(.transactionNotFound)))
                return
            }
            guard change.requester != command.user.user, call.members[index].isJoined else {
                out.answer(.failure(SwitchboardError(.invalidCallState, "only the other member answers")))
                return
            }
            out.answer(.ok)
            finishMediaChange(call.id, result: agree ? .agreed : .declined, now: now, out: &out)
        }
    }

    mutating func cancelMediaType(_ command: CallCommand, _ transaction: TransactionID, now: Int64, out: inout CallOutput) {
        switch lookup(command) {
        case .failure(let error):
            out.answer(.failure(error))
        case .success(let (call, _)):
            guard let change = call.mediaChange, change.id == transaction else {
                out.answer(.failure(SwitchboardError(.transactionNotFound)))
                return
            }
            guard change.requester == command.user.user else {
                out.answer(.failure(SwitchboardError(.invalidCallState, "only the requester cancels")))
                return
            }
            out.answer(.ok)
            finishMediaChange(call.id, result: .canceled, now: now, out: &out)
        }
    }

    /// Closes the open media change: both members hear the result; an agreement changes the call.
    mutating func finishMediaChange(_ callId: CallID, result: MediaTypeChangeResult, now: Int64, out: inout CallOutput) {
        guard var call = calls[callId], let change = call.mediaChange else { return }
        call.mediaChange = nil
        out.append(.cancelTimer(.mediaChange(call.id, change.id)))
        if result == .agreed {
            notify(of: &call, now: now, out: &out) { call in
                .mediaTypeChanged(
                    WebhookMediaTypeChanged(
                        callId: call.id, from: call.mediaType, to: change.mediaType, requesterId: change.requester))
            }
            call.mediaType = change.mediaType
        }
        calls[call.id] = call
        if result == .agreed { markForJournal(call.id) }
        let event = ServerEvent.mediaTypeChangeResult(
            MediaTypeChangeResultEvent(
                callId: call.id, transactionId: change.id, mediaType: change.mediaType, userId: change.requester,
                result: result))
        let snapshot = result == .agreed ? ServerEvent.callUpdated(CallUpdatedEvent(call: call.info)) : nil
        for member in call.members where member.isJoined {
            out.send(event, to: member, of: call)
        }
        if let snapshot {
            for member in call.members where member.isJoined {
                out.send(snapshot, to: member, of: call)
            }
        }
    }
}
