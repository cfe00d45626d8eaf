import Foundation
import Logging
import Switchboard
import SwitchboardCallKit
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

/// The documented entry point, `SwitchboardClient.shared`, as README.md and docs/IOS.md use it.
/// It is the one test in the package that touches the shared client (one per process).
struct SharedClientTests {
    static let sdkAppID: SdkAppID = 1_400_123_456

    @Test func theReadmeCodeAndTheCallKitWiringWorkOnTheSharedClient() async throws {
        let server = try await TestServer.start { configuration in
            configuration.apps = [AppCredentials(sdkAppID: Self.sdkAppID, secretKey: "readme-secret-key-0123456789abcdef")]
        }
        let bob = try await server.client("bob")
        let bobEvents = Recorder(bob.callStore.events)
        // The shared client exists before anyone configures it (a store touched early, as apps do).
        #expect(CallStore.shared.state.activeCall == nil)

        // What the README leaves to the app.
        let serverURL = server.url
        let yourMediaEngine = FakeMediaEngine(name: "alice")
        let userSigFromYourBackend = server.userSig("alice")

        // README: Using the SDK
        SwitchboardClient.shared.configure(SwitchboardConfiguration(
            serverURL: serverURL, mediaEngine: yourMediaEngine))
        try await LoginStore.shared.login(sdkAppID: 1400123456, userID: "alice", userSig: userSigFromYourBackend)

        Task {   // events: onCallReceived (first for a call already ringing), onCallStarted, onCallEnded, onCallRecord…
            for await event in CallStore.shared.events {
                if case .onCallReceived = event { try await CallStore.shared.accept() }
            }
        }
        Task {   // one state value: activeCall (with a live duration), selfInfo, allParticipants
            for await state in CallStore.shared.stateUpdates {
                print(state.selfInfo.status, state.activeCall?.duration ?? 0)
            }
        }

        DeviceStore.shared.openLocalMicrophone()
        let call = try await CallStore.shared.calls(participantIds: ["bob"], mediaType: .video,
                                                    params: CallParams(timeout: 30))
        try await CallStore.shared.hangup()
        let page = try await CallStore.shared.queryRecords(syncTime: -1, count: 30, order: .descending)
        // END README

        try Self.expectSameCode(asTheReadme: #filePath)
        #expect(LoginStore.shared.state.loginStatus == .loggedIn)
        try await bobEvents.first(from: 0) { $0 == .onCallEnded(callId: call.callId, mediaType: .video, reason: .canceled, userId: "alice") }
        #expect(page.records.allSatisfy { $0.callId != call.callId || $0.result == .canceled })

        // Bob calls: the README's event loop answers, and the media engine given to `configure`,
        // after the shared client was made, carries the call.
        let incoming = try await bob.callStore.calls(participantIds: ["alice"], mediaType: .audio)
        try await yourMediaEngine.calls.first(from: 0) { $0 == .callConnected(incoming.callId, .audio) }
        try await yourMediaEngine.calls.first(from: 0) { $0 == .startAudio }
        try await yourMediaEngine.calls.first(from: 0) { $0 == .microphone(on: true) }
        try await bob.callStore.hangup()
        try await yourMediaEngine.calls.first(from: 0) { $0 == .callEnded(incoming.callId) }
        try await LoginStore.shared.logout()

        // docs/IOS.md: the coordinator made on the shared client at launch; a configuration given
        // afterwards (another engine) reaches it too, and audio waits for CallKit's activation.
        let system = FakeCallSystem()
        var logger = Logger(label: "switchboard.test-shared")
        logger.logLevel = .critical
        let calls = CallKitCoordinator(
            client: .shared, settings: CallKitSettings(bundleId: "com.example.app", pushEnvironment: .sandbox),
            provider: system.provider, controller: system.controller, pushRegistry: system.pushRegistry,
            audioSession: system.audioSession, logger: logger)
        let phoneEngine = FakeMediaEngine(name: "alice-phone")
        SwitchboardClient.shared.configure(SwitchboardConfiguration(serverURL: serverURL, mediaEngine: phoneEngine))
        try await calls.login(CallKitAccount(sdkAppID: Self.sdkAppID, userID: "alice", userSig: userSigFromYourBackend))
        // Alice calls from the app's button, through CallKit (the README's event loop, still
        // running, answers incoming calls in the SDK itself).
        let second = try await calls.startCall(userIds: ["bob"], mediaType: .video)
        try await bobEvents.first(from: 0) { if case .onCallReceived(second.callId, _, _, _, _) = $0 { true } else { false } }
        try await bob.callStore.accept(callId: second.callId)
        try await phoneEngine.calls.first(from: 0) { $0 == .callConnected(second.callId, .video) }
        system.activateAudioSession()
        try await phoneEngine.calls.first(from: 0) { $0 == .startAudio }
        // The first engine is out of the picture (it heard of the first call only).
        #expect(yourMediaEngine.calls.values.filter { if case .callConnected = $0 { true } else { false } }.count == 1)
        try await calls.endCall()
        try await phoneEngine.calls.first(from: 0) { $0 == .callEnded(second.callId) }
        try await calls.logout()
        #expect(system.problems() == [])
        await server.stop()
    }

    /// The README's block is the test's, but for the one value a test must choose: the server's URL.
    static func expectSameCode(asTheReadme testFile: String) throws {
        let root = URL(fileURLWithPath: testFile).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "## Using the SDK").dropFirst().first)
        // The section's Swift block that is app code (the one before it is the package line).
        let blocks = section.components(separatedBy: "```swift\n").dropFirst().compactMap { $0.components(separatedBy: "```").first }
        let block = try #require(blocks.first { $0.hasPrefix("import Switchboard\n") })
        let documented = block.replacingOccurrences(of: #"URL(string: "ws://127.0.0.1:8080/v1/ws")!"#, with: "serverURL")
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            .filter { $0 != "import Switchboard" }

        let source = try String(contentsOf: URL(fileURLWithPath: testFile), encoding: .utf8)
        let begin = try #require(source.range(of: "// README: Using the SDK\n"))
        let end = try #require(source.range(of: "        // END README"))
        let tested = source[begin.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("        ") ? String($0.dropFirst(8)) : String($0) }
        func trimmed(_ lines: [String]) -> [String] {
            Array(lines.drop { $0.isEmpty }.reversed().drop { $0.isEmpty }.reversed())
        }
        #expect(trimmed(tested) == trimmed(documented))
    }
}
