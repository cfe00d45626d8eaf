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

/// An iPhone as the CallKit tests see it: the SDK client (with a recording media engine), the fake
/// system (CallKit, PushKit, audio session) and the coordinator between them.
struct Phone {
    let client: SwitchboardClient
    let system: FakeCallSystem
    let coordinator: CallKitCoordinator
    let media: FakeMediaEngine
    let events: Recorder<CallStoreEvent>
    let account: CallKitAccount

    static let settings = CallKitSettings(bundleId: CallKitHarness.bundle, pushEnvironment: .sandbox)

    /// The first UUID of a start transaction.
    func startedUUID() async throws -> UUID {
        let record = try await system.records.first(from: 0) {
            if case .transaction(.start) = $0 { true } else { false }
        }
        return record.action!.uuid
    }
}

/// A server with a local APNs, alice online in a plain SDK client, and bob's phone whose VoIP push
/// token the server knows.
struct CallKitHarness {
    static let bundle = "com.example.switchboard"
    static let bobToken = String(repeating: "ab", count: 32)

    let server: TestServer
    let apns: TestAPNsServer
    let alice: SwitchboardClient
    let aliceEvents: Recorder<CallStoreEvent>

    /// With `pushToken`, bob's phone registered a token and its app was then killed (so calls push).
    static func start(pushToken: Bool = true) async throws -> CallKitHarness {
        let clock = TestClock()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-callkit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let apns = try await TestAPNsServer.start(clock: clock, bundleIds: [bundle], directory: directory)
        let server = try await TestServer.start(clock: clock, directory: directory) { configuration in
            var push = APNsConfiguration(keyPath: apns.keyPath, keyId: apns.keyId, teamId: apns.teamId)
            push.productionURL = apns.url
            push.sandboxURL = apns.url
            push.trustRootsPath = apns.certificatePath
            configuration.apns = push
        }
        if pushToken {
            let phone = try await RawClient(url: server.url)
            _ = try await phone.request(
                LoginRequest(sdkAppID: server.app.sdkAppID, userID: "bob", userSig: server.userSig("bob"), deviceId: "bob-phone"),
                id: "login")
            _ = try await phone.request(
                RegisterPushTokenRequest(token: bobToken, environment: .sandbox, bundleId: bundle), id: "token")
            phone.close()
            _ = await phone.frames.waitForEnd()
        }
        let alice = try await server.client("alice")
        try await alice.loginStore.setSelfInfo(nickname: "Alice")
        return CallKitHarness(server: server, apns: apns, alice: alice, aliceEvents: Recorder(alice.callStore.events))
    }

    /// Bob's phone with the coordinator; logged in through it when `login` is true.
    func phone(_ user: String = "bob", deviceId: String = "bob-phone", login: Bool) async throws -> Phone {
        let media = FakeMediaEngine(name: user)
        let client = try await server.client(user, deviceId: deviceId, login: false, mediaEngine: media)
        let system = FakeCallSystem()
        var logger = Logger(label: "switchboard.test-callkit")
        logger.logLevel = .critical
        let coordinator = CallKitCoordinator(
            client: client, settings: Phone.settings, provider: system.provider, controller: system.controller,
            pushRegistry: system.pushRegistry, audioSession: system.audioSession, logger: logger)
        let account = CallKitAccount(sdkAppID: server.app.sdkAppID, userID: user, userSig: server.userSig(user))
        coordinator.account = account
        let phone = Phone(
            client: client, system: system, coordinator: coordinator, media: media, events: Recorder(client.callStore.events),
            account: account)
        if login { try await coordinator.login(account) }
        return phone
    }

    func stop() async {
        await server.stop()
        await apns.stop()
    }
}

extension FakeCallSystem.Record {
    var action: SystemCallAction? {
        switch self {
        case .transaction(let action), .transactionRefused(let action), .fulfilled(let action), .failed(let action):
            action
        default:
            nil
        }
    }

    /// The call and update of a ring.
    var ringing: (UUID, CallUpdate)? {
        if case .ringing(let uuid, let update) = self { (uuid, update) } else { nil }
    }

    var isEnd: Bool {
        if case .ended = self { true } else { false }
    }

    var isMuteTransaction: Bool {
        if case .transaction(.setMuted) = self { true } else { false }
    }
}

func isReceived(_ event: CallStoreEvent) -> Bool { if case .onCallReceived = event { true } else { false } }
func isStarted(_ event: CallStoreEvent) -> Bool { if case .onCallStarted = event { true } else { false } }
func isEnded(_ event: CallStoreEvent) -> Bool { if case .onCallEnded = event { true } else { false } }
