import Foundation
import SwitchboardProtocol
import SwitchboardTestServers
import Testing

/// No device acts for another (issue 28): a member in a call acts only from the device in the
/// call. bob answers on his phone; his tablet, logged in as the same user, tries every request
/// that acts for him there and is refused with `notInCall`, changing nothing; the phone then does
/// the same and it works. (CallStateMachineTests' `deviceScope` table has the rule row by row.)
struct DeviceScopeTests {
    static func login(_ server: TestServer, _ user: UserID, device: DeviceID) async throws -> RawClient {
        let client = try await RawClient(url: server.url)
        let response = try await client.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: user, userSig: server.userSig(user.rawValue), deviceId: device),
            id: "login")
        #expect(response["result"] != nil, "\(response)")
        return client
    }

    /// The `data` of the first event named `name` at or after `start` that `matches`.
    static func event(
        _ client: RawClient, _ name: String, from start: Int = 0, _ matches: @escaping @Sendable ([String: Any]) -> Bool = { _ in true }
    ) async throws -> [String: Any] {
        let frame = try await client.frames.first(from: start) { frame in
            guard let object = RawClient.object(frame), object["event"] as? String == name else { return false }
            return matches(object["data"] as? [String: Any] ?? [:])
        }
        return RawClient.object(frame)?["data"] as? [String: Any] ?? [:]
    }

    static func events(_ client: RawClient, _ name: String) -> [[String: Any]] {
        client.frames.values.compactMap { frame in
            guard let object = RawClient.object(frame), object["event"] as? String == name else { return nil }
            return object["data"] as? [String: Any]
        }
    }

    /// Refused as documented (PROTOCOL.md; golden response.error.otherDevice).
    static func expectRefused(_ response: [String: Any], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let error = response["error"] as? [String: Any]
        #expect(
            error?["code"] as? Int == SwitchboardError.Code.notInCall.rawValue
                && error?["message"] as? String == "this device is not the one in the call",
            "\(what): \(response)", sourceLocation: sourceLocation)
    }

    static func expectOK(_ response: [String: Any], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response["result"] != nil, "\(what): \(response)", sourceLocation: sourceLocation)
    }

    static func callId(_ response: [String: Any]) throws -> CallID {
        CallID(rawValue: try #require((response["result"] as? [String: Any])?["callId"] as? String))
    }

    @Test func onlyTheDeviceInTheCallActsForTheMember() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.login(server, "alice", device: "alice-laptop")
        let phone = try await Self.login(server, "bob", device: "bob-phone")
        let tablet = try await Self.login(server, "bob", device: "bob-tablet")
        let call = try Self.callId(
            try await alice.request(StartCallRequest(participantIds: ["bob"], mediaType: .video), id: "start"))
        Self.expectOK(try await phone.request(AcceptCallRequest(callId: call), id: "accept"), "accept")
        _ = try await Self.event(tablet, "callElsewhere")

        // Device state: microphone, camera, screen sharing. The tablet's microphone-off is refused;
        // the phone's camera-off reaches alice with the microphone still on.
        Self.expectRefused(
            try await tablet.request(UpdateDeviceStateRequest(callId: call, microphoneOn: false), id: "t-mic"), "microphone")
        Self.expectRefused(
            try await tablet.request(UpdateDeviceStateRequest(callId: call, screenSharing: true), id: "t-screen"),
            "screen sharing")
        Self.expectOK(try await phone.request(UpdateDeviceStateRequest(callId: call, cameraOn: false), id: "p-cam"), "camera")
        let changed = try await Self.event(alice, "deviceChanged")
        #expect(changed["microphoneOn"] as? Bool == true && changed["cameraOn"] as? Bool == false)
        #expect(changed["screenSharing"] as? Bool == false)
        Self.expectOK(try await phone.request(UpdateDeviceStateRequest(callId: call, screenSharing: true), id: "p-screen"), "screen")
        _ = try await Self.event(alice, "deviceChanged") { $0["screenSharing"] as? Bool == true }
        #expect(Self.events(alice, "deviceChanged").count == 2)

        // Status reports: the tablet's poor network is refused; alice hears the phone's.
        Self.expectRefused(
            try await tablet.request(
                StatusReportRequest(callId: call, packetLoss: 50, rtt: 2000, bitrate: 10, audioLevel: 90), id: "t-status"),
            "status report")
        Self.expectOK(
            try await phone.request(
                StatusReportRequest(callId: call, packetLoss: 0.1, rtt: 20, bitrate: 900, audioLevel: 10), id: "p-status"),
            "status report")
        let status = try await Self.event(alice, "memberStatus")
        #expect(status["networkQuality"] as? String == "excellent")
        // The statistics come in an event of their own after the status: waited for, not read.
        let stats = try await Self.event(alice, "memberStats")
        #expect(stats["rtt"] as? Int == 20)

        // Media signals.
        Self.expectRefused(
            try await tablet.request(SendMediaSignalRequest(callId: call, to: "alice", kind: .offer, sdp: "v=0 tablet"), id: "t-media"),
            "media signal")
        Self.expectOK(
            try await phone.request(SendMediaSignalRequest(callId: call, to: "alice", kind: .offer, sdp: "v=0 phone"), id: "p-media"),
            "media signal")
        _ = try await Self.event(alice, "mediaSignal")
        // By now any statistics of the tablet's refused report would have come: there are none.
        #expect(Self.events(alice, "memberStats").map { $0["rtt"] as? Int } == [20])
        #expect(Self.events(alice, "mediaSignal").map { $0["sdp"] as? String } == ["v=0 phone"])

        // A media-type change: asked for, cancelled, and answered only from the phone.
        Self.expectRefused(
            try await tablet.request(ChangeMediaTypeRequest(callId: call, mediaType: .audio), id: "t-change"), "change")
        let asked = try await phone.request(ChangeMediaTypeRequest(callId: call, mediaType: .audio), id: "p-change")
        let mine = TransactionID(rawValue: try #require((asked["result"] as? [String: Any])?["transactionId"] as? String))
        _ = try await Self.event(alice, "mediaTypeChangeRequested")
        #expect(Self.events(alice, "mediaTypeChangeRequested").count == 1)
        Self.expectRefused(
            try await tablet.request(CancelMediaTypeChangeRequest(callId: call, transactionId: mine), id: "t-cancel"), "cancel")
        Self.expectOK(
            try await phone.request(CancelMediaTypeChangeRequest(callId: call, transactionId: mine), id: "p-cancel"), "cancel")
        _ = try await Self.event(alice, "mediaTypeChangeResult") { $0["result"] as? String == "canceled" }

        let offered = try await alice.request(ChangeMediaTypeRequest(callId: call, mediaType: .audio), id: "a-change")
        let theirs = TransactionID(rawValue: try #require((offered["result"] as? [String: Any])?["transactionId"] as? String))
        _ = try await Self.event(phone, "mediaTypeChangeRequested")
        Self.expectRefused(
            try await tablet.request(
                ReplyMediaTypeChangeRequest(callId: call, transactionId: theirs, agree: true), id: "t-reply"),
            "reply")
        Self.expectOK(
            try await phone.request(
                ReplyMediaTypeChangeRequest(callId: call, transactionId: theirs, agree: false), id: "p-reply"),
            "reply")
        // The phone's decline is the answer: the tablet's agreement changed nothing.
        let result = try await Self.event(alice, "mediaTypeChangeResult") { $0["transactionId"] as? String == theirs.rawValue }
        #expect(result["result"] as? String == "declined")

        // Hanging up: the tablet cannot end the phone's call; the phone can.
        Self.expectRefused(try await tablet.request(HangupCallRequest(callId: call), id: "t-hangup"), "hang-up")
        Self.expectOK(
            try await phone.request(UpdateDeviceStateRequest(callId: call, cameraOn: true), id: "p-still-in"), "still in the call")
        #expect(Self.events(alice, "callEnded").isEmpty)
        Self.expectOK(try await phone.request(HangupCallRequest(callId: call), id: "p-hangup"), "hang-up")
        let ended = try await Self.event(alice, "callEnded")
        #expect(ended["reason"] as? String == "hangup" && ended["userId"] as? String == "bob")

        // Invitations into a group call.
        let group = try Self.callId(
            try await alice.request(StartCallRequest(participantIds: ["bob", "carol"], mediaType: .audio), id: "group"))
        _ = try await Self.event(phone, "callReceived") { ($0["call"] as? [String: Any])?["callId"] as? String == group.rawValue }
        Self.expectOK(try await phone.request(AcceptCallRequest(callId: group), id: "g-accept"), "accept")
        Self.expectRefused(
            try await tablet.request(InviteToCallRequest(callId: group, participantIds: ["dave"]), id: "t-invite"), "invite")
        let invited = try await phone.request(InviteToCallRequest(callId: group, participantIds: ["erin"]), id: "p-invite")
        let participants = ((invited["result"] as? [String: Any])?["call"] as? [String: Any])?["participants"] as? [[String: Any]]
        #expect(participants?.compactMap { $0["userId"] as? String } == ["alice", "bob", "carol", "erin"])
        await server.stop()
    }
}
