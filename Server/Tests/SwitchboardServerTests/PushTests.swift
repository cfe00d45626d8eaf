import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import SwitchboardServer

/// Push end to end: the server's production APNs client (HTTP/2, ES256 provider tokens) against a
/// local server that speaks APNs' protocol, on the test clock.
struct PushTests {
    static let bundle = "com.example.switchboard"
    static let bobToken = String(repeating: "ab", count: 32)
    /// Bob's phone's remote-notification token, for alerts.
    static let bobAlertToken = String(repeating: "ef", count: 32)
    /// What alice's calls ask their pushes to carry.
    static let pushConfig = PushConfig(
        title: "Alice", body: "Missed call", sound: "ring.caf", extra: #"{"thread":"t-1"}"#, missedCallAlert: true)

    struct Setup {
        var server: TestServer
        var apns: TestAPNsServer
        var alice: SwitchboardClient
        var aliceEvents: Recorder<CallStoreEvent>
        var deliveries: Recorder<PushService.Delivery>
    }

    /// alice online; bob registered a token on his phone, whose app was then killed (no logout).
    func setUp(lifetime: Duration = .seconds(25 * 60)) async throws -> Setup {
        let clock = TestClock()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-push-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let apns = try await TestAPNsServer.start(clock: clock, bundleIds: [Self.bundle], directory: directory)
        let server = try await Self.server(clock: clock, directory: directory, apns: apns, lifetime: lifetime)
        let deliveries = Recorder(server.node.inspection.push.deliveries)
        apns.declare(Self.bobToken, as: .voip)
        apns.declare(Self.bobAlertToken, as: .alert)
        try await registerTokens(
            server, user: "bob", device: "bob-phone", [(Self.bobToken.uppercased(), .voip), (Self.bobAlertToken, .alert)])
        let alice = try await server.client("alice")
        try await alice.loginStore.setSelfInfo(nickname: "Alice")
        return Setup(server: server, apns: apns, alice: alice, aliceEvents: Recorder(alice.callStore.events), deliveries: deliveries)
    }

    /// A server on `directory`'s database that pushes through `apns`.
    static func server(
        clock: TestClock, directory: URL, apns: TestAPNsServer, lifetime: Duration = .seconds(25 * 60)
    ) async throws -> TestServer {
        try await TestServer.start(clock: clock, directory: directory) { configuration in
            var push = APNsConfiguration(keyPath: apns.keyPath, keyId: apns.keyId, teamId: apns.teamId)
            push.productionURL = apns.url
            push.sandboxURL = apns.url
            push.trustRootsPath = apns.certificatePath
            push.tokenLifetime = lifetime
            configuration.apns = push
        }
    }

    /// A phone of `user` registers a VoIP push token, then its app is killed (no logout).
    func registerToken(_ server: TestServer, user: UserID, device: DeviceID, token: String) async throws {
        try await registerTokens(server, user: user, device: device, [(token, .voip)])
    }

    /// A phone of `user` registers push tokens, then its app is killed (no logout).
    func registerTokens(_ server: TestServer, user: UserID, device: DeviceID, _ tokens: [(String, PushTokenKind)])
        async throws
    {
        let phone = try await RawClient(url: server.url)
        _ = try await phone.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: user, userSig: server.userSig(user.rawValue), deviceId: device),
            id: "login")
        for (index, (token, kind)) in tokens.enumerated() {
            let registered = try await phone.request(
                RegisterPushTokenRequest(token: token, environment: .sandbox, bundleId: Self.bundle, kind: kind), id: "r\(index)")
            #expect(registered["result"] != nil)
        }
        phone.close()
        #expect(await phone.frames.waitForEnd())
        try await Self.waitUntilOffline(server, user)
    }

    /// Waits until the server no longer counts `user` online: the client seeing its socket end
    /// does not mean the server has handled the close (a call placed before that rings the dead
    /// socket instead of pushing).
    static func waitUntilOffline(_ server: TestServer, _ user: UserID) async throws {
        let key = UserKey(app: server.app.sdkAppID, user: user)
        let deadline = ContinuousClock.now + .seconds(30)
        while server.node.inspection.registry.isOnline(key) {
            try #require(ContinuousClock.now < deadline, "the server still has \(user) online after 30 s")
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    func tearDown(_ s: Setup) async {
        await s.server.stop()
        await s.apns.stop()
    }

    /// Waits until the server no longer has bob online (his phone's socket closed).
    func bobPhone(_ s: Setup) async throws -> SwitchboardClient {
        try await s.server.client("bob", deviceId: "bob-phone", login: false)
    }

    /// A device that registered a sealing key gets every push sealed for it: APNs sees neither
    /// the caller's id, nor their nickname, nor the call's texts, and the device's key opens each.
    @Test func aSealedDevicesPushesNameNobody() async throws {
        let s = try await setUp()
        let key = PushSealingKey()
        let phone = try await RawClient(url: s.server.url)
        _ = try await phone.request(
            LoginRequest(sdkAppID: s.server.app.sdkAppID, userID: "bob", userSig: s.server.userSig("bob"), deviceId: "bob-phone"),
            id: "login")
        for (index, (token, kind)) in [(Self.bobToken, PushTokenKind.voip), (Self.bobAlertToken, .alert)].enumerated() {
            let registered = try await phone.request(
                RegisterPushTokenRequest(
                    token: token, environment: .sandbox, bundleId: Self.bundle, kind: kind, sealingKey: key.publicKey),
                id: "sealed\(index)")  // a new id: the server answers a repeated one from its ledger
            #expect(registered["result"] != nil)
        }
        phone.close()
        #expect(await phone.frames.waitForEnd())
        try await Self.waitUntilOffline(s.server, "bob")

        let call = try await s.alice.callStore.calls(
            participantIds: ["bob"], mediaType: .video, params: CallParams(userData: "topic-7", pushConfig: Self.pushConfig))
        func namesNobody(_ push: TestAPNsServer.Push) {
            let text = String(decoding: push.payload, as: UTF8.self)
            for clear in ["alice", "Alice", "topic-7", "Missed call", "t-1"] {
                #expect(!text.contains(clear), "\(clear) in \(text)")
            }
        }
        let ring = try await s.apns.pushes.first(from: 0, timeout: .seconds(30)) { $0.token == Self.bobToken }
        namesNobody(ring)
        #expect(ring.payload.count <= VoIPPush.maxPayloadBytes)
        guard case .incomingCall(let invitation)? = VoIPPush(json: ring.payload, sealingKey: key) else {
            Issue.record("the VoIP push does not open with the device's key")
            return
        }
        #expect(invitation.callId == call.callId && invitation.callerId == "alice" && invitation.callerName == "Alice")
        #expect(invitation.userData == "topic-7" && invitation.title == "Alice")
        #expect(VoIPPush(json: ring.payload, sealingKey: PushSealingKey()) == nil)

        // The missed call the caller asked to announce, on the alert token: sealed as well.
        try await s.alice.callStore.hangup()
        let missed = try await s.apns.pushes.first(from: 0, timeout: .seconds(30)) { $0.token == Self.bobAlertToken }
        namesNobody(missed)
        #expect(missed.payload.count <= MissedCallPush.maxPayloadBytes)
        let opened = try #require(MissedCallPush(json: missed.payload, sealingKey: key))
        #expect(opened.callId == call.callId && opened.callerName == "Alice" && opened.reason == .canceled)
        await tearDown(s)
    }

    @Test func anOfflineCalleeIsPushedAndAnswersAfterLoggingIn() async throws {
        let s = try await setUp()
        let call = try await s.alice.callStore.calls(
            participantIds: ["bob"], mediaType: .video, params: CallParams(userData: "topic-7", pushConfig: Self.pushConfig))
        let push = try await s.apns.pushes.first(from: 0) { _ in true }
        #expect(push.token == Self.bobToken)
        #expect(push.headers["apns-push-type"] == "voip")
        #expect(push.headers["apns-topic"] == "\(Self.bundle).voip")
        #expect(push.headers["apns-priority"] == "10")
        let deadline = s.server.clock.now() + 30_000
        #expect(push.headers["apns-expiration"] == String(deadline / 1000))
        #expect(push.headers["apns-collapse-id"] == call.callId.rawValue)
        #expect(push.headers["apns-id"] == call.callId.rawValue)
        #expect(push.issuedAt == s.server.clock.now() / 1000)
        guard case .incomingCall(let invitation) = push.push else {
            Issue.record("not an invitation: \(String(decoding: push.payload, as: UTF8.self))")
            return
        }
        #expect(invitation.callerId == "alice" && invitation.callerName == "Alice" && invitation.userId == "bob")
        #expect(invitation.mediaType == .video && invitation.callType == .oneToOne && invitation.deadline == deadline)
        // The call's userData and the caller's push config travel with it.
        #expect(invitation.userData == "topic-7" && invitation.title == "Alice" && invitation.body == "Missed call")
        #expect(invitation.sound == "ring.caf" && invitation.extra == #"{"thread":"t-1"}"#)
        // The call rings on: it is not `offline` while a push may wake the device.
        #expect(s.alice.callStore.state.activeCall?.callId == call.callId)

        // The push woke the app: it logs in within the deadline and gets the invitation.
        s.server.clock.advance(by: .seconds(5))
        let bob = try await bobPhone(s)
        let bobEvents = Recorder(bob.callStore.events)
        bob.callStore.receivedPush(push.push!)
        // The call rings from the push, with its userData, before the login.
        #expect(
            try await bobEvents.first(from: 0, where: isReceived)
                == .onCallReceived(callId: call.callId, callerId: "alice", inviterId: "alice", mediaType: .video, userData: "topic-7"))
        #expect(bob.callStore.state.activeCall?.userData == "topic-7")
        try await bob.loginStore.login(sdkAppID: s.server.app.sdkAppID, userID: "bob", userSig: s.server.userSig("bob"))
        try await bob.callStore.accept()
        try await s.aliceEvents.first(from: 0, where: isStarted)
        // The server's invitation came before bob's own start: it did not ring a second time.
        try await bobEvents.first(from: 0, where: isStarted)
        #expect(bobEvents.values.filter(isReceived).count == 1)

        // An answered call is no missed call: no alert, no second push. The barrier is a later push
        // (to carol's phone), asked for after bob's answer: nothing for bob came before it.
        try await registerToken(s.server, user: "carol", device: "carol-phone", token: String(repeating: "cd", count: 32))
        try await s.alice.callStore.hangup()
        try await s.aliceEvents.first(from: 0, where: isEnded)
        let later = try await s.alice.callStore.calls(participantIds: ["carol"], mediaType: .audio)
        let second = try await s.apns.pushes.first(from: 1) { _ in true }
        #expect(second.push?.callId == later.callId)
        #expect(s.apns.pushes.values.filter { $0.token == Self.bobToken || $0.token == Self.bobAlertToken }.count == 1)
        await tearDown(s)
    }

    /// A canceled call sends no VoIP push (it does not ring any more): the device the invitation
    /// woke learns it over its connection; the missed call the caller asked to announce comes as
    /// an alert, to the phone's alert token.
    @Test func aCanceledCallSendsAMissedCallAlertAndNoVoIPPush() async throws {
        let s = try await setUp()
        let call = try await s.alice.callStore.calls(
            participantIds: ["bob"], mediaType: .audio, params: CallParams(pushConfig: Self.pushConfig))
        let invitation = try await s.apns.pushes.first(from: 0) { _ in true }
        try await s.alice.callStore.hangup()
        let alert = try await s.apns.pushes.first(from: 1) { _ in true }
        #expect(alert.token == Self.bobAlertToken && alert.pushType == "alert")
        #expect(alert.headers["apns-topic"] == Self.bundle && alert.headers["apns-priority"] == "10")
        #expect(alert.headers["apns-collapse-id"] == call.callId.rawValue && alert.headers["apns-id"] != call.callId.rawValue)
        #expect(
            alert.missedCall
                == MissedCallPush(
                    callId: call.callId, sdkAppID: s.server.app.sdkAppID, userId: "bob", callerId: "alice",
                    callerName: "Alice", mediaType: .audio, callType: .oneToOne, reason: .canceled,
                    pushConfig: Self.pushConfig))
        // The alert was asked for right after the ringing stopped, where a VoIP "stop" push used to
        // be: it is the barrier for "no second VoIP push".
        #expect(s.apns.pushes.values.filter { $0.pushType == "voip" }.count == 1)
        #expect(!s.apns.answers.values.contains { $0.status != 200 })

        // The app was launched by the invitation and logs in late.
        let bob = try await bobPhone(s)
        let bobEvents = Recorder(bob.callStore.events)
        bob.callStore.receivedPush(invitation.push!)
        try await bob.loginStore.login(sdkAppID: s.server.app.sdkAppID, userID: "bob", userSig: s.server.userSig("bob"))
        #expect(
            try await bobEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .canceled, userId: "alice"))
        #expect(bob.callStore.state.activeCall == nil)
        await tearDown(s)
    }

    @Test func aTimeoutIsAMissedCallAndAnAnswerElsewhereIsNot() async throws {
        let s = try await setUp()
        // Timed out: announced, with the caller's texts.
        let first = try await s.alice.callStore.calls(
            participantIds: ["bob"], mediaType: .audio, params: CallParams(pushConfig: Self.pushConfig))
        try await s.apns.pushes.first(from: 0) { _ in true }
        s.server.clock.advance(by: .seconds(30))
        let timeout = try await s.apns.pushes.first(from: 1) { _ in true }
        #expect(timeout.missedCall?.callId == first.callId && timeout.missedCall?.reason == .noResponse)
        let alert = try #require(
            (try JSONSerialization.jsonObject(with: timeout.payload) as? [String: Any])?["aps"] as? [String: Any])
        #expect(alert["sound"] as? String == "ring.caf")
        #expect(alert["alert"] as? [String: String] == ["title": "Alice", "body": "Missed call"])
        try await s.aliceEvents.first(from: 0, where: isEnded)

        // Answered on bob's laptop, which logs in while the phone rings through the push: no alert.
        let second = try await s.alice.callStore.calls(
            participantIds: ["bob"], mediaType: .audio, params: CallParams(pushConfig: Self.pushConfig))
        try await s.apns.pushes.first(from: 2) { _ in true }
        let laptop = try await s.server.client("bob", deviceId: "bob-laptop", login: false)
        let laptopEvents = Recorder(laptop.callStore.events)
        try await laptop.loginStore.login(sdkAppID: s.server.app.sdkAppID, userID: "bob", userSig: s.server.userSig("bob"))
        try await laptopEvents.first(from: 0, where: isReceived)
        try await laptop.callStore.accept()
        try await laptop.callStore.hangup()
        try await s.aliceEvents.first(from: 0) { if case .onCallEnded(second.callId, _, _, _) = $0 { true } else { false } }
        try await laptop.loginStore.logout()
        // Without the option, a missed call is not announced.
        let third = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await s.apns.pushes.first(from: 3) { _ in true }
        try await s.alice.callStore.hangup()
        // The barrier: a push to carol asked for after both.
        try await registerToken(s.server, user: "carol", device: "carol-phone", token: String(repeating: "cd", count: 32))
        try await s.aliceEvents.first(from: 0) { if case .onCallEnded(third.callId, _, _, _) = $0 { true } else { false } }
        let later = try await s.alice.callStore.calls(participantIds: ["carol"], mediaType: .audio)
        try await s.apns.pushes.first(from: 4) { $0.push?.callId == later.callId }
        #expect(s.apns.pushes.values.filter { $0.pushType == "alert" }.map(\.missedCall?.callId) == [first.callId])
        await tearDown(s)
    }

    /// An invitation is only ever pushed while the user rings: retries stop with the ringing.
    @Test func anInvitationIsNotRetriedOnceTheRingingStopped() async throws {
        let s = try await setUp()
        s.apns.behavior = .fail(count: 100)
        let call = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await s.deliveries.first(from: 0) { $0.callId == call.callId && $0.outcome == "retrying" }
        try await s.alice.callStore.hangup()
        try await s.aliceEvents.first(from: 0, where: isEnded)
        s.server.clock.advance(by: .seconds(1))
        try await s.deliveries.first(from: 0) { $0.callId == call.callId && $0.outcome == "withdrawn" }
        // One attempt reached APNs (the 500); the retry that was due did not.
        #expect(s.apns.answers.values.filter { $0.token == Self.bobToken }.count == 1)
        await tearDown(s)
    }

    /// Only a VoIP token rings: a user whose device registered only an alert token is offline.
    @Test func anAlertTokenAloneDoesNotRing() async throws {
        let s = try await setUp()
        try await registerTokens(s.server, user: "dave", device: "dave-phone", [(String(repeating: "dd", count: 32), .alert)])
        let call = try await s.alice.callStore.calls(participantIds: ["dave"], mediaType: .audio)
        #expect(
            try await s.aliceEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .offline, userId: "dave"))
        await tearDown(s)
    }

    @Test func unregisteredTokensAreRemoved() async throws {
        let s = try await setUp()
        s.apns.unregister(Self.bobToken)
        _ = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await s.deliveries.first(from: 0) { $0.outcome == "token_removed" }
        try await s.alice.callStore.hangup()
        try await s.aliceEvents.first(from: 0, where: isEnded)
        // Without a token, bob is offline now.
        let again = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        #expect(
            try await s.aliceEvents.first(from: 0) { if case .onCallEnded(again.callId, _, _, _) = $0 { true } else { false } }
                == .onCallEnded(callId: again.callId, mediaType: .audio, reason: .offline, userId: "bob"))
        await tearDown(s)
    }

    @Test func throttlingAndServerErrorsAreRetriedWithinTheDeadline() async throws {
        let s = try await setUp()
        s.apns.behavior = .throttle(count: 1)
        _ = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await s.deliveries.first(from: 0) { $0.outcome == "retrying" }
        #expect(s.apns.answers.values.map(\.status) == [429])
        s.server.clock.advance(by: .seconds(1))
        try await s.deliveries.first(from: 0) { $0.outcome == "delivered" }
        try await s.alice.callStore.hangup()
        try await s.aliceEvents.first(from: 0, where: isEnded)

        // 5xx until past the ring deadline (2 s): a retry after 0.5 s; the next would come at the
        // deadline itself, so it is given up. Never beyond the deadline.
        s.apns.behavior = .fail(count: 100)
        let start = s.deliveries.values.count
        let failing = try await s.alice.callStore.calls(
            participantIds: ["bob"], mediaType: .audio, params: CallParams(timeout: 2)
        ).callId
        try await s.deliveries.first(from: start) { $0.callId == failing && $0.outcome == "retrying" }
        s.server.clock.advance(by: .seconds(1))
        try await s.deliveries.first(from: start) { $0.callId == failing && $0.outcome == "gave_up" }
        #expect(s.deliveries.values.dropFirst(start).filter { $0.callId == failing && $0.outcome == "retrying" }.count == 1)
        await tearDown(s)
    }

    @Test func theProviderTokenIsReusedAndRefreshedOnTime() async throws {
        let s = try await setUp()
        func ring() async throws -> TestAPNsServer.Push {
            let index = s.apns.pushes.values.count
            let call = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
            let push = try await s.apns.pushes.first(from: index) { $0.push?.callId == call.callId }
            try await s.alice.callStore.hangup()
            try await s.aliceEvents.first(from: 0) { if case .onCallEnded(call.callId, _, _, _) = $0 { true } else { false } }
            return push
        }
        let first = try await ring()
        s.server.clock.advance(by: .seconds(19 * 60))
        let second = try await ring()
        #expect(second.providerToken == first.providerToken)
        s.server.clock.advance(by: .seconds(7 * 60))
        let third = try await ring()
        #expect(third.providerToken != first.providerToken)
        #expect(third.issuedAt - first.issuedAt >= 20 * 60)
        #expect(await s.server.node.inspection.push.signedTokens == 2)
        // One HTTP/2 connection carried every push.
        #expect(s.apns.connectionsOpened == 1)
        await tearDown(s)
    }

    @Test func anExpiredProviderTokenIsReplacedOnce() async throws {
        // A lifetime longer than APNs accepts, to make APNs refuse it.
        let s = try await setUp(lifetime: .seconds(2 * 3600))
        _ = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await s.deliveries.first(from: 0) { $0.outcome == "delivered" }
        try await s.alice.callStore.hangup()
        s.server.clock.advance(by: .seconds(61 * 60))
        _ = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await s.deliveries.first(from: 0) { $0.outcome == "credential_refreshed" }
        try await s.deliveries.first(from: 2) { $0.outcome == "delivered" }
        #expect(s.apns.answers.values.contains { $0.reason == "ExpiredProviderToken" })
        await tearDown(s)
    }

    @Test func aPushOutageDoesNotHoldUpTheCall() async throws {
        let s = try await setUp()
        s.apns.behavior = .hang
        let call = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        // The answer came while APNs has answered nothing at all.
        #expect(s.apns.answers.values.isEmpty)
        #expect(s.alice.callStore.state.selfInfo.status == .waiting)
        try await s.alice.callStore.hangup()
        #expect(
            try await s.aliceEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .canceled, userId: "alice"))
        #expect(s.apns.answers.values.isEmpty)
        // Other calls go on as usual.
        let carol = try await s.server.client("carol")
        let carolEvents = Recorder(carol.callStore.events)
        _ = try await s.alice.callStore.calls(participantIds: ["carol"], mediaType: .audio)
        try await carolEvents.first(from: 0, where: isReceived)
        await tearDown(s)
    }

    @Test func metricsCountPushesByOutcome() async throws {
        let s = try await setUp()
        _ = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await s.deliveries.first(from: 0) { $0.outcome == "delivered" }
        let (data, _) = try await URLSession.shared.data(from: URL(string: "/metrics", relativeTo: s.server.httpURL)!)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains(#"switchboard_push_total{service="apns",outcome="delivered"} 1"#))
        #expect(text.contains("switchboard_calls_started_total 1"))
        await tearDown(s)
    }
}

