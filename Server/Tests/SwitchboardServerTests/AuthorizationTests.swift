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

/// Nobody reads, changes or ends what is not theirs (SPEC §9, issue 8).
struct AuthorizationTests {
    /// mallory against a group call of alice and bob and a one-to-one call of carol and dave.
    @Test func aStrangerCanDoNothingToOtherPeoplesCalls() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let carol = try await server.client("carol")
        let dave = try await server.client("dave")
        let mallory = try await server.client("mallory")
        let bobEvents = Recorder(bob.callStore.events)
        let daveEvents = Recorder(dave.callStore.events)
        let group = try await alice.callStore.calls(participantIds: ["bob", "zed"], mediaType: .audio).callId
        try await bobEvents.first(from: 0, where: isReceived)
        try await bob.callStore.accept()
        let single = try await carol.callStore.calls(participantIds: ["dave"], mediaType: .audio).callId
        try await daveEvents.first(from: 0, where: isReceived)
        try await dave.callStore.accept()

        let raw = try await RawClient(url: server.url)
        _ = try await raw.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: "mallory", userSig: server.userSig("mallory")), id: "login")
        let attempts: [(String, any SignalingRequest, SwitchboardError.Code)] = [
            ("accept", AcceptCallRequest(callId: group), .notInCall),
            ("reject", RejectCallRequest(callId: group), .notInCall),
            ("hangup", HangupCallRequest(callId: group), .notInCall),
            ("invite", InviteToCallRequest(callId: group, participantIds: ["mallory2"]), .notInCall),
            ("join", JoinCallRequest(callId: group), .joinNotAllowed),
            ("devices", UpdateDeviceStateRequest(callId: group, microphoneOn: false), .notInCall),
            ("status", StatusReportRequest(callId: group, packetLoss: 0, rtt: 1, bitrate: 1, audioLevel: 1), .notInCall),
            ("change media", ChangeMediaTypeRequest(callId: single, mediaType: .video), .notInCall),
            ("reply media", ReplyMediaTypeChangeRequest(callId: single, transactionId: "t", agree: true), .notInCall),
            ("cancel media", CancelMediaTypeChangeRequest(callId: single, transactionId: "t"), .notInCall),
            ("join one-to-one", JoinCallRequest(callId: single), .groupCallOnly),
        ]
        for (index, (name, request, code)) in attempts.enumerated() {
            let response = try await raw.request(Self.frame(request, id: "a\(index)"), id: "a\(index)")
            #expect(RawClient.errorCode(response) == code.rawValue, "\(name): \(response)")
        }
        // Both calls are untouched.
        #expect(alice.callStore.state.activeCall?.callId == group && alice.callStore.state.selfInfo.status == .accept)
        #expect(carol.callStore.state.activeCall?.callId == single && carol.callStore.state.selfInfo.status == .accept)
        #expect(alice.callStore.state.allParticipants.map(\.userId) == ["alice", "bob", "zed"])

        // Records: mallory, who has a record of her own, sees only hers, and deleting carol's call
        // (by id, then all of hers) leaves carol's record as it was.
        let carolEvents = Recorder(carol.callStore.events)
        let malloryEvents = Recorder(mallory.callStore.events)
        try await carol.callStore.hangup()
        let carolRecord = try #require(await carolEvents.first(from: 0, where: isRecord).record)
        let own = try await mallory.callStore.calls(participantIds: ["nobody"], mediaType: .audio).callId
        try await malloryEvents.first(from: 0) { $0.record?.callId == own }
        #expect(try await mallory.callStore.queryRecords(count: 100).records.map(\.callId) == [own])
        #expect(try await mallory.callStore.deleteRecords(callIds: [single]) == 0)
        #expect(try await mallory.callStore.deleteAllRecords() == 1)
        #expect(try await carol.callStore.queryRecords(count: 100).records == [carolRecord])
        raw.close()
        await server.stop()
    }

    static func frame(_ request: any SignalingRequest, id: String) throws -> String {
        func encode<R: SignalingRequest>(_ request: R) throws -> String {
            try SwitchboardJSON.encodeString(RequestEnvelope(id: RequestID(rawValue: id), data: request))
        }
        return try encode(request)
    }

    @Test func everyAdminEndpointWantsTheSecret() async throws {
        let server = try await TestServer.start()
        let app = server.app.sdkAppID
        let endpoints: [(String, String)] = [
            ("POST", "/v1/calls/c/end"), ("GET", "/v1/apps/\(app)/users/alice/records"), ("GET", "/v1/apps/\(app)/online"),
            ("GET", "/v1/apps/\(app)/settings"), ("PUT", "/v1/apps/\(app)/settings"),
            ("GET", "/v1/apps/\(app)/groups/team/members"), ("PUT", "/v1/apps/\(app)/groups/team/members"),
        ]
        for (method, path) in endpoints {
            for secret in [nil, "wrong", "test-admin-secretX", ""] as [String?] {
                var request = URLRequest(url: URL(string: path, relativeTo: server.httpURL)!)
                request.httpMethod = method
                if let secret { request.setValue("Bearer \(secret)", forHTTPHeaderField: "Authorization") }
                if method != "GET" { request.httpBody = Data(#"{"busyPolicy":"callWaiting","userIds":["x"]}"#.utf8) }
                let (data, response) = try await URLSession.shared.data(for: request)
                #expect((response as? HTTPURLResponse)?.statusCode == 401, "\(method) \(path) with \(secret ?? "none")")
                #expect(String(decoding: data, as: UTF8.self).contains("5004"))
            }
        }
        // Nothing changed.
        var check = URLRequest(url: URL(string: "/v1/apps/\(app)/settings", relativeTo: server.httpURL)!)
        check.setValue("Bearer test-admin-secret", forHTTPHeaderField: "Authorization")
        let (settings, _) = try await URLSession.shared.data(for: check)
        #expect(String(decoding: settings, as: UTF8.self).contains(#""busyPolicy":"reject""#))
        await server.stop()
    }
}
