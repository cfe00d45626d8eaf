import Foundation
import Switchboard
import SwitchboardProtocol

/// The system's actions: answer → accept, end → reject, cancel or hang up by the call's phase,
/// mute → the microphone (once: the app's own change coming back is not applied again), start →
/// place the call, hold → failed. Each is fulfilled or failed exactly once.
extension CallKitStateMachine {
    mutating func perform(_ id: ActionID, _ action: SystemCallAction, _ context: Context) -> [Effect] {
        switch action {
        case .answer(let uuid): answer(id, uuid, context)
        case .end(let uuid): end(id, uuid)
        case .setMuted(let uuid, let muted): mute(id, uuid, muted)
        case .start(let uuid, _, _): start(id, uuid, context)
        // Switchboard has no hold: a second call is answered by ending the first.
        case .setHeld: [.fail(id)]
        }
    }

    private mutating func answer(_ id: ActionID, _ uuid: UUID, _ context: Context) -> [Effect] {
        if var call = calls[uuid], call.answeredInApp, call.phase == .answering {
            // The app's own answer coming back: the SDK is in the call already, and the microphone
            // stays as the app set it (the call screen's mute button follows it).
            call.phase = .connected
            calls[uuid] = call
            return [.configureAudio(video: call.video), .fulfill(id)] + reconcileMute(context)
        }
        guard var call = calls[uuid], let callId = call.callId, call.direction == .incoming,
            call.phase == .ringing || call.phase == .reporting
        else { return [.fail(id)] }
        call.phase = .answering
        call.systemMuted = false
        calls[uuid] = call
        // A call answered on the call screen starts unmuted, as the screen shows it.
        return [.configureAudio(video: call.video), .setMicrophone(on: true), .sdk(.accept(callId, uuid, id))]
    }

    mutating func answerFinished(_ uuid: UUID, _ id: ActionID, succeeded: Bool) -> [Effect] {
        if succeeded {
            if calls[uuid]?.phase == .answering { calls[uuid]?.phase = .connected }
            return [.fulfill(id)]
        }
        guard calls[uuid] != nil else { return [.fail(id)] }
        remove(uuid, reason: .failed)
        return [.fail(id), .reportEnded(uuid, .failed)]
    }

    /// The user wants the call gone: an end action always succeeds, once the SDK had its say.
    private mutating func end(_ id: ActionID, _ uuid: UUID) -> [Effect] {
        guard var call = calls[uuid] else { return [.fulfill(id)] }
        let before = call.phase
        call.phase = .ending
        guard let callId = call.callId else {
            // Still being placed: hang up as soon as the call exists.
            call.endWhenPlaced = true
            calls[uuid] = call
            return [.fulfill(id)]
        }
        remove(uuid, reason: .remoteEnded)
        switch before {
        case .ending: return [.fulfill(id)]
        case .reporting, .ringing: return [.sdk(.reject(callId, then: id))]
        case .answering, .starting, .outgoing, .connected: return [.sdk(.hangup(callId, then: id))]
        }
    }

    private mutating func mute(_ id: ActionID, _ uuid: UUID, _ muted: Bool) -> [Effect] {
        guard var call = calls[uuid] else { return [.fail(id)] }
        call.systemMuted = muted
        defer { calls[uuid] = call }
        if call.appMuteRequests.first == muted {
            // The app's own change coming back: already applied.
            call.appMuteRequests.removeFirst()
            return [.fulfill(id)]
        }
        return [.setMicrophone(on: !muted), .fulfill(id)]
    }

    private mutating func start(_ id: ActionID, _ uuid: UUID, _ context: Context) -> [Effect] {
        guard var call = calls[uuid], call.phase == .starting else { return [.fail(id)] }
        if !call.placedBySDK {
            // Taken once: a repeated start action finds nothing to place.
            guard call.awaitsPlacing else { return [.fail(id)] }
            calls[uuid]?.awaitsPlacing = false
            return [.configureAudio(video: call.video), .setMicrophone(on: true), .sdk(.place(uuid, id))]
        }
        // Placed in the app already (or taken here from another device): the action confirms,
        // after the audio session is set for the call, which the system activates next.
        call.phase = call.connectedEarly ? .connected : .outgoing
        let reason = call.endAfterReport
        if let reason { remove(uuid, reason: reason) } else { calls[uuid] = call }
        return [.configureAudio(video: call.video), .fulfill(id)]
            + placedReports(uuid, connected: call.connectedEarly, endReason: reason) + reconcileMute(context)
    }

    /// The call a start action asked for is placed (`callId`), or could not be (nil).
    mutating func placeFinished(_ uuid: UUID, _ id: ActionID, _ callId: CallID?) -> [Effect] {
        guard let callId else {
            drop(uuid)
            return [.fail(id)]
        }
        guard var call = calls[uuid] else { return [.fulfill(id)] + placedReports(uuid, connected: false, endReason: nil) }
        if call.endWhenPlaced {
            remove(uuid, reason: .remoteEnded)
            return [.fulfill(id), .sdk(.hangup(callId, then: nil))]
        }
        call.phase = call.connectedEarly ? .connected : .outgoing
        let reason = call.endAfterReport
        if let reason { remove(uuid, reason: reason) } else { calls[uuid] = call }
        return [.fulfill(id)] + placedReports(uuid, connected: call.connectedEarly, endReason: reason)
    }

    /// An outgoing call is connecting; it may have connected or ended meanwhile.
    private func placedReports(_ uuid: UUID, connected: Bool, endReason: SystemCallEndReason?) -> [Effect] {
        var effects: [Effect] = [.reportStartedConnecting(uuid)]
        if connected { effects.append(.reportConnected(uuid)) }
        if let endReason { effects.append(.reportEnded(uuid, endReason)) }
        return effects
    }

    /// A transaction the machine asked for was refused.
    mutating func transactionRefused(_ action: SystemCallAction) -> [Effect] {
        switch action {
        case .start(let uuid, _, _):
            guard let call = calls[uuid] else { return [.startRefused(uuid)] }
            if call.placedBySDK {
                // Without the system the call could never get audio: hang it up.
                remove(uuid, reason: .failed)
                return call.callId.map { [.sdk(.hangup($0, then: nil))] } ?? []
            }
            calls[uuid] = nil
            return [.startRefused(uuid)]
        case .end(let uuid):
            remove(uuid, reason: .remoteEnded)
            return [.reportEnded(uuid, .remoteEnded)]
        case .setMuted(let uuid, let muted):
            if let index = calls[uuid]?.appMuteRequests.firstIndex(of: muted) {
                calls[uuid]?.appMuteRequests.remove(at: index)
            }
            return []
        case .answer(let uuid):
            // The system would not take the app's answer: without it the call gets no audio, so it
            // is hung up, as a call the system would not start is.
            guard let call = calls[uuid], call.answeredInApp, let callId = call.callId else { return [] }
            remove(uuid, reason: .failed)
            return [.reportEnded(uuid, .failed), .sdk(.hangup(callId, then: nil))]
        case .setHeld:
            return []
        }
    }
}
