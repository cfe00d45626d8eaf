import Foundation
import Switchboard
import SwitchboardProtocol

/// The CallKit and PushKit rules (SPEC §8) as a value: inputs in (a push, a report's completion, a
/// provider action, an SDK event, the microphone's state, the results of work it asked for),
/// effects out, no I/O. ``CallKitCoordinator`` feeds it and performs the effects in order; tests
/// feed inputs and compare effects in tables.
///
/// It keeps one table of the calls the system shows, keyed by UUID (one per call id for the call's
/// life), with what the system believes about each, and a short memory of ended calls so that a
/// late push for one is reported and ended at once.
struct CallKitStateMachine: Sendable {
    /// An action the system handed over, completed by the coordinator when an effect names it.
    struct ActionID: Hashable, Sendable, CustomStringConvertible {
        var rawValue: Int
        var description: String { "#\(rawValue)" }
    }

    /// What the machine reads from the world with each input: the time, who is logged in, the
    /// microphone as it is now (not as it was when a change was announced: a stale value would
    /// send a needless transaction and its undo), and a UUID for a call that needs a new one.
    struct Context: Sendable {
        var now: Int64
        var me: UserID?
        var microphoneOff: Bool
        var freshUUID: UUID
    }

    enum Input: Sendable {
        // PushKit and the system's reports
        /// A VoIP push (nil: it did not decode).
        case push(VoIPPush?)
        /// The system took (nil) or refused an incoming call report.
        case reportCompleted(UUID, IncomingCallReportError?)
        /// A change the machine asked for (an `.request` effect) was refused.
        case transactionRefused(SystemCallAction)
        case providerAction(ActionID, SystemCallAction)
        /// The system ended every call (its daemon restarted).
        case providerReset
        // The SDK
        /// A call rang through signaling; `info` is the SDK's view of it, when it has one.
        case callReceived(CallID, callerId: UserID, video: Bool, info: CallInfo?)
        /// The app placed a call through the SDK directly.
        case callPlaced(CallID, participantIds: [UserID], video: Bool)
        case callStarted(CallID)
        case callEnded(CallID, reason: CallEndReason, by: UserID?)
        case mediaTypeChanged(CallID, video: Bool, info: CallInfo?)
        /// The microphone's state changed (it is in the context).
        case microphoneChanged
        // The app's requests and the results of work done for the machine
        case accountChanged(CallKitAccount?)
        /// The app places a call through the system (a start transaction with a new UUID).
        case startRequested(UUID, handle: String, video: Bool)
        /// The SDK named the call it is placing for a start action.
        case placing(UUID, CallID)
        /// The call a start action placed exists now (`callId`), or could not be placed (nil).
        case placeFinished(UUID, ActionID, CallID?)
        /// The SDK accepted the call an answer action was for, or failed to.
        case answerFinished(UUID, ActionID, succeeded: Bool)
        /// Logging in after a push failed: the pushed calls cannot be confirmed.
        case pushLoginFailed
    }

    enum Effect: Equatable, Sendable {
        // The system
        case reportIncoming(UUID, CallUpdate)
        case reportStartedConnecting(UUID)
        case reportConnected(UUID)
        case reportEnded(UUID, SystemCallEndReason)
        case reportUpdated(UUID, CallUpdate)
        /// A transaction; if the system refuses it, it comes back as ``Input/transactionRefused(_:)``.
        case request(SystemCallAction)
        case fulfill(ActionID)
        case fail(ActionID)
        case configureAudio(video: Bool)
        // The SDK
        case deliverPush(VoIPPush)
        case setMicrophone(on: Bool)
        case deactivateAudio
        /// A request that waits for the server; these run one after the other, in the background.
        case sdk(SDKRequest)
        /// The system refused to start the call the app asked for: its request fails.
        case startRefused(UUID)
    }

    /// The SDK requests the machine asks for, which wait for the server.
    enum SDKRequest: Equatable, Sendable {
        /// Log in with the account so the server confirms the pushed calls; a failure comes back as
        /// ``Input/pushLoginFailed``.
        case logInForPush
        /// Accept (after logging in if needed); the outcome comes back as ``Input/answerFinished(_:_:succeeded:)``.
        case accept(CallID, UUID, ActionID)
        /// Reject (after logging in if needed), then fulfill the action, if any, whatever the outcome.
        case reject(CallID, then: ActionID?)
        /// Hang up, then fulfill the action, if any, whatever the outcome.
        case hangup(CallID, then: ActionID?)
        /// Place the call the app asked for with this UUID; the outcome comes back as
        /// ``Input/placeFinished(_:_:_:)``.
        case place(UUID, ActionID)
    }

    /// One call the system knows about.
    struct Call: Equatable, Sendable {
        enum Phase: Equatable, Sendable {
            /// Reported as incoming; the system has not confirmed yet.
            case reporting
            /// Ringing on the call screen.
            case ringing
            /// The user answered; the SDK is accepting.
            case answering
            /// An outgoing call the system was asked to start; the start action has not completed.
            case starting
            /// An outgoing call placed and ringing at the invitees.
            case outgoing
            case connected
            /// Ended here (an end action is in flight or expected); SDK ends for it are not news.
            case ending
        }

