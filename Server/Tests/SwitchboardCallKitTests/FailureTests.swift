import Foundation
import Logging
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardCallKit
import SwitchboardProtocol
@testable import SwitchboardServer
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

/// What the bridge does when the server cannot be reached: the call screen never waits, passing
/// failures are tried again, and what the app must handle comes out of `failures`.
struct FailureTests {
    /// Bob's phone, with the coordinator (behind a proxy the test can cut, if asked); its transport answers
    /// the requests the test chooses with the errors it chooses instead of sending them.
    struct Phone {
        var client: SwitchboardClient
        var system: FakeCallSystem
        var coordinator: CallKitCoordinator
        var failures: Recorder<CallKitFailure>
        /// Between the phone and the server, when the test cuts the network.
        var proxy: TCPProxy?
        var transport: RefusingTransport
    }

    func phone(_ server: TestServer, pushToken: Data? = nil, behindProxy: Bool = false) async throws -> Phone {
        let proxy = behindProxy ? try await TCPProxy.start(targetPort: server.port) : nil
        let transport = RefusingTransport()
        var logger = Logger(label: "switchboard.test-failures")
        logger.logLevel = .critical
        let client = SwitchboardClient(
            configuration: SwitchboardConfiguration(
                serverURL: proxy.map(server.url(via:)) ?? server.url, deviceId: "bob-phone", platform: "test",
                // Behind the proxy: no reconnect attempt before the test is done (a connection the
                // proxy accepts while it stops would be cut halfway).
                requestTimeout: behindProxy ? .seconds(1) : .seconds(10),
                reconnectPolicy: behindProxy
                    ? ReconnectPolicy(initialDelay: .seconds(600), maxDelay: .seconds(600), jitter: 0)
                    : ReconnectPolicy(initialDelay: .seconds(1), maxDelay: .seconds(8), jitter: 0),
                clock: server.clock, transport: transport, logger: logger))
        let system = FakeCallSystem()
        // Tried again at once: the tests follow the attempts, not the waits (RetryPolicyTests do).
        let coordinator = CallKitCoordinator(
            client: client, settings: Phone.settings, provider: system.provider, controller: system.controller,
            pushRegistry: system.pushRegistry, audioSession: system.audioSession,
            retry: RetryPolicy(attempts: 3, firstDelay: .zero), logger: logger)
        let failures = Recorder(coordinator.failures)
        if let pushToken { system.updatePushToken(pushToken) }
        try await coordinator.login(CallKitAccount(sdkAppID: server.app.sdkAppID, userID: "bob", userSig: server.userSig("bob")))
        return Phone(
            client: client, system: system, coordinator: coordinator, failures: failures, proxy: proxy, transport: transport)
    }

