import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import Testing

@testable import SwitchboardServer

/// Who shares a screen: reported with `call.deviceState`, told to the other members in
/// `deviceChanged`, kept in the call's snapshots while the member is in the call.
struct ScreenSharingTests {
    func login(_ server: TestServer, _ user: UserID) async throws -> RawClient {
        let client = try await RawClient(url: server.url)
        let response = try await client.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: user, userSig: server.userSig(user.rawValue)), id: "login")
        #expect(response["result"] != nil)
        return client
    }

    func deviceChanged(_ client: RawClient, from start: Int) async throws -> DeviceChangedEvent {
        let frame = try await client.frames.first(from: start) { RawClient.object($0)?["event"] as? String == "deviceChanged" }
        guard case .deviceChanged(let event) = try SwitchboardJSON.decode(ServerEvent.self, from: Data(frame.utf8)) else {
            throw SwitchboardError(.invalidParams, "not deviceChanged")
        }
        return event
    }

    /// The participants of a call snapshot in a response.
    func participants(_ response: [String: Any]) throws -> [CallParticipant] {
        let call = try #require((response["result"] as? [String: Any])?["call"])
        return try SwitchboardJSON.decode(CallInfo.self, from: JSONSerialization.data(withJSONObject: call)).participants
    }

    @Test func theOtherMembersLearnWhoSharesAScreen() async throws {
        let server = try await TestServer.start()
        let alice = try await login(server, "alice")
        let bob = try await login(server, "bob")
        let carol = try await login(server, "carol")
        let started = try await alice.request(StartCallRequest(participantIds: ["bob", "carol"], mediaType: .audio), id: "s")
        let callId = CallID(rawValue: ((started["result"] as? [String: Any])?["callId"] as? String) ?? "")

        // Ringing, bob may not report yet.
        #expect(
            RawClient.errorCode(try await bob.request(UpdateDeviceStateRequest(callId: callId, screenSharing: true), id: "d0"))
                == SwitchboardError.Code.invalidCallState.rawValue)
        #expect(RawClient.errorCode(try await bob.request(AcceptCallRequest(callId: callId), id: "a")) == nil)

        // In the call he may; the others hear it, and the fields left out keep their values.
        var mark = alice.frames.values.count
        #expect(RawClient.errorCode(try await bob.request(UpdateDeviceStateRequest(callId: callId, screenSharing: true), id: "d1")) == nil)
        #expect(
            try await deviceChanged(alice, from: mark)
                == DeviceChangedEvent(callId: callId, userId: "bob", microphoneOn: true, cameraOn: false, screenSharing: true))
        mark = alice.frames.values.count
        _ = try await bob.request(UpdateDeviceStateRequest(callId: callId, microphoneOn: false), id: "d2")
        let muted = try await deviceChanged(alice, from: mark)
        #expect(muted.screenSharing && !muted.microphoneOn)

        // carol answers later: her snapshot shows who shares, and only that member.
        let accepted = try await carol.request(AcceptCallRequest(callId: callId), id: "a2")
        let members = try participants(accepted)
        #expect(members.first { $0.userId == "bob" }?.screenSharing == true)
        #expect(members.filter { $0.userId != "bob" }.allSatisfy { $0.screenSharing == nil })

        mark = carol.frames.values.count
        _ = try await bob.request(UpdateDeviceStateRequest(callId: callId, screenSharing: false), id: "d3")
        #expect(try await deviceChanged(carol, from: mark).screenSharing == false)
        await server.stop()
    }
}
