import Foundation
import Switchboard
import SwitchboardProtocol

/// Incoming calls: pushes (each reported at once, with no `await` before the report, and ended at
/// once when it cannot ring), the system's answer to a report, and invitations through signaling.
extension CallKitStateMachine {
    /// Reports a push's call at once, hands the push to the SDK when it is about a call this
    /// table pairs with its id, and logs in when it rings a new call.
    mutating func admit(_ push: VoIPPush?, _ context: Context) -> [Effect] {
        let (uuid, update, ringsNewCall) = admission(push, context)
        var effects: [Effect] = [.reportIncoming(uuid, update)]
        if let push, calls[uuid]?.callId == push.callId { effects.append(.deliverPush(push)) }
        if ringsNewCall { effects.append(.sdk(.logInForPush)) }
        return effects
    }

    /// Decides what a push becomes: the call it rings, a duplicate of a call already shown, or a
    /// call reported only to be ended when its report completes. Returns the UUID and update to
    /// report, and whether it rings a new call.
    private mutating func admission(_ push: VoIPPush?, _ context: Context) -> (UUID, CallUpdate, Bool) {
        let unknown = CallUpdate(handle: "unknown", callerName: "Unknown caller", hasVideo: false)
        guard let push else { return endAtOnce(context.freshUUID, unknown, .failed) }
        let uuid = UUID(callId: push.callId)
        switch push {
        case .callEnded(let end):
            let update = CallUpdate(handle: "unknown", callerName: "Ended call", hasVideo: end.mediaType == .video)
            if var call = call(end.callId), call.phase != .ending {
                // Still ringing here: report it again (the system answers "already exists", nothing
                // rings twice) and end it when that report completes.
                call.endAfterReport = SystemCallEndReason(end.reason)
                calls[call.uuid] = call
                return (call.uuid, CallUpdate(handle: "", callerName: "", hasVideo: call.video), false)
            }
            return endAtOnce(uuid, update, ended[end.callId] ?? SystemCallEndReason(end.reason))
        case .incomingCall(let invitation):
            let update = CallUpdate(
                handle: invitation.callerId.rawValue, callerName: invitation.callerName ?? invitation.callerId.rawValue,
                hasVideo: invitation.mediaType == .video)
            if let call = call(invitation.callId) {
                return (call.uuid, CallUpdate(handle: update.handle, callerName: update.callerName, hasVideo: call.video), false)
            }
            if let reason = ended[invitation.callId] { return endAtOnce(uuid, update, reason) }
            guard let account, invitation.userId.map({ $0.rawValue == account.userID }) ?? true,
                invitation.sdkAppID.map({ $0 == account.sdkAppID }) ?? true
            else { return endAtOnce(uuid, update, .failed) }
            if let deadline = invitation.deadline, deadline <= context.now { return endAtOnce(uuid, update, .unanswered) }
            var call = Call(uuid: uuid, callId: invitation.callId, direction: .incoming, video: update.hasVideo, phase: .reporting)
            call.fromPush = true
            add(call)
            return (uuid, update, true)
        }
    }

    /// A push that cannot ring is still reported (iOS requires it), and ended once the report completes.
    private mutating func endAtOnce(_ uuid: UUID, _ update: CallUpdate, _ reason: SystemCallEndReason) -> (UUID, CallUpdate, Bool) {
        var call = Call(uuid: uuid, direction: .incoming, video: update.hasVideo, phase: .reporting)
        call.endAfterReport = reason
        // Not paired with the call id: nothing the SDK says about that call concerns this report.
        if calls[uuid] == nil { calls[uuid] = call }
        return (uuid, update, false)
    }

    /// The system took (or refused) an incoming call report.
    mutating func reportCompleted(_ uuid: UUID, _ error: IncomingCallReportError?) -> [Effect] {
        guard var call = calls[uuid] else { return [] }
        if let error, error != .callUUIDAlreadyExists {
            // Not shown (Do Not Disturb, blocked, not entitled): the call cannot be answered here.
            remove(uuid, reason: .failed)
            guard call.endAfterReport == nil, let callId = call.callId else { return [] }
            return [.sdk(.reject(callId, then: nil))]
        }
        if let reason = call.endAfterReport {
            remove(uuid, reason: reason)
            return [.reportEnded(uuid, reason)]
        }
        guard call.phase == .reporting else { return [] }
        if call.answeredInApp {
            call.phase = .answering
            calls[uuid] = call
            return [.request(.answer(uuid: uuid))]
        }
        call.phase = .ringing
        calls[uuid] = call
        return []
    }

    /// Logging in after a push failed: the pushed calls end, on the call screen and in the SDK.
    mutating func pushLoginFailed() -> [Effect] {
        var effects: [Effect] = []
        let unconfirmed = calls.values.filter { $0.fromPush && ($0.phase == .reporting || $0.phase == .ringing) }
        for call in unconfirmed.sorted(by: { $0.uuid.uuidString < $1.uuid.uuidString }) {
            if call.phase == .reporting {
                calls[call.uuid]?.endAfterReport = .failed
            } else {
                remove(call.uuid, reason: .failed)
                effects.append(.reportEnded(call.uuid, .failed))
            }
            if let callId = call.callId {
                effects.append(.deliverPush(.callEnded(CallEndedPush(callId: callId, reason: .unknown))))
            }
        }
        return effects
    }

    /// A call rang through signaling (the app is running): report it unless a push did already.
    mutating func callReceived(
        _ callId: CallID, callerId: UserID, video: Bool, info: CallInfo?, _ context: Context
    ) -> [Effect] {
        if let uuid = uuids[callId] {
            calls[uuid]?.fromPush = false
            return []
        }
        guard ended[callId] == nil else { return [] }
        let uuid = UUID(callId: callId)
        add(Call(uuid: uuid, callId: callId, direction: .incoming, video: video, phase: .reporting))
        let update =
            info.map { Self.callUpdate(for: $0, me: context.me, video: video) }
            ?? CallUpdate(handle: callerId.rawValue, callerName: callerId.rawValue, hasVideo: video)
        return [.reportIncoming(uuid, update)]
    }
}
