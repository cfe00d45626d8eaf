import SwitchboardProtocol

/// Server-side recording (docs/PROTOCOL.md, "Recording"): the app's policy decides whether a call
/// may be recorded and who controls it; a recorded call's media goes through the SFU (one-to-one
/// calls too), which records each member's tracks; every member in the call or ringing is told
/// when a recording starts and stops, and the snapshot says so to anyone who comes later.
///
/// One rule keeps the recording in step with the call (``reconcileRecording(_:now:out:)``, run by
/// ``store(_:now:out:)`` for every change): members who are in the call join the take's members,
/// and a call that ends ends its take, which is handed over for storing and conversion.
extension CallStateMachine {
    /// Whether `call.start` records the call, or why it is refused.
    func recordsFromStart(_ command: StartCallCommand) -> Result<Bool, SwitchboardError> {
        let asked = command.request.params?.record == true
        switch command.settings.recording.policy {
        case .off:
            return asked ? .failure(SwitchboardError(.recordingNotAllowed, "this app does not record calls")) : .success(false)
        case .onRequest:
            guard asked else { return .success(false) }
        case .always:
            break
        }
        guard configuration.recording else {
            return .failure(SwitchboardError(.recordingUnavailable, "this server has no SFU or no recordings directory"))
        }
        return .success(true)
    }

    /// Starts the call's next take (its media goes through the SFU from now on).
    static func beginRecording(_ call: inout Call, by user: UserID?, now: Int64) {
        let take = (call.recordingTakes ?? 0) + 1
        call.recordingTakes = take
        call.media = .sfu
        call.recording = Recording(
            take: take, startedBy: user, startedAt: now, members: call.members.filter(\.isJoined).map(\.userId))
    }

    /// `call.startRecording` and `call.stopRecording`.
    mutating func setRecording(_ command: RecordingCommand, now: Int64, out: inout CallOutput) {
        switch lookup(command.command, .joinedDevice) {
        case .failure(let error):
            out.answer(.failure(error))
        case .success(let (found, _)):
            let user = command.command.user.user
            let settings = command.settings.recording
            var call = found
            if let refusal = Self.recordingRefusal(settings, start: command.start, user: user, call: call) {
                out.answer(.failure(refusal))
                return
            }
            if command.start {
                guard call.recording == nil else {
                    out.answer(.call(call.info))
                    return
                }
                guard configuration.recording else {
                    out.answer(
                        .failure(SwitchboardError(.recordingUnavailable, "this server has no SFU or no recordings directory")))
                    return
                }
                let wasSFU = call.media == .sfu
                Self.beginRecording(&call, by: user, now: now)
                out.answer(.call(call.info))
                let state = CallRecordingState(startedBy: user, startedAt: now)
                announce(.recordingStarted(RecordingStartedEvent(callId: call.id, recording: state)), in: call, out: &out)
                if !wasSFU {
                    // Its media moves from peer to peer to the SFU: the snapshot says so.
                    announce(.callUpdated(CallUpdatedEvent(call: call.info)), in: call, out: &out)
                } else if call.isSFUActive {
                    out.append(.sfu(.record(call.id, take: call.recording?.take)))
                }
            } else {
                guard call.recording != nil else {
                    out.answer(.call(call.info))
                    return
                }
                endTake(&call, now: now, out: &out)
                out.answer(.call(call.info))
                announce(.recordingStopped(RecordingStoppedEvent(callId: call.id, stoppedBy: user, stoppedAt: now)), in: call, out: &out)
                if call.isSFUActive { out.append(.sfu(.record(call.id, take: nil))) }
            }
            store(call, now: now, out: &out)
        }
    }

    /// Why the app's settings do not let `user` start (or stop) the call's recording; nil: they do.
    static func recordingRefusal(_ settings: RecordingSettings, start: Bool, user: UserID, call: Call) -> SwitchboardError? {
        switch settings.policy {
        case .off:
            return SwitchboardError(.recordingNotAllowed, "this app does not record calls")
        case .always:
            return start ? nil : SwitchboardError(.recordingNotAllowed, "this app records every call")
        case .onRequest:
            if settings.control == .caller, user != call.callerId {
                return SwitchboardError(.recordingNotAllowed, "only the caller may start or stop the recording")
            }
            return nil
        }
    }

    /// Sends `event` to every member in the call or ringing.
    func announce(_ event: ServerEvent, in call: Call, out: inout CallOutput) {
        for member in call.members where member.isActive { out.send(event, to: member, of: call) }
    }

    /// Ends the call's take: a take with media (the call connected meanwhile) is handed over.
    func endTake(_ call: inout Call, now: Int64, out: inout CallOutput) {
        guard let recording = call.recording else { return }
        call.recording = nil
        guard let connected = call.startTime else { return }
        let from = max(recording.startedAt, connected)
        guard now > from else { return }
        out.append(
            .saveRecording(
                RecordingTake(
                    id: RecordingTake.id(callId: call.id, take: recording.take), app: call.app, callId: call.id,
                    take: recording.take, startedBy: recording.startedBy, startedAt: from, stoppedAt: now,
                    members: recording.members, mediaType: call.mediaType)))
    }

    /// Keeps the take's members up to date, and ends the take with the call.
    func reconcileRecording(_ call: inout Call, now: Int64, out: inout CallOutput) {
        guard var recording = call.recording else { return }
        if call.isEnded {
            endTake(&call, now: now, out: &out)
            return
        }
        for member in call.members where member.isJoined && !recording.members.contains(member.userId) {
            recording.members.append(member.userId)
        }
        call.recording = recording
    }
}
