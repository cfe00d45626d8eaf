import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

/// Network drops between the SDK and an in-process server, made with a TCP proxy; time moves on
/// the test clock only.
struct ReconnectTests {
    struct Setup {
        var server: TestServer
        var proxy: TCPProxy
        var alice: SwitchboardClient
        var bob: SwitchboardClient
        var aliceEvents: Recorder<CallStoreEvent>
        var bobEvents: Recorder<CallStoreEvent>
        var aliceLogin: Recorder<LoginStore.State>
    }

    /// alice (through the proxy) and bob (direct).
    func setUp(_ configure: (inout ServerConfiguration) -> Void = { _ in }) async throws -> Setup {
        let server = try await TestServer.start(configure: configure)
        let proxy = try await TCPProxy.start(targetPort: server.port)
        let alice = try await server.client("alice", deviceId: "alice-phone", url: server.url(via: proxy))
        let bob = try await server.client("bob")
        return Setup(
            server: server, proxy: proxy, alice: alice, bob: bob, aliceEvents: Recorder(alice.callStore.events),
            bobEvents: Recorder(bob.callStore.events), aliceLogin: Recorder(alice.loginStore.stateUpdates))
    }

    /// bob calls alice and she answers.
    func connect(_ s: Setup) async throws -> CallID {
        let call = try await s.bob.callStore.calls(participantIds: ["alice"], mediaType: .audio).callId
        try await s.aliceEvents.first(from: 0, where: isReceived)
        try await s.alice.callStore.accept()
        try await s.bobEvents.first(from: 0, where: isStarted)
        return call
    }

    func stop(_ s: Setup) async {
        s.proxy.stop()
        await s.server.stop()
    }

    @Test func aCallSurvivesADropAndTheTimerDoesNotJump() async throws {
        let s = try await setUp()
        s.alice.deviceStore.openLocalMicrophone()
        let call = try await connect(s)
        let startTime = try #require(s.alice.callStore.state.activeCall?.startTime)
        s.server.clock.advance(by: .seconds(3))
        let aliceStates = Recorder(s.alice.callStore.stateUpdates)
        try await aliceStates.first(from: 0) { $0.activeCall?.duration == 3 }

        s.proxy.cut()
        let away = try await s.aliceLogin.position(after: 0) { $0.loginStatus == .reconnecting }
        try await s.bobEvents.first(from: 0) {
            $0 == .onMemberStatusChanged(callId: call, userId: "alice", networkQuality: .down, volumeLevel: .mute)
        }
        // Changed during the drop: reaches bob once alice is back.
        s.alice.deviceStore.closeLocalMicrophone()

        s.server.clock.advance(by: .seconds(1))
        try await s.aliceLogin.first(from: away) { $0.loginStatus == .loggedIn }
        try await s.bobEvents.first(from: 0) {
            $0 == .onRemoteDeviceChanged(callId: call, userId: "alice", microphoneOn: false, cameraOn: false)
        }
        try await s.bobEvents.first(from: 0) {
            $0 == .onMemberStatusChanged(callId: call, userId: "alice", networkQuality: .unknown, volumeLevel: .mute)
        }
        // Same call, same members, same start time: the timer goes on from where it was.
        #expect(s.alice.callStore.state.activeCall?.callId == call)
        #expect(s.alice.callStore.state.activeCall?.startTime == startTime)
        #expect(s.alice.callStore.state.selfInfo.status == .accept)
        try await aliceStates.first(from: 0) { $0.activeCall?.duration == 4 }

        // The first end alice hears of is bob's hang-up, and the resume did not start the call again
        // (a second start would have come before that end).
        try await s.bob.callStore.hangup()
        #expect(try await s.aliceEvents.first(from: 0, where: isEnded) == .onCallEnded(callId: call, mediaType: .audio, reason: .hangup, userId: "bob"))
        #expect(s.aliceEvents.values.filter(isStarted).count == 1)
        await stop(s)
    }

