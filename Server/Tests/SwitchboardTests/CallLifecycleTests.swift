import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

func isReceived(_ event: CallStoreEvent) -> Bool { if case .onCallReceived = event { true } else { false } }
func isStarted(_ event: CallStoreEvent) -> Bool { if case .onCallStarted = event { true } else { false } }
func isEnded(_ event: CallStoreEvent) -> Bool { if case .onCallEnded = event { true } else { false } }
func isRecord(_ event: CallStoreEvent) -> Bool { if case .onCallRecord = event { true } else { false } }

/// The SDK against an in-process server over real WebSockets; time moves only on the test clock.
struct CallLifecycleTests {
    @Test func aConnectedCallFromRingToRecord() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let aliceStates = Recorder(alice.callStore.stateUpdates)
        alice.deviceStore.openLocalMicrophone()
        alice.deviceStore.openLocalCamera()

        let started = try await alice.callStore.calls(
            participantIds: ["bob"], mediaType: .video, params: CallParams(userData: "hi bob"))
        #expect(started.busyUserIds.isEmpty)
        #expect(started.roomId.rawValue.isEmpty == false)
        #expect(alice.callStore.state.selfInfo.status == .waiting)
        #expect(alice.callStore.state.activeCall?.direction == .outgoing)

        let received = try await bobEvents.first(from: 0, where: isReceived)
        #expect(
            received
                == .onCallReceived(
                    callId: started.callId, callerId: "alice", inviterId: "alice", mediaType: .video, userData: "hi bob"))
        #expect(bob.callStore.state.selfInfo.status == .waiting)
        #expect(bob.callStore.state.activeCall?.direction == .incoming)
        #expect(bob.callStore.state.allParticipants.map(\.userId) == ["alice", "bob"])

        server.clock.advance(by: .seconds(3))
        bob.deviceStore.openLocalMicrophone()
        try await bob.callStore.accept()
        let aliceTime = try #require(await aliceEvents.first(from: 0, where: isStarted).startTime)
        let bobTime = try #require(await bobEvents.first(from: 0, where: isStarted).startTime)
        // Both sides get the server's start time.
        #expect(aliceTime == bobTime)
        #expect(aliceTime == server.clock.now())
        #expect(bob.callStore.state.selfInfo.status == .accept)
        try await aliceStates.first(from: 0) { $0.selfInfo.status == .accept }

        // The camera state reached bob: alice opened it before calling.
        try await bobEvents.first(from: 0) {
            $0 == .onRemoteDeviceChanged(callId: started.callId, userId: "alice", microphoneOn: true, cameraOn: true)
        }
        // bob's microphone showed off before he accepted: the waits start at his closing it.
        var mark = (events: aliceEvents.values.count, states: aliceStates.values.count)
        bob.deviceStore.closeLocalMicrophone()
        try await aliceEvents.first(from: mark.events) {
            $0 == .onRemoteDeviceChanged(callId: started.callId, userId: "bob", microphoneOn: false, cameraOn: false)
        }
        try await aliceStates.first(from: mark.states) { $0.allParticipants.first { $0.userId == "bob" }?.microphoneOn == false }

        // The duration follows the server's clock, the same on both sides.
        server.clock.advance(by: .seconds(5))
        try await aliceStates.first(from: 0) { $0.activeCall?.duration == 5 }
        let bobStates = Recorder(bob.callStore.stateUpdates)
        try await bobStates.first(from: 0) { $0.activeCall?.duration == 5 }

        // No call and no status was also alice's state before she called: the wait starts at the hang-up.
        mark = (aliceEvents.values.count, aliceStates.values.count)
        try await bob.callStore.hangup()
        let ended = try await aliceEvents.first(from: mark.events, where: isEnded)
        #expect(ended == .onCallEnded(callId: started.callId, mediaType: .video, reason: .hangup, userId: "bob"))
        try await aliceStates.first(from: mark.states) { $0.activeCall == nil && $0.selfInfo.status == .none }

        let aliceRecord = try #require(await aliceEvents.first(from: 0, where: isRecord).record)
        #expect(aliceRecord.callId == started.callId)
        #expect(aliceRecord.direction == .outgoing)
        #expect(aliceRecord.result == .answered)
        #expect(aliceRecord.duration == 5)
        #expect(aliceRecord.startTime == aliceTime)
        #expect(aliceRecord.participantIds == ["alice", "bob"])
        let bobRecordValue = try #require(await bobEvents.first(from: 0, where: isRecord).record)
        #expect(bobRecordValue.direction == .incoming && bobRecordValue.inviterId == "alice")

        let page = try await bob.callStore.queryRecords()
        #expect(page.records == [bobRecordValue])
        await server.stop()
    }

    struct EndCase: Sendable, CustomTestStringConvertible {
        var name: String
        var testDescription: String { name }
        /// The caller's and callee's expected reason, the user it names, and each side's record result.
        var reason: CallEndReason
        var by: UserID?
        var callerResult: CallRecordResult
        var calleeResult: CallRecordResult
        var media: CallMediaType = .audio
    }

    @Test func rejected() async throws {
        try await endScenario(
            EndCase(name: "reject", reason: .reject, by: "bob", callerResult: .rejected, calleeResult: .rejected)
        ) { server, alice, bob, callId in
            try await bob.callStore.reject()
        }
    }

    @Test func canceled() async throws {
        try await endScenario(
            EndCase(name: "cancel", reason: .canceled, by: "alice", callerResult: .canceled, calleeResult: .missed)
        ) { server, alice, bob, callId in
            try await alice.callStore.hangup()
        }
    }

    @Test func unanswered() async throws {
        try await endScenario(
            EndCase(name: "timeout", reason: .noResponse, by: "bob", callerResult: .noAnswer, calleeResult: .missed)
        ) { server, alice, bob, callId in
            server.clock.advance(by: .seconds(30))
        }
    }

    /// The ring timeout is 30 s, not less: at 29 s the call still rings, and bob can answer it.
    /// (Reading bob's state right after moving the clock would pass either way: an end the
    /// server decided would still be on its way.)
    @Test func answerableUntilItsTimeout() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bobEvents.first(from: 0, where: isReceived)
        server.clock.advance(by: .seconds(29))
        try await bob.callStore.accept()
        try await aliceEvents.first(from: 0) { if case .onCallStarted(call.callId, _, _) = $0 { true } else { false } }
        let started = try await bobEvents.position(after: 0) { if case .onCallStarted(call.callId, _, _) = $0 { true } else { false } }
        #expect(!bobEvents.values.prefix(started).contains { if case .onCallEnded = $0 { true } else { false } })
    }

    @Test func endedByTheServer() async throws {
        try await endScenario(
            EndCase(name: "server", reason: .endByServer, by: nil, callerResult: .answered, calleeResult: .answered)
        ) { server, alice, bob, callId in
            try await bob.callStore.accept()
            _ = await server.node.endCall(callId)
        }
    }

    /// Places alice → bob, waits until bob rings, runs `end`, and checks both sides' end event and records.
    func endScenario(
        _ expected: EndCase,
        end: (TestServer, SwitchboardClient, SwitchboardClient, CallID) async throws -> Void
    ) async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: expected.media)
        try await bobEvents.first(from: 0, where: isReceived)
        try await end(server, alice, bob, call.callId)
        let endEvent = CallStoreEvent.onCallEnded(
            callId: call.callId, mediaType: expected.media, reason: expected.reason, userId: expected.by)
        #expect(try await aliceEvents.first(from: 0, where: isEnded) == endEvent)
        #expect(try await bobEvents.first(from: 0, where: isEnded) == endEvent)
        for (events, result) in [(aliceEvents, expected.callerResult), (bobEvents, expected.calleeResult)] {
            let record = try #require(await events.first(from: 0, where: isRecord).record)
            #expect(record.result == result)
            #expect(record.endReason == expected.reason)
        }
        #expect(alice.callStore.state.activeCall == nil)
        #expect(bob.callStore.state.activeCall == nil)
        await server.stop()
    }

    @Test func anOfflineCalleeEndsTheCallAtOnce() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let events = Recorder(alice.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["nobody"], mediaType: .audio)
        #expect(
            try await events.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .offline, userId: "nobody"))
        let value = try #require(await events.first(from: 0, where: isRecord).record)
        #expect(value.result == .offline)
        await server.stop()
    }

    @Test func aBusyCalleeGivesLineBusyAndIsListed() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let carol = try await server.client("carol")
        let bobEvents = Recorder(bob.callStore.events)
        let carolEvents = Recorder(carol.callStore.events)
        let first = try await carol.callStore.calls(participantIds: ["bob"], mediaType: .audio).callId
        try await bobEvents.first(from: 0, where: isReceived)
        try await bob.callStore.accept()

        let aliceEvents = Recorder(alice.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .video)
        #expect(call.busyUserIds == ["bob"])
        #expect(
            try await aliceEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .video, reason: .lineBusy, userId: "bob"))
        // bob was never disturbed, but he has a record of the call he missed while busy.
        let record = try #require(await bobEvents.first(from: 0) { $0.record?.callId == call.callId }.record)
        #expect(record.result == .busy)
        #expect(bob.callStore.state.selfInfo.status == .accept)
        // carol's call went on: the first end she hears of is bob's hang-up, which comes after
        // alice's busy call in every order the server could have sent them.
        try await bob.callStore.hangup()
        #expect(
            try await carolEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: first, mediaType: .audio, reason: .hangup, userId: "bob"))
        await server.stop()
    }

    @Test func everyDeviceRingsAndTheFirstAcceptWins() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let phone = try await server.client("bob", deviceId: "phone")
        let tablet = try await server.client("bob", deviceId: "tablet")
        let phoneEvents = Recorder(phone.callStore.events)
        let tabletEvents = Recorder(tablet.callStore.events)
        let aliceEvents = Recorder(alice.callStore.events)

        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await phoneEvents.first(from: 0, where: isReceived)
        try await tabletEvents.first(from: 0, where: isReceived)
        try await tablet.callStore.accept()
        #expect(
            try await phoneEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .otherDeviceAccepted, userId: "bob"))
        try await aliceEvents.first(from: 0, where: isStarted)
        await expectError(.alreadyAccepted) { try await phone.callStore.accept(callId: call.callId) }
        #expect(phone.callStore.state.activeCall == nil)
        #expect(tablet.callStore.state.selfInfo.status == .accept)

        // A second call: a reject on one device stops the other ringing.
        try await alice.callStore.hangup()
        try await tabletEvents.first(from: 0, where: isEnded)
        let second = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .video)
        try await phoneEvents.first(from: 0) { if case .onCallReceived(second.callId, _, _, _, _) = $0 { true } else { false } }
        try await tabletEvents.first(from: 0) { if case .onCallReceived(second.callId, _, _, _, _) = $0 { true } else { false } }
        try await phone.callStore.reject()
        #expect(
            try await tabletEvents.first(from: 0) { if case .onCallEnded(second.callId, _, _, _) = $0 { true } else { false } }
                == .onCallEnded(callId: second.callId, mediaType: .video, reason: .otherDeviceReject, userId: "bob"))
        #expect(
            try await aliceEvents.first(from: 0) { if case .onCallEnded(second.callId, _, _, _) = $0 { true } else { false } }
                == .onCallEnded(callId: second.callId, mediaType: .video, reason: .reject, userId: "bob"))
        await server.stop()
    }

    @Test func aDeviceThatLogsInWhileItRingsGetsTheInvitation() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let phone = try await server.client("bob", deviceId: "phone")
        let phoneEvents = Recorder(phone.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await phoneEvents.first(from: 0, where: isReceived)

        let laptop = try await server.client("bob", deviceId: "laptop", login: false)
        let laptopEvents = Recorder(laptop.callStore.events)
        try await laptop.loginStore.login(sdkAppID: server.app.sdkAppID, userID: "bob", userSig: server.userSig("bob"))
        try await laptopEvents.first(from: 0) { if case .onCallReceived(call.callId, _, _, _, _) = $0 { true } else { false } }
        try await laptop.callStore.accept()
        try await phoneEvents.first(from: 0, where: isEnded)
        await server.stop()
    }

    @Test func anEphemeralCallLeavesNoRecord() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let bobEvents = Recorder(bob.callStore.events)
        let aliceEvents = Recorder(alice.callStore.events)
        _ = try await alice.callStore.calls(
            participantIds: ["bob"], mediaType: .audio, params: CallParams(isEphemeralCall: true))
        try await bobEvents.first(from: 0, where: isReceived)
        try await bob.callStore.reject()
        try await aliceEvents.first(from: 0, where: isEnded)
        // A normal call afterwards: its record is the only one.
        let normal = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bobEvents.first(from: 0) { if case .onCallReceived(normal.callId, _, _, _, _) = $0 { true } else { false } }
        try await bob.callStore.reject()
        try await aliceEvents.first(from: 0) { if case .onCallRecord(let r) = $0 { r.callId == normal.callId } else { false } }
        #expect(try await alice.callStore.queryRecords().records.map(\.callId) == [normal.callId])
        // The normal call's record is the barrier: a record of the ephemeral call, ended first,
        // would have come before it.
        #expect(aliceEvents.values.filter(isRecord).map(\.record?.callId) == [normal.callId])
        await server.stop()
    }

    @Test func callWaitingRingsAndAnsweringHangsUpTheCurrentCall() async throws {
        let server = try await TestServer.start { $0.appSettings.busyPolicy = .callWaiting }
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let carol = try await server.client("carol")
        let bobEvents = Recorder(bob.callStore.events)
        let carolEvents = Recorder(carol.callStore.events)
        let first = try await carol.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bobEvents.first(from: 0, where: isReceived)
        try await bob.callStore.accept()
        try await carolEvents.first(from: 0, where: isStarted)

        let second = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .video)
        #expect(second.busyUserIds.isEmpty)
        try await bobEvents.first(from: 0) { if case .onCallReceived(second.callId, _, _, _, _) = $0 { true } else { false } }
        // bob stays on carol's call and sees alice's as waiting.
        #expect(bob.callStore.state.activeCall?.callId == first.callId)
        #expect(bob.callStore.state.waitingCalls.map(\.callId) == [second.callId])

        try await bob.callStore.accept(callId: second.callId)
        #expect(
            try await carolEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: first.callId, mediaType: .audio, reason: .hangup, userId: "bob"))
        let bobStates = Recorder(bob.callStore.stateUpdates)
        try await bobStates.first(from: 0) { $0.activeCall?.callId == second.callId && $0.waitingCalls.isEmpty }
        await server.stop()
    }
}

func expectError(
    _ code: SwitchboardError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
) async {
    do {
        try await body()
        Issue.record("expected \(code.name), got success", sourceLocation: sourceLocation)
    } catch let error as SwitchboardError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(code.name), got \(error)", sourceLocation: sourceLocation)
    }
}
