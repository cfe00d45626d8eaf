import Foundation
import Logging
import Switchboard
import SwitchboardCallKit
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTools
import Testing

@testable import SwitchboardServer

/// The CallKit rules (SPEC §8) against a real server and a real APNs exchange; only CallKit,
/// PushKit and the audio session are fakes, and they fail the test where iOS would punish the app.
@Suite struct CallKitCoordinatorTests {
    // MARK: - incoming through a push

    /// Push → report → the app logs in → answer → connected → audio after activation → remote hang-up.
    @Test func aPushRingsIsAnsweredConnectsAndEnds() async throws {
        let h = try await CallKitHarness.start()
        let phone = try await h.phone(login: false)
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let push = try await h.apns.pushes.first(from: 0) { _ in true }
        let uuid = UUID(callId: call.callId)

        let number = phone.system.deliverPush(json: push.payload)
        try await phone.system.records.first(from: 0) {
            $0 == .ringing(uuid, CallUpdate(handle: "alice", callerName: "Alice", hasVideo: false))
        }
        try await phone.system.records.first(from: 0) { $0 == .pushCompleted(number) }
        // The SDK shows the call ringing at once, and the push made the app log in.
        #expect(phone.client.callStore.state.activeCall?.callId == call.callId)
        try await Recorder(phone.client.loginStore.stateUpdates).first(from: 0) { $0.loginStatus == .loggedIn }

        phone.system.userAnswers(uuid)
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.answer(uuid: uuid)) }
        #expect(phone.system.records.values.contains(.audioConfigured(video: false)))
        try await h.aliceEvents.first(from: 0, where: isStarted)
        #expect(phone.client.callStore.state.selfInfo.status == .accept)
        #expect(phone.client.deviceStore.state.microphoneStatus == .on)

        // Media is set up for the connected call, but audio waits for the system's activation.
        try await phone.media.calls.first(from: 0) { $0 == .callConnected(call.callId, .audio) }
        #expect(!phone.media.calls.values.contains(.startAudio))
        phone.system.activateAudioSession()
        try await phone.media.calls.first(from: 0) { $0 == .startAudio }

        try await h.alice.callStore.hangup()
        try await phone.system.records.first(from: 0) { $0 == .ended(uuid, .remoteEnded) }
        try await phone.media.calls.first(from: 0) { $0 == .stopAudio }
        try await phone.media.calls.first(from: 0) { $0 == .callEnded(call.callId) }
        #expect(phone.system.rings == 1)
        #expect(phone.system.problems() == [])
        await h.stop()
    }

    /// Malformed pushes still ring (iOS requires a report) and end at once.
    @Test(arguments: [
        #"{"aps":{}}"#, #"{"aps":{},"switchboard":{"kind":"incomingCall","callerId":"alice"}}"#, #"not json"#,
    ])
    func anInvalidPushIsReportedAndEnded(_ body: String) async throws {
        let system = FakeCallSystem()
        let coordinator = CallKitCoordinator(
            client: SwitchboardClient(), settings: Phone.settings, provider: system.provider, controller: system.controller,
            pushRegistry: system.pushRegistry, audioSession: system.audioSession)
        let number = system.deliverPush(json: Data(body.utf8))
        let (uuid, update) = try #require(await system.records.first(from: 0) { $0.ringing != nil }.ringing)
        #expect(update == CallUpdate(handle: "unknown", callerName: "Unknown caller", hasVideo: false))
        try await system.records.first(from: 0) { $0 == .ended(uuid, .failed) }
        try await system.records.first(from: 0) { $0 == .pushCompleted(number) }
        #expect(system.problems() == [])
        withExtendedLifetime(coordinator) {}
    }

    /// Pushes that must not ring on: stale, for another user, for nobody logged in, a stop push.
    @Test func pushesThatCannotRingAreReportedAndEnded() async throws {
        let clock = TestClock()
        let client = SwitchboardClient(configuration: SwitchboardConfiguration(clock: clock))
        let system = FakeCallSystem()
        let coordinator = CallKitCoordinator(
            client: client, settings: Phone.settings, provider: system.provider, controller: system.controller,
            pushRegistry: system.pushRegistry, audioSession: system.audioSession)
        func invitation(_ callId: CallID, user: UserID = "bob", deadline: Int64) -> [AnyHashable: Any] {
            let push = VoIPPush.incomingCall(
                IncomingCallPush(
                    callId: callId, sdkAppID: 1_400_000_001, userId: user, callerId: "alice", mediaType: .video,
                    callType: .oneToOne, deadline: deadline))
            return (try? JSONSerialization.jsonObject(with: push.payload())) as? [AnyHashable: Any] ?? [:]
        }
        let stale = CallID(rawValue: UUID().uuidString)
        let forCarol = CallID(rawValue: UUID().uuidString)
        let noAccount = CallID(rawValue: UUID().uuidString)
        let stopped = CallID(rawValue: UUID().uuidString)

        // Nobody is logged in here: the push rings and ends.
        system.deliverPush(invitation(noAccount, deadline: clock.now() + 30_000))
        try await system.records.first(from: 0) { $0 == .ended(UUID(callId: noAccount), .failed) }

        coordinator.account = CallKitAccount(sdkAppID: 1_400_000_001, userID: "bob", userSig: "unused")
        system.deliverPush(invitation(stale, deadline: clock.now() - 1))
        try await system.records.first(from: 0) { $0 == .ended(UUID(callId: stale), .unanswered) }
        system.deliverPush(invitation(forCarol, user: "carol", deadline: clock.now() + 30_000))
        try await system.records.first(from: 0) { $0 == .ended(UUID(callId: forCarol), .failed) }
        let stop = VoIPPush.callEnded(CallEndedPush(callId: stopped, reason: .otherDeviceAccepted, mediaType: .audio))
        system.deliverPush(json: try stop.payload())
        try await system.records.first(from: 0) { $0 == .ended(UUID(callId: stopped), .answeredElsewhere) }

        try await system.records.first(from: 0) { $0 == .pushCompleted(4) }
        #expect(system.rings == 4)
        // None of them reached the SDK or logged in.
        #expect(client.callStore.state.activeCall == nil)
        #expect(client.loginStore.state.loginStatus == .loggedOut)
        #expect(system.problems() == [])
    }

    /// The app was launched by the push of a call the caller canceled meanwhile: it rings, the login
    /// learns the end, the call screen ends it; a late stop push (as servers before push configs
    /// sent) is reported and ended again.
    @Test func aPushForACallThatEndedIsReportedThenEnded() async throws {
        let h = try await CallKitHarness.start()
        let phone = try await h.phone(login: false)
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .video)
        let invitation = try await h.apns.pushes.first(from: 0) { _ in true }
        try await h.alice.callStore.hangup()
        let stop = try VoIPPush.callEnded(
            CallEndedPush(callId: call.callId, sdkAppID: h.server.app.sdkAppID, reason: .canceled, mediaType: .video)
        ).payload()
        let uuid = UUID(callId: call.callId)

        phone.system.deliverPush(json: invitation.payload)
        try await phone.system.records.first(from: 0) { if case .ringing(uuid, _) = $0 { true } else { false } }
        try await phone.system.records.first(from: 0) { $0 == .ended(uuid, .remoteEnded) }
        #expect(phone.client.callStore.state.activeCall == nil)

        phone.system.deliverPush(json: stop)
        try await phone.system.records.first(from: 0) { $0 == .pushCompleted(2) }
        #expect(phone.system.records.values.filter { $0 == .ended(uuid, .remoteEnded) }.count == 2)
        #expect(phone.system.problems() == [])
        await h.stop()
    }

    // MARK: - one ring per call

    /// The signaling invitation rings; two pushes for the same call are reported (as iOS requires)
    /// without a second ring.
    @Test func duplicatePushesAndTheInvitationRingOnce() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await h.phone(login: true)
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let uuid = UUID(callId: call.callId)
        try await phone.system.records.first(from: 0) { if case .ringing(uuid, _) = $0 { true } else { false } }

        let push = VoIPPush.incomingCall(
            IncomingCallPush(
                callId: call.callId, sdkAppID: h.server.app.sdkAppID, userId: "bob", callerId: "alice",
                callerName: "Alice", mediaType: .audio, callType: .oneToOne, deadline: h.server.clock.now() + 30_000))
        phone.system.deliverPush(json: try push.payload())
        phone.system.deliverPush(json: try push.payload())
        try await phone.system.records.first(from: 0) { $0 == .pushCompleted(2) }
        #expect(phone.system.rings == 1)
        #expect(
            phone.system.records.values.filter { $0 == .reportRefused(uuid, .callUUIDAlreadyExists) }.count == 2)

        // Declining on the call screen rejects the call.
        phone.system.userEnds(uuid)
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.end(uuid: uuid)) }
        #expect(
            try await h.aliceEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .reject, userId: "bob"))
        #expect(!phone.system.records.values.contains { $0.isEnd })
        #expect(phone.system.problems() == [])
        await h.stop()
    }

    // MARK: - actions

    /// Answering a call the server does not have fails the action and ends the call once.
    @Test func anAnswerThatFailsFailsTheActionAndEndsTheCall() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await h.phone(login: false)
        let callId = CallID(rawValue: UUID().uuidString)
        let uuid = UUID(callId: callId)
        let push = VoIPPush.incomingCall(
            IncomingCallPush(
                callId: callId, sdkAppID: h.server.app.sdkAppID, userId: "bob", callerId: "alice", mediaType: .audio,
                callType: .oneToOne, deadline: h.server.clock.now() + 30_000))
        phone.system.deliverPush(json: try push.payload())
        try await phone.system.records.first(from: 0) { if case .ringing(uuid, _) = $0 { true } else { false } }
        phone.system.userAnswers(uuid)
        try await phone.system.records.first(from: 0) { $0 == .failed(.answer(uuid: uuid)) }
        try await phone.system.records.first(from: 0) { $0 == .ended(uuid, .failed) }
        try await phone.system.records.first(from: 0) { $0 == .pushCompleted(1) }
        #expect(phone.system.records.values.filter { $0.isEnd }.count == 1)
        #expect(phone.system.problems() == [])
        await h.stop()
    }

    /// Mute from the app, from the call screen and through the coordinator: each change is applied
    /// once and never echoes back.
    @Test func muteFromTheAppAndFromTheSystemDoesNotLoop() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await h.phone(login: true)
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let uuid = UUID(callId: call.callId)
        try await phone.system.records.first(from: 0) { if case .ringing(uuid, _) = $0 { true } else { false } }
        phone.system.userAnswers(uuid)
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.answer(uuid: uuid)) }
        let devices = Recorder(phone.client.deviceStore.stateUpdates)
        /// Waits for alice to hear bob's microphone change, from the events after `from`.
        func remoteMicrophone(_ on: Bool, from: Int) async throws {
            try await h.aliceEvents.first(from: from) {
                $0 == .onRemoteDeviceChanged(callId: call.callId, userId: "bob", microphoneOn: on, cameraOn: false)
            }
        }
        try await remoteMicrophone(true, from: 0)
        @Sendable func isMuteFulfilled(_ record: FakeCallSystem.Record) -> Bool {
            if case .fulfilled(.setMuted) = record { true } else { false }
        }

        // The app's mute button: the SDK mutes, the call screen follows through one transaction.
        var alice = h.aliceEvents.values.count
        phone.client.deviceStore.closeLocalMicrophone()
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.setMuted(uuid: uuid, muted: true)) }
        #expect(phone.system.calls[uuid]?.muted == true)
        try await remoteMicrophone(false, from: alice)

        // The call screen's mute button: the SDK follows, no transaction goes back.
        alice = h.aliceEvents.values.count
        var device = devices.values.count
        phone.system.userSetsMuted(uuid, false)
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.setMuted(uuid: uuid, muted: false)) }
        try await devices.first(from: device) { $0.microphoneStatus == .on }
        try await remoteMicrophone(true, from: alice)

        // Through the coordinator: a transaction first, then the SDK.
        alice = h.aliceEvents.values.count
        device = devices.values.count
        try await phone.coordinator.setMuted(true)
        try await devices.first(from: device) { $0.microphoneStatus == .off }
        try await remoteMicrophone(false, from: alice)
        try await phone.system.records.matches(3, from: 0, where: isMuteFulfilled)

        // The end of the call is the barrier: an echo of any of the three would have come before it.
        try await h.alice.callStore.hangup()
        try await phone.system.records.first(from: 0) { $0 == .ended(uuid, .remoteEnded) }
        #expect(phone.system.records.values.filter { $0.isMuteTransaction }.count == 2)
        #expect(phone.system.records.values.filter(isMuteFulfilled).count == 3)
        #expect(devices.values.filter { $0.microphoneStatus == .off }.count == 2)
        #expect(phone.system.calls[uuid]?.muted == true)
        #expect(phone.system.problems() == [])
        await h.stop()
    }

    /// Switchboard has no hold: the action fails and the call goes on.
    @Test func holdIsRefused() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await h.phone(login: true)
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        let uuid = UUID(callId: call.callId)
        try await phone.system.records.first(from: 0) { if case .ringing(uuid, _) = $0 { true } else { false } }
        phone.system.userAnswers(uuid)
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.answer(uuid: uuid)) }
        phone.system.userHolds(uuid)
        try await phone.system.records.first(from: 0) { $0 == .failed(.setHeld(uuid: uuid, onHold: true)) }
        #expect(phone.client.callStore.state.selfInfo.status == .accept)
        #expect(phone.system.problems() == [])
        await h.stop()
    }

    // MARK: - outgoing

    /// A call from the Phone app's recents (INStartCallIntent): start transaction, the call is
    /// placed, connecting, connected, and hung up from the app through an end transaction.
    @Test func aCallFromRecentsStartsConnectsAndEnds() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await h.phone(login: true)
        let placed = Task { try await phone.coordinator.startCall(handle: "alice", video: true) }
        let uuid = try await phone.startedUUID()
        #expect(phone.system.records.values.contains(.transaction(.start(uuid: uuid, handle: "alice", video: true))))
        let result = try await placed.value
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.start(uuid: uuid, handle: "alice", video: true)) }
        try await phone.system.records.first(from: 0) { $0 == .startedConnecting(uuid) }
        #expect(phone.system.records.values.contains(.audioConfigured(video: true)))

        let received = try await h.aliceEvents.first(from: 0, where: isReceived)
        #expect(
            received
                == .onCallReceived(callId: result.callId, callerId: "bob", inviterId: "bob", mediaType: .video, userData: nil))
        try await h.alice.callStore.accept()
        try await phone.system.records.first(from: 0) { $0 == .connected(uuid) }
        phone.system.activateAudioSession()
        try await phone.media.calls.first(from: 0) { $0 == .startAudio }

        try await phone.coordinator.endCall()
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.end(uuid: uuid)) }
        #expect(
            try await h.aliceEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: result.callId, mediaType: .video, reason: .hangup, userId: "bob"))
        #expect(!phone.system.records.values.contains { $0.isEnd })
        #expect(phone.system.problems() == [])
        await h.stop()
    }

    /// The app used the SDK directly (CallStore.calls and hangup): the call screen learns both
    /// through transactions whose actions only confirm.
    @Test func callsPlacedAndEndedThroughTheSDKReachTheSystem() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await h.phone(login: true)
        phone.client.deviceStore.openLocalMicrophone()
        let call = try await phone.client.callStore.calls(participantIds: ["alice"], mediaType: .audio)
        let uuid = UUID(callId: call.callId)
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.start(uuid: uuid, handle: "alice", video: false)) }
        try await phone.system.records.first(from: 0) { $0 == .startedConnecting(uuid) }
        try await h.aliceEvents.first(from: 0, where: isReceived)
        try await h.alice.callStore.accept()
        try await phone.system.records.first(from: 0) { $0 == .connected(uuid) }

        // The call screen shows the microphone as the app left it.
        phone.client.deviceStore.closeLocalMicrophone()
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.setMuted(uuid: uuid, muted: true)) }

        try await phone.client.callStore.hangup()
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.end(uuid: uuid)) }
        #expect(
            phone.system.records.values.compactMap { record -> SystemCallAction? in
                if case .transaction(let action) = record { action } else { nil }
            }
                == [
                    .start(uuid: uuid, handle: "alice", video: false), .setMuted(uuid: uuid, muted: true), .end(uuid: uuid),
                ])
        #expect(!phone.system.records.values.contains { $0.isEnd })
        #expect(phone.system.problems() == [])
        await h.stop()
    }

    /// The app's own incoming-call screen accepts through the SDK while the system's call screen
    /// rings: the system is told with an answer transaction (its ringing stops, it may activate
    /// audio), and the SDK accepts once.
    @Test func aCallAnsweredInTheAppIsAnsweredOnTheSystemToo() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await h.phone(login: true)
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .video)
        let uuid = UUID(callId: call.callId)
        try await phone.system.records.first(from: 0) { if case .ringing(uuid, _) = $0 { true } else { false } }

        try await phone.client.callStore.accept()
        try await phone.system.records.first(from: 0) { $0 == .fulfilled(.answer(uuid: uuid)) }
        #expect(phone.system.records.values.contains(.transaction(.answer(uuid: uuid))))
        #expect(phone.system.records.values.contains(.audioConfigured(video: true)))
        try await h.aliceEvents.first(from: 0, where: isStarted)
        phone.system.activateAudioSession()
        try await phone.media.calls.first(from: 0) { $0 == .startAudio }

        // Still in the call on both sides (a second accept would have failed the answer and ended
        // it on the system): alice's hang-up is the end the system hears.
        try await h.alice.callStore.hangup()
        try await phone.system.records.first(from: 0) { $0 == .ended(uuid, .remoteEnded) }
        #expect(phone.system.records.values.filter(\.isEnd) == [.ended(uuid, .remoteEnded)])
        #expect(phone.system.problems() == [])
        await h.stop()
    }

    // MARK: - how calls end

    /// Each way a ringing call ends elsewhere maps to the system's reason.
    @Test func remoteEndsMapToSystemReasons() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await h.phone(login: true)
        let tablet = try await h.server.client("bob", deviceId: "bob-tablet")
        let tabletEvents = Recorder(tablet.callStore.events)

        func ring() async throws -> (CallID, UUID) {
            let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
            let uuid = UUID(callId: call.callId)
            try await phone.system.records.first(from: 0) { if case .ringing(uuid, _) = $0 { true } else { false } }
            try await tabletEvents.first(from: 0) { if case .onCallReceived(call.callId, _, _, _, _) = $0 { true } else { false } }
            return (call.callId, uuid)
        }

        let answered = try await ring()
        try await tablet.callStore.accept(callId: answered.0)
        try await phone.system.records.first(from: 0) { $0 == .ended(answered.1, .answeredElsewhere) }
        try await tablet.callStore.hangup()
        try await h.aliceEvents.first(from: 0) { if case .onCallEnded(answered.0, _, _, _) = $0 { true } else { false } }

        let declined = try await ring()
        try await tablet.callStore.reject(callId: declined.0)
        try await phone.system.records.first(from: 0) { $0 == .ended(declined.1, .declinedElsewhere) }

        let canceled = try await ring()
        try await h.alice.callStore.hangup()
        try await phone.system.records.first(from: 0) { $0 == .ended(canceled.1, .remoteEnded) }

        let unanswered = try await ring()
        h.server.clock.advance(by: .seconds(30))
        try await phone.system.records.first(from: 0) { $0 == .ended(unanswered.1, .unanswered) }

        #expect(phone.system.rings == 4)
        #expect(phone.system.problems() == [])
        await h.stop()
    }

    /// A call the system will not show (Do Not Disturb) is declined rather than left ringing unseen.
    @Test func aCallTheSystemFiltersIsDeclined() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await h.phone(login: true)
        phone.system.behaviour.reportError = .filteredByDoNotDisturb
        let call = try await h.alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await phone.system.records.first(from: 0) { $0 == .reportRefused(UUID(callId: call.callId), .filteredByDoNotDisturb) }
        #expect(
            try await h.aliceEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .reject, userId: "bob"))
        #expect(phone.system.problems() == [])
        await h.stop()
    }

    // MARK: - push token

    /// PushKit's token reaches the server after login; invalidation removes it.
    @Test func thePushTokenIsRegisteredAndRemoved() async throws {
        let h = try await CallKitHarness.start(pushToken: false)
        let phone = try await h.phone(login: false)
        let logins = Recorder(phone.client.loginStore.stateUpdates)
        let token = String(repeating: "cd", count: 32)
        phone.system.updatePushToken(Data(repeating: 0xCD, count: 32))
        try await phone.coordinator.login(phone.account)
        try await logins.first(from: 0) { $0.pushToken == token }
        let storage = h.server.node.inspection.storage
        let app = h.server.app.sdkAppID
        #expect(try await storage.pushTokens(app: app, users: ["bob"])["bob"]?.map(\.token) == [token])

        let registeredAt = logins.values.count
        phone.system.invalidatePushToken()
        try await logins.first(from: registeredAt) { $0.loginStatus == .loggedIn && $0.pushToken == nil }
        #expect(try await storage.pushTokens(app: app, users: ["bob"])["bob", default: []].isEmpty)
        await h.stop()
    }

    // MARK: - values

    @Test func providerConfigurationFollowsTheSettings() {
        var settings = CallKitSettings(
            bundleId: "com.example.app", pushEnvironment: .production, mediaTypes: [.audio], ringtoneSound: "ring.caf",
            iconTemplateImageName: "CallIcon")
        #expect(
            settings.providerConfiguration
                == ProviderConfiguration(
                    maximumCallGroups: 1, maximumCallsPerCallGroup: 1, supportsVideo: false, includesCallsInRecents: true,
                    ringtoneSound: "ring.caf", iconTemplateImageName: "CallIcon"))
        settings.mediaTypes = [.audio, .video]
        settings.includesCallsInRecents = false
        #expect(settings.providerConfiguration.supportsVideo)
        #expect(!settings.providerConfiguration.includesCallsInRecents)
    }

    @Test func aCallKeepsOneUUID() {
        let uuid = UUID()
        #expect(UUID(callId: CallID(rawValue: uuid.uuidString)) == uuid)
        #expect(UUID(callId: CallID(rawValue: uuid.uuidString.lowercased())) == uuid)
        let named = UUID(callId: "call-42")
        #expect(named == UUID(callId: "call-42"))
        #expect(named != UUID(callId: "call-43"))
        #expect(named.uuidString.dropFirst(14).first == "5")
    }

    @Test(arguments: [
        (CallEndReason.hangup, SystemCallEndReason.remoteEnded), (.canceled, .remoteEnded), (.reject, .remoteEnded),
        (.noResponse, .unanswered), (.otherDeviceAccepted, .answeredElsewhere), (.otherDeviceReject, .declinedElsewhere),
        (.offline, .failed), (.lineBusy, .failed), (.endByServer, .failed), (.unknown, .failed),
    ])
    func endReasonsMapToSystemReasons(_ reason: CallEndReason, _ system: SystemCallEndReason) {
        #expect(SystemCallEndReason(reason) == system)
    }
}
