import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@testable import SwitchboardServer

/// WebRTC negotiation relayed over real WebSocket connections, ICE servers with coturn's
/// shared-secret credentials, and the development UserSig endpoint the browser client uses.
struct MediaSignalingTests {
    struct Setup {
        var server: TestServer
        var alice: RawClient
        var bob: RawClient
        var callId: CallID
    }

    /// alice called bob, bob answered; both are raw WebSocket clients.
    func connected(configure: (inout ServerConfiguration) -> Void = { _ in }) async throws -> Setup {
        let server = try await TestServer.start(configure: configure)
        func login(_ user: UserID) async throws -> RawClient {
            let client = try await RawClient(url: server.url)
            let response = try await client.request(
                LoginRequest(sdkAppID: server.app.sdkAppID, userID: user, userSig: server.userSig(user.rawValue)),
                id: "login")
            #expect(response["result"] != nil)
            return client
        }
        let alice = try await login("alice")
        let bob = try await login("bob")
        let started = try await alice.request(StartCallRequest(participantIds: ["bob"], mediaType: .video), id: "s")
        let callId = CallID(rawValue: ((started["result"] as? [String: Any])?["callId"] as? String) ?? "")
        #expect(RawClient.errorCode(try await bob.request(AcceptCallRequest(callId: callId), id: "a")) == nil)
        return Setup(server: server, alice: alice, bob: bob, callId: callId)
    }

    func signals(_ client: RawClient, from start: Int = 0, kind: MediaSignalKind) async throws -> MediaSignalEvent {
        let frame = try await client.frames.first(from: start) { frame in
            guard let object = RawClient.object(frame), object["event"] as? String == "mediaSignal" else { return false }
            return (object["data"] as? [String: Any])?["kind"] as? String == kind.rawValue
        }
        let event = try SwitchboardJSON.decode(ServerEvent.self, from: Data(frame.utf8))
        guard case .mediaSignal(let signal) = event else { fatalError("filtered for media signals") }
        return signal
    }

    @Test func offerAnswerAndCandidatesFlowBetweenTheMembers() async throws {
        let s = try await connected()
        let offer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\n" + String(repeating: "a=x\r\n", count: 1000)
        let sent = try await s.alice.request(SendMediaSignalRequest(callId: s.callId, to: "bob", kind: .offer, sdp: offer), id: "o")
        #expect(sent["result"] != nil)
        #expect(
            try await signals(s.bob, kind: .offer) == MediaSignalEvent(callId: s.callId, from: "alice", kind: .offer, sdp: offer))

