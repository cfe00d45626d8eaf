import Foundation
import SwitchboardProtocol
import SwitchboardTestServers
import Testing

@testable import SwitchboardServer

/// Ringing abuse (issue 28): a callee is rung at most so often by everyone together, and a
/// blocked caller cannot tell the block from a genuine rejection or an offline callee, by the
/// frames it gets or by their timing.
struct RingingAbuseTests {
    static func login(_ server: TestServer, _ user: UserID) async throws -> RawClient {
        try await DeviceScopeTests.login(server, user, device: DeviceID(rawValue: "\(user)-device"))
    }

    /// Places a call and returns its id and `createdAt`.
    static func call(_ caller: RawClient, _ callee: UserID, id: String) async throws -> (CallID, Int64) {
        let response = try await caller.request(StartCallRequest(participantIds: [callee], mediaType: .audio), id: id)
        let result = try #require(response["result"] as? [String: Any], "\(response)")
        let call = try #require(result["call"] as? [String: Any])
        return (CallID(rawValue: try #require(result["callId"] as? String)), try #require(call["createdAt"] as? Int64))
    }

    static func mentions(_ frame: String, _ call: CallID) -> Bool { frame.contains(call.rawValue) }

    /// Waits for the event `name` about `call`.
    static func event(_ client: RawClient, _ name: String, _ call: CallID) async throws {
        _ = try await client.frames.first(from: 0) { frame in
            RawClient.object(frame)?["event"] as? String == name && mentions(frame, call)
        }
    }

    /// The frames a client got about `call`, with what differs between two calls taken out: the
    /// call's id, the callee's id, request ids, and times (made relative to `createdAt`).
    static func normalized(_ client: RawClient, _ call: CallID, callee: UserID, createdAt: Int64) -> [String] {
        client.frames.values.filter { mentions($0, call) }.map { frame in
            let text = frame.replacingOccurrences(of: call.rawValue, with: "CALL")
                .replacingOccurrences(of: "\"\(callee.rawValue)\"", with: "\"CALLEE\"")
            guard let object = RawClient.object(text) else { return text }
            let relative = relativeTimes(object, createdAt) as? [String: Any] ?? [:]
            var withoutId = relative
            withoutId["id"] = nil
            let data = (try? JSONSerialization.data(withJSONObject: withoutId, options: [.sortedKeys])) ?? Data()
            return String(decoding: data, as: UTF8.self)
        }
    }

    static func relativeTimes(_ value: Any, _ base: Int64) -> Any {
        if let object = value as? [String: Any] {
            var copy: [String: Any] = [:]
            for (key, field) in object {
                if ["createdAt", "startTime", "endTime", "syncTime"].contains(key), let time = field as? Int64 {
                    copy[key] = time - base
                } else {
                    copy[key] = relativeTimes(field, base)
                }
            }
            return copy
        }
        if let array = value as? [Any] { return array.map { relativeTimes($0, base) } }
        return value
    }

    // MARK: - the limit per callee

    @Test func aCalleeRungTooOftenLooksOfflineToTheNextCaller() async throws {
        let server = try await TestServer.start { $0.rateLimits.invitationsPerCallee = RateLimit.per(60, 2, burst: 2) }
        let bob = try await Self.login(server, "bob")
        let mallory = try await Self.login(server, "mallory")
        let strangers = [try await Self.login(server, "s1"), try await Self.login(server, "s2"), try await Self.login(server, "s3")]
        _ = try await bob.request(BlockUsersRequest(userIds: ["mallory"]), id: "block")

        // Calls from someone bob blocks never reach him, so they do not count.
        for index in 0..<3 {
            let (call, _) = try await Self.call(mallory, "bob", id: "m\(index)")
            _ = try await mallory.request(HangupCallRequest(callId: call), id: "m-hangup\(index)")
        }
        // Two strangers ring him, and hang up.
        for (index, stranger) in strangers.prefix(2).enumerated() {
            let (call, _) = try await Self.call(stranger, "bob", id: "s\(index)")
            try await Self.event(bob, "callReceived", call)
            _ = try await stranger.request(HangupCallRequest(callId: call), id: "h\(index)")
            try await Self.event(bob, "callEnded", call)
        }
        // The third is one too many: bob does not ring, and the caller sees what a caller of a
        // callee without a device sees — no limit, no retry time.
        let (limited, limitedAt) = try await Self.call(strangers[2], "bob", id: "s2")
        try await Self.event(strangers[2], "callRecord", limited)
        // (A second apart, so that the record's syncTime is not moved past the first one's.)
        server.clock.advance(by: .seconds(1))
        let (offline, offlineAt) = try await Self.call(strangers[2], "nobody", id: "s3")
        try await Self.event(strangers[2], "callRecord", offline)
        let seen = Self.normalized(strangers[2], limited, callee: "bob", createdAt: limitedAt)
        #expect(seen.count == 3)
        #expect(seen == Self.normalized(strangers[2], offline, callee: "nobody", createdAt: offlineAt))
        #expect(!seen.joined().contains("retryAfter") && !seen.joined().contains("1008"))

        // The limit lifts with time: the next call rings him, and none before it did.
        server.clock.advance(by: .seconds(30))
        let (later, _) = try await Self.call(strangers[0], "bob", id: "s4")
        try await Self.event(bob, "callReceived", later)
        #expect(!bob.frames.values.contains { Self.mentions($0, limited) && $0.contains("callReceived") })
        await server.stop()
    }

    // MARK: - blocked callers

    /// The default mode: the caller sees the call ring and a rejection after a person's delay,
    /// frame for frame what bob's genuine rejection after the same time gives.
    @Test func aBlockedCallerSeesAGenuineRejection() async throws {
        let server = try await TestServer.start { $0.blockedCallerDecline = .seconds(5)...(.seconds(5)) }
        let alice = try await Self.login(server, "alice")
        let bob = try await Self.login(server, "bob")
        let dave = try await Self.login(server, "dave")
        _ = try await dave.request(BlockUsersRequest(userIds: ["alice"]), id: "block")

        // bob rings, and rejects 5 s later.
        let (genuine, genuineAt) = try await Self.call(alice, "bob", id: "to-bob")
        try await Self.event(bob, "callReceived", genuine)
        server.clock.advance(by: .seconds(5))
        _ = try await bob.request(RejectCallRequest(callId: genuine), id: "reject")
        try await Self.event(alice, "callRecord", genuine)

        // dave blocks alice. The answer says he rings; nothing more comes before the clock moves
        // (the ping's answer is sent after anything the call's start would have sent).
        let (blocked, blockedAt) = try await Self.call(alice, "dave", id: "to-dave")
        _ = try await alice.request(PingRequest(), id: "ping")
        #expect(alice.frames.values.filter { Self.mentions($0, blocked) }.count == 1)
        server.clock.advance(by: .seconds(5))
        try await Self.event(alice, "callRecord", blocked)

        let seen = Self.normalized(alice, blocked, callee: "dave", createdAt: blockedAt)
        #expect(seen.count == 3)
        #expect(seen == Self.normalized(alice, genuine, callee: "bob", createdAt: genuineAt))
        #expect(seen.first?.contains(#""status":"waiting""#) == true)

        // dave heard nothing of it and has no record of it.
        _ = try await dave.request(PingRequest(), id: "ping")
        #expect(!dave.frames.values.contains { Self.mentions($0, blocked) })
        let records = try await dave.request(QueryRecordsRequest(), id: "records")
        #expect(((records["result"] as? [String: Any])?["records"] as? [Any])?.isEmpty == true)
        await server.stop()
    }

    /// The decline comes after a delay drawn from the configured range (3–12 s by default), on
    /// the server's clock.
    @Test func theDeclineIsDrawnFromAPersonsDelay() async throws {
        let server = try await TestServer.start()
        let engine = server.node.inspection.engine
        let alice = try await Self.login(server, "alice")
        let dave = try await Self.login(server, "dave")
        _ = try await dave.request(BlockUsersRequest(userIds: ["alice"]), id: "block")
        let (call, createdAt) = try await Self.call(alice, "dave", id: "call")
        let decline = try #require(await engine.wakeDeadline) - createdAt
        #expect((3_000...12_000).contains(decline))
        server.clock.advance(by: .milliseconds(decline))
        try await Self.event(alice, "callEnded", call)
        let ended = try #require(alice.frames.values.last { Self.mentions($0, call) && $0.contains("callEnded") })
        #expect(ended.contains(#""reason":"reject""#) && ended.contains(#""userId":"dave""#))
        await server.stop()
    }

    /// The `offline` mode: the blocked caller sees what a caller of a callee without a device sees.
    @Test func aBlockedCallerSeesAGenuineOfflineCallee() async throws {
        let server = try await TestServer.start { $0.appSettings.blockedCallerSees = .offline }
        let alice = try await Self.login(server, "alice")
        let dave = try await Self.login(server, "dave")
        _ = try await dave.request(BlockUsersRequest(userIds: ["alice"]), id: "block")

        let (genuine, genuineAt) = try await Self.call(alice, "nobody", id: "to-nobody")
        try await Self.event(alice, "callRecord", genuine)
        server.clock.advance(by: .seconds(1))
        let (blocked, blockedAt) = try await Self.call(alice, "dave", id: "to-dave")
        try await Self.event(alice, "callRecord", blocked)

        let seen = Self.normalized(alice, blocked, callee: "dave", createdAt: blockedAt)
        #expect(seen.count == 3)
        #expect(seen == Self.normalized(alice, genuine, callee: "nobody", createdAt: genuineAt))
        _ = try await dave.request(PingRequest(), id: "ping")
        #expect(!dave.frames.values.contains { Self.mentions($0, blocked) })
        await server.stop()
    }
}
