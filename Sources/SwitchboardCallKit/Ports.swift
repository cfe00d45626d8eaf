import Foundation
import Switchboard
import SwitchboardProtocol

// The few things the bridge needs from the system, as small protocols: CallKit's provider and
// call controller, PushKit's registry, the audio session. The Apple adapters (AppleAdapters.swift)
// conform to them on iOS; tests use the fakes of SwitchboardTesting, which enforce the system's
// contracts. Every decision is in ``CallKitCoordinator``, which runs on every platform.

/// What the system call UI shows about a call (`CXCallUpdate`). Holding, grouping and DTMF are
/// never offered.
public struct CallUpdate: Equatable, Sendable {
    /// The other party as a generic handle: a user id, or user ids joined by commas for a group.
    public var handle: String
    /// The name shown on the call screen.
    public var callerName: String
    public var hasVideo: Bool

    public init(handle: String, callerName: String, hasVideo: Bool) {
        self.handle = handle
        self.callerName = callerName
        self.hasVideo = hasVideo
    }
}

/// Why a call ended, in the system's terms (`CXCallEndedReason`).
public enum SystemCallEndReason: String, Sendable, CaseIterable {
    case failed
    case remoteEnded
    case unanswered
    case answeredElsewhere
    case declinedElsewhere
}

/// Why the system did not show a reported incoming call (`CXErrorCodeIncomingCallError`).
public enum IncomingCallReportError: String, Error, Sendable, CaseIterable {
    case unknown
    case unentitled
    /// A call with this UUID is already reported: it keeps ringing once (a duplicate push).
    case callUUIDAlreadyExists
    case filteredByDoNotDisturb
    case filteredByBlockList
}

/// A change to a call that only the system may make (`CXAction` subclasses). The app asks for
/// one through ``CallControllerPort``; the system hands it to the provider to perform.
public enum SystemCallAction: Equatable, Sendable {
    /// Place a call (from the app, or from recents and contacts through `INStartCallIntent`).
    case start(uuid: UUID, handle: String, video: Bool)
    case answer(uuid: UUID)
    case end(uuid: UUID)
    case setMuted(uuid: UUID, muted: Bool)
    case setHeld(uuid: UUID, onHold: Bool)

    public var uuid: UUID {
        switch self {
        case .start(let uuid, _, _), .answer(let uuid), .end(let uuid), .setMuted(let uuid, _), .setHeld(let uuid, _):
            uuid
        }
    }
}

/// An action the system asks the app to perform. Call exactly one of `fulfill` and `fail`,
/// exactly once; CallKit undoes a change that is neither (the mute button springs back).
public struct ProviderAction: Sendable {
    public var action: SystemCallAction
    public let fulfill: @Sendable () -> Void
    public let fail: @Sendable () -> Void

    public init(_ action: SystemCallAction, fulfill: @escaping @Sendable () -> Void, fail: @escaping @Sendable () -> Void) {
        self.action = action
        self.fulfill = fulfill
        self.fail = fail
    }
}

/// The system call UI (`CXProvider`): what the app reports to it.
public protocol CallProviderPort: Sendable {
    /// Starts handing actions and audio-session changes to `receiver` (held weakly).
    func setReceiver(_ receiver: any CallProviderReceiver)
    /// Shows a ringing call; `completion` runs once the system accepted or refused it.
    func reportNewIncomingCall(
        uuid: UUID, update: CallUpdate, completion: @escaping @Sendable (IncomingCallReportError?) -> Void)
    func reportOutgoingCallStartedConnecting(uuid: UUID)
    func reportOutgoingCallConnected(uuid: UUID)
    func reportCallEnded(uuid: UUID, reason: SystemCallEndReason)
    func reportCallUpdated(uuid: UUID, update: CallUpdate)
}

/// What the provider hands over (`CXProviderDelegate`).
public protocol CallProviderReceiver: AnyObject, Sendable {
    func perform(_ action: ProviderAction)
    /// `provider(_:didActivate:)`: the system activated the audio session for a call.
    func audioSessionActivated()
    /// `provider(_:didDeactivate:)`.
    func audioSessionDeactivated()
    /// `providerDidReset(_:)`: the system ended every call.
    func providerDidReset()
}

/// Asks the system for a change (`CXCallController`); the action comes back through the provider.
public protocol CallControllerPort: Sendable {
    func request(_ action: SystemCallAction, completion: @escaping @Sendable ((any Error)?) -> Void)
}

/// VoIP pushes and the push token (`PKPushRegistry`).
public protocol PushRegistryPort: Sendable {
    /// Starts handing pushes and token changes to `receiver` (held weakly).
    func setReceiver(_ receiver: any PushRegistryReceiver)
}

/// What the push registry hands over (`PKPushRegistryDelegate`).
public protocol PushRegistryReceiver: AnyObject, Sendable {
    func pushTokenUpdated(_ token: Data)
    func pushTokenInvalidated()
    /// A VoIP push. Report it to the provider before returning; call `completion` once the report completed.
    func incomingPush(payload: [AnyHashable: Any], completion: @escaping @Sendable () -> Void)
}

/// The audio session for calls (`AVAudioSession`). CallKit activates the session itself; the app
/// configures its category and mode before answering or placing a call, and routes the audio once
/// the session is active (a route set before that does not survive the activation).
public protocol AudioSessionPort: Sendable {
    /// `.playAndRecord`, mode `.voiceChat` or `.videoChat`, Bluetooth allowed; resets any route override.
    func configureForCall(video: Bool)
    /// Sends call audio to `route` (speaker: `overrideOutputAudioPort(.speaker)`; earpiece: no
    /// override, the built-in microphone and voice-chat mode; a headset: no override, its input
    /// preferred). Only takes effect while the session is active.
    func route(to route: AudioRoute)
    /// Starts telling `observer` the headsets connected (`.bluetooth`, `.headset`) whenever they
    /// change, beginning with the ones connected now.
    func observeHeadsets(_ observer: @escaping @Sendable (Set<AudioRoute>) -> Void)
}
