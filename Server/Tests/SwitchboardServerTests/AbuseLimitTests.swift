import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

@testable import SwitchboardServer

/// Abuse limits: the offender gets `rateLimited` with a retry-after, everyone else is unaffected,
/// and the limit lifts as the clock moves.
struct AbuseLimitTests {
    static func login(_ raw: RawClient, _ server: TestServer, _ user: String, id: String, sig: String? = nil) async throws
        -> [String: Any]
    {
        try await raw.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: UserID(rawValue: user), userSig: sig ?? server.userSig(user)),
            id: id)
    }

    static func retryAfter(_ response: [String: Any]) -> Int? {
        (response["error"] as? [String: Any])?["retryAfter"] as? Int
    }

    @Test func loginsPerAddressAreLimitedAndOtherAddressesAreNot() async throws {
        let server = try await TestServer.start { $0.rateLimits.loginsPerIP = RateLimit.per(60, 3, burst: 3) }
        let other = try await TCPProxy.start(targetPort: server.port, sourceAddress: "127.0.0.2")
        for index in 0..<3 {
            let raw = try await RawClient(url: server.url)
            #expect(try await Self.login(raw, server, "user\(index)", id: "l")["result"] != nil)
        }
        let refused = try await Self.login(try await RawClient(url: server.url), server, "user9", id: "l")
        #expect(RawClient.errorCode(refused) == SwitchboardError.Code.rateLimited.rawValue)
        #expect(Self.retryAfter(refused) == 20_000)
        // Another address is unaffected.
        let elsewhere = try await RawClient(url: server.url(via: other))
        #expect(try await Self.login(elsewhere, server, "user9", id: "l")["result"] != nil)
        // The limit lifts with time.
        server.clock.advance(by: .seconds(20))
        #expect(try await Self.login(try await RawClient(url: server.url), server, "user9", id: "l")["result"] != nil)
        other.stop()
        await server.stop()
    }

    @Test func failedLoginsSlowTheGuesserButNeverTheUser() async throws {
        let server = try await TestServer.start { limits in
            limits.rateLimits.failedLoginsPerIP = RateLimit.per(60, 2, burst: 2)
            limits.rateLimits.failedLoginsPerUser = RateLimit.per(60, 3, burst: 3)
        }
        let raw = try await RawClient(url: server.url)
        for attempt in 0..<2 {
            let bad = try await Self.login(raw, server, "alice", id: "bad\(attempt)", sig: "forged")
            #expect(RawClient.errorCode(bad) == SwitchboardError.Code.userSigMalformed.rawValue)
        }
        // The address has no failures left: its next bad login learns nothing but when to retry.
        let slowed = try await Self.login(raw, server, "alice", id: "bad2", sig: "forged")
        #expect(RawClient.errorCode(slowed) == SwitchboardError.Code.rateLimited.rawValue)
        #expect(Self.retryAfter(slowed) == 30_000)
        // A valid sig is proof: it logs in, even from the guesser's address.
        #expect(try await Self.login(raw, server, "bob", id: "good")["result"] != nil)

        // From another address, failures naming alice use up her failure budget (3): the guesser is
        // slowed there too, and alice herself still logs in.
        let other = try await TCPProxy.start(targetPort: server.port, sourceAddress: "127.0.0.3")
        let elsewhere = try await RawClient(url: server.url(via: other))
        let third = try await Self.login(elsewhere, server, "alice", id: "bad3", sig: "forged")
        #expect(RawClient.errorCode(third) == SwitchboardError.Code.userSigMalformed.rawValue)
        let fourth = try await Self.login(elsewhere, server, "alice", id: "bad4", sig: "forged")
        #expect(RawClient.errorCode(fourth) == SwitchboardError.Code.rateLimited.rawValue)
        let alice = try await RawClient(url: server.url(via: other))
        #expect(try await Self.login(alice, server, "alice", id: "alice")["result"] != nil)

        server.clock.advance(by: .seconds(30))
        let later = try await Self.login(try await RawClient(url: server.url), server, "carol", id: "x", sig: "forged")
        #expect(RawClient.errorCode(later) == SwitchboardError.Code.userSigMalformed.rawValue)
        other.stop()
        await server.stop()
    }

    @Test func aConnectionSendingTooFastIsSlowedButKept() async throws {
        let server = try await TestServer.start { $0.rateLimits.requestsPerConnection = RateLimit(rate: 1, burst: 5) }
        let raw = try await RawClient(url: server.url)
        let quiet = try await RawClient(url: server.url)
        var codes: [Int?] = []
        for index in 0..<7 {
            codes.append(RawClient.errorCode(try await raw.request(PingRequest(), id: "p\(index)")))
        }
        #expect(codes == [nil, nil, nil, nil, nil, 1008, 1008])
        #expect(try await quiet.request(PingRequest(), id: "q")["result"] != nil)
        server.clock.advance(by: .seconds(1))
        #expect(try await raw.request(PingRequest(), id: "after")["result"] != nil)
        await server.stop()
    }

    @Test func invitationsAndStatusReportsArePerUser() async throws {
        let server = try await TestServer.start { limits in
            limits.rateLimits.invitationsPerUser = RateLimit.per(60, 2, burst: 2)
            limits.rateLimits.statusReportsPerUser = RateLimit(rate: 1, burst: 1)
        }
        let alice = try await server.client("alice")
        let carol = try await server.client("carol")
        for _ in 0..<2 {
            let call = try await alice.callStore.calls(participantIds: ["nobody"], mediaType: .audio)
            _ = call
        }
        await expectCode(.rateLimited) { _ = try await alice.callStore.calls(participantIds: ["nobody"], mediaType: .audio) }
        // carol is not affected by alice's limit.
        let bob = try await server.client("bob")
        let bobEvents = Recorder(bob.callStore.events)
        _ = try await carol.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bobEvents.first(from: 0, where: isReceived)
        try await bob.callStore.accept()
        try await carol.callStore.reportStatus(packetLoss: 0, rtt: 10, bitrate: 10, audioLevel: 10)
        await expectCode(.rateLimited) { try await carol.callStore.reportStatus(packetLoss: 0, rtt: 10, bitrate: 10, audioLevel: 10) }
        try await bob.callStore.reportStatus(packetLoss: 0, rtt: 10, bitrate: 10, audioLevel: 10)
        server.clock.advance(by: .seconds(1))
        try await carol.callStore.reportStatus(packetLoss: 0, rtt: 10, bitrate: 10, audioLevel: 10)
        await server.stop()
    }

    @Test func limitsCanBeTurnedOff() async throws {
        let server = try await TestServer.start { limits in
            limits.rateLimits.requestsPerConnection = RateLimit(rate: 1, burst: 1)
            limits.rateLimits.disabled = true
        }
        let raw = try await RawClient(url: server.url)
        for index in 0..<20 {
            #expect(try await raw.request(PingRequest(), id: "p\(index)")["result"] != nil)
        }
        await server.stop()
    }

    @Test(arguments: [
        ("20/s:40", RateLimit(rate: 20, burst: 40)), ("30/min", RateLimit(rate: 0.5, burst: 30)),
        ("3600/h:10", RateLimit(rate: 1, burst: 10)),
    ])
    func limitsParse(text: String, limit: RateLimit) {
        #expect(RateLimit(parsing: text) == limit)
    }

    @Test(arguments: ["", "20", "20/day", "x/s", "-1/s", "5/s:0", "5/s:1:2", "1e300/s", "0.5/h", "5/s:99999999999"])
    func badLimitsDoNotParse(text: String) {
        #expect(RateLimit(parsing: text) == nil)
    }
}

