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

/// Web Push end to end (issue 29): the server's production sender against a local push service
/// that checks each request's VAPID signature and decrypts each message with the subscription's
/// keys, as the browser would; on the test clock.
struct WebPushTests {
    struct Setup {
        var server: TestServer
        var service: TestWebPushServer
        var alice: SwitchboardClient
        var aliceEvents: Recorder<CallStoreEvent>
        var deliveries: Recorder<PushService.Delivery>
        /// bob's browser's subscription; its tab was closed.
        var subscription: TestWebPushServer.Subscription
    }

    /// An HTTP request to the server; the admin secret unless `secret` is nil.
    static func http(
        _ server: TestServer, _ method: String, _ path: String, body: Data? = nil, secret: String? = "test-admin-secret"
    ) async throws -> (Int, [String: Any]) {
        var request = URLRequest(url: URL(string: path, relativeTo: server.httpURL)!)
        request.httpMethod = method
        request.httpBody = body
        if let secret { request.setValue("Bearer \(secret)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
    }

    /// The VAPID public key the page subscribes with, as `GET /v1/web/config` gives it.
    static func webPushKey(_ server: TestServer) async throws -> String {
        let (status, body) = try await http(server, "GET", "/v1/web/config?sdkAppID=\(server.app.sdkAppID)", secret: nil)
        #expect(status == 200)
        return try #require(body["webPushKey"] as? String)
    }

    /// A browser tab of `user` registers its subscription, then is closed.
    static func registerSubscription(
        _ server: TestServer, user: UserID, device: DeviceID, _ subscription: TestWebPushServer.Subscription,
        sealingKey: PushSealingKey? = nil
    ) async throws {
        let tab = try await RawClient(url: server.url)
        _ = try await tab.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: user, userSig: server.userSig(user.rawValue), deviceId: device),
            id: "login")
        let registered = try await tab.request(
            RegisterPushTokenRequest(
                token: subscription.endpoint, move: true, kind: .web, webPush: subscription.keys,
                sealingKey: sealingKey?.publicKey),
            id: "register-\(UUID().uuidString)")  // new each time: the server answers a repeated id from its ledger
        #expect(registered["result"] != nil)
        tab.close()
        #expect(await tab.frames.waitForEnd())
    }

    func setUp() async throws -> Setup {
        let clock = TestClock()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-webpush-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let service = try await TestWebPushServer.start(clock: clock, directory: directory)
        let server = try await TestServer.start(clock: clock, directory: directory) { configuration in
            // The local push service is on loopback: allowed here, refused by default.
            configuration.webPush.allowedHosts = ["127.0.0.1"]
            configuration.webPush.trustRootsPath = service.certificatePath
        }
        let deliveries = Recorder(server.node.inspection.push.deliveries)
        let subscription = service.subscribe(applicationServerKey: try await Self.webPushKey(server))
        try await Self.registerSubscription(server, user: "bob", device: "bob-tab", subscription)
        let alice = try await server.client("alice")
        try await alice.loginStore.setSelfInfo(nickname: "Alice")
        return Setup(
            server: server, service: service, alice: alice, aliceEvents: Recorder(alice.callStore.events),
            deliveries: deliveries, subscription: subscription)
    }

    /// The message that rang `call`. The transports' timeouts are real time while the test clock
    /// stands still: on a machine loaded enough for an attempt to run out of time, the retry waits
    /// for the clock, so each `retrying` outcome moves it past the backoff (0.5 s, doubling). An
    /// outcome comes within one attempt's timeouts (connect 10 s, answer 15 s) of real time: the
    /// wait for it is 60 s (a run beside a release build once took more than 30).
    func ringingMessage(_ s: Setup, of call: CallID) async throws -> TestWebPushServer.Message {
        var from = 0
        for _ in 0..<4 {
            let outcome = try await s.deliveries.first(from: from, timeout: .seconds(60)) { $0.callId == call && $0.kind == "incomingCall" }
            guard outcome.outcome == "retrying" else { break }
            print("WebPushTests: an attempt to ring \(call) is retried (answers: \(s.service.answers.values))")
            from = try await s.deliveries.position(after: from) { $0.callId == call && $0.kind == "incomingCall" }
            s.server.clock.advance(by: .seconds(2))
        }
        return try await s.service.messages.first(from: 0, timeout: .seconds(30)) { _ in true }
    }