    /// Alice calls bob's phone, he answers on the call screen.
    func connect(_ server: TestServer, _ bob: Phone) async throws -> (SwitchboardClient, Recorder<CallStoreEvent>, CallID) {
        let alice = try await server.client("alice")
        let aliceEvents = Recorder(alice.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let uuid = UUID(callId: call.callId)
        try await bob.system.records.first(from: 0) { $0.ringing?.0 == uuid }
        bob.system.userAnswers(uuid)
        try await bob.system.records.first(from: 0) { $0 == .fulfilled(.answer(uuid: uuid)) }
        try await aliceEvents.first(from: 0, where: isStarted)
        return (alice, aliceEvents, call.callId)
    }

    /// The server could not take the hang-up for a moment: the call screen ended the call at once,
    /// the hang-up is tried again and reaches the server.
    @Test func aHangUpThatFailsForAMomentIsTriedAgain() async throws {
        let server = try await TestServer.start()
        let bob = try await phone(server)
        let (_, aliceEvents, call) = try await connect(server, bob)
        bob.transport.refuse(.hangupCall, with: [SwitchboardError(.storageUnavailable), SwitchboardError(.requestTimedOut)])
        let uuid = UUID(callId: call)
        bob.system.userEnds(uuid)
        try await bob.system.records.first(from: 0) { $0 == .fulfilled(.end(uuid: uuid)) }
        #expect(
            try await aliceEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call, mediaType: .audio, reason: .hangup, userId: "bob"))
        try await bob.transport.refused.first(from: 1) { _ in true }
        #expect(bob.transport.refused.values == [.hangupCall, .hangupCall])
        #expect(bob.failures.values.isEmpty)
        #expect(bob.system.problems() == [])
        await server.stop()
    }

    /// A hang-up the server keeps refusing, or refuses for good, is reported to the app; the call
    /// screen ended the call all the same.
    @Test func aHangUpThatKeepsFailingIsReported() async throws {
        let server = try await TestServer.start()
        let bob = try await phone(server)
        let (alice, _, call) = try await connect(server, bob)
        bob.transport.refuse(.hangupCall, with: Array(repeating: SwitchboardError(.storageUnavailable), count: 3))
        let uuid = UUID(callId: call)
        bob.system.userEnds(uuid)
        #expect(try await bob.failures.first(from: 0) { _ in true } == .endFailed(call, SwitchboardError(.storageUnavailable)))
        try await bob.transport.refused.first(from: 2) { _ in true }
        #expect(bob.system.calls[uuid]?.status == .ended)
        // The server still has the call: the app can hang up again.
        #expect(alice.callStore.state.activeCall?.callId == call)
        try await bob.client.callStore.hangup(callId: call)

        // A refusal that will not pass is not tried again.
        let (_, _, second) = try await connect(server, bob)
        bob.transport.refuse(.hangupCall, with: [SwitchboardError(.notInCall)])
        bob.system.userEnds(UUID(callId: second))
        #expect(try await bob.failures.first(from: 1) { _ in true } == .endFailed(second, SwitchboardError(.notInCall)))
        try await bob.transport.refused.first(from: 3) { _ in true }
        #expect(bob.transport.refused.values.count == 4)
        await server.stop()
    }

    /// A logout the server cannot hear throws and is reported: the server keeps the push token.
    @Test func aLogoutTheServerCannotHearIsReported() async throws {
        let server = try await TestServer.start()
        let bob = try await phone(server, pushToken: Data(repeating: 0xab, count: 32), behindProxy: true)
        let proxy = try #require(bob.proxy)
        let storage = server.node.inspection.storage
        try await Recorder(bob.client.loginStore.stateUpdates).first(from: 0) { $0.pushToken != nil }

        proxy.refuseNew = true
        proxy.cut()
        try await Recorder(bob.client.loginStore.stateUpdates).first(from: 0) { $0.loginStatus == .reconnecting }
        let sleeping = server.clock.sleeperCount
        let logout = Task { try await bob.coordinator.logout() }
        await server.clock.waitForSleepers(atLeast: sleeping + 1)
        server.clock.advance(by: .seconds(1))
        await #expect(throws: SwitchboardError(.requestTimedOut)) { try await logout.value }
        #expect(try await bob.failures.first(from: 0) { _ in true } == .pushTokenUnregistrationFailed(SwitchboardError(.requestTimedOut)))
        // Logged out here all the same; the server still has the token.
        #expect(bob.client.loginStore.state.loginStatus == .loggedOut)
        #expect(try await storage.pushTokens(app: server.app.sdkAppID, users: ["bob"])["bob"]?.count == 1)
        proxy.stop()
        await server.stop()
    }
}

extension FailureTests.Phone {
    static let settings = CallKitSettings(bundleId: "com.example.switchboard", pushEnvironment: .sandbox)
}

/// The WebSocket transport, but requests of the types a test names are answered here, with the
/// errors it gives, in order, instead of reaching the server.
final class RefusingTransport: SignalingTransport {
    private let inner = WebSocketTransport()
    private let refusals = NIOLockedValueBox<[RequestType: [SwitchboardError]]>([:])
    private let continuation: AsyncStream<RequestType>.Continuation
    /// The requests answered with an error here.
    let refused: Recorder<RequestType>

    init() {
        let (stream, continuation) = AsyncStream<RequestType>.makeStream()
        self.continuation = continuation
        refused = Recorder(stream)
    }

    func refuse(_ type: RequestType, with errors: [SwitchboardError]) {
        refusals.withLockedValue { $0[type, default: []] += errors }
    }

    func connect(to url: URL) async throws -> any SignalingConnection {
        Connection(inner: try await inner.connect(to: url), transport: self)
    }

    /// The error to answer a request of `type` with, if any is left.
    fileprivate func refusal(_ type: RequestType) -> SwitchboardError? {
        let error = refusals.withLockedValue { refusals -> SwitchboardError? in
            guard var errors = refusals[type], !errors.isEmpty else { return nil }
            let error = errors.removeFirst()
            refusals[type] = errors
            return error
        }
        if error != nil { continuation.yield(type) }
        return error
    }

    private final class Connection: SignalingConnection {
        let inner: any SignalingConnection
        let transport: RefusingTransport
        let incoming: AsyncStream<String>
        private let injected: AsyncStream<String>.Continuation
        private let pump: Task<Void, Never>

        init(inner: any SignalingConnection, transport: RefusingTransport) {
            self.inner = inner
            self.transport = transport
            let (incoming, injected) = AsyncStream<String>.makeStream()
            self.incoming = incoming
            self.injected = injected
            pump = Task {
                for await text in inner.incoming { injected.yield(text) }
                injected.finish()
            }
        }

        deinit { pump.cancel() }

        func send(_ text: String) {
            struct Header: Decodable {
                var id: String
                var type: String
            }
            if let header = try? JSONDecoder().decode(Header.self, from: Data(text.utf8)),
                let error = transport.refusal(RequestType(rawValue: header.type))
            {
                let answer = ResponseEnvelope<Empty>(id: RequestID(rawValue: header.id), outcome: .failure(error))
                if let text = try? SwitchboardJSON.encodeString(answer) { injected.yield(text) }
                return
            }
            inner.send(text)
        }

        func close() { inner.close() }
    }
}