/// The token registry.
struct PushTokenTests {
    static let token = String(repeating: "0f", count: 32)

    /// The same token under another app is never moved there, even when asked.
    @Test func aTokenNeverMovesToAnotherApp() async throws {
        let server = try await TestServer.start { configuration in
            configuration.apps = [
                AppCredentials(sdkAppID: 1_400_000_001, secretKey: "first-app-secret"),
                AppCredentials(sdkAppID: 1_400_000_002, secretKey: "second-app-secret"),
            ]
        }
        let storage = server.node.inspection.storage
        func login(_ app: SdkAppID, _ secret: String, _ user: String) async throws -> RawClient {
            let raw = try await RawClient(url: server.url)
            let sig = UserSig.generate(
                sdkAppID: app, secretKey: secret, userID: user, time: server.clock.now() / 1000)
            let answer = try await raw.request(
                LoginRequest(sdkAppID: app, userID: UserID(rawValue: user), userSig: sig, deviceId: "phone"), id: "login")
            #expect(answer["result"] != nil)
            return raw
        }
        let first = try await login(1_400_000_001, "first-app-secret", "alice")
        let second = try await login(1_400_000_002, "second-app-secret", "alice")
        let register = RegisterPushTokenRequest(token: Self.token, environment: .production, bundleId: "com.example.app")
        #expect(try await first.request(register, id: "r1")["result"] != nil)
        var moving = register
        moving.move = true
        let refused = try await second.request(moving, id: "r2")
        #expect(RawClient.errorCode(refused) == SwitchboardError.Code.pushTokenInUse.rawValue)
        #expect(try await storage.pushTokens(app: 1_400_000_001, users: ["alice"])["alice"]?.count == 1)
        #expect(try await storage.pushTokens(app: 1_400_000_002, users: ["alice"]).isEmpty)
        // The holder registering it again is no move at all.
        #expect(try await first.request(register, id: "r3")["result"] != nil)
        await server.stop()
    }

