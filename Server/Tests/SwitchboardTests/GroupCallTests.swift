import Foundation
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

func admin(_ server: TestServer, _ method: String, _ path: String, body: String? = nil) async throws -> (Int, String) {
    var request = URLRequest(url: URL(string: path, relativeTo: server.httpURL)!)
    request.httpMethod = method
    request.setValue("Bearer test-admin-secret", forHTTPHeaderField: "Authorization")
    if let body {
        request.httpBody = Data(body.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    }
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
}

struct GroupCallTests {
    @Test func ringAnswerTimeoutAndLeave() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let carol = try await server.client("carol")
        let dave = try await server.client("dave")
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let carolEvents = Recorder(carol.callStore.events)
        let daveEvents = Recorder(dave.callStore.events)

        let call = try await alice.callStore.calls(
            participantIds: ["bob", "carol", "dave"], mediaType: .video, params: CallParams(timeout: 20)
        ).callId
        #expect(alice.callStore.state.activeCall?.callType == .group)
        for events in [bobEvents, carolEvents, daveEvents] { try await events.first(from: 0, where: isReceived) }

        try await bob.callStore.accept()
        try await aliceEvents.first(from: 0, where: isStarted)
        try await aliceEvents.first(from: 0) { $0 == .onParticipantStatusChanged(callId: call, userId: "bob", status: .accept, reason: nil) }
        try await carol.callStore.accept()
        // Everyone sees everyone's status change.
        try await bobEvents.first(from: 0) { $0 == .onParticipantStatusChanged(callId: call, userId: "carol", status: .accept, reason: nil) }
        try await daveEvents.first(from: 0) { $0 == .onParticipantStatusChanged(callId: call, userId: "carol", status: .accept, reason: nil) }

        // dave never answers: his ring times out, the call goes on.
        server.clock.advance(by: .seconds(20))
        #expect(try await daveEvents.first(from: 0, where: isEnded) == .onCallEnded(callId: call, mediaType: .video, reason: .noResponse, userId: "dave"))
        try await carolEvents.first(from: 0) {
            $0 == .onParticipantStatusChanged(callId: call, userId: "dave", status: .none, reason: .noResponse)
        }
        let carolStates = Recorder(carol.callStore.stateUpdates)
        try await carolStates.first(from: 0) { state in
            state.allParticipants.map(\.status) == [.accept, .accept, .accept, .none]
        }

        // alice (the caller) leaves; bob and carol go on.
        try await alice.callStore.hangup()
        try await bobEvents.first(from: 0) { $0 == .onParticipantStatusChanged(callId: call, userId: "alice", status: .none, reason: .hangup) }
        #expect(bob.callStore.state.activeCall?.callId == call)
        server.clock.advance(by: .seconds(5))
        try await carol.callStore.hangup()
        #expect(try await bobEvents.first(from: 0, where: isEnded) == .onCallEnded(callId: call, mediaType: .video, reason: .hangup, userId: "carol"))

        // Records: each member their own result, every participant listed.
        var results: [UserID: CallRecordResult] = [:]
        for (name, events) in [("alice", aliceEvents), ("bob", bobEvents), ("carol", carolEvents), ("dave", daveEvents)] {
            let record = try #require(await events.first(from: 0, where: isRecord).record)
            #expect(record.participantIds == ["alice", "bob", "carol", "dave"])
            #expect(record.callType == .group)
            results[UserID(rawValue: name)] = record.result
            if name == "bob" { #expect(record.duration == 25) }
        }
        #expect(results == ["alice": .answered, "bob": .answered, "carol": .answered, "dave": .missed])
        await server.stop()
    }

    @Test func inviteMidCallAndJoinAllowedOrRefused() async throws {
        let server = try await TestServer.start()
        let (status, body) = try await admin(
            server, "PUT", "/v1/apps/\(server.app.sdkAppID)/groups/team/members",
            body: #"{"userIds":["alice","bob","erin"]}"#)
        #expect(status == 200 && body.contains("erin"))
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let dave = try await server.client("dave")
        let erin = try await server.client("erin")
        let mallory = try await server.client("mallory")
        let bobEvents = Recorder(bob.callStore.events)
        let daveEvents = Recorder(dave.callStore.events)
        let aliceEvents = Recorder(alice.callStore.events)

        let call = try await alice.callStore.calls(
            participantIds: ["bob"], mediaType: .audio, params: CallParams(chatGroupId: "team")
        ).callId
        try await bobEvents.first(from: 0, where: isReceived)
        try await bob.callStore.accept()
        try await aliceEvents.first(from: 0, where: isStarted)

        // Invite mid-call: dave rings and joins.
        let busy = try await bob.callStore.invite(participantIds: ["dave"])
        #expect(busy.isEmpty)
        try await daveEvents.first(from: 0) { $0 == .onCallReceived(callId: call, callerId: "alice", inviterId: "bob", mediaType: .audio, userData: nil) }
        try await dave.callStore.accept()
        try await aliceEvents.first(from: 0) { $0 == .onParticipantStatusChanged(callId: call, userId: "dave", status: .accept, reason: nil) }

        // erin is in the chat group: she may join; mallory may not.
        await expectError(.joinNotAllowed) { try await mallory.callStore.join(callId: call) }
        try await erin.callStore.join(callId: call)
        #expect(erin.callStore.state.selfInfo.status == .accept)
        #expect(erin.callStore.state.activeCall?.startTime == alice.callStore.state.activeCall?.startTime)
        try await aliceEvents.first(from: 0) { $0 == .onParticipantStatusChanged(callId: call, userId: "erin", status: .accept, reason: nil) }
        await expectError(.alreadyAccepted) { try await erin.callStore.join(callId: call) }

        // The admin API reads the group back; bad input is refused.
        let (_, members) = try await admin(server, "GET", "/v1/apps/\(server.app.sdkAppID)/groups/team/members")
        #expect(members.contains(#""userIds":["alice","bob","erin"]"#))
        let (badStatus, _) = try await admin(
            server, "PUT", "/v1/apps/\(server.app.sdkAppID)/groups/team/members", body: #"{"userIds":["no spaces"]}"#)
        #expect(badStatus == 400)
        let (badJSON, _) = try await admin(server, "PUT", "/v1/apps/\(server.app.sdkAppID)/groups/team/members", body: "nope")
        #expect(badJSON == 400)
        await server.stop()
    }

    @Test func busyPolicyIsPerAppAndChangesAtOnce() async throws {
        let server = try await TestServer.start()
        let (status, body) = try await admin(
            server, "PUT", "/v1/apps/\(server.app.sdkAppID)/settings", body: #"{"busyPolicy":"callWaiting","maxParticipants":3}"#)
        #expect(status == 200 && body.contains("callWaiting"))
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let carol = try await server.client("carol")
        let bobEvents = Recorder(bob.callStore.events)
        _ = try await carol.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bobEvents.first(from: 0, where: isReceived)
        try await bob.callStore.accept()
        let waiting = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        #expect(waiting.busyUserIds.isEmpty)
        let dave = try await server.client("dave")
        await expectError(.tooManyParticipants) {
            _ = try await dave.callStore.calls(participantIds: ["x", "y", "z"], mediaType: .audio)
        }
        let (badPolicy, _) = try await admin(
            server, "PUT", "/v1/apps/\(server.app.sdkAppID)/settings", body: #"{"busyPolicy":"sometimes"}"#)
        #expect(badPolicy == 400)
        await server.stop()
    }

    @Test func theCallersOtherDevicesLearnACallIsInProgress() async throws {
        let server = try await TestServer.start()
        let phone = try await server.client("alice", deviceId: "phone")
        let laptop = try await server.client("alice", deviceId: "laptop")
        let bob = try await server.client("bob")
        let laptopEvents = Recorder(laptop.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let call = try await phone.callStore.calls(participantIds: ["bob"], mediaType: .audio).callId
        try await laptopEvents.first(from: 0) { $0 == .onCallElsewhere(callId: call, deviceId: "phone", active: true) }
        #expect(laptop.callStore.state.callsOnOtherDevices.map(\.callId) == [call])
        #expect(laptop.callStore.state.activeCall == nil)

        // A device that logs in later learns it too.
        let tablet = try await server.client("alice", deviceId: "tablet", login: false)
        let tabletEvents = Recorder(tablet.callStore.events)
        try await bobEvents.first(from: 0, where: isReceived)
        try await bob.callStore.accept()
        try await tablet.loginStore.login(sdkAppID: server.app.sdkAppID, userID: "alice", userSig: server.userSig("alice"))
        try await tabletEvents.first(from: 0) { $0 == .onCallElsewhere(callId: call, deviceId: "phone", active: true) }

        try await bob.callStore.hangup()
        try await laptopEvents.first(from: 0) { $0 == .onCallElsewhere(callId: call, deviceId: "phone", active: false) }
        #expect(laptop.callStore.state.callsOnOtherDevices.isEmpty)
        await server.stop()
    }
}

struct MediaTypeChangeTests {
    /// A connected audio call between alice and bob, ready for a change.
    func connectedCall() async throws -> (TestServer, SwitchboardClient, SwitchboardClient, Recorder<CallStoreEvent>, Recorder<CallStoreEvent>, CallID) {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio).callId
        try await bobEvents.first(from: 0, where: isReceived)
        try await bob.callStore.accept()
        try await aliceEvents.first(from: 0, where: isStarted)
        return (server, alice, bob, aliceEvents, bobEvents, call)
    }

    @Test func agreeSwitchesBothAndTurnsTheCameraOn() async throws {
        let (server, alice, bob, aliceEvents, bobEvents, call) = try await connectedCall()
        let transaction = try await alice.callStore.requestMediaTypeChange(to: .video)
        #expect(alice.callStore.state.mediaTypeChange?.requesterId == "alice")
        try await bobEvents.first(from: 0) { $0 == .onMediaTypeChangeRequested(callId: call, transactionId: transaction, mediaType: .video, userId: "alice") }
        #expect(bob.callStore.state.mediaTypeChange?.transactionId == transaction)
        // A second request while one is open is refused.
        await expectError(.mediaChangeInProgress) { _ = try await bob.callStore.requestMediaTypeChange(to: .video) }

        try await bob.callStore.replyMediaTypeChange(transactionId: transaction, agree: true)
        let result = CallStoreEvent.onMediaTypeChangeResult(
            callId: call, transactionId: transaction, mediaType: .video, userId: "alice", result: .agreed)
        try await aliceEvents.first(from: 0) { $0 == result }
        try await bobEvents.first(from: 0) { $0 == result }
        let aliceStates = Recorder(alice.callStore.stateUpdates)
        try await aliceStates.first(from: 0) { $0.activeCall?.mediaType == .video && $0.mediaTypeChange == nil }
        let bobStates = Recorder(bob.callStore.stateUpdates)
        try await bobStates.first(from: 0) { $0.activeCall?.mediaType == .video }
        let deviceStates = Recorder(alice.deviceStore.stateUpdates)
        try await deviceStates.first(from: 0) { $0.cameraStatus == .on }
        await server.stop()
    }

    @Test func declineCancelAndTimeout() async throws {
        let (server, alice, bob, aliceEvents, bobEvents, call) = try await connectedCall()
        let first = try await alice.callStore.requestMediaTypeChange(to: .video)
        try await bobEvents.first(from: 0) { if case .onMediaTypeChangeRequested(_, first, _, _) = $0 { true } else { false } }
        try await bob.callStore.replyMediaTypeChange(transactionId: first, agree: false)
        try await aliceEvents.first(from: 0) {
            $0 == .onMediaTypeChangeResult(callId: call, transactionId: first, mediaType: .video, userId: "alice", result: .declined)
        }

        let second = try await bob.callStore.requestMediaTypeChange(to: .video)
        try await aliceEvents.first(from: 0) { if case .onMediaTypeChangeRequested(_, second, _, _) = $0 { true } else { false } }
        await expectError(.invalidCallState) { try await alice.callStore.cancelMediaTypeChange(transactionId: second) }
        try await bob.callStore.cancelMediaTypeChange(transactionId: second)
        try await aliceEvents.first(from: 0) {
            $0 == .onMediaTypeChangeResult(callId: call, transactionId: second, mediaType: .video, userId: "bob", result: .canceled)
        }

        let third = try await alice.callStore.requestMediaTypeChange(to: .video)
        try await bobEvents.first(from: 0) { if case .onMediaTypeChangeRequested(_, third, _, _) = $0 { true } else { false } }
        server.clock.advance(by: .seconds(CallLimits.mediaChangeTimeoutSeconds))
        try await bobEvents.first(from: 0) {
            $0 == .onMediaTypeChangeResult(callId: call, transactionId: third, mediaType: .video, userId: "alice", result: .timedOut)
        }
        #expect(alice.callStore.state.activeCall?.mediaType == .audio)
        await expectError(.transactionNotFound) { try await bob.callStore.replyMediaTypeChange(transactionId: third, agree: true) }
        await server.stop()
    }
}

struct LiveStatusTests {
    @Test func qualityVolumeAndActiveSpeaker() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let carol = try await server.client("carol")
        for client in [alice, bob, carol] { client.deviceStore.openLocalMicrophone() }
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let carolEvents = Recorder(carol.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob", "carol"], mediaType: .audio).callId
        try await bobEvents.first(from: 0, where: isReceived)
        try await carolEvents.first(from: 0, where: isReceived)
        try await bob.callStore.accept()
        try await carol.callStore.accept()
        try await aliceEvents.first(from: 0) { $0 == .onParticipantStatusChanged(callId: call, userId: "carol", status: .accept, reason: nil) }

        try await bob.callStore.reportStatus(packetLoss: 0.2, rtt: 40, bitrate: 48, audioLevel: 60)
        try await aliceEvents.first(from: 0) { $0 == .onMemberStatusChanged(callId: call, userId: "bob", networkQuality: .excellent, volumeLevel: .high) }
        let aliceStates = Recorder(alice.callStore.stateUpdates)
        try await aliceStates.first(from: 0) { state in
            state.activeSpeakerId == "bob"
                && state.allParticipants.first { $0.userId == "bob" }?.networkQuality == .excellent
        }
        // bob sees his own levels without a round trip through the others.
        #expect(bob.callStore.state.selfInfo.volumeLevel == .high)

        try await carol.callStore.reportStatus(packetLoss: 12, rtt: 350, bitrate: 30, audioLevel: 90)
        try await aliceEvents.first(from: 0) { $0 == .onMemberStatusChanged(callId: call, userId: "carol", networkQuality: .bad, volumeLevel: .peak) }
        try await aliceStates.first(from: 0) { $0.activeSpeakerId == "carol" }
        // When everyone falls silent the last speaker stays on screen.
        let silent = aliceEvents.values.count
        try await bob.callStore.reportStatus(packetLoss: 0.2, rtt: 40, bitrate: 48, audioLevel: 0)
        try await carol.callStore.reportStatus(packetLoss: 12, rtt: 350, bitrate: 30, audioLevel: 0)
        try await aliceEvents.first(from: silent) { $0 == .onMemberStatusChanged(callId: call, userId: "carol", networkQuality: .bad, volumeLevel: .mute) }
        #expect(alice.callStore.state.activeSpeakerId == "carol")

        await expectError(.invalidParams) {
            try await bob.callStore.reportStatus(packetLoss: -1, rtt: 40, bitrate: 48, audioLevel: 0)
        }
        await server.stop()
    }
}

