import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

@testable import SwitchboardServer

/// Push is decided per device (SPEC §5, issue 29): every device of an invitee that has a push token
/// and no live connection is pushed, even while the same user has other devices connected (those
/// ring over their sockets and are not pushed). Through the production APNs client and a local
/// APNs server, as in ``PushTests``.
struct PerDevicePushTests {
    typealias Setup = PushTests.Setup
    static let tabletToken = String(repeating: "cd", count: 32)
    static let tabletAlertToken = String(repeating: "c1", count: 32)
    static let carolToken = String(repeating: "ca", count: 32)

    /// bob's phone (tokens, app killed) from ``PushTests/setUp(lifetime:)``, and bob's tablet, which
    /// registered its own tokens and stays connected.
    static func withConnectedTablet() async throws -> (Setup, SwitchboardClient, Recorder<CallStoreEvent>) {
        let s = try await PushTests().setUp()
        s.apns.declare(tabletToken, as: .voip)
        s.apns.declare(tabletAlertToken, as: .alert)
        let tablet = try await s.server.client("bob", deviceId: "bob-tablet")
        try await tablet.loginStore.registerPushToken(tabletToken, environment: .sandbox, bundleId: PushTests.bundle)
        try await tablet.loginStore.registerPushToken(
            tabletAlertToken, environment: .sandbox, bundleId: PushTests.bundle, kind: .alert)
        return (s, tablet, Recorder(tablet.callStore.events))
    }

    /// A later push to carol, asked for after everything before it: the barrier for "nothing else
    /// was pushed".
    static func barrier(_ s: Setup) async throws {
        try await PushTests().registerToken(s.server, user: "carol", device: "carol-phone", token: carolToken)
        let call = try await s.alice.callStore.calls(participantIds: ["carol"], mediaType: .audio)
        try await s.apns.pushes.first(from: 0) { $0.push?.callId == call.callId }
        try await s.alice.callStore.hangup()
    }

    @Test func aConnectedTabletRingsOverItsSocketAndTheOfflinePhoneIsPushed() async throws {
        let (s, _, tabletEvents) = try await Self.withConnectedTablet()
        let call = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await tabletEvents.first(from: 0, where: isReceived)
        let push = try await s.apns.pushes.first(from: 0) { _ in true }
        #expect(push.token == PushTests.bobToken && push.push?.callId == call.callId)
        try await s.alice.callStore.hangup()
        try await s.aliceEvents.first(from: 0, where: isEnded)
        try await Self.barrier(s)
        // Exactly one push for bob's phone, none for the tablet, which was connected all along.
        let forBob = s.apns.pushes.values.filter { $0.token != Self.carolToken }
        #expect(forBob.map(\.token) == [PushTests.bobToken])
        // The tablet's token was skipped because the tablet was connected.
        #expect(s.deliveries.values.filter { $0.token == Self.tabletToken }.map(\.outcome) == ["connected"])
        await PushTests().tearDown(s)
    }

    /// The missed-call alert goes to the devices that rang by push and are still not connected.
    @Test func aMissedCallIsAnnouncedOnTheDevicesThatWereNotConnected() async throws {
        let (s, _, tabletEvents) = try await Self.withConnectedTablet()
        let call = try await s.alice.callStore.calls(
            participantIds: ["bob"], mediaType: .audio, params: CallParams(pushConfig: PushTests.pushConfig))
        try await tabletEvents.first(from: 0, where: isReceived)
        try await s.apns.pushes.first(from: 0) { _ in true }
        s.server.clock.advance(by: .seconds(30))
        let alert = try await s.apns.pushes.first(from: 1) { _ in true }
        #expect(alert.token == PushTests.bobAlertToken && alert.missedCall?.callId == call.callId)
        try await s.aliceEvents.first(from: 0, where: isEnded)
        try await Self.barrier(s)
        #expect(!s.apns.pushes.values.contains { $0.token == Self.tabletAlertToken || $0.token == Self.tabletToken })
        await PushTests().tearDown(s)
    }

    /// Which devices ring by push is read from the database when the server starts: a phone that
    /// registered its token before a restart and has not connected since is pushed after it.
    @Test func aTokenRegisteredBeforeARestartStillRingsItsDevice() async throws {
        let s = try await PushTests().setUp()
        await s.server.stopKeepingFiles()
        let server = try await PushTests.server(clock: s.server.clock, directory: s.server.directory, apns: s.apns)
        let alice = try await server.client("alice")
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let push = try await s.apns.pushes.first(from: 0) { _ in true }
        #expect(push.token == PushTests.bobToken && push.push?.callId == call.callId)
        try await alice.callStore.hangup()
        await PushTests().tearDown(PushTests.Setup(
            server: server, apns: s.apns, alice: alice, aliceEvents: s.aliceEvents, deliveries: s.deliveries))
    }

