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

struct AdminAPITests {
    static func http(
        _ server: TestServer, _ method: String, _ path: String, secret: String? = "test-admin-secret"
    ) async throws -> (Int, [String: Any]) {
        var request = URLRequest(url: URL(string: path, relativeTo: server.httpURL)!)
        request.httpMethod = method
        if let secret { request.setValue("Bearer \(secret)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        return (status, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
    }

    static func code(_ body: [String: Any]) -> Int? { (body["error"] as? [String: Any])?["code"] as? Int }

    @Test func endingACallFromTheAdminAPI() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bobEvents.first(from: 0) { if case .onCallReceived = $0 { true } else { false } }
        try await bob.callStore.accept()

        let (denied, deniedBody) = try await Self.http(server, "POST", "/v1/calls/\(call.callId)/end", secret: nil)
        #expect(denied == 401 && Self.code(deniedBody) == SwitchboardError.Code.unauthorized.rawValue)
        let (wrong, _) = try await Self.http(server, "POST", "/v1/calls/\(call.callId)/end", secret: "guess")
        #expect(wrong == 401)
        #expect(alice.callStore.state.activeCall != nil)

        let (status, body) = try await Self.http(server, "POST", "/v1/calls/\(call.callId)/end")
        #expect(status == 200 && body["ended"] as? Bool == true)
        for events in [aliceEvents, bobEvents] {
            let ended = try await events.first(from: 0) { if case .onCallEnded = $0 { true } else { false } }
            #expect(ended == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .endByServer, userId: nil))
        }
        let (again, againBody) = try await Self.http(server, "POST", "/v1/calls/\(call.callId)/end")
        #expect(again == 409 && Self.code(againBody) == SwitchboardError.Code.callAlreadyEnded.rawValue)
        let (missing, missingBody) = try await Self.http(server, "POST", "/v1/calls/nope/end")
        #expect(missing == 404 && Self.code(missingBody) == SwitchboardError.Code.callNotFound.rawValue)
        await server.stop()
    }

    @Test func recordsOnlineUsersAndHealth() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice", deviceId: "phone")
        let bob = try await server.client("bob")
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        _ = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .video)
        try await bobEvents.first(from: 0) { if case .onCallReceived = $0 { true } else { false } }
        try await bob.callStore.reject()
        try await aliceEvents.first(from: 0) { if case .onCallRecord = $0 { true } else { false } }

        let app = server.app.sdkAppID
        let (status, body) = try await Self.http(server, "GET", "/v1/apps/\(app)/users/alice/records?count=10")
        #expect(status == 200)
        let records = try #require(body["records"] as? [[String: Any]])
        #expect(records.count == 1 && records.first?["result"] as? String == "rejected")

        let (badCount, badBody) = try await Self.http(server, "GET", "/v1/apps/\(app)/users/alice/records?count=500")
        #expect(badCount == 400 && Self.code(badBody) == SwitchboardError.Code.invalidRecordCount.rawValue)
        let (badUser, _) = try await Self.http(server, "GET", "/v1/apps/\(app)/users/bad%20user/records")
        #expect(badUser == 400)
        let (noApp, _) = try await Self.http(server, "GET", "/v1/apps/9/users/alice/records")
        #expect(noApp == 404)
        let (unauthorized, _) = try await Self.http(server, "GET", "/v1/apps/\(app)/online", secret: nil)
        #expect(unauthorized == 401)

        let (onlineStatus, online) = try await Self.http(server, "GET", "/v1/apps/\(app)/online")
        #expect(onlineStatus == 200)
        let users = try #require(online["users"] as? [[String: Any]])
        #expect(users.map { $0["userId"] as? String } == ["alice", "bob"])
        let devices = users.first?["devices"] as? [[String: Any]]
        #expect(devices?.first?["deviceId"] as? String == "phone")

        let (health, healthBody) = try await Self.http(server, "GET", "/health", secret: nil)
        #expect(health == 200 && healthBody["status"] as? String == "ok" && healthBody["devices"] as? Int == 2)
        await server.stop()
    }
}
