import SwitchboardProtocol

/// Group calls through the SFU: who has a session in the call's room and with which number, the
/// members' signals and layer choices, and restarts.
///
/// One rule starts every session: in a connected call whose media goes through the SFU, a joined
/// member without a session gets the next number, an `sfuSession` event and a ``SFUAction/join(_:)``.
/// Everything that needs a member's media set up again (a new login of the device in the call,
/// the SFU losing the room or the member's connection, the member asking after an ICE failure)
/// clears the member's session and lets that rule start the next one.
extension CallStateMachine {
    /// Starts the sessions the call's state calls for and tells the rooms who left or whether the
    /// call ended. Called by ``store(_:now:out:)`` for every change, after the handler's events.
    mutating func reconcileSFU(_ call: inout Call, previous: Call?, out: inout CallOutput) {
        let hadSessions = previous?.members.contains { $0.presence?.sfuSession != nil } ?? false
        if call.isEnded {
            if hadSessions { out.append(.sfu(.end(call.id))) }
            return
        }
        if let previous {
            for member in previous.members where member.presence?.sfuSession != nil {
                if call.index(of: member.userId).map({ call.members[$0].isJoined }) != true {
                    out.append(.sfu(.leave(call.id, member.userId)))
                }
            }
        }
        guard call.isSFUActive else { return }
        for index in call.members.indices {
            guard let presence = call.members[index].presence, presence.sfuSession == nil else { continue }
            let session = (call.sfuSessions ?? 0) + 1
            call.sfuSessions = session
            call.members[index].updatePresence { $0.sfuSession = session }
            let member = call.members[index]
            out.append(.send(.sfuSession(SFUSessionEvent(callId: call.id, session: session)), to: .device(call.key(member), presence.device)))
            out.append(
                .sfu(
                    .join(
                        SFUMemberSession(
                            callId: call.id, member: call.key(member), device: presence.device, session: session,
                            layers: presence.videoLayers ?? [:], recordingTake: call.recording?.take))))
        }
    }

    /// Clears the member's session, so that ``reconcileSFU(_:previous:out:)`` starts a new one.
    static func restartSession(of index: Int, in call: inout Call) {
        call.members[index].updatePresence { $0.sfuSession = nil }
    }

    /// The member's call and place, if the call's media goes through the SFU and `session` is the
    /// member's current one; else the error to answer.
    private func sfuMember(_ command: CallCommand, session: Int?) -> Result<(Call, Int), SwitchboardError> {
        switch lookup(command, .joinedDevice) {
        case .failure(let error):
            return .failure(error)
        case .success(let (call, index)):
            guard call.media == .sfu else { return .failure(SwitchboardError(.sfuNotInUse)) }
            if let session {
                let current = call.members[index].presence?.sfuSession
                guard current == session else {
                    return .failure(
                        SwitchboardError(
                            .sfuSessionMismatch,
                            "session \(session) is not your current SFU session (\(current.map(String.init) ?? "none yet"))"))
                }
            }
            return .success((call, index))
        }
    }

    /// Hands a member's negotiation step to the rooms, within the member's relay budget (the same
    /// one as peer-to-peer signals); `restart` starts a new session instead.
    mutating func sfuSignal(_ command: CallCommand, _ signal: SendSFUSignalRequest, now: Int64, out: inout CallOutput) {
        switch sfuMember(command, session: signal.session) {
        case .failure(let error):
            out.answer(.failure(error))
        case .success(let (found, index)):
            var call = found
            if let refusal = takeRelayBudget(signal.payloadBytes, member: index, of: &call, now: now) {
                out.answer(.failure(refusal))
                return
            }
            out.answer(.ok)
            if signal.kind == .restart {
                Self.restartSession(of: index, in: &call)
                store(call, now: now, out: &out)
            } else {
                out.append(.sfu(.signal(call.id, command.user.user, session: signal.session, signal)))
            }
        }
    }

    /// Keeps a member's layer choice for another member's camera (for the rest of the call) and
    /// hands it to the rooms.
    mutating func videoLayer(_ command: CallCommand, _ request: SetVideoLayerRequest, now: Int64, out: inout CallOutput) {
        switch sfuMember(command, session: nil) {
        case .failure(let error):
            out.answer(.failure(error))
        case .success(let (found, index)):
            guard request.userId != command.user.user,
                let target = found.index(of: request.userId), found.members[target].isJoined
            else {
                out.answer(.failure(SwitchboardError(.peerNotInCall)))
                return
            }
            var call = found
            call.members[index].updatePresence { presence in
                var layers = presence.videoLayers ?? [:]
                layers[request.userId] = request.layer
                presence.videoLayers = layers
            }
            calls[call.id] = call
            markForJournal(call.id)
            out.answer(.ok)
            if call.members[index].presence?.sfuSession != nil {
                out.append(.sfu(.layer(call.id, viewer: command.user.user, target: request.userId, request.layer)))
            }
        }
    }

    /// The rooms lost a member's media (or the whole room's): new sessions for them.
    mutating func sfuRestart(_ callId: CallID, _ user: UserID?, now: Int64, out: inout CallOutput) {
        guard var call = calls[callId], call.isSFUActive else { return }
        for index in call.members.indices where call.members[index].presence?.sfuSession != nil {
            if user == nil || call.members[index].userId == user { Self.restartSession(of: index, in: &call) }
        }
        store(call, now: now, out: &out)
    }
}
