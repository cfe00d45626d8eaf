import Foundation
import Switchboard
import SwitchboardTestServers
import SwitchboardTesting
import SwitchboardTools
import Testing

@testable import SwitchboardProtocol
@testable import SwitchboardServer

/// What an attacker who read docs/PROTOCOL.md tried (issue 12): each finding, reproduced against a
/// real server, answered with a stable code while everybody else's calls keep working.
struct HostileInputTests {
    /// A correctly signed UserSig whose lifetime runs past `Int64.max` once crashed the process.
    @Test(arguments: [false, true])
    func aLifetimePastTheEndOfTimeIsNotACrash(asString: Bool) async throws {
        let server = try await TestServer.start()
        let time = server.clock.now() / 1000
        let expire = Int64.max
        let mac = UserSig.hmac(
            secretKey: server.app.secretKey, identifier: "mallory", sdkAppID: server.app.sdkAppID, time: time,
            expire: expire, userbuf: nil)
        let quote = asString ? "\"" : ""
        let json = """
            {"TLS.ver":"2.0","TLS.identifier":"mallory","TLS.sdkappid":\(server.app.sdkAppID.rawValue),\
            "TLS.expire":\(quote)\(expire)\(quote),"TLS.time":\(quote)\(time)\(quote),"TLS.sig":"\(mac)"}
            """
        let sig = UserSig.encodeBase64URL(zlibCompress(Data(json.utf8)))
        let raw = try await RawClient(url: server.url)
        let answer = try await raw.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: "mallory", userSig: sig), id: "login")
        // The signer chose "never expires"; the sig is theirs to sign.
        #expect(answer["result"] != nil)
        try await Self.expectACallWorks(on: server)
        await server.stop()
    }

    /// Garbage logins naming alice, from any address, through an app that does not exist or through
    /// hers, once locked her out for as long as the attacker kept going.
    @Test func strangersCannotLockAUserOut() async throws {
        let server = try await TestServer.start()
        let proxies = try await (2...4).asyncMap { try await TCPProxy.start(targetPort: server.port, sourceAddress: "127.0.0.\($0)") }
        for (index, proxy) in proxies.enumerated() {
            let mallory = try await RawClient(url: server.url(via: proxy))
            for attempt in 0..<12 {
                let app: SdkAppID = attempt.isMultiple(of: 2) ? 999 : server.app.sdkAppID
                let answer = try await mallory.request(
                    LoginRequest(sdkAppID: app, userID: "alice", userSig: "x"), id: "m\(index)-\(attempt)")
                #expect(RawClient.errorCode(answer) != nil)
            }
        }
        // The guesser is slowed down...
        let mallory = try await RawClient(url: server.url(via: proxies[0]))
        let slowed = try await mallory.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: "alice", userSig: "x"), id: "again")
        #expect(RawClient.errorCode(slowed) == SwitchboardError.Code.rateLimited.rawValue)
        // ...alice is not, from her own address or from the attacker's.
        for url in [server.url, server.url(via: proxies[0])] {
            let alice = try await RawClient(url: url)
            let answer = try await alice.request(
                LoginRequest(sdkAppID: server.app.sdkAppID, userID: "alice", userSig: server.userSig("alice")), id: "alice")
            #expect(answer["result"] != nil)
        }
        proxies.forEach { $0.stop() }
        await server.stop()
    }

    /// Every login without a `deviceId` is a new device; the answers remembered for devices that
    /// never come back once stayed forever (80 devices × 32 answers of a 1,000-entry block list:
    /// ~100 MB).
    @Test func answersOfDevicesThatNeverReturnAreFreed() async throws {
        let server = try await TestServer.start { $0.rateLimits.disabled = true }
        let ledger = server.node.inspection.ledger
        let owner = try await RawClient(url: server.url)
        _ = try await AbuseLimitTests.login(owner, server, "alice", id: "login")
        let many = (0..<BlockedUsersResponse.limit).map { UserID(rawValue: "u\($0)") }
        #expect(try await owner.request(BlockUsersRequest(userIds: many), id: "block")["result"] != nil)
        for device in 0..<8 {
            let raw = try await RawClient(url: server.url)
            _ = try await AbuseLimitTests.login(raw, server, "alice", id: "login")
            for index in 0..<RequestLedger.Limits().perDevice + 4 {
                let answer = try await raw.request(UnblockUsersRequest(userIds: ["nobody"]), id: "u\(device)-\(index)")
                #expect(answer["result"] != nil)
            }
            raw.close()
        }
        #expect(ledger.entryCount == 1 + 8 * RequestLedger.Limits().perDevice)
        #expect(ledger.byteCount > 8 * 32 * 5_000)
        // Ten minutes on, one request anywhere frees what nobody came back for.
        server.clock.advance(by: .milliseconds(RequestLedger.Limits().retention + 1))
        let late = try await RawClient(url: server.url)
        _ = try await AbuseLimitTests.login(late, server, "bob", id: "login")
        #expect(try await late.request(UnblockUsersRequest(userIds: ["nobody"]), id: "late")["result"] != nil)
        #expect(ledger.deviceCount == 1)
        #expect(ledger.byteCount < 1_000)
        await server.stop()
    }

    /// Two other users can still place, answer and end a call.
    static func expectACallWorks(on server: TestServer, caller: String = "carol", callee: String = "dave") async throws {
        let a = try await server.client(caller)
        let b = try await server.client(callee)
        let events = Recorder(b.callStore.events)
        let call = try await a.callStore.calls(participantIds: [callee], mediaType: .audio)
        try await events.first(from: 0, where: isReceived)
        try await b.callStore.accept()
        try await a.callStore.hangup()
        let ended = try await events.first(from: 0, where: isEnded)
        #expect(ended == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .hangup, userId: UserID(rawValue: caller)))
        try await a.loginStore.logout()
        try await b.loginStore.logout()
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