    /// What the other member changed while this device was away arrives as the events that would
    /// have said so: the snapshot the server sends on the way back carries it.
    @Test func whatChangedWhileAwayArrivesAsEvents() async throws {
        let s = try await setUp()
        s.bob.deviceStore.openLocalMicrophone()
        let call = try await connect(s)
        try await s.bob.callStore.reportStatus(packetLoss: 0, rtt: 10, bitrate: 100, audioLevel: 0)
        try await s.aliceEvents.first(from: 0) {
            $0 == .onMemberStatusChanged(callId: call, userId: "bob", networkQuality: .excellent, volumeLevel: .mute)
        }
        s.proxy.cut()
        let away = try await s.aliceLogin.position(after: 0) { $0.loginStatus == .reconnecting }
        try await s.bobEvents.first(from: 0) {
            $0 == .onMemberStatusChanged(callId: call, userId: "alice", networkQuality: .down, volumeLevel: .mute)
        }
        // While alice is away bob's network gets poor (the server has it once the report is
        // answered), his microphone goes off and he shares his screen (alice hears of those either
        // way: in the snapshot, or as events if they reach the server after she is back).
        s.bob.deviceStore.closeLocalMicrophone()
        s.bob.deviceStore.startScreenShare(.testPattern)
        try await s.bob.callStore.reportStatus(packetLoss: 5, rtt: 10, bitrate: 100, audioLevel: 0)
        let missedFrom = s.aliceEvents.values.count

        s.server.clock.advance(by: .seconds(1))
        try await s.aliceLogin.first(from: away) { $0.loginStatus == .loggedIn }
        try await s.aliceEvents.first(from: missedFrom) {
            $0 == .onRemoteDeviceChanged(callId: call, userId: "bob", microphoneOn: false, cameraOn: false)
        }
        try await s.aliceEvents.first(from: missedFrom) {
            $0 == .onRemoteScreenShareChanged(callId: call, userId: "bob", sharing: true)
        }
        try await s.aliceEvents.first(from: missedFrom) {
            $0 == .onMemberStatusChanged(callId: call, userId: "bob", networkQuality: .poor, volumeLevel: .mute)
        }
        let bob = try #require(s.alice.callStore.state.allParticipants.first { $0.userId == "bob" })
        #expect(bob.networkQuality == .poor && !bob.microphoneOn && bob.screenSharing)
        await stop(s)
    }

    @Test func afterTheGracePeriodTheServerEndsTheMembersPart() async throws {
        let s = try await setUp()
        let call = try await connect(s)
        s.proxy.refuseNew = true
        s.proxy.cut()
        let away = try await s.aliceLogin.position(after: 0) { $0.loginStatus == .reconnecting }
        // The server noticed (and started the grace timer) once bob sees alice down.
        try await s.bobEvents.first(from: 0) {
            $0 == .onMemberStatusChanged(callId: call, userId: "alice", networkQuality: .down, volumeLevel: .mute)
        }
        s.server.clock.advance(by: .seconds(15))
        #expect(try await s.bobEvents.first(from: 0, where: isEnded) == .onCallEnded(callId: call, mediaType: .audio, reason: .endByServer, userId: "alice"))
        try await s.bobEvents.first(from: 0, where: isRecord)
        // alice keeps trying; once the network is back she learns how the call ended.
        try await s.aliceLogin.first(from: away) { $0.reconnectAttempts >= 1 }
        s.proxy.refuseNew = false
        s.server.clock.advance(by: .seconds(8))
        try await s.aliceLogin.first(from: away) { $0.loginStatus == .loggedIn }
        #expect(try await s.aliceEvents.first(from: 0, where: isEnded) == .onCallEnded(callId: call, mediaType: .audio, reason: .endByServer, userId: "alice"))
        #expect(s.alice.callStore.state.activeCall == nil)
        await stop(s)
    }

    @Test func aRingingInvitationSurvivesADrop() async throws {
        let s = try await setUp()
        let call = try await s.bob.callStore.calls(participantIds: ["alice"], mediaType: .video).callId
        try await s.aliceEvents.first(from: 0, where: isReceived)
        s.proxy.cut()
        let away = try await s.aliceLogin.position(after: 0) { $0.loginStatus == .reconnecting }
        s.server.clock.advance(by: .seconds(1))
        try await s.aliceLogin.first(from: away) { $0.loginStatus == .loggedIn }
        #expect(s.alice.callStore.state.activeCall?.callId == call)
        try await s.alice.callStore.accept()
        try await s.bobEvents.first(from: 0, where: isStarted)
        // Every invitation alice could hear of comes before the end of the call.
        try await s.bob.callStore.hangup()
        try await s.aliceEvents.first(from: 0, where: isEnded)
        #expect(s.aliceEvents.values.filter(isReceived).count == 1)
        await stop(s)
    }

    @Test func anAnswerLostInTheDropIsNotAppliedTwice() async throws {
        let s = try await setUp()
        let call = try await s.bob.callStore.calls(participantIds: ["alice"], mediaType: .audio).callId
        try await s.aliceEvents.first(from: 0, where: isReceived)
        // The accept reaches the server, its answer does not come back.
        s.proxy.blackholeDownstream = true
        let accepted = Task { try await s.alice.callStore.accept(callId: call) }
        try await s.bobEvents.first(from: 0, where: isStarted)
        s.proxy.cut()
        s.proxy.blackholeDownstream = false
        let away = try await s.aliceLogin.position(after: 0) { $0.loginStatus == .reconnecting }
        s.server.clock.advance(by: .seconds(1))
        // Sent again with the same id: the server answers with the first answer (no alreadyAccepted).
        try await accepted.value
        try await s.aliceLogin.first(from: away) { $0.loginStatus == .loggedIn }
        let aliceStates = Recorder(s.alice.callStore.stateUpdates)
        try await aliceStates.first(from: 0) { $0.selfInfo.status == .accept && $0.activeCall?.callId == call }
        // Applied once: bob's call started once before it ended.
        try await s.alice.callStore.hangup()
        try await s.bobEvents.first(from: 0, where: isEnded)
        #expect(s.bobEvents.values.filter(isStarted).count == 1)
        await stop(s)
    }

