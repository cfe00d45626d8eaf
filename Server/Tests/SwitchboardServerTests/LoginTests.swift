import Foundation
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

struct LoginTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var code: SwitchboardError.Code
        var make: @Sendable (TestServer) -> LoginRequest
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "unsupported protocol version", code: .unsupportedProtocolVersion) { server in
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: "alice", userSig: server.userSig("alice"), protocolVersion: 2)
        },
        Case(name: "invalid userID", code: .invalidUserID) { server in
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: "al ice", userSig: server.userSig("alice"))
        },
        Case(name: "userID too long", code: .invalidUserID) { server in
            let long = String(repeating: "a", count: 33)
            return LoginRequest(sdkAppID: server.app.sdkAppID, userID: UserID(rawValue: long), userSig: server.userSig(long))
        },
        Case(name: "invalid deviceId", code: .invalidDeviceID) { server in
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: "alice", userSig: server.userSig("alice"), deviceId: "a b")
        },
        Case(name: "platform over 64 bytes", code: .invalidParams) { server in
            LoginRequest(
                sdkAppID: server.app.sdkAppID, userID: "alice", userSig: server.userSig("alice"),
                platform: String(repeating: "é", count: 33))
        },
        Case(name: "unknown app", code: .unknownApp) { server in
            LoginRequest(sdkAppID: 42, userID: "alice", userSig: server.userSig("alice"))
        },
        Case(name: "malformed UserSig", code: .userSigMalformed) { server in
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: "alice", userSig: "garbage")
        },
        Case(name: "forged UserSig", code: .userSigBadSignature) { server in
            let sig = UserSig.generate(
                sdkAppID: server.app.sdkAppID, secretKey: "guessed", userID: "alice", time: server.clock.now() / 1000)
            return LoginRequest(sdkAppID: server.app.sdkAppID, userID: "alice", userSig: sig)
        },
        Case(name: "expired UserSig", code: .userSigExpired) { server in
            let sig = UserSig.generate(
                sdkAppID: server.app.sdkAppID, secretKey: server.app.secretKey, userID: "alice", expire: 60,
                time: server.clock.now() / 1000 - 120)
            return LoginRequest(sdkAppID: server.app.sdkAppID, userID: "alice", userSig: sig)
        },
        Case(name: "UserSig from the future", code: .userSigNotYetValid) { server in
            let sig = UserSig.generate(
                sdkAppID: server.app.sdkAppID, secretKey: server.app.secretKey, userID: "alice",
                time: server.clock.now() / 1000 + 3600)
            return LoginRequest(sdkAppID: server.app.sdkAppID, userID: "alice", userSig: sig)
        },
        Case(name: "UserSig of another app", code: .userSigWrongApp) { server in
            let sig = UserSig.generate(
                sdkAppID: 1, secretKey: server.app.secretKey, userID: "alice", time: server.clock.now() / 1000)
            return LoginRequest(sdkAppID: server.app.sdkAppID, userID: "alice", userSig: sig)
        },
        Case(name: "UserSig of another user", code: .userSigWrongUser) { server in
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: "alice", userSig: server.userSig("mallory"))
        },
    ]

    @Test func eachLoginErrorHasItsCode() async throws {
        // Eleven refusals in a row from one address: above the default failed-login limit.
        let server = try await TestServer.start { configuration in
            configuration.rateLimits.failedLoginsPerIP = RateLimit(rate: 1, burst: 100)
            configuration.rateLimits.failedLoginsPerUser = RateLimit(rate: 1, burst: 100)
        }
        let raw = try await RawClient(url: server.url)
        for (index, item) in Self.cases.enumerated() {
            let response = try await raw.request(item.make(server), id: "l\(index)")
            #expect(RawClient.errorCode(response) == item.code.rawValue, "\(item.name): \(response)")
        }
        // After all the refusals the same connection can still log in.
        let ok = try await raw.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: "alice", userSig: server.userSig("alice")), id: "ok")
        let result = try #require(ok["result"] as? [String: Any])
        #expect(result["userID"] as? String == "alice")
        #expect((result["serverTime"] as? NSNumber)?.int64Value == server.clock.now())
        raw.close()
        await server.stop()
    }

    @Test func theSameDeviceLoggingInAgainReplacesTheOldConnection() async throws {
        let server = try await TestServer.start()
        let first = try await RawClient(url: server.url)
        let login = LoginRequest(
            sdkAppID: server.app.sdkAppID, userID: "alice", userSig: server.userSig("alice"), deviceId: "phone")
        #expect(try await first.request(login, id: "1")["result"] != nil)
        let second = try await RawClient(url: server.url)
        #expect(try await second.request(login, id: "1")["result"] != nil)
        let ended = try await first.frames.first(from: 0) { $0.contains("sessionEnded") }
        #expect(ended.contains("\(SwitchboardError.Code.sessionReplaced.rawValue)"))
        #expect(await first.frames.waitForEnd())
        #expect(try await second.request(PingRequest(), id: "2")["result"] != nil)
        await server.stop()
    }

    @Test func profilesAreKeptAndShownToCallees() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        try await alice.loginStore.setSelfInfo(nickname: "Alice A.", avatarURL: "https://example.com/a.png")
        #expect(alice.loginStore.state.selfInfo?.nickname == "Alice A.")
        try await alice.loginStore.setSelfInfo(avatarURL: "https://example.com/b.png")
        #expect(alice.loginStore.state.selfInfo?.nickname == "Alice A.")

        let again = try await server.client("alice", deviceId: "tablet")
        #expect(again.loginStore.state.selfInfo?.avatarURL == "https://example.com/b.png")

        let bob = try await server.client("bob")
        let bobEvents = Recorder(bob.callStore.events)
        _ = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bobEvents.first(from: 0) { if case .onCallReceived = $0 { true } else { false } }
        #expect(bob.callStore.state.allParticipants.first?.nickname == "Alice A.")
        await server.stop()
    }
}