    @Test func registrationRulesAndTheTokensHome() async throws {
        let server = try await TestServer.start()
        let storage = server.node.inspection.storage
        let app = server.app.sdkAppID
        let alice = try await server.client("alice", deviceId: "phone")
        try await alice.loginStore.registerPushToken(Self.token, environment: .production, bundleId: "com.example.app")
        var tokens = try await storage.pushTokens(app: app, users: ["alice", "bob"])
        #expect(tokens["alice"]?.map(\.device) == ["phone"])
        #expect(tokens["alice"]?.first?.token == Self.token)

        // One token per device: a new token replaces the old one.
        let newer = String(repeating: "1e", count: 32)
        try await alice.loginStore.registerPushToken(newer, environment: .production, bundleId: "com.example.app")
        tokens = try await storage.pushTokens(app: app, users: ["alice"])
        #expect(tokens["alice"]?.map(\.token) == [newer])

        // A token belongs to one device: another user cannot take it silently...
        let bob = try await server.client("bob", deviceId: "tablet")
        await expectCode(.pushTokenInUse) {
            try await bob.loginStore.registerPushToken(newer.uppercased(), environment: .sandbox, bundleId: "com.example.app")
        }
        tokens = try await storage.pushTokens(app: app, users: ["alice", "bob"])
        #expect(tokens["alice"]?.map(\.token) == [newer])
        #expect(tokens["bob"] == nil)
        // ...only by saying so, within the app.
        try await bob.loginStore.registerPushToken(
            newer.uppercased(), environment: .sandbox, bundleId: "com.example.app", move: true)
        tokens = try await storage.pushTokens(app: app, users: ["alice", "bob"])
        #expect(tokens["alice"] == nil)
        #expect(tokens["bob"]?.first?.environment == .sandbox)

        await expectCode(.invalidPushToken) {
            try await bob.loginStore.registerPushToken("not-hex", environment: .sandbox, bundleId: "com.example.app")
        }
        await expectCode(.invalidPushToken) {
            try await bob.loginStore.registerPushToken("abcd", environment: .sandbox, bundleId: "com.example.app")
        }
        await expectCode(.invalidBundleID) {
            try await bob.loginStore.registerPushToken(Self.token, environment: .sandbox, bundleId: "bad bundle!")
        }

        try await bob.loginStore.unregisterPushToken()
        #expect(try await storage.pushTokens(app: app, users: ["bob"]).isEmpty)

        // A logout stops pushes to that device.
        try await alice.loginStore.registerPushToken(Self.token, environment: .production, bundleId: "com.example.app")
        try await alice.loginStore.logout()
        #expect(try await storage.pushTokens(app: app, users: ["alice"]).isEmpty)
        await server.stop()
    }