    func tearDown(_ s: Setup) async {
        await s.server.stop()
        await s.service.stop()
    }

    /// A call to a user whose only device is a closed tab reaches the browser through its push
    /// service: the invitation, then the end of the ringing, each signed and encrypted.
    @Test func aClosedTabIsRungThroughItsPushService() async throws {
        let s = try await setUp()
        let call = try await s.alice.callStore.calls(
            participantIds: ["bob"], mediaType: .video, params: CallParams(userData: "topic-7", pushConfig: PushTests.pushConfig))
        let invitation = try await ringingMessage(s, of: call.callId)
        let deadline = s.server.clock.now() + 30_000
        #expect(
            invitation.push
                == .incomingCall(
                    IncomingCallPush(
                        callId: call.callId, sdkAppID: s.server.app.sdkAppID, userId: "bob", callerId: "alice",
                        callerName: "Alice", mediaType: .video, callType: .oneToOne, inviterId: "alice", deadline: deadline,
                        userData: "topic-7", pushConfig: PushTests.pushConfig)))
        #expect(invitation.endpoint == s.subscription.endpoint)
        #expect(invitation.headers["urgency"] == "high" && invitation.ttl == 30)
        #expect(invitation.headers["topic"] == WebPushTransport.topic(call.callId))
        #expect(invitation.audience == s.service.url && invitation.subject == VAPIDKey.defaultSubject)
        #expect(invitation.expiresAt > s.server.clock.now() / 1000)
        // The call rings on while a push may wake the browser: bob is not offline.
        #expect(s.alice.callStore.state.activeCall?.callId == call.callId)

