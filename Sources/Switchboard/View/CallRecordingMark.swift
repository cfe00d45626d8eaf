import SwitchboardProtocol

/// The recording mark of the call screens (docs/IOS.md, "Recording"): while the server records
/// the call on screen, its header shows a red dot and who started it, and the incoming screen
/// the same (the member's notice before answering). The views draw it in words for everyone,
/// VoiceOver included.
public enum CallRecordingMark: Equatable, Sendable {
    /// The app records every call: "This call is recorded".
    case byApp
    /// You started it: "Recording · started by you".
    case byYou
    /// Another member started it, named as the views name them: "Recording · started by Alice".
    case byMember(String)

    /// The mark for the call on screen, nil while it is not recorded (or no call is on screen).
    public static func of(_ state: CallStore.State) -> CallRecordingMark? {
        guard let recording = state.activeCall?.recording, state.selfInfo.status != .none else { return nil }
        guard let user = recording.startedBy else { return .byApp }
        if user == state.selfInfo.userId { return .byYou }
        let member = state.allParticipants.first { $0.userId == user }
        return .byMember(member?.displayName ?? user.rawValue)
    }

    /// What VoiceOver says when the recording of the call on screen starts or stops (not when a
    /// recorded call comes on screen: its screen says so as it appears).
    public enum Announcement: Equatable, Sendable {
        case started(CallRecordingMark)
        case stopped
    }

    /// The change from `old` to `new` worth announcing: the same call's recording started or
    /// stopped; nil for anything else (a call that comes, goes or ends while recorded).
    public static func announcement(from old: CallStore.State, to new: CallStore.State) -> Announcement? {
        guard let call = new.activeCall, old.activeCall?.callId == call.callId, new.selfInfo.status != .none,
            old.activeCall?.recording != call.recording
        else { return nil }
        // The recording's own change, not its mark's: a nickname that arrives renames the mark.
        guard call.recording != nil else { return .stopped }
        return of(new).map(Announcement.started)
    }
}
