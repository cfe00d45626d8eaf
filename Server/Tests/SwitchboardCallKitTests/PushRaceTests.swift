import Foundation
import Switchboard
import SwitchboardCallKit
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

@testable import SwitchboardServer

/// A device that connects while its push is on the way rings once (issue 29), end to end: the
/// server's push through the local APNs, the invitation over the new connection, the CallKit bridge.
struct PushRaceTests {
    @Test func aPhoneThatConnectsWhileItsPushIsOnTheWayRingsOnce() async throws {
        let h = try await CallKitHarness.start(pushToken: true)
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        // APNs took the push; iOS has not delivered it yet when the user opens the app.
        let push = try await h.apns.pushes.first(from: 0) { $0.push?.callId == call.callId }
        let phone = try await h.phone(login: true)
        let uuid = UUID(callId: call.callId)
        try await phone.system.records.first(from: 0) { if case .ringing(uuid, _) = $0 { true } else { false } }
        // Now PushKit hands the push over: reported, as iOS demands, without a second ring.
        _ = phone.system.deliverPush(json: push.payload)
        try await phone.system.records.first(from: 0) { $0 == .pushCompleted(1) }
        #expect(phone.system.rings == 1)
        #expect(phone.system.records.values.contains(.reportRefused(uuid, .callUUIDAlreadyExists)))
        #expect(phone.events.values.filter(isReceived).count == 1)
        // The call is answered from the call screen as usual.
        phone.system.userAnswers(uuid)
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.answer(uuid: uuid)) }
        try await h.aliceEvents.first(from: 0, where: isStarted)
        #expect(phone.system.problems() == [])
        await h.stop()
    }

    /// The same the other way round: the push comes first and rings, then the app connects and
    /// the server's invitation for the same call does not ring again.
    @Test func aPushThenTheConnectionRingsOnce() async throws {
        let h = try await CallKitHarness.start(pushToken: true)
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .video)
        let push = try await NotificationRingingTests.step("the push reaches APNs") {
            try await h.apns.pushes.first(from: 0) { $0.push?.callId == call.callId }
        }
        let phone = try await h.phone(login: false)
        _ = phone.system.deliverPush(json: push.payload)
        let uuid = UUID(callId: call.callId)
        try await NotificationRingingTests.step("the push rings") {
            try await phone.system.records.first(from: 0) { if case .ringing(uuid, _) = $0 { true } else { false } }
        }
        let logins = Recorder(phone.client.loginStore.stateUpdates)
        try await NotificationRingingTests.step("the app logs in") { try await phone.coordinator.login(phone.account) }
        try await NotificationRingingTests.step("the app is logged in") { try await logins.first(from: 0) { $0.loginStatus == .loggedIn } }
        // The barrier: alice's call is confirmed to bob's SDK by the server's snapshot at login.
        try await NotificationRingingTests.step("the login's snapshot brings the call") {
            try await phone.events.first(from: 0) { if case .onCallReceived = $0 { true } else { false } }
        }
        phone.system.userAnswers(uuid)
        try await NotificationRingingTests.step("the answer is fulfilled") {
            try await phone.system.records.first(from: 0) { $0 == .fulfilled(.answer(uuid: uuid)) }
        }
        try await NotificationRingingTests.step("alice hears the call start") { try await h.aliceEvents.first(from: 0, where: isStarted) }
        #expect(phone.system.rings == 1)
        #expect(phone.events.values.filter(isReceived).count == 1)
        #expect(phone.system.problems() == [])
        await h.stop()
    }
}
