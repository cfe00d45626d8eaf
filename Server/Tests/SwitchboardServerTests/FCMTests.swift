import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

@testable import SwitchboardServer

/// FCM (HTTP v1) end to end (issue 29): the server's production sender, with its OAuth2
/// JWT-bearer grant, against a local FCM and token endpoint that check the grant's RS256
/// signature and every request's access token; on the test clock.
struct FCMTests {
    static let bobToken = "bob-pixel:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"

    struct Setup {
        var server: TestServer
        var fcm: TestFCMServer
        var alice: SwitchboardClient
        var aliceEvents: Recorder<CallStoreEvent>
        var deliveries: Recorder<PushService.Delivery>
    }

    /// An Android phone of `user` registers its FCM token, then its app is killed.
    static func registerToken(
        _ server: TestServer, user: UserID, device: DeviceID, _ token: String, sealingKey: PushSealingKey? = nil
    ) async throws {
        let phone = try await RawClient(url: server.url)
        _ = try await phone.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: user, userSig: server.userSig(user.rawValue), deviceId: device),
            id: "login")
        // A new id each time: the server answers a repeated one from its ledger.
        let request = RegisterPushTokenRequest(token: token, kind: .fcm, sealingKey: sealingKey?.publicKey)
        #expect(try await phone.request(request, id: "register-\(UUID().uuidString)")["result"] != nil)
        phone.close()
        #expect(await phone.frames.waitForEnd())
    }

    /// `serverAccount`: the server's flag gives the service account; else the admin API gives it
    /// to the app.
    func setUp(serverAccount: Bool = true) async throws -> Setup {
        let clock = TestClock()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-fcm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let fcm = try await TestFCMServer.start(clock: clock, directory: directory)
        let server = try await TestServer.start(clock: clock, directory: directory) { configuration in
            if serverAccount { configuration.fcm.serviceAccount = fcm.serviceAccount }
            configuration.fcm.apiURL = fcm.url
            configuration.fcm.trustRootsPath = fcm.certificatePath
        }
        if !serverAccount {
            let account = String(decoding: fcm.serviceAccountJSON, as: UTF8.self)
            let (status, _) = try await WebPushTests.http(
                server, "PUT", "/v1/apps/\(server.app.sdkAppID)/push", body: Data(#"{"fcm":{"serviceAccount":\#(account)}}"#.utf8))
            #expect(status == 200)
        }
        let deliveries = Recorder(server.node.inspection.push.deliveries)
        try await Self.registerToken(server, user: "bob", device: "bob-pixel", Self.bobToken)
        let alice = try await server.client("alice")
        try await alice.loginStore.setSelfInfo(nickname: "Alice")
        return Setup(server: server, fcm: fcm, alice: alice, aliceEvents: Recorder(alice.callStore.events), deliveries: deliveries)
    }

    func tearDown(_ s: Setup) async {
        await s.server.stop()
        await s.fcm.stop()
    }

    /// An Android phone whose app is not running rings through a high-priority data message,
    /// and hears the ringing stop the same way.
    @Test(arguments: [true, false]) func anAndroidPhoneIsRungThroughFCM(_ serverAccount: Bool) async throws {
        let s = try await setUp(serverAccount: serverAccount)
        let call = try await s.alice.callStore.calls(
            participantIds: ["bob"], mediaType: .video, params: CallParams(userData: "topic-7"))
        let invitation = try await s.fcm.messages.first(from: 0, timeout: .seconds(30)) { _ in true }
        #expect(invitation.token == Self.bobToken)
        #expect(invitation.priority == "HIGH" && invitation.ttl == "30s" && invitation.collapseKey == call.callId.rawValue)
        #expect(Array(invitation.data.keys) == ["switchboard"])
        #expect(
            invitation.push
                == .incomingCall(
                    IncomingCallPush(
                        callId: call.callId, sdkAppID: s.server.app.sdkAppID, userId: "bob", callerId: "alice",
                        callerName: "Alice", mediaType: .video, callType: .oneToOne, inviterId: "alice",
                        deadline: s.server.clock.now() + 30_000, userData: "topic-7")))
        #expect(s.fcm.grants == 1)
        #expect(s.alice.callStore.state.activeCall?.callId == call.callId)

        try await s.alice.callStore.hangup()
        let stopped = try await s.fcm.messages.first(from: 1, timeout: .seconds(30)) { _ in true }
        #expect(
            stopped.push
                == .callEnded(CallEndedPush(callId: call.callId, sdkAppID: s.server.app.sdkAppID, reason: .canceled, mediaType: .video)))
        #expect(stopped.priority == "HIGH" && stopped.accessToken == invitation.accessToken)
        #expect(s.fcm.grants == 1)
        await tearDown(s)
    }

    /// An Android phone that registered a sealing key gets the sealed object in `data.switchboard`:
    /// FCM sees neither the caller's id nor their nickname; the phone's key opens it.
    @Test func aSealedTokensMessagesNameNobody() async throws {
        let s = try await setUp()
        let key = PushSealingKey()
        try await Self.registerToken(s.server, user: "bob", device: "bob-pixel", Self.bobToken, sealingKey: key)
        let call = try await s.alice.callStore.calls(
            participantIds: ["bob"], mediaType: .video, params: CallParams(userData: "topic-7"))
        let message = try await s.fcm.messages.first(from: 0, timeout: .seconds(30)) { _ in true }
        let body = String(decoding: message.body, as: UTF8.self)
        for clear in ["alice", "Alice", "topic-7"] {
            #expect(!body.contains(clear), "\(clear) in \(body)")
        }
        #expect(message.priority == "HIGH" && message.collapseKey == call.callId.rawValue && message.push == nil)
        let object = try #require(message.data["switchboard"])
        guard case .incomingCall(let invitation)? = CallPush(object: Data(object.utf8), sealingKey: key) else {
            Issue.record("the message does not open with the phone's key: \(object)")
            return
        }
        #expect(invitation.callId == call.callId && invitation.callerName == "Alice" && invitation.userData == "topic-7")
        #expect(CallPush(object: Data(object.utf8), sealingKey: PushSealingKey()) == nil)
        await tearDown(s)
    }

    /// One access token serves every push until five minutes before it expires; one FCM refuses
    /// (401, revoked) is replaced once and the push sent again.
    @Test func theAccessTokenIsReusedRenewedOnTimeAndReplacedWhenRefused() async throws {
        let s = try await setUp()
        func ring() async throws -> TestFCMServer.Message {
            let index = s.fcm.messages.values.count
            let call = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
            let callId = call.callId
            let message = try await s.fcm.messages.first(from: index, timeout: .seconds(30)) { $0.push?.callId == callId }
            #expect(message.push?.kind == "incomingCall")
            try await s.alice.callStore.hangup()
            try await s.fcm.messages.first(from: index + 1, timeout: .seconds(30)) { $0.push?.callId == callId && $0.push?.kind == "callEnded" }
            return message
        }
        let first = try await ring()
        s.server.clock.advance(by: .seconds(50 * 60))
        let second = try await ring()
        #expect(second.accessToken == first.accessToken && s.fcm.grants == 1)
        s.server.clock.advance(by: .seconds(6 * 60))
        let third = try await ring()
        #expect(third.accessToken != first.accessToken && s.fcm.grants == 2)

        s.fcm.revokeAccessTokens()
        let fourth = try await ring()
        #expect(fourth.accessToken != third.accessToken && s.fcm.grants == 3)
        #expect(s.deliveries.values.filter { $0.outcome == "credential_refreshed" }.count == 1)
        #expect(s.fcm.answers.values.filter { $0.status == 401 }.count == 1)
        await tearDown(s)
    }

    /// FCM says `UNREGISTERED` for an app that was uninstalled: the token is removed, and the
    /// user is offline for the next call.
    @Test func anUnregisteredTokenIsRemoved() async throws {
        let s = try await setUp()
        s.fcm.unregister(Self.bobToken)
        _ = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let removed = try await s.deliveries.first(from: 0, timeout: .seconds(30)) { $0.outcome == "token_removed" }
        #expect(removed.service == "fcm" && s.fcm.answers.values.map(\.reason) == ["UNREGISTERED"])
        #expect(try await s.server.node.inspection.storage.pushTokens(app: s.server.app.sdkAppID, users: ["bob"]).isEmpty)
        try await s.alice.callStore.hangup()
        try await s.aliceEvents.first(from: 0, timeout: .seconds(30), where: isEnded)
        let again = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        #expect(
            try await s.aliceEvents.first(from: 0, timeout: .seconds(30)) { if case .onCallEnded(again.callId, _, _, _) = $0 { true } else { false } }
                == .onCallEnded(callId: again.callId, mediaType: .audio, reason: .offline, userId: "bob"))
        await tearDown(s)
    }

    /// FCM says `INVALID_ARGUMENT` for a token that is no registration token (malformed,
    /// truncated): Firebase's guidance is to remove it, as for `UNREGISTERED` (issue 48: it was
    /// kept, and every call to the user sent it again).
    @Test func aTokenFCMDoesNotTakeIsRemoved() async throws {
        let s = try await setUp()
        s.fcm.invalidate(Self.bobToken)
        _ = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let removed = try await s.deliveries.first(from: 0, timeout: .seconds(30)) { $0.outcome != "retrying" }
        #expect(removed.outcome == "token_removed" && removed.service == "fcm")
        #expect(s.fcm.answers.values.map(\.reason) == ["INVALID_ARGUMENT"])
        #expect(try await s.server.node.inspection.storage.pushTokens(app: s.server.app.sdkAppID, users: ["bob"]).isEmpty)
        await tearDown(s)
    }

    /// A 429 with `Retry-After` is tried again no sooner than FCM asked (issue 48: after the
    /// 0.5 s backoff, which only earns another 429).
    @Test func aRetryAfterIsWaitedFor() async throws {
        let s = try await setUp()
        s.fcm.behavior = .throttle(count: 1, retryAfter: 5)
        let call = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let retrying = try await s.deliveries.first(from: 0, timeout: .seconds(30)) { $0.outcome == "retrying" }
        #expect(retrying.retryAt == s.server.clock.now() + 5000)
        s.server.clock.advance(by: .seconds(5))
        let delivered = try await s.fcm.messages.first(from: 0, timeout: .seconds(30)) { _ in true }
        #expect(delivered.push?.callId == call.callId)
        #expect(s.fcm.answers.values.map(\.status) == [429, 200])
        await tearDown(s)
    }

    @Test func throttlingAndServerErrorsAreRetried() async throws {
        let s = try await setUp()
        s.fcm.behavior = .throttle(count: 1)
        let call = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await s.deliveries.first(from: 0, timeout: .seconds(30)) { $0.outcome == "retrying" }
        s.fcm.behavior = .fail(count: 1)
        s.server.clock.advance(by: .seconds(1))
        try await s.deliveries.first(from: 1, timeout: .seconds(30)) { $0.outcome == "retrying" }
        s.server.clock.advance(by: .seconds(2))
        let delivered = try await s.fcm.messages.first(from: 0, timeout: .seconds(30)) { _ in true }
        #expect(delivered.push?.callId == call.callId && delivered.ttl == "27s")
        #expect(s.fcm.answers.values.map(\.status) == [429, 500, 200])
        await tearDown(s)
    }

    /// Without a service account (the server's or the app's), an FCM token cannot ring: its
    /// user is offline.
    @Test func withoutAnAccountAnAndroidOnlyUserIsOffline() async throws {
        let server = try await TestServer.start()
        try await Self.registerToken(server, user: "bob", device: "bob-pixel", Self.bobToken)
        let alice = try await server.client("alice")
        let events = Recorder(alice.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        #expect(
            try await events.first(from: 0, timeout: .seconds(30), where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .offline, userId: "bob"))
        await server.stop()
    }

    /// The data message, as docs/PROTOCOL.md shows it (golden files beside the protocol's).
    @Test func theMessagesMatchTheGoldenFiles() throws {
        let golden = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("SwitchboardProtocolTests/Golden")
        let token = PushToken(
            token: "dGVzdC1mY20tdG9rZW4:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx", user: UserKey(app: 1_400_000_001, user: "bob"),
            device: "bob-pixel", kind: .fcm, environment: .production, bundleId: "", updatedAt: 0)
        let invitation = IncomingCallPush(
            callId: "5c3a8f2e-1b7d-4e0a-9c21-6f4d2b8e7a10", sdkAppID: 1_400_000_001, userId: "bob", callerId: "alice",
            callerName: "Alice", mediaType: .video, callType: .oneToOne, inviterId: "alice", deadline: 1_767_225_630_000,
            userData: #"{"topic":"hello"}"#,
            pushConfig: PushConfig(title: "Alice", body: "Video call", sound: "ring.caf", extra: #"{"conversation":"c-17"}"#))
        let end = CallEndedPush(callId: invitation.callId, sdkAppID: 1_400_000_001, reason: .canceled, mediaType: .video)
        for (name, push, ttl) in [
            ("push.fcm.incomingCall", CallPush.incomingCall(invitation), Int64(30)), ("push.fcm.callEnded", .callEnded(end), 900),
        ] {
            let expected = try JSONSerialization.jsonObject(
                with: try Data(contentsOf: golden.appendingPathComponent("\(name).json"))) as? NSDictionary
            let produced = try JSONSerialization.jsonObject(with: try FCMTransport.message(push, for: token, ttl: ttl)) as? NSDictionary
            #expect(expected == produced, "\(name)")
        }
    }

    /// FCM's answers, as the sender reads them.
    @Test(arguments: [
        (200, "{}", PushOutcome.delivered),
        (404, #"{"error":{"code":404,"status":"NOT_FOUND","details":[{"errorCode":"UNREGISTERED"}]}}"#, .tokenInvalid(reason: "UNREGISTERED")),
        (400, #"{"error":{"code":400,"status":"INVALID_ARGUMENT","details":[{"errorCode":"UNREGISTERED"}]}}"#, .tokenInvalid(reason: "UNREGISTERED")),
        (403, #"{"error":{"code":403,"status":"PERMISSION_DENIED","details":[{"errorCode":"SENDER_ID_MISMATCH"}]}}"#, .tokenInvalid(reason: "SENDER_ID_MISMATCH")),
        (401, #"{"error":{"code":401,"status":"UNAUTHENTICATED"}}"#, .credentialExpired("ya29.t")),
        (429, #"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"errorCode":"QUOTA_EXCEEDED"}]}}"#, .retryable(reason: "QUOTA_EXCEEDED", retryAfter: 7000)),
        (503, "", .retryable(reason: "HTTP 503", retryAfter: 7000)),
        // A token FCM does not take is dead; a field of the message it does not take is not the token's fault.
        (400, #"{"error":{"code":400,"status":"INVALID_ARGUMENT","details":[{"errorCode":"INVALID_ARGUMENT"}]}}"#, .tokenInvalid(reason: "INVALID_ARGUMENT")),
        (400, #"{"error":{"code":400,"status":"INVALID_ARGUMENT"}}"#, .tokenInvalid(reason: "INVALID_ARGUMENT")),
        (400, #"{"error":{"code":400,"status":"INVALID_ARGUMENT","details":[{"fieldViolations":[{"field":"message.token"}]}]}}"#, .tokenInvalid(reason: "INVALID_ARGUMENT")),
        (400, #"{"error":{"code":400,"status":"INVALID_ARGUMENT","details":[{"fieldViolations":[{"field":"message.android.ttl"}]}]}}"#, .rejected(status: 400, reason: "INVALID_ARGUMENT (message.android.ttl)")),
    ])
    func answers(status: Int, body: String, outcome: PushOutcome) {
        #expect(FCMTransport.outcome(status: status, body: Data(body.utf8), accessToken: "ya29.t", retryAfter: 7000) == outcome)
    }

    /// `Retry-After` in its two forms (RFC 9110 §10.2.3), as FCM and Web Push services send it.
    @Test(arguments: [
        ("5", Int64?(5000)), (" 120 ", 120_000), ("0", 0), ("-1", nil), ("soon", nil), ("", nil),
        ("Thu, 01 Jan 2026 00:00:30 GMT", 30_000), ("Wed, 31 Dec 2025 23:59:00 GMT", 0), ("99999999", 86_400_000),
    ])
    func retryAfter(value: String, milliseconds: Int64?) {
        #expect(RetryAfter.milliseconds(value, now: 1_767_225_600_000) == milliseconds)
    }
}