struct BlockingTests {
    @Test func aBlockedCallerSeesARejectAndTheCalleeNeverRings() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let bobEvents = Recorder(bob.callStore.events)
        let aliceEvents = Recorder(alice.callStore.events)
        #expect(try await bob.callStore.blockUsers(["alice", "mallory"]) == ["alice", "mallory"])
        #expect(try await bob.callStore.blockedUsers() == ["alice", "mallory"])

        // The call seems to ring; bob declines it as a person would, within 3–12 s.
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        #expect(call.busyUserIds.isEmpty)
        server.clock.advance(by: .seconds(12))
        #expect(
            try await aliceEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .reject, userId: "bob"))
        let value = try #require(await aliceEvents.first(from: 0, where: isRecord).record)
        #expect(value.result == .rejected)

        // A group call: the others ring, and see bob ring too until he declines.
        let carol = try await server.client("carol")
        let carolEvents = Recorder(carol.callStore.events)
        let group = try await alice.callStore.calls(participantIds: ["bob", "carol"], mediaType: .audio)
        try await carolEvents.first(from: 0, where: isReceived)
        #expect(carol.callStore.state.allParticipants.first { $0.userId == "bob" }?.status == .waiting)
        try await carol.callStore.reject()
        server.clock.advance(by: .seconds(12))
        try await aliceEvents.first(from: 0) { if case .onCallEnded(group.callId, _, _, _) = $0 { true } else { false } }

        // bob has no record of either call, once alice's record of the second says it is stored.
        try await aliceEvents.first(from: 0) { $0.record?.callId == group.callId }
        #expect(try await bob.callStore.queryRecords().records.isEmpty)

        // bob was never disturbed: the first invitation he hears of is the one after the unblock.
        #expect(try await bob.callStore.unblockUsers(["alice"]) == ["mallory"])
        let allowed = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        #expect(try await bobEvents.first(from: 0, where: isReceived).receivedCallId == allowed.callId)
        await expectCode(.invalidUserID) { try await bob.callStore.blockUsers(["no spaces"]) }
        await server.stop()
    }

    /// The engine reads who blocks anyone when the server starts: a block made before a restart
    /// holds after it.
    @Test func aBlockHoldsAcrossARestart() async throws {
        let clock = TestClock()
        let server = try await TestServer.start(clock: clock)
        let bob = try await server.client("bob")
        #expect(try await bob.callStore.blockUsers(["alice"]) == ["alice"])
        await server.stopKeepingFiles()

        let again = try await TestServer.start(clock: clock, directory: server.directory)
        let alice = try await again.client("alice")
        let bobAgain = try await again.client("bob")
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bobAgain.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        clock.advance(by: .seconds(12))
        #expect(
            try await aliceEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .reject, userId: "bob"))
        // Unblocked, alice rings him: the first invitation bob hears of is this one.
        #expect(try await bobAgain.callStore.unblockUsers(["alice"]).isEmpty)
        let allowed = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        #expect(try await bobEvents.first(from: 0, where: isReceived).receivedCallId == allowed.callId)
        await again.stop()
    }

    @Test func theAppCanMakeBlockedCallersSeeOffline() async throws {
        let server = try await TestServer.start { $0.appSettings.blockedCallerSees = .offline }
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        try await bob.callStore.blockUsers(["alice"])
        let aliceEvents = Recorder(alice.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .video)
        #expect(
            try await aliceEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .video, reason: .offline, userId: "bob"))
        await server.stop()
    }
}

func isReceived(_ event: CallStoreEvent) -> Bool { if case .onCallReceived = event { true } else { false } }
func isEnded(_ event: CallStoreEvent) -> Bool { if case .onCallEnded = event { true } else { false } }
func isRecord(_ event: CallStoreEvent) -> Bool { if case .onCallRecord = event { true } else { false } }