    @Test func aConnectionThatStopsAnsweringIsDetectedByTheHeartbeat() async throws {
        let s = try await setUp()
        s.proxy.blackhole = true
        s.server.clock.advance(by: .seconds(10))
        try await s.proxy.dropped.first(from: 0) { _ in true }  // the first ping went out and was lost
        s.server.clock.advance(by: .seconds(10))
        try await s.aliceLogin.first(from: 0) { $0.isConnectionStalled }
        s.server.clock.advance(by: .seconds(10))
        let away = try await s.aliceLogin.position(after: 0) { $0.loginStatus == .reconnecting }
        s.proxy.blackhole = false
        s.proxy.cut()
        s.server.clock.advance(by: .seconds(1))
        try await s.aliceLogin.first(from: away) { $0.loginStatus == .loggedIn && !$0.isConnectionStalled }
        // The session works again.
        #expect(try await s.alice.callStore.queryRecords().records.isEmpty)
        await stop(s)
    }

    @Test func requestsWaitDuringADropAndTimeOutIfItLasts() async throws {
        let s = try await setUp()
        s.proxy.refuseNew = true
        s.proxy.cut()
        let away = try await s.aliceLogin.position(after: 0) { $0.loginStatus == .reconnecting }
        let sleeping = s.server.clock.sleeperCount
        let query = Task { try await s.alice.callStore.queryRecords() }
        // The request's timeout is armed (its deadline fixed) before time moves.
        await s.server.clock.waitForSleepers(atLeast: sleeping + 1)
        s.server.clock.advance(by: .seconds(10))
        await expectError(.requestTimedOut) { _ = try await query.value }
        s.proxy.refuseNew = false
        s.server.clock.advance(by: .seconds(8))
        try await s.aliceLogin.first(from: away) { $0.loginStatus == .loggedIn }
        await stop(s)
    }

    /// With several addresses (the nodes of a cluster), a client whose node stops answering tries it
    /// once more, then goes round the others, and its call resumes there.
    @Test func aClientMovesToTheNextAddressWhenOneStopsAnswering() async throws {
        let server = try await TestServer.start()
        let first = try await TCPProxy.start(targetPort: server.port)
        let second = try await TCPProxy.start(targetPort: server.port)
        let alice = try await server.client(
            "alice", deviceId: "alice-phone", url: server.url(via: first), fallbackURLs: [server.url(via: second)])
        let bob = try await server.client("bob")
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let aliceLogin = Recorder(alice.loginStore.stateUpdates)
        let call = try await bob.callStore.calls(participantIds: ["alice"], mediaType: .audio).callId
        try await aliceEvents.first(from: 0, where: isReceived)
        try await alice.callStore.accept()
        try await bobEvents.first(from: 0, where: isStarted)

        first.refuseNew = true
        first.cut()
        let away = try await aliceLogin.position(after: 0) { $0.loginStatus == .reconnecting }
        // The first attempt, 1 s on, goes to the same address and is refused; the next, 2 s later,
        // to the other one.
        await server.clock.waitForSleepers(atLeast: 1)
        server.clock.advance(by: .seconds(1))
        try await aliceLogin.first(from: away) { if case .reconnecting = $0.loginStatus { $0.reconnectAttempts == 1 } else { false } }
        server.clock.advance(by: .seconds(2))
        try await aliceLogin.first(from: away) { $0.loginStatus == .loggedIn }
        #expect(second.connectionCount == 1)
        #expect(first.connectionCount == 0)
        try await bobEvents.first(from: 0) {
            if case .onMemberStatusChanged(call, "alice", let quality, _) = $0 { quality != .down } else { false }
        }
        try await alice.callStore.hangup()
        try await bobEvents.first(from: 0, where: isEnded)
        first.stop()
        second.stop()
        await server.stop()
    }

