import Foundation
import SwitchboardProtocol
import SwitchboardTestServers
import SwitchboardTesting
import SwitchboardTools
import Testing

@testable import SwitchboardServer

/// What a connection may cost the server (issue 12, findings 2, 5 and 7): a peer that does not
/// read, does not finish its request, does not log in, or speaks broken WebSocket is closed with
/// the documented code, and everybody else keeps working.
struct TransportLimitTests {
    static func login(_ socket: RawWebSocket, _ server: TestServer, _ user: String, device: String? = nil) async throws {
        let answer = try await socket.request(
            LoginRequest(
                sdkAppID: server.app.sdkAppID, userID: UserID(rawValue: user), userSig: server.userSig(user),
                deviceId: device.map(DeviceID.init(rawValue:))), id: "login")
        #expect(answer["result"] != nil, "\(user) could not log in: \(answer)")
    }

    static func isMemberDown(_ user: String) -> @Sendable (String) -> Bool {
        { text in
            text.contains(#""event":"memberStatus""#) && text.contains(#""userId":"\#(user)""#)
                && text.contains(#""networkQuality":"down""#)
        }
    }

    /// Finding 2: a member who stops reading while the other sends 32,000-byte offers is closed
    /// once its outgoing budget is spent; its calls follow the reconnect grace (the other member
    /// sees it `down`), and the sender's connection keeps working.
    @Test func aPeerThatStopsReadingIsClosedAndTheSenderKeepsWorking() async throws {
        let server = try await TestServer.start { configuration in
            configuration.rateLimits.disabled = true
            configuration.connections.outgoingBudgetBytes = 256 << 10
            // The sloth does not answer pings either: the budget, not the heartbeat, must close it
            // here, however long the sending takes on a loaded machine.
            configuration.heartbeatInterval = 300
        }
        let alice = try await RawWebSocket.connect(port: server.port)
        let sloth = try await RawWebSocket.connect(port: server.port)
        try await Self.login(alice, server, "alice")
        try await Self.login(sloth, server, "sloth")
        let started = try await alice.request(StartCallRequest(participantIds: ["sloth"], mediaType: .video), id: "s")
        let callId = CallID(rawValue: try #require((started["result"] as? [String: Any])?["callId"] as? String))
        #expect(try await sloth.request(AcceptCallRequest(callId: callId), id: "a")["result"] != nil)
        await sloth.stopReading()

        let sdp = "v=0\r\n" + String(repeating: "a=x\r\n", count: 6_398)
        let offer = try SwitchboardJSON.encodeString(
            RequestEnvelope(id: "o", data: SendMediaSignalRequest(callId: callId, to: "sloth", kind: .offer, sdp: sdp)))
        var sent = 0
        // Loopback's kernel buffers take several MB before the server has to hold anything.
        while server.node.inspection.metrics.slowReadersClosed == 0 && sent < 4_000 {
            for _ in 0..<50 { try await alice.send(text: offer) }
            sent += 50
            _ = try await alice.request(PingRequest(), id: "p\(sent)")
        }
        #expect(server.node.inspection.metrics.slowReadersClosed == 1, "sent \(sent) offers")
        let down = try await alice.waitForText(where: Self.isMemberDown("sloth"))
        #expect(down != nil)
        #expect(try await alice.request(PingRequest(), id: "still")["result"] != nil)
        await server.stop()
    }

    /// The server pings at the heartbeat's pace and closes a connection silent for a whole
    /// interval (not even the pong), so a device whose link died counts as dropped (and its
    /// reconnect grace starts) within two heartbeats, not a minute later (found by
    /// NetworkFailureTests: a 40 s blackout used to resume its call). Real time: 1 s intervals.
    @Test func aSilentConnectionIsClosedWithinTwoHeartbeats() async throws {
        let server = try await TestServer.start { $0.heartbeatInterval = 1 }
        let silent = try await RawWebSocket.connect(port: server.port)
        try await Self.login(silent, server, "alice")
        // This client reads but never answers: a ping, then the close, without a close frame.
        try await silent.tcp.waitUntilClosed()
        #expect(silent.frames.contains { $0.opcode == 0x9 })
        #expect(silent.closeCode == nil)
        await server.stop()
    }

    /// Finding 5: a connection upgraded to a WebSocket has 10 s to log in.
    @Test func aConnectionThatDoesNotLogInIsClosed() async throws {
        let server = try await TestServer.start()
        let idle = try await RawWebSocket.connect(port: server.port)
        let working = try await RawWebSocket.connect(port: server.port)
        try await Self.login(working, server, "alice")
        let now = server.clock.now()
        #expect(await server.node.inspection.deadlines.waitUntil { $0 == [now + 10_000] })
        server.clock.advance(by: .seconds(10))
        #expect(try await idle.waitForClose() == 1008)
        let ended = idle.frames.first { $0.text.contains("sessionEnded") }?.text ?? ""
        #expect(ended.contains("\(SwitchboardError.Code.loginTimeout.rawValue)"))
        // The logged-in connection is not affected.
        #expect(try await working.request(PingRequest(), id: "p")["result"] != nil)
        await server.stop()
    }

    /// Finding 5: slowloris. A request head or body that never completes is cut at its deadline.
    @Test func aRequestThatNeverCompletesIsCut() async throws {
        let server = try await TestServer.start()
        let deadlines = server.node.inspection.deadlines
        let now = server.clock.now()
        let head = try await RawTCPClient.connect(port: server.port)
        try await head.send("GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: webs")
        let body = try await RawTCPClient.connect(port: server.port)
        // An authorized request whose handler reads the body (an unauthorized one is answered at once).
        try await body.send(
            "PUT /v1/apps/\(server.app.sdkAppID)/settings HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Authorization: Bearer test-admin-secret\r\nContent-Length: 100\r\n\r\n{")
        // The head's deadline is 10 s from the connection; the body's 30 s from its head.
        #expect(await deadlines.waitUntil { $0 == [now + 10_000, now + 30_000] })
        server.clock.advance(by: .seconds(10))
        try await head.waitUntilClosed()
        #expect(await deadlines.waitUntil { $0 == [now + 30_000] })
        #expect(!body.isClosed)
        server.clock.advance(by: .seconds(20))
        try await body.waitUntilClosed()
        // A keep-alive connection left unused is closed too.
        let idle = try await RawTCPClient.connect(port: server.port)
        try await idle.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        try await idle.wait(for: "\"status\"")
        #expect(await deadlines.waitUntil { $0 == [now + 30_000 + 60_000] })
        server.clock.advance(by: .seconds(60))
        try await idle.waitUntilClosed()
        await server.stop()
    }

    /// Finding 5: one address cannot hold more than its share of connections that are not logged
    /// in; other addresses, and logged-in users, are not affected.
    @Test func oneAddressHoldsAtMostItsShareOfPendingConnections() async throws {
        let server = try await TestServer.start { $0.connections.maxPendingPerAddress = 5 }
        var held: [RawTCPClient] = []
        for _ in 0..<5 { held.append(try await RawTCPClient.connect(port: server.port, sourceAddress: "127.0.0.9")) }
        // Admitted (each has its head deadline) before the sixth: connections are admitted on their
        // own event loops, so a sixth connected at once could be admitted before one of the five.
        #expect(await server.node.inspection.deadlines.waitUntil { $0.count == 5 })
        let refused = try await RawTCPClient.connect(port: server.port, sourceAddress: "127.0.0.9")
        try await refused.waitUntilClosed()
        // Another address connects and logs in.
        let other = try await RawWebSocket.connect(port: server.port, sourceAddress: "127.0.0.10")
        try await Self.login(other, server, "bob")
        // Logging in frees the address's share.
        await held[0].close()
        // Once the server saw it close, its head deadline is gone: four pending connections are left.
        #expect(await server.node.inspection.deadlines.waitUntil { $0.count == 4 })
        let again = try await RawWebSocket.connect(port: server.port, sourceAddress: "127.0.0.9")
        try await Self.login(again, server, "carol")
        let more = try await RawWebSocket.connect(port: server.port, sourceAddress: "127.0.0.9")
        try await Self.login(more, server, "dave")
        #expect(server.node.inspection.gate.counts.pending == 4)
        await server.stop()
    }

    /// Finding 5: connections are capped below the open-file limit; a flood of connections that do
    /// not log in, from many addresses, closes the oldest of them, never a logged-in user's.
    @Test(.timeLimit(.minutes(1))) func aFloodNeverTakesLoggedInUsersConnections() async throws {
        let server = try await TestServer.start { configuration in
            configuration.connections.maxConnections = 40
            configuration.connections.maxPending = 10
        }
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        var flood: [RawTCPClient] = []
        for index in 0..<30 {
            flood.append(try await RawTCPClient.connect(port: server.port, sourceAddress: "127.0.1.\(index % 20 + 1)"))
        }
        // The oldest pending ones were closed to make room (which ones exactly depends on the order
        // the two event loops set them up in): 10 wait, each with its head deadline.
        #expect(await server.node.inspection.deadlines.waitUntil { $0.count == 10 })
        #expect(server.node.inspection.gate.counts.pending == 10)
        // The 20 closed are closed for their clients too (a close reaches them a moment later).
        while flood.filter(\.isClosed).count < 20 { await Task.yield() }
        #expect(flood.filter(\.isClosed).count == 20)
        try await HostileInputTests.expectACallWorks(on: server, caller: "carol", callee: "dave")
        _ = alice
        _ = bob
        #expect(server.node.inspection.registry.deviceCount >= 2)
        await server.stop()
    }

    @Test func aUserHasAtMostSoManyDevices() async throws {
        let server = try await TestServer.start { $0.connections.maxDevicesPerUser = 2 }
        for device in ["phone", "laptop"] {
            try await Self.login(try await RawWebSocket.connect(port: server.port), server, "alice", device: device)
        }
        let third = try await RawWebSocket.connect(port: server.port)
        let refused = try await third.request(
            LoginRequest(
                sdkAppID: server.app.sdkAppID, userID: "alice", userSig: server.userSig("alice"), deviceId: "tablet"),
            id: "login")
        #expect(RawClient.errorCode(refused) == SwitchboardError.Code.tooManyDevices.rawValue)
        // The same device logging in again replaces its connection: not a new device.
        try await Self.login(try await RawWebSocket.connect(port: server.port), server, "alice", device: "phone")
        await server.stop()
    }

    /// A message in fragments, with a ping between them, is one message: answered once, and the
    /// ping answered in between.
    @Test func aFragmentedMessageIsOneMessage() async throws {
        let server = try await TestServer.start()
        let socket = try await RawWebSocket.connect(port: server.port)
        let ping = Array(#"{"id":"1","type":"ping"}"#.utf8)
        try await socket.send(.text, Array(ping[..<5]), fin: false)
        try await socket.send(.ping, [7])
        try await socket.send(.continuation, Array(ping[5..<10]), fin: false)
        try await socket.send(.continuation, Array(ping[10...]))
        let answer = try #require(try await socket.waitForText { $0.contains(#""id":"1""#) })
        #expect(RawClient.object(answer)?["id"] as? String == "1")
        #expect(socket.frames.contains { $0.opcode == RawWebSocket.Opcode.pong.rawValue && $0.payload == [7] })
        #expect(socket.frames.filter { $0.opcode == RawWebSocket.Opcode.text.rawValue }.count == 1)
        #expect(socket.closeCode == nil)
        await server.stop()
    }

    /// Finding 7: protocol violations close with RFC 6455's codes, not 1000.
    @Test(arguments: [
        ("an unmasked frame", 1002 as UInt16),
        ("a frame with a reserved bit", 1002),
        ("text that is not UTF-8", 1007),
        ("a continuation with no message", 1002),
        ("fragments beyond the hard limit", 1009),
        ("more fragments than a message may have", 1009),
        ("a new message inside a fragmented one", 1002),
        ("a frame beyond the hard limit", 1009),
    ])
    func protocolViolationsCloseWithTheirCode(violation: String, code: UInt16) async throws {
        // A message's fragments reach the connection's liveness check only as one message, and
        // this client answers no ping: on a loaded machine writing 4,097 fragments outlasted two
        // heartbeats (20 s), and the server closed the silent connection first.
        let server = try await TestServer.start { $0.heartbeatInterval = 600 }
        let socket = try await RawWebSocket.connect(port: server.port)
        let ping = Array(#"{"id":"1","type":"ping"}"#.utf8)
        // The server sends its close frame as soon as it has seen the violation and then reads on
        // until this side closes (or its lingering bound): every frame of the violation is
        // written, and the close code is read, not lost to a reset.
        try await Self.commit(violation, ping: ping, on: socket)
        #expect(try await socket.waitForClose() == code, "\(violation)")
        await server.stop()
    }

    private static func commit(_ violation: String, ping: [UInt8], on socket: RawWebSocket) async throws {
        switch violation {
        case "an unmasked frame": try await socket.send(.text, ping, masked: false)
        case "a frame with a reserved bit": try await socket.send(.text, ping, rsv1: true)
        case "text that is not UTF-8": try await socket.send(.text, [0x7B, 0xC3, 0x28, 0x7D])
        case "a continuation with no message": try await socket.send(.continuation, ping)
        case "fragments beyond the hard limit":
            let piece = [UInt8](repeating: 0x20, count: 256 << 10)
            try await socket.send(.text, piece, fin: false)
            for _ in 0..<4 { try await socket.send(.continuation, piece, fin: false) }
        case "more fragments than a message may have":
            try await socket.send(.text, Array(ping.prefix(1)), fin: false)
            for _ in 0..<WebSocketConnectionHandler.maxFragments { try await socket.send(.continuation, [0x20], fin: false) }
        case "a new message inside a fragmented one":
            try await socket.send(.text, Array(ping.prefix(5)), fin: false)
            try await socket.send(.text, ping)
        default:
            try await socket.send(.text, [UInt8](repeating: 0x20, count: NodeContext.hardMessageLimit + 1))
        }
    }
}

extension ConnectionDeadlines {
    /// Returns true once the armed deadlines, earliest first, satisfy `predicate`; false if they
    /// did not within `timeout` of real time (a deadline is armed on its connection's event loop,
    /// apart from the test: this looks again after each yield, and the test moves the clock after).
    func waitUntil(timeout: Duration = .seconds(10), _ predicate: ([Int64]) -> Bool) async -> Bool {
        let end = ContinuousClock.now + timeout
        while ContinuousClock.now < end {
            if predicate(armed) { return true }
            await Task.yield()
        }
        return predicate(armed)
    }
}
