import Foundation
import Logging
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import Testing

@testable import SwitchboardServer

/// Group calls through real Janus servers (Debian's `janus`, started by the tests on free ports
/// with `scripts/janus config`), driven by raw protocol clients: rooms made on the least loaded
/// server and destroyed with the call, each member's publish offer answered by Janus through the
/// server, a Janus that dies replaced by another (or by itself once it is back) with new sessions
/// for the members, and bad SFU requests refused with stable codes. The media itself (tracks,
/// layers, screens) is tested with Chromium and the GStreamer engine (Tests/Browser/run.py).
@Suite(.serialized, .enabled(if: JanusProcess.isAvailable, "needs janus (scripts/test installs it)"))
struct SFURoomTests {
    /// A member's raw connection.
    struct Member {
        var user: UserID
        var client: RawClient
    }

    struct Call {
        var server: TestServer
        var callId: CallID
        var members: [UserID: Member]

        func member(_ user: UserID) -> RawClient { members[user]!.client }
    }

    static func server(janus: [JanusProcess]) async throws -> TestServer {
        try await TestServer.start { configuration in
            configuration.sfu = SFUConfiguration(urls: janus.map(\.url), secret: JanusProcess.secret)
        }
    }

    static func login(_ server: TestServer, _ user: UserID) async throws -> RawClient {
        let client = try await RawClient(url: server.url)
        let response = try await client.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: user, userSig: server.userSig(user.rawValue)), id: "login")
        #expect(response["result"] != nil)
        return client
    }

    /// `caller` calls the others (a group call when there are two or more), and they answer.
    static func connect(_ server: TestServer, _ users: [UserID], mediaType: CallMediaType = .video) async throws -> Call {
        var members: [UserID: Member] = [:]
        for user in users { members[user] = Member(user: user, client: try await login(server, user)) }
        let caller = members[users[0]]!.client
        let started = try await caller.request(StartCallRequest(participantIds: Array(users.dropFirst()), mediaType: mediaType), id: "s")
        let callId = CallID(rawValue: try #require((started["result"] as? [String: Any])?["callId"] as? String))
        for user in users.dropFirst() {
            let answer = try await members[user]!.client.request(AcceptCallRequest(callId: callId), id: "a")
            #expect(RawClient.errorCode(answer) == nil)
        }
        return Call(server: server, callId: callId, members: members)
    }

    /// The next `sfuSession` a client gets from frame `start` on.
    static func session(_ client: RawClient, from start: Int = 0) async throws -> (session: Int, at: Int) {
        let frame = try await client.frames.first(from: start) { frame in
            RawClient.object(frame)?["event"] as? String == "sfuSession"
        }
        let values = client.frames.values
        let index = try #require((start..<values.count).first { values[$0] == frame })
        let data = try #require(RawClient.object(frame)?["data"] as? [String: Any])
        return (try #require(data["session"] as? Int), index)
    }

    static func sfuSignal(_ client: RawClient, from start: Int, connection: SFUConnection, kind: MediaSignalKind) async throws
        -> SFUSignalEvent
    {
        let frame = try await client.frames.first(from: start) { frame in
            guard let object = RawClient.object(frame), object["event"] as? String == "sfuSignal",
                let data = object["data"] as? [String: Any]
            else { return false }
            return data["connection"] as? String == connection.rawValue && data["kind"] as? String == kind.rawValue
        }
        guard case .sfuSignal(let signal) = try SwitchboardJSON.decode(ServerEvent.self, from: Data(frame.utf8)) else {
            throw SFUTestFailure(description: "not an sfuSignal: \(frame)")
        }
        return signal
    }

    /// A publish offer as a browser makes one (Janus checks ICE credentials, fingerprint, codecs).
    static func publishOffer(screen: Bool = false) -> String { FakeMediaEngine.browserLikePublishOffer(screen: screen) }

    /// Sends a publish offer for `session` and returns Janus's answer.
    static func publish(_ client: RawClient, _ callId: CallID, session: Int, id: String) async throws -> SFUSignalEvent {
        let start = client.frames.values.count
        let sent = try await client.request(
            SendSFUSignalRequest(
                callId: callId, session: session, connection: .publish, kind: .offer, sdp: publishOffer()), id: id)
        #expect(RawClient.errorCode(sent) == nil)
        return try await sfuSignal(client, from: start, connection: .publish, kind: .answer)
    }

    /// Whether a room exists on a Janus server, asked over a connection of the test's own.
    static func roomExists(_ number: UInt64, on janus: JanusProcess) async throws -> Bool {
        let server = JanusServer(
            url: janus.url, secret: JanusProcess.secret, clock: SystemClock(), logger: Logger(label: "test-janus"))
        await server.start()
        defer { Task { await server.stop() } }
        for _ in 0..<200 where !(await server.isUp) { try await Task.sleep(for: .milliseconds(10)) }
        let attached = try await server.request("attach", plugin: SFURooms.plugin, completion: .success)
        var exists = VideoRoomRequest(request: "exists")
        exists.room = number
        let answer = try await server.request("message", handle: attached.data?.id, body: exists, completion: .success)
        return answer.plugindata?.data.exists ?? false
    }

    static func placement(_ call: Call) async throws -> (url: String, room: UInt64) {
        let rooms = try #require(call.server.node.inspection.sfu)
        for _ in 0..<400 {
            if let placed = await rooms.placement(of: call.callId) { return placed }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw SFUTestFailure(description: "the call's room was never placed")
    }

    // MARK: - tests

    @Test func aGroupCallGetsARoomWhereEveryMemberPublishesAndTheRoomGoesWithTheCall() async throws {
        let janus = try await JanusProcess.start()
        defer { janus.stop() }
        let server = try await Self.server(janus: [janus])
        let call = try await Self.connect(server, ["alice", "bob", "carol"])
        for (user, member) in call.members {
            let started = try await member.client.frames.first(from: 0) { frame in
                RawClient.object(frame)?["event"] as? String == "callStarted"
            }
            let info = try #require((RawClient.object(started)?["data"] as? [String: Any])?["call"] as? [String: Any])
            #expect(info["media"] as? String == "sfu", "\(user)'s snapshot names the SFU")
            let session = try await Self.session(member.client).session
            let answer = try await Self.publish(member.client, call.callId, session: session, id: "p-\(user)")
            #expect(answer.session == session)
            #expect(answer.sdp?.contains("a=recvonly") == true, "Janus receives what the member sends")
            #expect(answer.sdp?.contains("m=video") == true)
        }
        let placed = try await Self.placement(call)
        #expect(placed.url == janus.url)
        #expect(try await Self.roomExists(placed.room, on: janus))

        // The call ends: its room goes.
        _ = try await call.member("bob").request(HangupCallRequest(callId: call.callId), id: "h1")
        _ = try await call.member("carol").request(HangupCallRequest(callId: call.callId), id: "h2")
        var gone = false
        for _ in 0..<400 {
            gone = try await !Self.roomExists(placed.room, on: janus)
            if gone { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(gone, "the ended call's room is destroyed")
        await server.stop()
    }

    @Test func aOneToOneCallStaysPeerToPeerUntilSomeoneIsInvited() async throws {
        let janus = try await JanusProcess.start()
        defer { janus.stop() }
        let server = try await Self.server(janus: [janus])
        let call = try await Self.connect(server, ["alice", "bob"])
        let alice = call.member("alice")
        let refused = try await alice.request(
            SendSFUSignalRequest(callId: call.callId, session: 1, connection: .publish, kind: .offer, sdp: Self.publishOffer()),
            id: "x")
        #expect(RawClient.errorCode(refused) == SwitchboardError.Code.sfuNotInUse.rawValue)
        let carol = try await Self.login(server, "carol")
        let mark = alice.frames.values.count
        _ = try await alice.request(InviteToCallRequest(callId: call.callId, participantIds: ["carol"]), id: "i")
        let session = try await Self.session(alice, from: mark).session
        let answer = try await Self.publish(alice, call.callId, session: session, id: "p")
        #expect(answer.sdp?.contains("a=recvonly") == true, "the call moved to the SFU with the invitation")
        _ = carol
        await server.stop()
    }

    @Test func roomsGoToTheLeastLoadedJanus() async throws {
        let first = try await JanusProcess.start()
        let second = try await JanusProcess.start()
        defer {
            first.stop()
            second.stop()
        }
        let server = try await Self.server(janus: [first, second])
        let big = try await Self.connect(server, ["alice", "bob", "carol"])
        let bigPlace = try await Self.placement(big)
        let small = try await Self.connect(server, ["dave", "erin", "frank"])
        let smallPlace = try await Self.placement(small)
        #expect(bigPlace.url != smallPlace.url, "the second call goes to the server with no members")
        // Two members leave the first call's server: it now has fewer members than the other.
        _ = try await big.member("carol").request(HangupCallRequest(callId: big.callId), id: "h")
        for _ in 0..<400 {
            let load = await server.node.inspection.sfu!.load()
            if load.first(where: { $0.url == bigPlace.url })?.members == 2 { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        let third = try await Self.connect(server, ["gina", "hank", "ivan"])
        #expect(try await Self.placement(third).url == bigPlace.url)
        await server.stop()
    }

    @Test func aJanusThatDiesIsReplacedAndTheCallGoesOn() async throws {
        let first = try await JanusProcess.start()
        let second = try await JanusProcess.start()
        defer {
            first.stop()
            second.stop()
        }
        let server = try await Self.server(janus: [first, second])
        let call = try await Self.connect(server, ["alice", "bob", "carol"])
        var sessions: [UserID: (session: Int, at: Int)] = [:]
        for (user, member) in call.members { sessions[user] = try await Self.session(member.client) }
        let placed = try await Self.placement(call)
        let dying = placed.url == first.url ? first : second
        let survivor = dying === first ? second : first
        dying.kill()
        for (user, member) in call.members {
            let next = try await Self.session(member.client, from: sessions[user]!.at + 1)
            #expect(next.session > sessions[user]!.session, "\(user) starts a new session")
            let answer = try await Self.publish(member.client, call.callId, session: next.session, id: "again-\(user)")
            #expect(answer.sdp?.contains("a=recvonly") == true)
        }
        let moved = try await Self.placement(call)
        #expect(moved.url == survivor.url)
        #expect(try await Self.roomExists(moved.room, on: survivor))
        // Same call: nobody heard it end.
        for member in call.members.values {
            #expect(!member.client.frames.values.contains { RawClient.object($0)?["event"] as? String == "callEnded" })
        }
        await server.stop()
    }

    @Test func theSameJanusTakesTheCallBackAfterARestart() async throws {
        let janus = try await JanusProcess.start()
        defer { janus.stop() }
        let server = try await Self.server(janus: [janus])
        let call = try await Self.connect(server, ["alice", "bob", "carol"])
        let alice = call.member("alice")
        let first = try await Self.session(alice)
        _ = try await Self.placement(call)
        janus.kill()
        // While no Janus is there the call goes on without media; once it is back (the server
        // tries again with backoff, on its clock), the members start over in a new room.
        let lost = try await Self.session(alice, from: first.at + 1)
        try await janus.restart()
        var latest = lost
        for _ in 0..<60 {
            server.clock.advance(by: .seconds(1))
            if let next = try? await Self.sessionSoon(alice, from: latest.at + 1) {
                latest = next
                break
            }
        }
        #expect(latest.session > lost.session, "a new session once Janus is back")
        let answer = try await Self.publish(alice, call.callId, session: latest.session, id: "back")
        #expect(answer.sdp?.contains("a=recvonly") == true)
        await server.stop()
    }

    @Test func badSFURequestsGetStableErrorsAndChangeNothing() async throws {
        let janus = try await JanusProcess.start()
        defer { janus.stop() }
        let server = try await Self.server(janus: [janus])
        let call = try await Self.connect(server, ["alice", "bob", "carol"])
        let alice = call.member("alice")
        let session = try await Self.session(alice).session
        let huge = String(repeating: "a", count: MediaLimits.maxSDPBytes + 1)
        let offer = Self.publishOffer()
        let fiveSections = Self.publishOffer(screen: true)
            + ["m=audio 9 UDP/TLS/RTP/SAVPF 111", "a=mid:3", "m=video 9 UDP/TLS/RTP/SAVPF 96", "a=mid:4", ""]
            .joined(separator: "\r\n")
        let cases: [(SendSFUSignalRequest, SwitchboardError.Code)] = [
            (SendSFUSignalRequest(callId: call.callId, session: session + 100, connection: .publish, kind: .offer, sdp: offer), .sfuSessionMismatch),
            (SendSFUSignalRequest(callId: call.callId, session: session, connection: .publish, kind: .answer, sdp: offer), .invalidParams),
            (SendSFUSignalRequest(callId: call.callId, session: session, connection: .subscribe, kind: .offer, sdp: offer), .invalidParams),
            (SendSFUSignalRequest(callId: call.callId, session: 0, connection: .publish, kind: .offer, sdp: offer), .invalidParams),
            (SendSFUSignalRequest(callId: call.callId, session: session, connection: .publish, kind: .offer, sdp: huge), .mediaPayloadTooLarge),
            (SendSFUSignalRequest(callId: call.callId, session: session, connection: .publish, kind: .offer, sdp: "v=0\r\nnonsense"), .invalidSessionDescription),
            (SendSFUSignalRequest(callId: call.callId, session: session, connection: .publish, kind: .offer, sdp: "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"), .invalidSessionDescription),
            (SendSFUSignalRequest(callId: call.callId, session: session, connection: .subscribe, kind: .answer, sdp: "hello"), .invalidSessionDescription),
            (SendSFUSignalRequest(callId: call.callId, session: session, connection: .publish, kind: .offer, sdp: fiveSections), .tooManyPublishedTracks),
            (SendSFUSignalRequest(callId: "no-such-call", session: session, connection: .publish, kind: .offer, sdp: offer), .callNotFound),
        ]
        for (index, (request, code)) in cases.enumerated() {
            let answer = try await alice.request(request, id: "bad-\(index)")
            #expect(RawClient.errorCode(answer) == code.rawValue, "case \(index)")
        }
        // Someone outside the call can neither publish nor subscribe in it, nor choose its layers.
        let mallory = try await Self.login(server, "mallory")
        let outside = try await mallory.request(
            SendSFUSignalRequest(callId: call.callId, session: session, connection: .publish, kind: .offer, sdp: offer), id: "m1")
        #expect(RawClient.errorCode(outside) == SwitchboardError.Code.notInCall.rawValue)
        let outsideLayer = try await mallory.request(SetVideoLayerRequest(callId: call.callId, userId: "bob", layer: .big), id: "m2")
        #expect(RawClient.errorCode(outsideLayer) == SwitchboardError.Code.notInCall.rawValue)
        let layers: [(SetVideoLayerRequest, SwitchboardError.Code?)] = [
            (SetVideoLayerRequest(callId: call.callId, userId: "bob", layer: .big), nil),
            (SetVideoLayerRequest(callId: call.callId, userId: "mallory", layer: .big), .peerNotInCall),
            (SetVideoLayerRequest(callId: call.callId, userId: "alice", layer: .small), .peerNotInCall),
        ]
        for (index, (request, code)) in layers.enumerated() {
            let answer = try await alice.request(request, id: "layer-\(index)")
            #expect(RawClient.errorCode(answer) == code?.rawValue, "layer case \(index)")
        }
        // An offer that passes the server's checks but Janus refuses (no ICE credentials) is
        // answered `{}` and refused by Janus; the member's next offer is answered as if nothing happened.
        let garbage = try await alice.request(
            SendSFUSignalRequest(
                callId: call.callId, session: session, connection: .publish, kind: .offer,
                sdp: "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:0\r\n"),
            id: "garbage")
        #expect(RawClient.errorCode(garbage) == nil)
        let answer = try await Self.publish(alice, call.callId, session: session, id: "good")
        #expect(answer.sdp?.contains("a=recvonly") == true)
        // Nobody else heard any of it.
        for user in ["bob", "carol"] as [UserID] {
            #expect(
                !call.member(user).frames.values.contains { frame in
                    (RawClient.object(frame)?["data"] as? [String: Any])?["connection"] as? String == "publish"
                        && RawClient.object(frame)?["event"] as? String == "sfuSignal"
                })
        }
        await server.stop()
    }

    /// The next `sfuSession` if it comes within a moment (polling while the test moves time).
    static func sessionSoon(_ client: RawClient, from start: Int) async throws -> (session: Int, at: Int)? {
        for _ in 0..<20 {
            if let index = client.frames.values.indices.dropFirst(start).first(where: {
                RawClient.object(client.frames.values[$0])?["event"] as? String == "sfuSession"
            }) {
                let data = RawClient.object(client.frames.values[index])?["data"] as? [String: Any]
                return (data?["session"] as? Int ?? 0, index)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }
}

struct SFUTestFailure: Error, CustomStringConvertible {
    var description: String
}
