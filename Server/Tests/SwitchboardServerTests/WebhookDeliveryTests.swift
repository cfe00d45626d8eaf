import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTestServers
import SwitchboardTesting
import SwitchboardTools
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Webhooks end to end in one process: a real server on the test clock, a real HTTP receiver on
/// loopback (allowed explicitly), real clients placing calls, the admin API configuring it all.
struct WebhookDeliveryTests {
    static func http(_ server: TestServer, _ method: String, _ path: String, body: [String: Any]? = nil) async throws
        -> (Int, [String: Any])
    {
        var request = URLRequest(url: URL(string: path, relativeTo: server.httpURL)!)
        request.httpMethod = method
        request.setValue("Bearer test-admin-secret", forHTTPHeaderField: "Authorization")
        if let body {
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        return (status, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
    }

    static func metrics(_ server: TestServer) async throws -> String {
        let (data, _) = try await URLSession.shared.data(from: URL(string: "/metrics", relativeTo: server.httpURL)!)
        return String(decoding: data, as: UTF8.self)
    }

    static func code(_ body: [String: Any]) -> Int? { (body["error"] as? [String: Any])?["code"] as? Int }

    /// Asks until `probe` gives a value (what the server notes after the receiver answered).
    static func eventually<T>(_ probe: () async throws -> T?) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let value = try await probe() { return value }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw RecorderTimeout(description: "the server did not get there within 30 s")
    }

    /// When the server will try a pending delivery again, once it has noted a failed attempt
    /// (the receiver sees the request before the server sees the answer).
    static func nextAttempt(_ server: TestServer, app: SdkAppID, endpoint: String, event: String) async throws -> Int64 {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let (_, page) = try await http(server, "GET", "/v1/apps/\(app)/webhooks/\(endpoint)/deliveries?state=pending")
            let delivery = (page["deliveries"] as? [[String: Any]])?.first { $0["eventId"] as? String == event }
            if let delivery, delivery["attempts"] as? Int == 1, let at = (delivery["nextAttemptAt"] as? NSNumber)?.int64Value { return at }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw RecorderTimeout(description: "the server did not note the failed attempt of \(event)")
    }

    static func start() async throws -> TestServer {
        try await TestServer.start { configuration in
            configuration.webhooks.allowedNetworks = [IPNetwork("127.0.0.0/8")!]
            configuration.webhooks.retry = WebhookRetrySchedule(
                initial: .seconds(2), maxInterval: .seconds(60), giveUpAfter: .seconds(600))
        }
    }

    static func verify(_ request: TestWebhookReceiver.Request, secrets: [String], now: Int64) throws {
        try WebhookSignature.verify(
            id: request.id, timestamp: request.timestamp, signature: request.signature, body: request.body,
            secrets: secrets, now: now / 1000)
    }

    /// Endpoints on loopback, private and link-local addresses are refused unless allowed, as are
    /// URLs that are not http(s) and unknown event types; each with its stable code.
    @Test func badEndpointsAreRefusedWithTheirCodes() async throws {
        let server = try await TestServer.start()
        let app = server.app.sdkAppID
        for (url, code) in [
            ("http://127.0.0.1:9/x", SwitchboardError.Code.webhookURLNotAllowed),
            ("http://169.254.169.254/latest/meta-data", .webhookURLNotAllowed),
            ("http://10.1.2.3/x", .webhookURLNotAllowed), ("http://[::1]/x", .webhookURLNotAllowed),
            ("http://[::ffff:127.0.0.1]/x", .webhookURLNotAllowed),
            ("ftp://example.com/x", .invalidWebhookURL), ("http://user:pw@example.com/x", .invalidWebhookURL),
        ] {
            let (status, body) = try await Self.http(server, "POST", "/v1/apps/\(app)/webhooks", body: ["url": url])
            #expect(status == 400 && Self.code(body) == code.rawValue, "\(url)")
        }
        let (status, body) = try await Self.http(
            server, "POST", "/v1/apps/\(app)/webhooks", body: ["url": "http://93.184.215.14/x", "events": ["call.nope"]])
        #expect(status == 400 && Self.code(body) == SwitchboardError.Code.unknownWebhookEvent.rawValue)
        let (listed, list) = try await Self.http(server, "GET", "/v1/apps/\(app)/webhooks")
        #expect(listed == 200 && (list["endpoints"] as? [Any])?.isEmpty == true)
        await server.stop()
    }

    /// A call's events reach the receiver signed, in order, each once it was taken: a 500 is
    /// retried on the clock (its call's later events wait behind it); the admin API lists the
    /// deliveries, rotates the secret (two signatures meanwhile), replays, pauses and resumes;
    /// metrics count what happened.
    @Test func aCallsEventsArriveSignedAndInOrderThroughRetries() async throws {
        let receiver = try await TestWebhookReceiver.start()
        let server = try await Self.start()
        let app = server.app.sdkAppID
        let (created, endpoint) = try await Self.http(server, "POST", "/v1/apps/\(app)/webhooks", body: ["url": receiver.url])
        #expect(created == 201)
        let endpointId = try #require(endpoint["id"] as? String)
        let secret = try #require(endpoint["secret"] as? String)
        // The first attempt at each call's second event fails.
        receiver.answer { _, id in
            guard let id, id.hasSuffix("_2") else { return 200 }
            return receiver.requests.values.contains { $0.id == id } ? 200 : 500
        }

        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let bobEvents = Recorder(bob.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bobEvents.first(from: 0) { if case .onCallReceived = $0 { true } else { false } }
        try await bob.callStore.accept()

        // The failure, then the retry once the clock passed its backoff (at most 2 s).
        let failed = try await receiver.requests.first(from: 0, timeout: .seconds(30)) { $0.status == 500 }
        #expect(failed.id == "evt_\(call.callId.rawValue)_2")
        #expect(!receiver.requests.values.contains { $0.event?.data.sequence ?? 0 > 2 })
        // Once the server noted the failure, the clock passes its backoff (at most 2 s).
        let retryAt = try await Self.nextAttempt(server, app: app, endpoint: endpointId, event: try #require(failed.id))
        #expect(retryAt > server.clock.now() && retryAt <= server.clock.now() + 2000)
        server.clock.advance(by: .milliseconds(retryAt - server.clock.now()))
        try await receiver.requests.first(from: 0, timeout: .seconds(30)) { $0.id == failed.id && $0.status == 200 }

        try await alice.callStore.hangup()
        let ended = try await receiver.requests.first(from: 0, timeout: .seconds(30)) { $0.event?.type == .callEnded }
        try await receiver.requests.matches(2, from: 0, timeout: .seconds(30)) { $0.event?.type == .recordWritten }

        let taken = receiver.requests.values.filter { $0.status == 200 }
        for request in taken { try Self.verify(request, secrets: [secret], now: server.clock.now()) }
        let sequences = taken.compactMap { $0.event?.data.sequence }
        #expect(sequences == Array(1...sequences.count), "one call's events in order, each once")
        let types = taken.compactMap { $0.event?.type }
        #expect(
            types.prefix(4) == [.callCreated, .memberInvited, .memberRinging, .memberAnswered]
                && types.suffix(2) == [.recordWritten, .recordWritten])
        #expect(types.contains(.memberLeft))
        guard case .callEnded(let end) = ended.event?.data else { throw RecorderTimeout(description: "no call.ended") }
        #expect(end.reason == .hangup && end.members.map(\.userId) == ["alice", "bob"])
        #expect(end.members.allSatisfy { $0.result == .answered })

        // The admin API: the deliveries, the retried one with its two attempts (once the server
        // noted the last answer, which the receiver recorded before sending it).
        let deliveries = try await Self.eventually {
            let (_, page) = try await Self.http(server, "GET", "/v1/apps/\(app)/webhooks/\(endpointId)/deliveries?state=delivered")
            let deliveries = page["deliveries"] as? [[String: Any]] ?? []
            return deliveries.count == taken.count ? deliveries : nil
        }
        #expect(Set(deliveries.compactMap { $0["eventId"] as? String }) == Set(taken.compactMap(\.id)))
        #expect(deliveries.first { $0["eventId"] as? String == failed.id }?["attempts"] as? Int == 2)
        let text = try await Self.metrics(server)
        #expect(text.contains(#"switchboard_webhook_sent_total{endpoint="\#(endpointId)"} \#(taken.count)"#))
        #expect(text.contains(#"switchboard_webhook_retried_total{endpoint="\#(endpointId)"} 1"#))

        // Rotation: both secrets sign until the old one expires; a replay comes with the same id.
        let (rotated, rotation) = try await Self.http(
            server, "POST", "/v1/apps/\(app)/webhooks/\(endpointId)/rotate-secret", body: ["previousSecretValidFor": 3600])
        let newSecret = try #require(rotation["secret"] as? String)
        #expect(rotated == 200 && newSecret != secret)
        // Paused: the replay waits; resumed: it comes (nothing came in between).
        let (paused, _) = try await Self.http(server, "POST", "/v1/apps/\(app)/webhooks/\(endpointId)/pause")
        #expect(paused == 200)
        let before = receiver.requests.values.count
        let (replayed, replay) = try await Self.http(
            server, "POST", "/v1/apps/\(app)/webhooks/\(endpointId)/replay", body: ["eventId": failed.id ?? ""])
        #expect(replayed == 200 && replay["queued"] as? Int == 1)
        #expect(receiver.requests.values.count == before)
        let (resumed, _) = try await Self.http(server, "POST", "/v1/apps/\(app)/webhooks/\(endpointId)/resume")
        #expect(resumed == 200)
        let again = try await receiver.requests.first(from: before, timeout: .seconds(30)) { _ in true }
        #expect(again.id == failed.id && again.body == taken[1].body)
        let signatures = try #require(again.signature).split(separator: " ")
        #expect(signatures.count == 2)
        try Self.verify(again, secrets: [newSecret], now: server.clock.now())
        try Self.verify(again, secrets: [secret], now: server.clock.now())

        // The records of the app, by user, with paging.
        let (queried, records) = try await Self.http(server, "GET", "/v1/apps/\(app)/records?userId=bob&result=answered&limit=1")
        let list = try #require(records["records"] as? [[String: Any]])
        #expect(queried == 200 && list.count == 1 && list.first?["userId"] as? String == "bob")
        let (badCursor, bad) = try await Self.http(server, "GET", "/v1/apps/\(app)/records?cursor=zzz")
        #expect(badCursor == 400 && Self.code(bad) == SwitchboardError.Code.invalidCursor.rawValue)

        await server.stop()
        await receiver.stop()
    }

    /// Events are kept through a restart: what was not delivered before the stop is delivered
    /// after it, once.
    @Test func undeliveredEventsSurviveARestart() async throws {
        let receiver = try await TestWebhookReceiver.start()
        receiver.answer { _, _ in 503 }
        let server = try await Self.start()
        let app = server.app.sdkAppID
        let (created, endpoint) = try await Self.http(server, "POST", "/v1/apps/\(app)/webhooks", body: ["url": receiver.url])
        #expect(created == 201)
        let secret = try #require(endpoint["secret"] as? String)
        let alice = try await server.client("alice")
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .video)
        // Bob was never online: the call ends at once (`call.member.missed`, offline).
        try await receiver.requests.first(from: 0, timeout: .seconds(30)) { $0.status == 503 }
        await server.stopKeepingFiles()

        receiver.answer { _, _ in 200 }
        let restarted = try await TestServer.start(clock: server.clock, directory: server.directory) { configuration in
            configuration.webhooks.allowedNetworks = [IPNetwork("127.0.0.0/8")!]
        }
        restarted.clock.advance(by: .seconds(10))
        let end = try await receiver.requests.first(from: 0, timeout: .seconds(30)) { $0.event?.type == .callEnded && $0.status == 200 }
        try Self.verify(end, secrets: [secret], now: restarted.clock.now())
        let taken = receiver.requests.values.filter { $0.status == 200 && $0.event?.data.callId == call.callId }
        let sequences = taken.compactMap { $0.event?.data.sequence }
        #expect(sequences == Array(1...sequences.count))
        await restarted.stop()
        await receiver.stop()
    }
}
