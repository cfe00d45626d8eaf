import Foundation
import Switchboard
import SwitchboardCallKit
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import Testing

extension CallKitCoordinatorTests {
    /// bob answers alice's call on his phone, then takes it on his iPad: the iPad's call screen
    /// learns it as a call placed there and connected at once (its audio follows the system's
    /// activation, as for any CallKit call), the phone's call screen ends it as answered elsewhere,
    /// and alice's call goes on.
    @Test func aCallTakenOnAnotherDeviceMovesBetweenCallScreens() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await h.phone(login: true)
        let pad = try await h.phone(deviceId: "bob-pad", login: true)
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let uuid = UUID(callId: call.callId)
        try await phone.events.first(from: 0, where: isReceived)
        try await phone.client.callStore.accept(callId: call.callId)
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.answer(uuid: uuid)) }
        // The iPad rang too, and stopped when the phone answered.
        try await pad.system.records.first(from: 0) { $0 == .ended(uuid, .answeredElsewhere) }
        let padRecords = pad.system.records.values.count

        _ = try await phone.client.callStore.offerMove(callId: call.callId, to: "bob-pad")
        try await pad.events.first(from: 0) { if case .onCallMoveOffered(call.callId, "bob-phone", _) = $0 { true } else { false } }
        try await pad.client.callStore.take(callId: call.callId)

        try await pad.system.records.first(from: padRecords) {
            $0 == .fulfilled(.start(uuid: uuid, handle: "alice", video: false))
        }
        try await pad.system.records.first(from: padRecords) { $0 == .connected(uuid) }
        try await phone.system.records.first(from: 0) { $0 == .ended(uuid, .answeredElsewhere) }
        try await pad.media.calls.first(from: 0) { $0 == .callConnected(call.callId, .audio) }
        pad.system.activateAudioSession()
        try await pad.media.calls.first(from: 0) { $0 == .startAudio }
        try await phone.media.calls.first(from: 0) { $0 == .callEnded(call.callId) }
        #expect(h.alice.callStore.state.activeCall?.callId == call.callId)
        #expect(!h.aliceEvents.values.contains { if case .onCallEnded = $0 { true } else { false } })

        // The iPad's call screen hangs up for bob: the call ends for alice.
        pad.system.userEnds(uuid)
        try await h.aliceEvents.first(from: 0) { if case .onCallEnded(call.callId, _, .hangup, "bob") = $0 { true } else { false } }
        #expect(phone.system.problems() == [])
        #expect(pad.system.problems() == [])
        await h.stop()
    }
}
