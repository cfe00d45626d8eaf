import SwitchboardProtocol

/// The line under the members' names.
public enum CallStatusLine: Equatable, Sendable {
    /// A call rings for you: "invites you to a video call".
    case invitation(CallMediaType, group: Bool)
    /// You placed the call and nobody answered yet.
    case waitingForAnswer
    /// You answered and the call is connecting (no start time yet).
    case connecting
    /// The call timer (`mm:ss`).
    case duration(String)

    public static func of(_ state: CallStore.State) -> CallStatusLine? {
        guard let call = state.activeCall, state.selfInfo.status != .none else { return nil }
        switch (call.direction, state.selfInfo.status) {
        case (.incoming, .waiting): return .invitation(call.mediaType, group: call.callType == .group)
        case (.outgoing, .waiting): return .waitingForAnswer
        default: return call.startTime == nil ? .connecting : .duration(call.durationText)
        }
    }
}
