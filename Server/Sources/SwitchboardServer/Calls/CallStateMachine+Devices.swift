import SwitchboardProtocol

/// Devices coming, going and logging out: pending invitations, resumed calls, the reconnect grace.
extension CallStateMachine {
    mutating func deviceOnline(_ user: UserKey, _ device: DeviceID, now: Int64, out: inout CallOutput) {
        // Calls that ended while the device was away (or before it ever connected, when a push woke
        // it): it hears how they ended. Clients drop ends of calls they never knew.
        for callId in ended.calls(of: user) {
            guard let call = ended[callId], let (reason, by) = call.end(for: user.user, device: device) else { continue }
            out.append(
                .send(
                    .callEnded(CallEndedEvent(callId: callId, mediaType: call.mediaType, reason: reason, userId: by)),
                    to: .device(user, device)))
        }
        var current: [CallID] = []
        var elsewhere: [CallID] = []
        for callId in roster.calls(of: user).sorted() {
            guard var call = calls[callId], let index = call.index(of: user.user) else { continue }
            let member = call.members[index]
            switch member.phase {
            case .ringing(_, let deadline):
                // A pending invitation: a device that logs in while the call rings rings too.
                current.append(call.id)
                out.append(
                    .send(
                        .callReceived(CallReceivedEvent(call: call.info, inviterId: member.inviterId ?? call.callerId)),
                        to: .device(user, device)))
                notify(of: &call, now: now, out: &out) { call in
                    .memberRinging(
                        WebhookMemberRinging(
                            callId: call.id, userId: user.user, connected: true, pushed: false, deviceId: device,
                            ringsUntil: deadline))
                }
                calls[call.id] = call
            case .joined(let presence) where presence.device == device:
                // The same device is back: resume the call where it was.
                current.append(call.id)
                if presence.isDown {
                    call.members[index].updatePresence {
                        $0.isDown = false
                        $0.quality = .unknown
                    }
                    out.append(.cancelTimer(.reconnectGrace(call.id, user.user)))
                    calls[call.id] = call
                    broadcastStatus(of: call.members[index], in: call, out: &out)
                }
                let snapshot = call.info
                out.append(
                    .send(
                        call.startTime != nil
                            ? .callStarted(CallStartedEvent(call: snapshot)) : .callUpdated(CallUpdatedEvent(call: snapshot)),
                        to: .device(user, device)))
                // What the SFU sent the device while it was away is lost: its media starts over.
                if call.members[index].presence?.sfuSession != nil {
                    Self.restartSession(of: index, in: &call)
                    store(call, now: now, out: &out)
                }
            case .joined(let presence):
                elsewhere.append(call.id)
                out.append(
                    .send(
                        .callElsewhere(CallElsewhereEvent(call: call.info, deviceId: presence.device, active: true)),
                        to: .device(user, device)))
                // An offer to move the call here stands: the device that just logged in sees it too.
                if let offer = presence.moveOffer, offer.admits(device, now: now) {
                    out.append(.send(offer.event(call.info, from: presence.device), to: .device(user, device)))
                }
            case .screened, .left:
                // (A screened member is not on the roster: the call never reached the user.)
                break
            }
        }
        out.append(
            .send(.callsSynced(CallsSyncedEvent(callIds: current, elsewhereCallIds: elsewhere)), to: .device(user, device)))
    }

    mutating func deviceOffline(_ user: UserKey, _ device: DeviceID, now: Int64, grace: Int64, out: inout CallOutput) {
        for callId in roster.calls(of: user).sorted() {
            guard var call = calls[callId], let index = call.index(of: user.user),
                let presence = call.members[index].presence, presence.device == device, !presence.isDown
            else { continue }
            call.members[index].updatePresence {
                $0.isDown = true
                $0.quality = .down
            }
            calls[call.id] = call
            out.append(.setTimer(.reconnectGrace(call.id, user.user), at: now + grace))
            broadcastStatus(of: call.members[index], in: call, out: &out)
        }
    }

    mutating func logout(_ user: UserKey, _ device: DeviceID, now: Int64, out: inout CallOutput) {
        for callId in roster.calls(of: user).sorted() {
            guard var call = calls[callId], let index = call.index(of: user.user),
                call.members[index].presence?.device == device
            else { continue }
            memberHangup(&call, index, actingDevice: device, now: now, out: &out)
            store(call, now: now, out: &out)
        }
    }
}