    /// A device that connects while its push is still being retried gets the invitation over its
    /// socket, and the retries to its token stop.
    @Test func aPushBeingRetriedStopsWhenItsDeviceConnects() async throws {
        let s = try await PushTests().setUp()
        s.apns.behavior = .fail(count: 100)
        let call = try await s.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await s.deliveries.first(from: 0) { $0.callId == call.callId && $0.outcome == "retrying" }
        let phone = try await s.server.client("bob", deviceId: "bob-phone")
        let phoneEvents = Recorder(phone.callStore.events)
        try await phoneEvents.first(from: 0, where: isReceived)
        s.server.clock.advance(by: .seconds(1))
        let stopped = try await s.deliveries.first(from: 0) { $0.callId == call.callId && $0.outcome != "retrying" }
        #expect(stopped.outcome == "connected")
        // One attempt reached APNs (the 500); the retry that was due did not.
        #expect(s.apns.answers.values.filter { $0.token == PushTests.bobToken }.count == 1)
        #expect(phone.callStore.state.activeCall?.callId == call.callId)
        await PushTests().tearDown(s)
    }
}

/// Per-device push on a cluster: the leader decides from its directory of every node's devices.
@Suite(.enabled(if: PostgresTestDatabase.isAvailable)) struct ClusterPushTests {
    @Test func aTabletConnectedToAnotherNodeRingsThereAndOnlyThePhoneIsPushed() async throws {
        let clock = TestClock()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-push-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let apns = try await TestAPNsServer.start(clock: clock, bundleIds: [PushTests.bundle], directory: directory)
        apns.declare(PushTests.bobToken, as: .voip)
        apns.declare(PerDevicePushTests.tabletToken, as: .voip)
        let cluster = try await TestCluster.start(clock: clock) { configuration in
            var push = APNsConfiguration(keyPath: apns.keyPath, keyId: apns.keyId, teamId: apns.teamId)
            push.productionURL = apns.url
            push.sandboxURL = apns.url
            push.trustRootsPath = apns.certificatePath
            configuration.apns = push
        }
        let leader = try #require(cluster.leaderIndex)
        let others = (0..<3).filter { $0 != leader }
        // bob's phone registers its token on one node and its app is killed; the leader learns it left.
        try await PushTests().registerToken(cluster.nodes[others[0]], user: "bob", device: "bob-phone", token: PushTests.bobToken)
        let presence = try #require(cluster.nodes[leader].node.inspection.cluster?.directory)
        let bob = UserKey(app: cluster.nodes[leader].app.sdkAppID, user: "bob")
        try await eventually("the leader learns that bob's phone left") { !presence.connectedDevices(bob).contains("bob-phone") }
        // bob's tablet, with its own token, is connected to the other node; alice calls from the leader.
        let tablet = try await cluster.nodes[others[1]].client("bob", deviceId: "bob-tablet")
        let tabletEvents = Recorder(tablet.callStore.events)
        try await tablet.loginStore.registerPushToken(
            PerDevicePushTests.tabletToken, environment: .sandbox, bundleId: PushTests.bundle)
        try await eventually("the leader learns of bob's tablet") { presence.connectedDevices(bob).contains("bob-tablet") }
        let alice = try await cluster.nodes[leader].client("alice")
        let deliveries = Recorder(cluster.nodes[leader].node.inspection.push.deliveries)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await step("the tablet rings") { try await tabletEvents.first(from: 0, where: isReceived) }
        let push = try await step("the phone is pushed") { try await apns.pushes.first(from: 0) { _ in true } }
        #expect(push.token == PushTests.bobToken && push.push?.callId == call.callId)
        try await step("the delivery is recorded") {
            try await deliveries.first(from: 0) { $0.callId == call.callId && $0.token == PushTests.bobToken }
        }
        try await alice.callStore.hangup()
        try await step("the call ends on the tablet") { try await tabletEvents.first(from: 0, where: isEnded) }
        // The barrier: a second call, to carol's phone, pushed after the first ended.
        try await PushTests().registerToken(
            cluster.nodes[leader], user: "carol", device: "carol-phone", token: PerDevicePushTests.carolToken)
        // As for bob's phone: until the leader's directory has carol's phone gone, a call rings
        // its dead connection instead of pushing (the node's own registry learns it first).
        let carol = UserKey(app: cluster.nodes[leader].app.sdkAppID, user: "carol")
        try await eventually("the leader learns that carol's phone left") { !presence.connectedDevices(carol).contains("carol-phone") }
        let later = try await step("the second call is placed") {
            try await alice.callStore.calls(participantIds: ["carol"], mediaType: .audio)
        }
        // What the leader learns comes through PostgreSQL: on a loaded machine it has taken over
        // 30 s (a full run's failure, with this test 0.7 s alone).
        try await step("carol's phone is pushed") {
            try await apns.pushes.first(from: 0, timeout: .seconds(90)) { $0.push?.callId == later.callId }
        }
        #expect(apns.pushes.values.map(\.token) == [PushTests.bobToken, PerDevicePushTests.carolToken])
        await cluster.stop()
        await apns.stop()
    }

    @discardableResult func step<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            Issue.record("\(what): \(error)")
            throw error
        }
    }

    /// Waits until `condition` holds: what another node learns arrives through PostgreSQL, with
    /// nothing in this process to wait on. Fails after ten seconds.
    func eventually(_ what: String, _ condition: () -> Bool) async throws {
        let start = ContinuousClock.now
        while !condition() {
            guard ContinuousClock.now - start < .seconds(10) else {
                Issue.record("never: \(what)")
                throw RecorderTimeout(description: what)
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// What each kind of push token must carry (``RegisterPushTokenRequest/problem``), as the server
/// answers it.
struct PushTokenKindTests {
    static let endpoint = "https://push.example.net/wpush/v2/gAAAAABn3xQ1"
    static let keys = WebPushKeys(
        p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
        auth: "BTBZMqHH6r4Tts7J_aSIgg")
    static let sealingKey = "jn0pOZvLmi7NfOaoN2P-n5YgOa5wy0ZhbhpoD-ZJrls"
    static let fcmToken = "dGVzdC1mY20tdG9rZW4:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"

    @Test(arguments: [
        (RegisterPushTokenRequest(token: endpoint, kind: .web, webPush: keys, sealingKey: sealingKey), nil),
        (RegisterPushTokenRequest(token: fcmToken, kind: .fcm), nil),
        (RegisterPushTokenRequest(token: fcmToken, kind: .fcm, sealingKey: sealingKey), nil),
        (
            RegisterPushTokenRequest(
                token: String(repeating: "ab", count: 32), environment: .sandbox, bundleId: "com.example.app", kind: .alert,
                alertRinging: true), nil
        ),
        // A web token is an https endpoint with its keys.
        (RegisterPushTokenRequest(token: "http://push.example.net/x", kind: .web, webPush: keys), .invalidPushToken),
        (RegisterPushTokenRequest(token: "https://user:pw@push.example.net/x", kind: .web, webPush: keys), .invalidPushToken),
        (RegisterPushTokenRequest(token: endpoint, kind: .web), .invalidPushToken),
        (
            RegisterPushTokenRequest(token: endpoint, kind: .web, webPush: WebPushKeys(p256dh: keys.auth, auth: keys.auth)),
            .invalidPushToken
        ),
        (RegisterPushTokenRequest(token: "https://x/" + String(repeating: "a", count: 2048), kind: .web, webPush: keys), .invalidPushToken),
        // FCM tokens have their own alphabet and length.
        (RegisterPushTokenRequest(token: "bad token", kind: .fcm), .invalidPushToken),
        (RegisterPushTokenRequest(token: String(repeating: "a", count: 4097), kind: .fcm), .invalidPushToken),
        // APNs tokens need their environment and bundle id.
        (RegisterPushTokenRequest(token: String(repeating: "ab", count: 32), bundleId: "com.example.app"), .invalidParams),
        (RegisterPushTokenRequest(token: String(repeating: "ab", count: 32), environment: .sandbox), .invalidBundleID),
        // Fields of another kind, and a sealing key that is no X25519 key.
        (RegisterPushTokenRequest(token: fcmToken, kind: .fcm, webPush: keys), .invalidParams),
        (RegisterPushTokenRequest(token: fcmToken, kind: .fcm, alertRinging: true), .invalidParams),
        (RegisterPushTokenRequest(token: fcmToken, kind: .fcm, sealingKey: keys.auth), .invalidParams),
    ] as [(RegisterPushTokenRequest, SwitchboardError.Code?)])
    func eachKindIsChecked(_ request: RegisterPushTokenRequest, _ expected: SwitchboardError.Code?) async throws {
        #expect(request.problem?.code == expected)
        let server = try await TestServer.start()
        let raw = try await RawClient(url: server.url)
        _ = try await raw.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: "dave", userSig: server.userSig("dave"), deviceId: "d1"),
            id: "login")
        let response = try await raw.request(request, id: "r")
        #expect(RawClient.errorCode(response) == expected?.rawValue)
        let stored = try await server.node.inspection.storage.pushTokens(app: server.app.sdkAppID, users: ["dave"])["dave"]
        if expected == nil {
            let token = try #require(stored?.first)
            #expect(token.kind == request.kind && token.token == request.token && token.webPush == request.webPush)
            #expect(token.sealingKey == request.sealingKey && token.alertRinging == (request.alertRinging ?? false))
        } else {
            #expect(stored == nil)
        }
        await server.stop()
    }
}
