import Foundation
import Logging
import Switchboard
import SwitchboardCallKit
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

@testable import SwitchboardServer

/// Ringing without CallKit (issue 29): the policy, and a phone whose notifications answer and
/// decline calls through the SDK against a real server.
struct NotificationRingingTests {
    @Test(arguments: [
        (CallKitPolicy.always, "CN", true), (.always, nil, true), (.never, "US", false), (.never, nil, false),
        (.off(inRegions: ["CN"]), "CN", false), (.off(inRegions: ["cn"]), "CN", false), (.off(inRegions: ["CN"]), "cn", false),
        (.off(inRegions: ["CN"]), "US", true), (.off(inRegions: ["CN"]), nil, true),
    ] as [(CallKitPolicy, String?, Bool)])
    func thePolicyDecidesByRegion(_ policy: CallKitPolicy, _ region: String?, _ callKit: Bool) {
        #expect(policy.usesCallKit(region: region) == callKit)
    }

    struct NotificationPhone {
        var client: SwitchboardClient
        var center: FakeNotificationCenter
        var coordinator: NotificationRingingCoordinator
        var events: Recorder<CallStoreEvent>
    }

    static let sealingKey = PushSealingKey()
    static let token = Data(repeating: 0xa5, count: 32)

    /// bob's phone, ringing with notifications: logged in once (its ringing alert token registered),
    /// then its app was killed. The returned phone is the app launched again, not logged in.
    static func phone(_ h: CallKitHarness) async throws -> NotificationPhone {
        func make(url: URL? = nil) async throws -> NotificationPhone {
            let client = try await h.server.client("bob", deviceId: "bob-phone", login: false, url: url)
            let center = FakeNotificationCenter()
            var logger = Logger(label: "switchboard.test-notifications")
            logger.logLevel = .critical
            let coordinator = NotificationRingingCoordinator(
                client: client,
                settings: NotificationRingingSettings(
                    bundleId: CallKitHarness.bundle, pushEnvironment: .sandbox, answerTitle: "Answer", declineTitle: "Decline",
                    sealingKey: sealingKey),
                center: center, logger: logger)
            coordinator.account = CallKitAccount(sdkAppID: h.server.app.sdkAppID, userID: "bob", userSig: h.server.userSig("bob"))
            return NotificationPhone(client: client, center: center, coordinator: coordinator, events: Recorder(client.callStore.events))
        }
        // The first run of the app reaches the server through a proxy, so that it can be killed.
        let proxy = try await TCPProxy.start(targetPort: h.server.port)
        let first = try await make(url: h.server.url(via: proxy))
        try await first.center.records.first(from: 0, timeout: .seconds(30)) { $0 == .categoryRegistered(answer: "Answer", decline: "Decline") }
        try await first.coordinator.login(try #require(first.coordinator.account))
        await first.coordinator.remoteNotificationTokenUpdated(token)
        let hex = token.map { String(format: "%02x", $0) }.joined()
        let stored = try #require(
            try await h.server.node.inspection.storage.pushTokens(app: h.server.app.sdkAppID, users: ["bob"])["bob"]?.first {
                $0.token == hex
            })
        #expect(stored.kind == .alert && stored.alertRinging && stored.sealingKey == sealingKey.publicKey)
        // The app is killed: no logout, its connection just goes (the proxy with it). Calls push
        // it once the server knows the phone is gone.
        proxy.stop()
        let bob = UserKey(app: h.server.app.sdkAppID, user: "bob")
        let registry = h.server.node.inspection.registry
        try await eventually("the server sees bob's phone go") { !registry.connectedDevices(bob).contains("bob-phone") }
        return try await make()
    }

    static var tokenHex: String { token.map { String(format: "%02x", $0) }.joined() }

    /// What the server pushed to bob's ringing alert token about `callId`: the invitation, or the
    /// end of the ringing (opened with the phone's key: every push to it is sealed).
    static func pushed(_ h: CallKitHarness, _ callId: CallID, ended: Bool = false) async throws -> TestAPNsServer.Push {
        let hex = tokenHex
        let push = try await step(ended ? "the end of the ringing is pushed" : "the invitation is pushed") {
            try await h.apns.pushes.first(from: 0, timeout: .seconds(30)) { push in
                guard push.token == hex, let opened = VoIPPush(json: push.payload, sealingKey: sealingKey) else { return false }
                switch opened {
                case .incomingCall(let invitation): return !ended && invitation.callId == callId
                case .callEnded(let end): return ended && end.callId == callId
                }
            }
        }
        #expect(push.pushType == "alert" && push.headers["apns-topic"] == CallKitHarness.bundle)
        #expect(push.headers["apns-priority"] == "10" && push.headers["apns-collapse-id"] == callId.rawValue)
        // Sealed: APNs sees neither the caller's id nor their nickname.
        let text = String(decoding: push.payload, as: UTF8.self)
        #expect(!text.contains("alice") && !text.contains("Alice"))
        return push
    }

