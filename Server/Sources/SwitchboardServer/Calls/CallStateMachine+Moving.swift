import SwitchboardProtocol

/// Moving a member's part in a call to another of the user's devices: the device in the call
/// offers it (one offer at a time, lapsing after ``Configuration/moveOfferTimeout``), another
/// device takes it (by the offer, or without one where the app allows), and from then on the
/// member is in the call on the new device. Nothing else about the call changes: its id, start
/// time, members and records stay; the other members hear `memberMoved` and start their media with
/// the member over, never an end.
extension CallStateMachine {
    mutating func offerMove(_ command: CallCommand, to target: DeviceID?, now: Int64, out: inout CallOutput) {
        let found: Call
        let index: Int
        switch lookup(command, .joinedDevice) {
        case .failure(let error):
            out.answer(.failure(error))
            return
        case .success(let match):
            (found, index) = match
        }
        if let target {
            guard Self.isValidToken(target.rawValue, maxLength: DeviceID.maxLength) else {
                out.answer(.failure(SwitchboardError(.invalidDeviceID, "deviceId must be 1-64 visible characters")))
                return
            }
            guard target != command.device else {
                out.answer(.failure(SwitchboardError(.invalidParams, "the call is on this device already")))
                return
            }
        }
        var call = found
        let user = call.key(call.members[index])
        let previous = call.members[index].presence?.moveOffer
        let offer = Member.MoveOffer(to: target, expiresAt: now + configuration.moveOfferTimeout)
        call.members[index].updatePresence { $0.moveOffer = offer }
        calls[call.id] = call
        markForJournal(call.id)
        out.answer(.moveOffered(OfferCallMoveResponse(expiresAt: offer.expiresAt)))
        if let previous {
            out.append(
                .send(
                    .callMoveOfferEnded(CallMoveOfferEndedEvent(callId: call.id, reason: .withdrawn)),
                    to: Self.recipient(of: previous, user: user, from: command.device)))
        }
        out.append(.setTimer(.moveOffer(call.id, user.user), at: offer.expiresAt))
        out.append(
            .send(offer.event(call.info, from: command.device), to: Self.recipient(of: offer, user: user, from: command.device)))
    }

    mutating func take(_ command: TakeCommand, now: Int64, out: inout CallOutput) {
        let request = command.command
        let found: Call
        let index: Int
        switch lookup(request, .anyDevice) {
        case .failure(let error):
            out.answer(.failure(error))
            return
        case .success(let match):
            (found, index) = match
        }
        guard let presence = found.members[index].presence else {
            out.answer(
                .failure(
                    SwitchboardError(
                        .invalidCallState, found.members[index].isRinging ? "answer the call instead" : "not in the call")))
            return
        }
        guard presence.device != request.device else {
            out.answer(.failure(SwitchboardError(.invalidCallState, "the call is on this device already")))
            return
        }
        let offered = presence.moveOffer?.admits(request.device, now: now) == true
        guard offered || command.settings.callPull else {
            out.answer(.failure(SwitchboardError(.moveNotOffered)))
            return
        }
        // A media-type change waits for an answer from the device that is leaving: it is
        // cancelled, and whoever asked may ask the new device again.
        if found.mediaChange != nil { finishMediaChange(found.id, result: .canceled, now: now, out: &out) }
        var call = calls[found.id] ?? found
        let userId = request.user.user
        if presence.isDown { out.append(.cancelTimer(.reconnectGrace(call.id, userId))) }
        if presence.moveOffer != nil { out.append(.cancelTimer(.moveOffer(call.id, userId))) }
        call.members[index].updatePresence {
            $0.device = request.device
            $0.moveOffer = nil
            $0.isDown = false
            $0.quality = .unknown
            $0.volume = nil
            // The new device shares no screen until it says so.
            $0.screenSharing = nil
        }
        // Through the SFU, the new device gets a session of its own (the old one's is closed).
        if presence.sfuSession != nil { Self.restartSession(of: index, in: &call) }
        let snapshot = call.info
        out.answer(.call(snapshot))
        out.append(
            .send(
                .callMoved(CallMovedEvent(call: snapshot, fromDeviceId: presence.device, toDeviceId: request.device)),
                to: .user(request.user)))
        let member = call.members[index]
        for other in call.members where other.isJoined && other.userId != userId {
            out.send(.memberMoved(MemberMovedEvent(callId: call.id, userId: userId)), to: other, of: call)
            if presence.screenSharing == true {
                out.send(
                    .deviceChanged(
                        DeviceChangedEvent(
                            callId: call.id, userId: userId, microphoneOn: member.microphoneOn, cameraOn: member.cameraOn,
                            screenSharing: false)),
                    to: other, of: call)
            }
        }
        if presence.isDown { broadcastStatus(of: member, in: call, out: &out) }
        notify(of: &call, now: now, out: &out) { call in
            .memberMoved(
                WebhookMemberMoved(
                    callId: call.id, userId: userId, fromDeviceId: presence.device, toDeviceId: request.device,
                    offered: offered))
        }
        store(call, now: now, out: &out)
    }

    /// The offer's time is up and nobody took it.
    mutating func moveOfferLapsed(_ callId: CallID, _ user: UserID, now: Int64, out: inout CallOutput) {
        guard var call = calls[callId], let index = call.index(of: user),
            let presence = call.members[index].presence, let offer = presence.moveOffer, offer.expiresAt <= now
        else { return }
        call.members[index].updatePresence { $0.moveOffer = nil }
        calls[call.id] = call
        markForJournal(call.id)
        out.append(
            .send(
                .callMoveOfferEnded(CallMoveOfferEndedEvent(callId: call.id, reason: .expired)),
                to: Self.recipient(of: offer, user: call.key(call.members[index]), from: presence.device)))
    }

    /// The devices an offer goes to: the one it names, or every device of the user but the one
    /// in the call.
    static func recipient(of offer: Member.MoveOffer, user: UserKey, from device: DeviceID) -> Recipient {
        offer.to.map { .device(user, $0) } ?? .userExcept(user, device)
    }
}
