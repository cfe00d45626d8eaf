import SwitchboardProtocol

/// Something the bridge could not do for the app, after trying again where a failure may pass
/// (``CallKitCoordinator/failures``). The call screen has moved on in each case; the app decides
/// what the user must know.
public enum CallKitFailure: Equatable, Sendable {
    /// Ending a call the user ended on the call screen (reject, cancel or hang up) failed. The
    /// server may still hold the call for this device: it ends it when the device's connection
    /// stays down past the reconnect grace, or the app tries `CallStore.hangup(callId:)` again.
    case endFailed(CallID, SwitchboardError)
    /// Answering failed; the call screen showed the call ended (`failed`).
    case answerFailed(CallID, SwitchboardError)
    /// Logging in after a VoIP push woke the app failed; its ringing calls ended (`failed`).
    case loginAfterPushFailed(SwitchboardError)
    /// The server did not take PushKit's token: calls will not wake this device until the next
    /// login (or token change) registers it.
    case pushTokenRegistrationFailed(SwitchboardError)
    /// The server may still hold this device's push token for the user who logged out (or whose
    /// token PushKit invalidated): VoIP pushes for them may still come. The bridge reports and
    /// ends them at once; a login on this device takes the token over.
    case pushTokenUnregistrationFailed(SwitchboardError)
}