    static func eventually(_ what: String, _ condition: () -> Bool) async throws {
        let start = ContinuousClock.now
        while !condition() {
            guard ContinuousClock.now - start < .seconds(30) else {
                Issue.record("never: \(what)")
                throw RecorderTimeout(description: what)
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @discardableResult
    static func step<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            Issue.record("\(what): \(error)")
            throw error
        }
    }

    /// The invitation as the server sends it to a ringing alert token, sealed for bob's phone.
    static func alert(_ h: CallKitHarness, _ call: CallStartResult) throws -> Data {
        try IncomingCallPush(
            callId: call.callId, sdkAppID: h.server.app.sdkAppID, userId: "bob", callerId: "alice", callerName: "Alice",
            mediaType: .audio, callType: .oneToOne, inviterId: "alice", deadline: h.server.clock.now() + 30_000
        ).fittedSealedAlertPayload(for: sealingKey.publicKey)
    }

    /// The server's push itself: a time-sensitive alert of the incoming-call category, whose
    /// answer action logs the app in and accepts.
    @Test func answeringFromTheNotificationLogsInAndAccepts() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await Self.phone(h)
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let push = try await Self.pushed(h, call.callId)
        let aps = try #require((try JSONSerialization.jsonObject(with: push.payload) as? [String: Any])?["aps"] as? [String: Any])
        #expect(aps["category"] as? String == IncomingCallPush.alertCategory)
        #expect(aps["interruption-level"] as? String == "time-sensitive" && aps["mutable-content"] as? Int == 1)
        phone.center.userActs(.answer, onNotification: push.payload)
        try await phone.center.records.first(from: 0, timeout: .seconds(30)) { $0 == .actionCompleted(1) }
        try await h.aliceEvents.first(from: 0, timeout: .seconds(30), where: isStarted)
        #expect(phone.client.loginStore.state.loginStatus == .loggedIn)
        #expect(phone.client.callStore.state.activeCall?.callId == call.callId)
        // Rung once: from the notification; the server's invitation at login was the same call.
        #expect(phone.events.values.filter(isReceived).count == 1)
        await h.stop()
    }

    @Test func decliningFromTheNotificationRejects() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await Self.phone(h)
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        phone.center.userActs(.decline, onNotification: try await Self.pushed(h, call.callId).payload)
        #expect(
            try await h.aliceEvents.first(from: 0, timeout: .seconds(30), where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .reject, userId: "bob"))
        try await phone.center.records.first(from: 0, timeout: .seconds(30)) { $0 == .actionCompleted(1) }
        await h.stop()
    }

    /// In the foreground the app rings with its own screen: the invitation's alert is not shown,
    /// a missed call's is; a call that stops ringing takes its notification away.
    @Test func theForegroundAndTheEndOfTheRinging() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await Self.phone(h)
        try await phone.coordinator.login(try #require(phone.coordinator.account))
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await Self.step("bob's phone rings") { try await phone.events.first(from: 0, timeout: .seconds(30), where: isReceived) }
        phone.center.deliverInForeground(json: try Self.alert(h, call))
        try await Self.step("the invitation is not shown") { try await phone.center.records.first(from: 0, timeout: .seconds(30)) { $0 == .presented(false) } }
        let missed = try MissedCallPush(
            callId: call.callId, sdkAppID: h.server.app.sdkAppID, userId: "bob", callerId: "alice", mediaType: .audio,
            callType: .oneToOne, reason: .canceled
        ).fittedSealedPayload(for: Self.sealingKey.publicKey)
        phone.center.deliverInForeground(json: missed)
        try await Self.step("the missed call is shown") { try await phone.center.records.first(from: 0, timeout: .seconds(30)) { $0 == .presented(true) } }
        try await h.alice.callStore.hangup()
        try await Self.step("the notification goes") { try await phone.center.records.first(from: 0, timeout: .seconds(30)) { $0 == .removed([call.callId.rawValue]) } }
        await h.stop()
    }

    /// A call that stops ringing while the phone's app is not running: the server pushes an alert
    /// that replaces the ringing one (same collapse id), and an app that gets it takes the
    /// notification away.
    @Test func theEndOfTheRingingIsPushed() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await Self.phone(h)
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let ringing = try await Self.pushed(h, call.callId)
        try await h.alice.callStore.hangup()
        let end = try await Self.pushed(h, call.callId, ended: true)
        #expect(end.headers["apns-id"] != ringing.headers["apns-id"])
        let aps = try #require((try JSONSerialization.jsonObject(with: end.payload) as? [String: Any])?["aps"] as? [String: Any])
        #expect(aps["interruption-level"] as? String == "passive" && aps["content-available"] as? Int == 1)
        #expect(aps["sound"] == nil && aps["category"] == nil)
        phone.center.deliverInForeground(json: end.payload)
        try await Self.step("the end is not shown") { try await phone.center.records.first(from: 0, timeout: .seconds(30)) { $0 == .presented(false) } }
        #expect(phone.center.records.values.contains(.removed([call.callId.rawValue])))
        await h.stop()
    }

    /// An alert sealed for another key is not an invitation: the action ends with nothing done.
    @Test func aNotificationThatDoesNotOpenDoesNothing() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await Self.phone(h)
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let foreign = try IncomingCallPush(
            callId: call.callId, sdkAppID: h.server.app.sdkAppID, userId: "bob", callerId: "alice", mediaType: .audio,
            callType: .oneToOne).fittedSealedAlertPayload(for: PushSealingKey().publicKey)
        phone.center.userActs(.answer, onNotification: foreign)
        try await phone.center.records.first(from: 0, timeout: .seconds(30)) { $0 == .actionCompleted(1) }
        #expect(phone.client.loginStore.state.loginStatus == .loggedOut)
        #expect(phone.client.callStore.state.activeCall == nil)
        await h.stop()
    }
}