        var uuid: UUID
        var callId: CallID?
        var direction: CallDirection
        var video: Bool
        var phase: Phase
        /// The call came from a push and the server has not confirmed it yet.
        var fromPush = false
        /// End the call with this reason once the report (or the start) completes.
        var endAfterReport: SystemCallEndReason?
        /// The SDK placed the call already (the app called `CallStore.calls` itself).
        var placedBySDK = false
        /// The app accepted the call through the SDK (`CallStore.accept` from its own screen): the
        /// system is asked to answer it, and that answer action only confirms.
        var answeredInApp = false
        /// The app asked for this call through the system; the start action will place it.
        var awaitsPlacing = false
        /// The call connected before its start action completed.
        var connectedEarly = false
        /// The user ended the call while it was being placed: hang up once it is.
        var endWhenPlaced = false
        /// What the call screen shows: muted or not.
        var systemMuted = false
        /// Mute changes made in the app and sent as transactions, oldest first; when their action
        /// comes back it only updates ``systemMuted``.
        var appMuteRequests: [Bool] = []
    }

    /// How many ended calls are remembered.
    static let endedMemory = 128

    /// Who is logged in here; a push for anyone else is ended at once.
    var account: CallKitAccount?
    var calls: [UUID: Call] = [:]
    var uuids: [CallID: UUID] = [:]
    /// Calls that ended recently, with the reason a late push for them is ended with.
    var ended: [CallID: SystemCallEndReason] = [:]
    private var endedOrder: [CallID] = []

    /// Applies one input and returns what to do, in order.
    mutating func handle(_ input: Input, _ context: Context) -> [Effect] {
        switch input {
        case .push(let push):
            return admit(push, context)
        case .reportCompleted(let uuid, let error):
            return reportCompleted(uuid, error)
        case .transactionRefused(let action):
            return transactionRefused(action)
        case .providerAction(let id, let action):
            return perform(id, action, context)
        case .providerReset:
            return reset()
        case .callReceived(let callId, let callerId, let video, let info):
            return callReceived(callId, callerId: callerId, video: video, info: info, context)
        case .callPlaced(let callId, let participantIds, let video):
            return callPlaced(callId, participantIds: participantIds, video: video)
        case .callStarted(let callId):
            return callStarted(callId)
        case .callEnded(let callId, let reason, let by):
            return callEnded(callId, reason: reason, byMe: by != nil && by == context.me)
        case .mediaTypeChanged(let callId, let video, let info):
            return mediaTypeChanged(callId, video: video, info: info, context)
        case .microphoneChanged:
            return reconcileMute(context)
        case .accountChanged(let account):
            self.account = account
            return []
        case .startRequested(let uuid, let handle, let video):
            var call = Call(uuid: uuid, direction: .outgoing, video: video, phase: .starting)
            call.awaitsPlacing = true
            add(call)
            return [.request(.start(uuid: uuid, handle: handle, video: video))]
        case .placing(let uuid, let callId):
            // Paired before the SDK publishes anything about the call.
            calls[uuid]?.callId = callId
            uuids[callId] = uuid
            return []
        case .placeFinished(let uuid, let id, let callId):
            return placeFinished(uuid, id, callId)
        case .answerFinished(let uuid, let id, let succeeded):
            return answerFinished(uuid, id, succeeded: succeeded)
        case .pushLoginFailed:
            return pushLoginFailed()
        }
    }

    /// The transaction that ends the call `callId`, if the system shows it.
    func endTransaction(_ callId: CallID?) -> SystemCallAction? {
        callId.flatMap(call).map { .end(uuid: $0.uuid) }
    }

    /// The transaction that mutes or unmutes the call `callId`, if the system shows it.
    func muteTransaction(_ callId: CallID?, muted: Bool) -> SystemCallAction? {
        callId.flatMap(call).map { .setMuted(uuid: $0.uuid, muted: muted) }
    }

    // MARK: - the table

    func call(_ callId: CallID) -> Call? {
        uuids[callId].flatMap { calls[$0] }
    }

    mutating func add(_ call: Call) {
        calls[call.uuid] = call
        if let callId = call.callId { uuids[callId] = call.uuid }
    }

    /// Forgets a call the system no longer shows, remembering how it ended.
    mutating func remove(_ uuid: UUID, reason: SystemCallEndReason) {
        guard let call = calls.removeValue(forKey: uuid) else { return }
        guard let callId = call.callId else { return }
        uuids[callId] = nil
        if ended.updateValue(reason, forKey: callId) == nil { endedOrder.append(callId) }
        if endedOrder.count > Self.endedMemory { ended[endedOrder.removeFirst()] = nil }
    }

    /// Forgets a call that never was (a start that failed), without remembering it as ended.
    mutating func drop(_ uuid: UUID) {
        if let callId = calls.removeValue(forKey: uuid)?.callId { uuids[callId] = nil }
    }

    /// The call screen's view of a call: the caller, or for a group everyone else.
    static func callUpdate(for info: CallInfo, me: UserID?, video: Bool) -> CallUpdate {
        let others = info.participants.filter { $0.userId != me }
        let caller = info.participant(info.callerId)
        if info.callType == .group {
            let names = others.map { $0.nickname ?? $0.userId.rawValue }
            return CallUpdate(
                handle: others.map(\.userId.rawValue).joined(separator: ","), callerName: names.joined(separator: ", "),
                hasVideo: video)
        }
        let peer = info.callerId == me ? others.first : caller
        return CallUpdate(
            handle: peer?.userId.rawValue ?? info.callerId.rawValue,
            callerName: peer?.nickname ?? peer?.userId.rawValue ?? info.callerId.rawValue, hasVideo: video)
    }
}