        // The caller gives up: the browser hears of the missed call the caller asked to announce,
        // which takes the ringing notification's place (no separate end of the ringing), under
        // the call's topic.
        try await s.alice.callStore.hangup()
        let missed = try await s.service.messages.first(from: 1, timeout: .seconds(30)) { _ in true }
        guard case .missedCall(let notice) = missed.push else {
            Issue.record("not a missed call: \(String(decoding: missed.plaintext, as: UTF8.self))")
            return
        }
        #expect(missed.headers["topic"] == invitation.headers["topic"])
        #expect(notice.callId == call.callId && notice.reason == .canceled && notice.callerName == "Alice")
        #expect(missed.headers["urgency"] == "normal" && missed.ttl == 24 * 3600)
        #expect(s.service.answers.values.allSatisfy { $0.status == 201 })
        await tearDown(s)
    }

    /// A browser that registered a sealing key gets the call sealed inside the encrypted message:
    /// even the code behind the push service's endpoint, given the subscription's keys, sees no names.
    @Test func aSealedSubscriptionsMessagesNameNobody() async throws {
        let s = try await setUp()
        let key = PushSealingKey()
        try await Self.registerSubscription(s.server, user: "bob", device: "bob-tab", s.subscription, sealingKey: key)
        let call = try await s.alice.callStore.calls(
            participantIds: ["bob"], mediaType: .video, params: CallParams(userData: "topic-7", pushConfig: PushTests.pushConfig))
        let message = try await ringingMessage(s, of: call.callId)
        let text = String(decoding: message.plaintext, as: UTF8.self)
        for clear in ["alice", "Alice", "topic-7", "Missed call"] {
            #expect(!text.contains(clear), "\(clear) in \(text)")
        }
        #expect(message.push == nil)
        guard case .incomingCall(let invitation)? = CallPush(object: message.plaintext, sealingKey: key) else {
            Issue.record("the message does not open with the device's key: \(text)")
            return
        }
        #expect(invitation.callId == call.callId && invitation.callerName == "Alice" && invitation.userData == "topic-7")
        await tearDown(s)
    }

    /// The end of a ringing never overtakes its invitation: it goes out once the invitation's
    /// attempts under way have ended (here, a retry withdrawn by the end).
    @Test func theEndOfARingingWaitsForItsInvitation() async throws {
        let s = try await setUp()
        s.service.behavior = .fail(count: 1)
        let call = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await s.deliveries.first(from: 0, timeout: .seconds(30)) { $0.callId == call.callId && $0.outcome == "retrying" }
        try await s.alice.callStore.hangup()
        try await s.aliceEvents.first(from: 0, timeout: .seconds(30), where: isEnded)
        // The invitation is withdrawn at its next attempt, and only then does the end go out.
        s.server.clock.advance(by: .seconds(1))
        let outcomes = try await s.deliveries.matches(2, from: 0, timeout: .seconds(30)) { $0.callId == call.callId && $0.outcome != "retrying" }
        #expect(outcomes.map(\.kind) == ["incomingCall", "callEnded"])
        #expect(outcomes.map(\.outcome) == ["withdrawn", "delivered"])
        #expect(s.service.messages.values.map(\.push?.kind) == ["callEnded"])
        await tearDown(s)
    }

    /// 404 and 410 from the push service mean the subscription is gone: it is removed, and the
    /// user is offline for the next call.
    @Test(arguments: [false, true]) func aSubscriptionThatIsGoneIsRemoved(_ unsubscribed: Bool) async throws {
        let s = try await setUp()
        if unsubscribed { s.service.unsubscribe(s.subscription) } else { s.service.forget(s.subscription) }
        _ = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await s.deliveries.first(from: 0, timeout: .seconds(30)) { $0.outcome == "token_removed" }
        #expect(s.service.answers.values.map(\.status) == [unsubscribed ? 410 : 404])
        #expect(try await s.server.node.inspection.storage.pushTokens(app: s.server.app.sdkAppID, users: ["bob"]).isEmpty)
        try await s.alice.callStore.hangup()
        try await s.aliceEvents.first(from: 0, timeout: .seconds(30), where: isEnded)
        let again = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        #expect(
            try await s.aliceEvents.first(from: 0, timeout: .seconds(30)) { if case .onCallEnded(again.callId, _, _, _) = $0 { true } else { false } }
                == .onCallEnded(callId: again.callId, mediaType: .audio, reason: .offline, userId: "bob"))
        await tearDown(s)
    }

    @Test func throttlingIsRetriedWithinTheRinging() async throws {
        let s = try await setUp()
        s.service.behavior = .throttle(count: 1)
        let call = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await s.deliveries.first(from: 0, timeout: .seconds(30)) { $0.outcome == "retrying" }
        s.server.clock.advance(by: .seconds(1))
        let delivered = try await s.service.messages.first(from: 0, timeout: .seconds(30)) { _ in true }
        #expect(delivered.push?.callId == call.callId && delivered.ttl == 29)
        let answers = try await s.service.answers.matches(2, from: 0, timeout: .seconds(30)) { _ in true }
        #expect(answers.map(\.status) == [429, 201])
        await tearDown(s)
    }

    /// A 429 with `Retry-After` is tried again no sooner than the push service asked (issue 48).
    @Test func aRetryAfterIsWaitedFor() async throws {
        let s = try await setUp()
        s.service.behavior = .throttle(count: 1, retryAfter: 3)
        let call = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let retrying = try await s.deliveries.first(from: 0, timeout: .seconds(30)) { $0.outcome == "retrying" }
        #expect(retrying.retryAt == s.server.clock.now() + 3000)
        s.server.clock.advance(by: .seconds(3))
        let delivered = try await s.service.messages.first(from: 0, timeout: .seconds(30)) { _ in true }
        #expect(delivered.push?.callId == call.callId)
        await tearDown(s)
    }

    /// A new VAPID key pair for the app (admin API) is what the page subscribes with from then
    /// on; a push service refuses pushes to subscriptions made with the old one.
    @Test func anAppsNewKeyPairSignsItsPushes() async throws {
        let s = try await setUp()
        let key = VAPIDKey.generate(subject: "mailto:ops@example.com")
        let (status, view) = try await Self.http(
            s.server, "PUT", "/v1/apps/\(s.server.app.sdkAppID)/push",
            body: Data(#"{"webPush":{"privateKey":"\#(key.privateKey)","subject":"mailto:ops@example.com"}}"#.utf8))
        #expect(status == 200)
        let newKey = try #require(key.publicKey)
        #expect((view["webPush"] as? [String: Any])?["publicKey"] as? String == newKey)
        #expect(try await Self.webPushKey(s.server) == newKey)
        // bob's browser subscribed again with the new key (the page compares them at each login).
        let fresh = s.service.subscribe(applicationServerKey: newKey)
        try await Self.registerSubscription(s.server, user: "bob", device: "bob-tab", fresh)
        let call = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let message = try await ringingMessage(s, of: call.callId)
        #expect(message.endpoint == fresh.endpoint && message.push?.callId == call.callId, "answers: \(s.service.answers.values)")
        #expect(message.subject == "mailto:ops@example.com")
        await tearDown(s)
    }
}
