import Foundation
import Switchboard
import SwitchboardProtocol

/// What the SDK reports about calls, turned into the system's terms: calls placed in the app become
/// start transactions, calls answered in the app answer transactions, outgoing calls connect, ends
/// get the system's reason (or become end transactions when this device ended them), and the call
/// screen's mute button follows the microphone.
extension CallKitStateMachine {
    /// The app placed a call through the SDK directly: tell the system with a start transaction,
    /// whose action then only confirms.
    mutating func callPlaced(_ callId: CallID, participantIds: [UserID], video: Bool) -> [Effect] {
        guard uuids[callId] == nil else { return [] }
        let uuid = UUID(callId: callId)
        var call = Call(uuid: uuid, callId: callId, direction: .outgoing, video: video, phase: .starting)
        call.placedBySDK = true
        add(call)
        let handle = participantIds.map(\.rawValue).joined(separator: ",")
        return [.request(.start(uuid: uuid, handle: handle, video: video))]
    }

    mutating func callStarted(_ callId: CallID) -> [Effect] {
        guard let uuid = uuids[callId], var call = calls[uuid] else { return [] }
        call.fromPush = false
        defer { calls[uuid] = call }
        switch call.phase {
        case .starting:
            call.connectedEarly = true
            return []
        case .outgoing:
            call.phase = .connected
            return [.reportConnected(uuid)]
        case .ringing:
            // Answered in the app while the call screen rings: the system learns it as an answer
            // transaction (which stops the ringing and lets it activate the audio session).
            call.phase = .answering
            call.answeredInApp = true
            return [.request(.answer(uuid: uuid))]
        case .reporting:
            // The same, once the system has shown the call (``reportCompleted(_:_:)``).
            call.answeredInApp = true
            return []
        case .answering, .connected, .ending:
            return []
        }
    }

    mutating func callEnded(_ callId: CallID, reason: CallEndReason, byMe: Bool) -> [Effect] {
        let systemReason = SystemCallEndReason(reason)
        guard let uuid = uuids[callId], var call = calls[uuid] else { return [] }
        switch call.phase {
        case .ending:
            return []
        case .reporting, .starting:
            call.endAfterReport = systemReason
            calls[uuid] = call
            return []
        case .ringing, .answering, .outgoing, .connected:
            // Ended in the app (`CallStore.hangup`/`reject` called directly): the system learns it
            // as an end transaction, like any change made in the app.
            if byMe && [.hangup, .canceled, .reject].contains(reason) {
                call.phase = .ending
                calls[uuid] = call
                return [.request(.end(uuid: uuid))]
            }
            remove(uuid, reason: systemReason)
            return [.reportEnded(uuid, systemReason)]
        }
    }

    mutating func mediaTypeChanged(_ callId: CallID, video: Bool, info: CallInfo?, _ context: Context) -> [Effect] {
        guard let uuid = uuids[callId] else { return [] }
        calls[uuid]?.video = video
        guard let info else { return [] }
        return [.reportUpdated(uuid, Self.callUpdate(for: info, me: context.me, video: video))]
    }

    /// Keeps the call screen's mute button on the microphone's state: a change made in the app is
    /// sent as a mute transaction, remembered so that its action is not applied again.
    mutating func reconcileMute(_ context: Context) -> [Effect] {
        var effects: [Effect] = []
        for uuid in calls.keys.sorted(by: { $0.uuidString < $1.uuidString }) {
            guard var call = calls[uuid], [.answering, .outgoing, .connected].contains(call.phase) else { continue }
            let shown = call.appMuteRequests.last ?? call.systemMuted
            guard shown != context.microphoneOff else { continue }
            call.appMuteRequests.append(context.microphoneOff)
            calls[uuid] = call
            effects.append(.request(.setMuted(uuid: uuid, muted: context.microphoneOff)))
        }
        return effects
    }

    /// The system ended every call (its daemon restarted): leave them all in the SDK too.
    mutating func reset() -> [Effect] {
        let callIds = calls.values.compactMap(\.callId).sorted()
        for uuid in Array(calls.keys) { remove(uuid, reason: .failed) }
        return [.deactivateAudio] + callIds.map { .sdk(.hangup($0, then: nil)) }
    }
}