    @Test(arguments: [
        (200, "", PushOutcome.delivered), (410, "Unregistered", .tokenInvalid(reason: "Unregistered")),
        (400, "BadDeviceToken", .tokenInvalid(reason: "BadDeviceToken")),
        (400, "DeviceTokenNotForTopic", .tokenInvalid(reason: "DeviceTokenNotForTopic")),
        (403, "ExpiredProviderToken", .credentialExpired("jwt")), (429, "TooManyRequests", .retryable(reason: "TooManyRequests")),
        (500, "", .retryable(reason: "HTTP 500")), (503, "ServiceUnavailable", .retryable(reason: "ServiceUnavailable")),
        (400, "BadTopic", .rejected(status: 400, reason: "BadTopic")), (413, "PayloadTooLarge", .rejected(status: 413, reason: "PayloadTooLarge")),
    ])
    func apnsAnswers(status: Int, reason: String, outcome: PushOutcome) {
        #expect(APNsTransport.outcome(status: status, reason: reason, providerToken: "jwt") == outcome)
    }
}

/// The SDK reads pushes leniently: a push must be reported to CallKit even when fields are missing.
struct PushPayloadTests {
    @Test func aFullInvitationRoundTrips() throws {
        let push = VoIPPush.incomingCall(
            IncomingCallPush(
                callId: "c1", sdkAppID: 7, userId: "bob", callerId: "alice", callerName: "Alice", mediaType: .video,
                callType: .group, inviterId: "carol", deadline: 1_767_225_630_000, userData: "",
                pushConfig: PushConfig(title: "Alice", body: "Group call", sound: "default", extra: "x")))
        let payload = try push.payload()
        #expect(payload.count < VoIPPush.maxPayloadBytes)
        #expect(VoIPPush(json: payload) == push)
        let end = VoIPPush.callEnded(CallEndedPush(callId: "c1", sdkAppID: 7, reason: .otherDeviceAccepted, mediaType: .audio))
        #expect(VoIPPush(json: try end.payload()) == end)
    }