    @Test func aReplacedSessionDoesNotComeBack() async throws {
        let s = try await setUp()
        let other = try await s.server.client("alice", deviceId: "alice-phone")
        try await s.aliceLogin.first(from: 0) { $0.loginStatus == .loggedOut && $0.lastError?.code == .sessionReplaced }
        s.server.clock.advance(by: .seconds(30))
        // Stopped, not reconnecting: a request is refused at once instead of waiting for a
        // connection (which would take the device back from `other`).
        await expectError(.notConnected) { _ = try await s.alice.callStore.queryRecords() }
        #expect(s.alice.loginStore.state.loginStatus == .loggedOut)
        #expect(try await other.callStore.queryRecords().records.isEmpty)
        #expect(other.loginStore.state.loginStatus == .loggedIn)
        await stop(s)
    }

    @Test func aConnectAttemptThatNeverGetsAnAnswerIsBounded() async throws {
        let s = try await setUp()
        s.proxy.blackhole = true
        s.proxy.cut()
        let away = try await s.aliceLogin.position(after: 0) { $0.loginStatus == .reconnecting }
        s.server.clock.advance(by: .seconds(1))
        // The attempt's TCP connection is accepted and then nothing answers the upgrade.
        try await s.proxy.dropped.first(from: 0) { _ in true }
        s.server.clock.advance(by: .seconds(10))
        try await s.aliceLogin.first(from: away) { $0.reconnectAttempts >= 1 }
        s.proxy.blackhole = false
        s.server.clock.advance(by: .seconds(8))
        try await s.aliceLogin.first(from: away) { $0.loginStatus == .loggedIn }
        await stop(s)
    }

    /// A link that comes back (the platform says the path changed) ends the wait: the client tries
    /// again at once instead of waiting out an attempt that no one answers and then its backoff. The
    /// test clock does not move after the change.
    @Test func aPathChangeWhileReconnectingTriesAgainAtOnce() async throws {
        let server = try await TestServer.start()
        let proxy = try await TCPProxy.start(targetPort: server.port)
        let paths = ManualNetworkPathMonitor()
        let alice = try await server.client("alice", url: server.url(via: proxy), networkPathMonitor: paths)
        let login = Recorder(alice.loginStore.stateUpdates)
        proxy.blackhole = true
        proxy.cut()
        let away = try await login.position(after: 0) { $0.loginStatus == .reconnecting }
        await server.clock.waitForSleepers(atLeast: 1)
        server.clock.advance(by: .seconds(1))
        // The attempt's connection is accepted and then nothing answers its upgrade.
        try await proxy.dropped.first(from: 0) { _ in true }
        proxy.blackhole = false
        paths.change()
        try await login.first(from: away) { $0.loginStatus == .loggedIn }
        proxy.stop()
        await server.stop()
    }

    /// A new path while connected (a new address: the old connection may be dead without a word)
    /// makes the client reconnect at once, and the call goes on on the new connection.
    @Test func aPathChangeWhileConnectedReconnectsAtOnceAndTheCallGoesOn() async throws {
        let server = try await TestServer.start()
        let proxy = try await TCPProxy.start(targetPort: server.port)
        let paths = ManualNetworkPathMonitor()
        let alice = try await server.client(
            "alice", deviceId: "alice-phone", url: server.url(via: proxy), networkPathMonitor: paths)
        let bob = try await server.client("bob")
        let s = Setup(
            server: server, proxy: proxy, alice: alice, bob: bob, aliceEvents: Recorder(alice.callStore.events),
            bobEvents: Recorder(bob.callStore.events), aliceLogin: Recorder(alice.loginStore.stateUpdates))
        let call = try await connect(s)
        #expect(paths.observerCount == 1)
        paths.change()
        let away = try await s.aliceLogin.position(after: 0) { $0.loginStatus == .reconnecting }
        try await s.aliceLogin.first(from: away) { $0.loginStatus == .loggedIn }
        #expect(alice.callStore.state.activeCall?.callId == call)
        try await bob.callStore.hangup()
        #expect(
            try await s.aliceEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call, mediaType: .audio, reason: .hangup, userId: "bob"))
        await stop(s)
    }

    @Test func anExpiredUserSigEndsTheSessionInsteadOfRetryingForever() async throws {
        let server = try await TestServer.start()
        let proxy = try await TCPProxy.start(targetPort: server.port)
        let alice = try await server.client("alice", url: server.url(via: proxy), userSigExpire: 60)
        let login = Recorder(alice.loginStore.stateUpdates)
        proxy.refuseNew = true
        proxy.cut()
        let away = try await login.position(after: 0) { $0.loginStatus == .reconnecting }
        server.clock.advance(by: .seconds(120))
        try await login.first(from: away) { $0.reconnectAttempts >= 1 }
        proxy.refuseNew = false
        server.clock.advance(by: .seconds(8))
        try await login.first(from: away) { $0.loginStatus == .loggedOut && $0.lastError?.code == .userSigExpired }
        proxy.stop()
        await server.stop()
    }
}
