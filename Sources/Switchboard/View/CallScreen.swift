import SwitchboardProtocol

/// Which call screen the app shows now (TUICallKit's full-screen view, floating window, or
/// nothing), from the call's state and what the user and the system did. A value: the views keep
/// one, feed it the store's state and the app's events, and show what ``screen(for:)`` says.
public struct CallScreenPresenter: Equatable, Sendable {
    /// What is on screen.
    public enum Screen: Equatable, Sendable {
        case none
        /// A call rings for you: the app's own incoming-call screen, with answer and decline.
        case incoming(CallID)
        /// The call view, full screen: placing the call, or in it.
        case call(CallID)
        /// The call goes on in the small floating window the user minimised it to.
        case floating(CallID)
    }

    /// CallKit shows incoming calls with the system's own screen (`SwitchboardCallKit`).
    public var callKitShowsIncomingCalls: Bool
    /// The app is in the foreground (`UIApplication.State.active`).
    public var appIsActive = true
    /// The call the user minimised to the floating window; the next call starts full screen.
    private var minimizedCallId: CallID?

    public init(callKitShowsIncomingCalls: Bool) {
        self.callKitShowsIncomingCalls = callKitShowsIncomingCalls
    }

    /// The screen for this state. A ringing call gets the app's incoming screen unless CallKit
    /// shows it while the app is in the background (in the foreground the app's own screen is
    /// shown, as TUICallKit does); a call being placed or connected gets the call view, or the
    /// floating window once minimised.
    public func screen(for state: CallStore.State) -> Screen {
        guard let call = state.activeCall, state.selfInfo.status != .none else { return .none }
        if call.direction == .incoming && state.selfInfo.status == .waiting {
            return callKitShowsIncomingCalls && !appIsActive ? .none : .incoming(call.callId)
        }
        return minimizedCallId == call.callId ? .floating(call.callId) : .call(call.callId)
    }

    /// The user minimised the call view (the floating window's button); only a call in progress can be.
    public mutating func minimize(in state: CallStore.State) {
        guard case .call(let callId) = screen(for: state) else { return }
        minimizedCallId = callId
    }

    /// The user tapped the floating window: back to the call view.
    public mutating func restore() {
        minimizedCallId = nil
    }

    /// The member the system's Picture in Picture window shows for this call: in a connected
    /// video call, the member the call view features (``CallViewLayout``) while their camera is
    /// on; nil otherwise. The views keep Picture in Picture ready while there is one, so iOS can
    /// start it when the app goes to the background.
    public func pictureInPictureMember(for state: CallStore.State) -> UserID? {
        guard let call = state.activeCall, call.mediaType == .video, state.selfInfo.status == .accept else { return nil }
        let featured = CallViewLayout.featured(state, CallViewLayout.members(of: state))
        return featured.flatMap { $0.cameraOn && $0.status == .accept ? $0.userId : nil }
    }

    /// Whether Picture in Picture shows the call now: there is a member to show and the app is
    /// in the background (in the foreground, a minimised call uses the app's floating window).
    public func wantsPictureInPicture(for state: CallStore.State) -> Bool {
        !appIsActive && pictureInPictureMember(for: state) != nil
    }
}