    @Test func missingFieldsFallBack() {
        let push = VoIPPush(payload: ["switchboard": ["callId": "c2", "callerId": "alice", "mediaType": "hologram"]])
        #expect(
            push
                == .incomingCall(
                    IncomingCallPush(callId: "c2", callerId: "alice", callerName: "alice", mediaType: .audio, callType: .oneToOne)))
        let ended = VoIPPush(payload: ["switchboard": ["callId": "c3", "reason": "somethingNew"]])
        #expect(ended == .callEnded(CallEndedPush(callId: "c3", reason: .unknown)))
        let stringNumbers = VoIPPush(payload: ["switchboard": ["callId": "c4", "deadline": "1767225630000", "sdkAppID": "7"]])
        guard case .incomingCall(let invitation) = stringNumbers else {
            Issue.record("expected an invitation")
            return
        }
        #expect(invitation.deadline == 1_767_225_630_000 && invitation.sdkAppID == 7 && invitation.callerId == "unknown")
    }

    @Test(arguments: [
        "{}", #"{"aps":{}}"#, #"{"switchboard":"nope"}"#, #"{"switchboard":{"callerId":"alice"}}"#,
        #"{"switchboard":{"callId":""}}"#, "not json",
    ])
    func pushesWithoutACallAreInvalid(json: String) {
        #expect(VoIPPush(json: Data(json.utf8)) == nil)
    }
}

func isStarted(_ event: CallStoreEvent) -> Bool { if case .onCallStarted = event { true } else { false } }
