import Foundation
import Switchboard
import SwitchboardCallKit
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

/// The route policy applied to the audio session as CallKit allows: the category before the
/// answer, the route only once the system activated the session (a route set before would not
/// survive the activation), again after every change. The fake session plays where iOS would.
struct AudioRouteTests {
    @Test func callAudioGoesWhereThePolicySaysOnceTheSessionIsActive() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await h.phone(login: true)
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .video)
        let uuid = UUID(callId: call.callId)
        try await phone.system.records.first(from: 0) { $0.ringing?.0 == uuid }
        phone.system.userAnswers(uuid)
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.answer(uuid: uuid)) }
        #expect(phone.system.records.values.contains(.audioConfigured(video: true)))
        try await Recorder(phone.client.deviceStore.stateUpdates).first(from: 0) { $0.audioRoute == .speaker }

        // CallKit activates the session: the video call's speaker is set after that.
        phone.system.activateAudioSession()
        try await phone.system.records.first(from: 0) { $0 == .audioRouted(.speaker) }
        #expect(phone.system.audioOutput == .speaker)

        // Bluetooth comes on: the audio follows it, and the SDK's state says so.
        phone.system.setHeadset(.bluetooth, connected: true)
        try await phone.system.records.first(from: 0) { $0 == .audioRouted(.bluetooth) }
        #expect(phone.system.audioOutput == .bluetooth)
        #expect(phone.client.deviceStore.state.audioRoute == .bluetooth)

        // The user picks the speaker: kept, even when the media type changes to audio.
        phone.client.deviceStore.setAudioRoute(.speaker)
        try await phone.system.records.first(from: phone.system.records.values.count - 1) { $0 == .audioRouted(.speaker) }
        #expect(phone.system.audioOutput == .speaker)
        let change = try await phone.client.callStore.requestMediaTypeChange(to: .audio)
        try await h.aliceEvents.first(from: 0) { if case .onMediaTypeChangeRequested = $0 { true } else { false } }
        try await h.alice.callStore.replyMediaTypeChange(transactionId: change, agree: true)
        try await Recorder(phone.client.callStore.stateUpdates).first(from: 0) { $0.activeCall?.mediaType == .audio }
        phone.system.setHeadset(.bluetooth, connected: false)
        // The barrier: the headset's departure reached the SDK and changed nothing.
        try await Recorder(phone.client.deviceStore.stateUpdates).first(from: 0) { $0.chosenAudioRoute == .speaker }
        #expect(phone.system.audioOutput == .speaker)

        // The call ends: the choice goes with it; the next audio call is at the ear.
        try await h.alice.callStore.hangup()
        try await phone.system.records.first(from: 0) { $0 == .ended(uuid, .remoteEnded) }
        phone.system.deactivateAudioSession()
        try await Recorder(phone.client.deviceStore.stateUpdates).first(from: 0) { $0.audioRoute == .earpiece && $0.chosenAudioRoute == nil }

        let next = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let nextUUID = UUID(callId: next.callId)
        try await phone.system.records.first(from: 0) { $0.ringing?.0 == nextUUID }
        phone.system.userAnswers(nextUUID)
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.answer(uuid: nextUUID)) }
        let routed = phone.system.records.values.count
        phone.system.activateAudioSession()
        try await phone.system.records.first(from: routed) { $0 == .audioRouted(.earpiece) }
        #expect(phone.system.audioOutput == .earpiece)
        try await h.alice.callStore.hangup()
        try await phone.system.records.first(from: 0) { $0 == .ended(nextUUID, .remoteEnded) }
        #expect(phone.system.problems() == [])
        await h.stop()
    }
}
