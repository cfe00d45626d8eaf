import Foundation
import Switchboard
import SwitchboardProtocol
import Testing

/// The SDK decodes the push bodies the server sends (the golden files of the protocol tests).
struct PushDecodingTests {
    static func golden(_ name: String) throws -> Data {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("SwitchboardProtocolTests/Golden/\(name).json")
        return try Data(contentsOf: url)
    }

    @Test func goldenPushesDecode() throws {
        #expect(
            VoIPPush(json: try Self.golden("push.incomingCall"))
                == .incomingCall(
                    IncomingCallPush(
                        callId: "5c3a8f2e-1b7d-4e0a-9c21-6f4d2b8e7a10", sdkAppID: 1_400_000_001, userId: "bob",
                        callerId: "alice", callerName: "Alice", mediaType: .video, callType: .oneToOne, inviterId: "alice",
                        deadline: 1_767_225_630_000, userData: #"{"topic":"hello"}"#,
                        pushConfig: PushConfig(
                            title: "Alice", body: "Video call", sound: "ring.caf", extra: #"{"conversation":"c-17"}"#))))
        #expect(
            VoIPPush(json: try Self.golden("push.callEnded"))
                == .callEnded(
                    CallEndedPush(
                        callId: "5c3a8f2e-1b7d-4e0a-9c21-6f4d2b8e7a10", sdkAppID: 1_400_000_001, reason: .canceled,
                        mediaType: .video)))
    }

    /// A push received before the login shows as ringing; the server's own invitation does not ring twice.
    @Test func aPushedInvitationRingsOnce() async throws {
        let client = SwitchboardClient()
        var events = client.callStore.events.makeAsyncIterator()
        let push = try #require(VoIPPush(json: try Self.golden("push.incomingCall")))
        client.callStore.receivedPush(push)
        client.callStore.receivedPush(push)
        #expect(client.callStore.state.activeCall?.callId == "5c3a8f2e-1b7d-4e0a-9c21-6f4d2b8e7a10")
        // Before the login the SDK knows the callee from the push: bob, rung by alice.
        #expect(
            client.callStore.state.allParticipants.map { "\($0.userId):\($0.status.rawValue)" }
                == ["alice:waiting", "bob:waiting"])
        let first = await events.next()
        #expect(first.map { if case .onCallReceived = $0 { true } else { false } } == true)
        client.callStore.receivedPush(try #require(VoIPPush(json: try Self.golden("push.callEnded"))))
        let second = await events.next()
        #expect(
            second
                == .onCallEnded(callId: "5c3a8f2e-1b7d-4e0a-9c21-6f4d2b8e7a10", mediaType: .video, reason: .canceled, userId: nil))
        #expect(client.callStore.state.activeCall == nil)
    }
}