        _ = try await s.bob.request(SendMediaSignalRequest(callId: s.callId, to: "alice", kind: .answer, sdp: "v=0 answer"), id: "x")
        #expect(try await signals(s.alice, kind: .answer).sdp == "v=0 answer")
        let candidate = IceCandidate(candidate: "candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host", sdpMid: "0", sdpMLineIndex: 0)
        _ = try await s.bob.request(
            SendMediaSignalRequest(callId: s.callId, to: "alice", kind: .candidate, candidate: candidate), id: "c1")
        #expect(try await signals(s.alice, kind: .candidate).candidate == candidate)
        let end = IceCandidate(candidate: "")
        _ = try await s.alice.request(SendMediaSignalRequest(callId: s.callId, to: "bob", kind: .candidate, candidate: end), id: "c2")
        #expect(try await signals(s.bob, kind: .candidate).candidate == end)
        _ = try await s.bob.request(SendMediaSignalRequest(callId: s.callId, to: "alice", kind: .restart), id: "r")
        #expect(try await signals(s.alice, kind: .restart).from == "bob")
        await s.server.stop()
    }

    @Test func badAndForeignSignalsGetStableErrors() async throws {
        let s = try await connected()
        let huge = String(repeating: "a", count: MediaLimits.maxSDPBytes + 1)
        let cases: [(SendMediaSignalRequest, SwitchboardError.Code)] = [
            (SendMediaSignalRequest(callId: s.callId, to: "bob", kind: .offer, sdp: huge), .mediaPayloadTooLarge),
            (
                SendMediaSignalRequest(
                    callId: s.callId, to: "bob", kind: .candidate,
                    candidate: IceCandidate(candidate: String(repeating: "c", count: 2000))), .mediaPayloadTooLarge
            ),
            (SendMediaSignalRequest(callId: s.callId, to: "bob", kind: .offer), .invalidParams),
            (SendMediaSignalRequest(callId: s.callId, to: "bob", kind: .restart, sdp: "v=0"), .invalidParams),
            (SendMediaSignalRequest(callId: s.callId, to: "carol", kind: .offer, sdp: "v=0"), .peerNotInCall),
            (SendMediaSignalRequest(callId: s.callId, to: "alice", kind: .offer, sdp: "v=0"), .peerNotInCall),
            (SendMediaSignalRequest(callId: "no-such-call", to: "bob", kind: .offer, sdp: "v=0"), .callNotFound),
        ]
        for (index, (request, code)) in cases.enumerated() {
            let response = try await s.alice.request(request, id: "bad\(index)")
            #expect(RawClient.errorCode(response) == code.rawValue, "case \(index)")
        }
        // Nobody outside the call reaches its members, even knowing the call id.
        let mallory = try await RawClient(url: s.server.url)
        _ = try await mallory.request(
            LoginRequest(sdkAppID: s.server.app.sdkAppID, userID: "mallory", userSig: s.server.userSig("mallory")), id: "l")
        let foreign = try await mallory.request(
            SendMediaSignalRequest(callId: s.callId, to: "bob", kind: .offer, sdp: "v=0"), id: "m")
        #expect(RawClient.errorCode(foreign) == SwitchboardError.Code.notInCall.rawValue)
        // A frame with a wrong shape is refused, and the connection goes on.
        let malformed = try await s.alice.request(
            #"{"id":"w","type":"call.media","data":{"callId":"\#(s.callId)","to":"bob","kind":"shout"}}"#, id: "w")
        #expect(RawClient.errorCode(malformed) == SwitchboardError.Code.invalidParams.rawValue)
        // A good signal afterwards is the first bob receives: none of the refused ones, sent
        // before it, reached him.
        let ok = try await s.alice.request(
            SendMediaSignalRequest(callId: s.callId, to: "bob", kind: .offer, sdp: "v=0 good"), id: "ok")
        #expect(ok["result"] != nil)
        #expect(
            try await signals(s.bob, kind: .offer) == MediaSignalEvent(callId: s.callId, from: "alice", kind: .offer, sdp: "v=0 good"))
        #expect(s.bob.frames.values.filter { $0.contains("mediaSignal") }.count == 1)
        await s.server.stop()
    }

    // MARK: - ICE servers

    @Test func iceServersCarryCoturnCredentialsForLoggedInUsersOnly() async throws {
        let s = try await connected { configuration in
            configuration.apps = [AppCredentials(sdkAppID: 1_400_000_001, secretKey: "ice-test-app-secret")]
            configuration.ice.stunURLs = ["stun:127.0.0.1:3478"]
            configuration.ice.turnURLs = ["turn:127.0.0.1:3478?transport=udp"]
            configuration.ice.turnSecret = "north-sea-secret"
        }
        let response = try await s.alice.request(IceServersRequest(), id: "ice")
        let data = try JSONSerialization.data(withJSONObject: response["result"] as Any)
        let servers = try SwitchboardJSON.decode(IceServersResponse.self, from: data)
        // The test clock starts at 1767225600 s; credentials last 24 h. The password is what Python's
        // base64(hmac.new(b"north-sea-secret", b"1767312000:1400000001:alice", sha1).digest()) gives,
        // and coturn checks. The app is in the name: another app's alice is another TURN user.
        #expect(
            servers
                == IceServersResponse(
                    iceServers: [
                        IceServer(urls: ["stun:127.0.0.1:3478"]),
                        IceServer(
                            urls: ["turn:127.0.0.1:3478?transport=udp"], username: "1767312000:1400000001:alice",
                            credential: "FrGPTY7vjzNYMw63fDZ6GiKIbRU="),
                    ], expiresAt: 1_767_312_000_000))

        let anonymous = try await RawClient(url: s.server.url)
        let refused = try await anonymous.request(IceServersRequest(), id: "ice")
        #expect(RawClient.errorCode(refused) == SwitchboardError.Code.notLoggedIn.rawValue)

        let (status, body) = try await AdminAPITests.http(
            s.server, "GET", "/v1/apps/\(s.server.app.sdkAppID)/users/bob/ice-servers")
        #expect(status == 200 && (body["iceServers"] as? [[String: Any]])?.last?["username"] as? String == "1767312000:1400000001:bob")
        let (denied, _) = try await AdminAPITests.http(
            s.server, "GET", "/v1/apps/\(s.server.app.sdkAppID)/users/bob/ice-servers", secret: nil)
        #expect(denied == 401)
        await s.server.stop()
    }

    @Test func withoutStunOrTurnClientsUseHostCandidates() async throws {
        let s = try await connected()
        let response = try await s.alice.request(IceServersRequest(), id: "ice")
        let result = response["result"] as? [String: Any]
        #expect((result?["iceServers"] as? [Any])?.isEmpty == true && result?["expiresAt"] == nil)
        await s.server.stop()
    }

    // MARK: - development UserSigs

    @Test func developmentUserSigsOnlyInDevelopmentMode() async throws {
        let server = try await TestServer.start()
        let (status, body) = try await AdminAPITests.http(server, "GET", "/v1/dev/usersig?userID=alice", secret: nil)
        #expect(status == 200 && body["userID"] as? String == "alice")
        let sig = try #require(body["userSig"] as? String)
        let fields = try UserSig.verify(
            sig, sdkAppID: server.app.sdkAppID, secretKey: server.app.secretKey, userID: "alice",
            now: server.clock.now() / 1000)
        #expect(fields.identifier == "alice" && body["sdkAppID"] as? Int64 == server.app.sdkAppID.rawValue)
        let (bad, badBody) = try await AdminAPITests.http(server, "GET", "/v1/dev/usersig?userID=not%20valid", secret: nil)
        #expect(bad == 400 && AdminAPITests.code(badBody) == SwitchboardError.Code.invalidUserID.rawValue)
        await server.stop()

        let production = try await TestServer.start { configuration in
            configuration.apps = [AppCredentials(sdkAppID: 1_400_000_777, secretKey: String(repeating: "k", count: 32))]
        }
        let (refused, refusedBody) = try await AdminAPITests.http(
            production, "GET", "/v1/dev/usersig?userID=alice", secret: nil)
        #expect(refused == 403 && AdminAPITests.code(refusedBody) == SwitchboardError.Code.developmentOnly.rawValue)
        await production.stop()
    }
}
