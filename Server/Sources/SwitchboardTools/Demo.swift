import Foundation
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol

/// Plays `switchboard demo`: logs in SDK clients and runs call scenarios against a server,
/// printing every event as a timeline and checking that each expected event arrived.
public struct Demo: Sendable {
    public enum Scenario: String, CaseIterable, Sendable {
        /// alice and bob: a connected call, a rejected call, a canceled call, an unanswered call.
        case basic
        /// alice calls bob (two devices), carol and dave; bob answers on his tablet, carol never
        /// answers, dave declines and joins later, erin is refused a join and then invited.
        case group
    }

    let serverURL: URL
    let sdkAppID: SdkAppID
    let clock: any SwitchboardClock
    /// Lets time pass: sleeps on a real clock, advances a test clock.
    let pause: @Sendable (Duration) async throws -> Void
    let output: @Sendable (String) -> Void
    let userSig: @Sendable (String) -> String
    let timeout: Duration

    /// - Parameters:
    ///   - userSig: makes a UserSig for a user id.
    ///   - pause: lets time pass (2 s in a call, a 2 s ring timeout).
    ///   - timeout: the longest wait for one expected event (real time).
    public init(
        serverURL: URL, sdkAppID: SdkAppID, clock: any SwitchboardClock,
        userSig: @escaping @Sendable (String) -> String, pause: @escaping @Sendable (Duration) async throws -> Void,
        timeout: Duration = .seconds(10), output: @escaping @Sendable (String) -> Void
    ) {
        self.serverURL = serverURL
        self.sdkAppID = sdkAppID
        self.clock = clock
        self.userSig = userSig
        self.pause = pause
        self.timeout = timeout
        self.output = output
    }

    /// Runs a scenario; true when every expected event arrived.
    public func run(_ scenario: Scenario) async -> Bool {
        let timeline = Timeline(clock: clock, output: output)
        do {
            switch scenario {
            case .basic: try await runBasic(timeline)
            case .group: try await runGroup(timeline)
            }
        } catch {
            timeline.fail("stopped: \(error)")
        }
        let failures = timeline.failures
        output("")
        output(failures == 0 ? "demo passed: every expected event arrived" : "demo FAILED: \(failures) expectation(s) not met")
        return failures == 0
    }

    // MARK: - basic

    private func runBasic(_ timeline: Timeline) async throws {
        let alice = try await login("alice", timeline)
        let bob = try await login("bob", timeline)

        timeline.section("1. connected call")
        let first = try await call(from: alice, to: bob, .video, timeline)
        try await timeline.expectEvent(bob, "bob", timeout) { if case .onCallReceived(first, _, _, _, _) = $0 { true } else { false } }
        timeline.action("bob", "accepts")
        try await bob.client.callStore.accept()
        try await timeline.expectEvent(alice, "alice", timeout) { if case .onCallStarted(first, _, _) = $0 { true } else { false } }
        try await timeline.expectEvent(bob, "bob", timeout) { if case .onCallStarted(first, _, _) = $0 { true } else { false } }
        timeline.action("-", "talking for 2 s")
        try await pause(.seconds(2))
        // The call timer comes from the server's start time; both sides must show 2 s.
        for participant in [alice, bob] {
            try await timeline.expectState(participant, timeout, "timer at 0:02") { $0.activeCall?.duration == 2 }
        }
        timeline.action("alice", "hangs up after \(alice.client.callStore.state.activeCall?.duration ?? -1) s")
        try await alice.client.callStore.hangup()
        try await expectEnd(first, .hangup, by: "alice", alice, bob, timeline)

        timeline.section("2. rejected call")
        let second = try await call(from: alice, to: bob, .audio, timeline)
        try await timeline.expectEvent(bob, "bob", timeout) { if case .onCallReceived(second, _, _, _, _) = $0 { true } else { false } }
        timeline.action("bob", "rejects")
        try await bob.client.callStore.reject()
        try await expectEnd(second, .reject, by: "bob", alice, bob, timeline)

        timeline.section("3. canceled call")
        let third = try await call(from: alice, to: bob, .video, timeline)
        try await timeline.expectEvent(bob, "bob", timeout) { if case .onCallReceived(third, _, _, _, _) = $0 { true } else { false } }
        timeline.action("alice", "hangs up before an answer")
        try await alice.client.callStore.hangup()
        try await expectEnd(third, .canceled, by: "alice", alice, bob, timeline)

        timeline.section("4. unanswered call (2 s timeout)")
        let fourth = try await call(from: alice, to: bob, .audio, timeline, timeoutSeconds: 2)
        try await timeline.expectEvent(bob, "bob", timeout) { if case .onCallReceived(fourth, _, _, _, _) = $0 { true } else { false } }
        timeline.action("-", "nobody answers for 2 s")
        try await pause(.seconds(2))
        try await expectEnd(fourth, .noResponse, by: "bob", alice, bob, timeline)

        timeline.section("records")
        try await timeline.expectRecords(
            alice, "alice", [first: .answered, second: .rejected, third: .canceled, fourth: .noAnswer])
        try await timeline.expectRecords(
            bob, "bob", [first: .answered, second: .rejected, third: .missed, fourth: .missed])
        try await alice.client.loginStore.logout()
        try await bob.client.loginStore.logout()
    }

    // MARK: - group

    private func runGroup(_ timeline: Timeline) async throws {
        let alice = try await login("alice", timeline)
        let bobPhone = try await login("bob", timeline, device: "bob-phone")
        let bobTablet = try await login("bob", timeline, device: "bob-tablet")
        let carol = try await login("carol", timeline)
        let dave = try await login("dave", timeline)
        let erin = try await login("erin", timeline)

        timeline.section("alice calls bob, carol and dave (10 s ring timeout)")
        timeline.action("alice", "calls bob, carol, dave (audio, group)")
        let call = try await alice.client.callStore.calls(
            participantIds: ["bob", "carol", "dave"], mediaType: .audio, params: CallParams(timeout: 10)
        ).callId
        for participant in [bobPhone, bobTablet, carol, dave] {
            try await timeline.expectEvent(participant, participant.name, timeout) {
                if case .onCallReceived(call, _, _, _, _) = $0 { true } else { false }
            }
        }

        timeline.section("bob answers on his tablet")
        timeline.action("bob@tablet", "accepts")
        try await bobTablet.client.callStore.accept()
        try await timeline.expectEvent(bobPhone, "bob@phone", timeout) {
            $0 == .onCallEnded(callId: call, mediaType: .audio, reason: .otherDeviceAccepted, userId: "bob")
        }
        try await timeline.expectEvent(bobPhone, "bob@phone", timeout) {
            if case .onCallElsewhere(call, _, true) = $0 { true } else { false }
        }
        try await timeline.expectEvent(alice, "alice", timeout) { if case .onCallStarted(call, _, _) = $0 { true } else { false } }

        timeline.section("dave declines")
        timeline.action("dave", "rejects")
        try await dave.client.callStore.reject()
        try await timeline.expectEvent(alice, "alice", timeout) {
            $0 == .onParticipantStatusChanged(callId: call, userId: "dave", status: .none, reason: .reject)
        }

        timeline.section("carol never answers")
        timeline.action("-", "10 s pass")
        try await pause(.seconds(10))
        try await timeline.expectEvent(carol, "carol", timeout) {
            $0 == .onCallEnded(callId: call, mediaType: .audio, reason: .noResponse, userId: "carol")
        }
        try await timeline.expectEvent(alice, "alice", timeout) {
            $0 == .onParticipantStatusChanged(callId: call, userId: "carol", status: .none, reason: .noResponse)
        }

        timeline.section("erin may not join; dave changes his mind and joins late")
        timeline.action("erin", "tries to join")
        do {
            try await erin.client.callStore.join(callId: call)
            timeline.fail("erin joined a call she was not invited to")
        } catch let error as SwitchboardError where error.code == .joinNotAllowed {
            timeline.action("erin", "refused: \(error.code.name)")
        }
        timeline.action("dave", "joins")
        try await dave.client.callStore.join(callId: call)
        try await timeline.expectEvent(alice, "alice", timeout) {
            $0 == .onParticipantStatusChanged(callId: call, userId: "dave", status: .accept, reason: nil)
        }

        timeline.section("alice invites erin mid-call")
        timeline.action("alice", "invites erin")
        try await alice.client.callStore.invite(participantIds: ["erin"])
        try await timeline.expectEvent(erin, "erin", timeout) { if case .onCallReceived(call, _, "alice", _, _) = $0 { true } else { false } }
        timeline.action("erin", "accepts")
        try await erin.client.callStore.accept()
        try await timeline.expectEvent(bobTablet, "bob@tablet", timeout) {
            $0 == .onParticipantStatusChanged(callId: call, userId: "erin", status: .accept, reason: nil)
        }

        timeline.section("live status: bob speaks")
        timeline.action("bob@tablet", "reports 0.5% loss, 60 ms, audio level 80")
        try await bobTablet.client.callStore.reportStatus(packetLoss: 0.5, rtt: 60, bitrate: 48, audioLevel: 80)
        try await timeline.expectEvent(alice, "alice", timeout) {
            $0 == .onMemberStatusChanged(callId: call, userId: "bob", networkQuality: .excellent, volumeLevel: .peak)
        }
        try await timeline.expectState(alice, timeout, "bob is the active speaker") { $0.activeSpeakerId == "bob" }
        try await timeline.expectState(erin, timeout, "4 members in the call") {
            $0.allParticipants.filter { $0.status == .accept }.count == 4
        }

        timeline.section("everyone leaves")
        for (participant, name) in [(erin, "erin"), (dave, "dave"), (bobTablet, "bob@tablet")] {
            timeline.action(name, "hangs up")
            try await participant.client.callStore.hangup()
        }
        try await timeline.expectEvent(alice, "alice", timeout) {
            $0 == .onCallEnded(callId: call, mediaType: .audio, reason: .hangup, userId: "bob")
        }
        try await timeline.expectEvent(bobPhone, "bob@phone", timeout) {
            if case .onCallElsewhere(call, _, false) = $0 { true } else { false }
        }
        for participant in [alice, bobTablet, carol, dave, erin] {
            try await timeline.expectEvent(participant, participant.name, timeout) {
                if case .onCallRecord(let record) = $0 { record.callId == call } else { false }
            }
        }

        timeline.section("records")
        try await timeline.expectRecords(alice, "alice", [call: .answered])
        try await timeline.expectRecords(bobPhone, "bob", [call: .answered])
        try await timeline.expectRecords(carol, "carol", [call: .missed])
        try await timeline.expectRecords(dave, "dave", [call: .answered])
        try await timeline.expectRecords(erin, "erin", [call: .answered])
        for participant in [alice, bobPhone, bobTablet, carol, dave, erin] {
            try await participant.client.loginStore.logout()
        }
    }

    private func expectEnd(
        _ callId: CallID, _ reason: CallEndReason, by user: UserID, _ a: Participant, _ b: Participant,
        _ timeline: Timeline
    ) async throws {
        for (participant, name) in [(a, a.name), (b, b.name)] {
            try await timeline.expectEvent(participant, name, timeout) {
                $0 == .onCallEnded(callId: callId, mediaType: $0.mediaType ?? .audio, reason: reason, userId: user)
            }
        }
        for (participant, name) in [(a, a.name), (b, b.name)] {
            try await timeline.expectEvent(participant, name, timeout) {
                if case .onCallRecord(let record) = $0 { record.callId == callId } else { false }
            }
        }
    }

    // MARK: - participants

    final class Participant: Sendable {
        let name: String
        let client: SwitchboardClient
        let events: Recorder<CallStoreEvent>

        init(name: String, client: SwitchboardClient) {
            self.name = name
            self.client = client
            self.events = Recorder(client.callStore.events)
        }
    }

    private func login(_ name: String, _ timeline: Timeline, device: String? = nil) async throws -> Participant {
        let client = SwitchboardClient(
            configuration: SwitchboardConfiguration(
                serverURL: serverURL, deviceId: device.map(DeviceID.init(rawValue:)), platform: "demo", clock: clock))
        let participant = Participant(name: device.map { "bob@\($0.dropFirst(4))" } ?? name, client: client)
        // As a real app does: the microphone is on for calls, the camera for video calls.
        client.deviceStore.openLocalMicrophone()
        try await client.loginStore.login(sdkAppID: sdkAppID, userID: name, userSig: userSig(name))
        timeline.action(participant.name, "logged in (device \(client.loginStore.state.deviceId?.rawValue.prefix(10) ?? "?"))")
        timeline.watch(participant)
        return participant
    }

    private func call(
        from caller: Participant, to callee: Participant, _ mediaType: CallMediaType, _ timeline: Timeline,
        timeoutSeconds: Int? = nil
    ) async throws -> CallID {
        timeline.action(caller.name, "calls \(callee.name) (\(mediaType.rawValue))")
        let result = try await caller.client.callStore.calls(
            participantIds: [callee.name], mediaType: mediaType, params: CallParams(timeout: timeoutSeconds))
        return result.callId
    }
}

/// Prints what happens with timestamps relative to the start, and counts unmet expectations.
final class Timeline: Sendable {
    private let clock: any SwitchboardClock
    private let start: Int64
    private let output: @Sendable (String) -> Void
    private let state = NIOLockedValueBox<(failures: Int, watchers: [Task<Void, Never>])>((0, []))

    init(clock: any SwitchboardClock, output: @escaping @Sendable (String) -> Void) {
        self.clock = clock
        self.start = clock.now()
        self.output = output
    }

    deinit {
        state.withLockedValue { $0.watchers.forEach { $0.cancel() } }
    }

    var failures: Int { state.withLockedValue { $0.failures } }

    private func stamp() -> String {
        let elapsed = Double(clock.now() - start) / 1000
        return String(format: "%8.3fs", elapsed)
    }

    func section(_ title: String) { output("\n== \(title)") }

    func action(_ who: String, _ text: String) {
        output("\(stamp())  \(who.padding(toLength: 10, withPad: " ", startingAt: 0)) → \(text)")
    }

    func fail(_ text: String) {
        state.withLockedValue { $0.failures += 1 }
        output("\(stamp())  ✗ \(text)")
    }

    /// Prints every event the participant receives as it arrives.
    func watch(_ participant: Demo.Participant) {
        let events = participant.client.callStore.events
        let task = Task { [self] in
            for await event in events {
                output("\(stamp())  \(participant.name.padding(toLength: 10, withPad: " ", startingAt: 0)) ← \(event.summary)")
            }
        }
        state.withLockedValue { $0.watchers.append(task) }
    }

    func expectEvent(
        _ participant: Demo.Participant, _ name: String, _ timeout: Duration,
        _ predicate: @escaping @Sendable (CallStoreEvent) -> Bool
    ) async throws {
        do {
            // From the start of the participant's events: every event the demo waits for names
            // its own call, so none earlier can answer it.
            try await participant.events.first(from: 0, timeout: timeout, where: predicate)
        } catch {
            fail("\(name) did not get the expected event")
        }
    }

    func expectState(
        _ participant: Demo.Participant, _ timeout: Duration, _ description: String,
        _ predicate: @escaping @Sendable (CallStore.State) -> Bool
    ) async throws {
        do {
            // A state reached: the state as it is now (the stream's first value) counts.
            try await Recorder(participant.client.callStore.stateUpdates).first(from: 0, timeout: timeout, where: predicate)
            output("\(stamp())  \(participant.name.padding(toLength: 10, withPad: " ", startingAt: 0)) ✓ \(description)")
        } catch {
            fail("\(participant.name): \(description) not reached")
        }
    }

    func expectRecords(_ participant: Demo.Participant, _ name: String, _ expected: [CallID: CallRecordResult]) async throws {
        let page = try await participant.client.callStore.queryRecords(syncTime: -1, count: 20, order: .ascending)
        output("  \(name)'s records (oldest first):")
        for record in page.records {
            output(
                "    \(record.callId.rawValue.prefix(8))  \(record.direction.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) "
                    + "\(record.mediaType.rawValue)  \(record.result.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) "
                    + "\(record.endReason.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)) \(record.duration) s")
        }
        let actual = Dictionary(page.records.map { ($0.callId, $0.result) }, uniquingKeysWith: { a, _ in a })
        for (callId, result) in expected where actual[callId] != result {
            fail("\(name)'s record of \(callId.rawValue.prefix(8)) is \(actual[callId]?.rawValue ?? "missing"), expected \(result.rawValue)")
        }
    }
}

extension CallStoreEvent {
    /// The media type, for events that carry one.
    var mediaType: CallMediaType? {
        switch self {
        case .onCallPlaced(_, _, let mediaType), .onCallReceived(_, _, _, let mediaType, _),
            .onCallStarted(_, let mediaType, _), .onCallEnded(_, let mediaType, _, _):
            mediaType
        case .onCallRecord(let record): record.mediaType
        case .onMediaTypeChangeRequested(_, _, let mediaType, _), .onMediaTypeChangeResult(_, _, let mediaType, _, _):
            mediaType
        case .onRemoteDeviceChanged, .onRemoteScreenShareChanged, .onParticipantStatusChanged, .onMemberStatusChanged,
            .onCallElsewhere, .onCallMoveOffered, .onCallMoveOfferEnded, .onCallMoved, .onMemberMoved, .onRecordingStarted,
            .onRecordingStopped:
            nil
        }
    }

    /// One line for a timeline.
    public var summary: String {
        switch self {
        case .onCallPlaced(let callId, let participantIds, let mediaType):
            "onCallPlaced \(callId.rawValue.prefix(8)) to \(participantIds.map(\.rawValue).joined(separator: ", ")) (\(mediaType.rawValue))"
        case .onCallReceived(let callId, let callerId, _, let mediaType, _):
            "onCallReceived \(callId.rawValue.prefix(8)) from \(callerId) (\(mediaType.rawValue))"
        case .onCallStarted(let callId, _, let startTime):
            "onCallStarted \(callId.rawValue.prefix(8)) at server time \(startTime)"
        case .onCallEnded(let callId, _, .offline, let userId):
            // The user is the callee, who did nothing: no device of theirs is known (issue 48).
            "onCallEnded \(callId.rawValue.prefix(8)) reason=offline (no device of \(userId?.rawValue ?? "the callee") is known)"
        case .onCallEnded(let callId, _, let reason, let userId):
            "onCallEnded \(callId.rawValue.prefix(8)) reason=\(reason.rawValue) by \(userId?.rawValue ?? "server")"
        case .onCallRecord(let record):
            "onCallRecord \(record.callId.rawValue.prefix(8)) result=\(record.result.rawValue) duration=\(record.duration) s"
        case .onRemoteDeviceChanged(let callId, let userId, let microphoneOn, let cameraOn):
            "onRemoteDeviceChanged \(callId.rawValue.prefix(8)) \(userId) mic=\(microphoneOn ? "on" : "off") camera=\(cameraOn ? "on" : "off")"
        case .onRemoteScreenShareChanged(let callId, let userId, let sharing):
            "onRemoteScreenShareChanged \(callId.rawValue.prefix(8)) \(userId) \(sharing ? "shares a screen" : "stopped sharing")"
        case .onParticipantStatusChanged(let callId, let userId, let status, let reason):
            "onParticipantStatusChanged \(callId.rawValue.prefix(8)) \(userId) → \(status.rawValue)"
                + (reason.map { " (\($0.rawValue))" } ?? "")
        case .onMediaTypeChangeRequested(let callId, _, let mediaType, let userId):
            "onMediaTypeChangeRequested \(callId.rawValue.prefix(8)) \(userId) asks for \(mediaType.rawValue)"
        case .onMediaTypeChangeResult(let callId, _, let mediaType, _, let result):
            "onMediaTypeChangeResult \(callId.rawValue.prefix(8)) \(mediaType.rawValue): \(result.rawValue)"
        case .onMemberStatusChanged(let callId, let userId, let quality, let volume):
            "onMemberStatusChanged \(callId.rawValue.prefix(8)) \(userId) network=\(quality.rawValue) volume=\(volume.rawValue)"
        case .onCallElsewhere(let callId, let deviceId, let active):
            "onCallElsewhere \(callId.rawValue.prefix(8)) on device \(deviceId.rawValue.prefix(8)) \(active ? "active" : "ended")"
        case .onCallMoveOffered(let callId, let from, _):
            "onCallMoveOffered \(callId.rawValue.prefix(8)) from device \(from.rawValue.prefix(8))"
        case .onCallMoveOfferEnded(let callId, let reason):
            "onCallMoveOfferEnded \(callId.rawValue.prefix(8)) \(reason.rawValue)"
        case .onCallMoved(let callId, let from, let to):
            "onCallMoved \(callId.rawValue.prefix(8)) from device \(from.rawValue.prefix(8)) to \(to.rawValue.prefix(8))"
        case .onMemberMoved(let callId, let userId):
            "onMemberMoved \(callId.rawValue.prefix(8)) \(userId) is on another device"
        case .onRecordingStarted(let callId, let startedBy, _):
            "onRecordingStarted \(callId.rawValue.prefix(8)) by \(startedBy?.rawValue ?? "the app's policy")"
        case .onRecordingStopped(let callId, let stoppedBy):
            "onRecordingStopped \(callId.rawValue.prefix(8)) by \(stoppedBy?.rawValue ?? "someone")"
        }
    }
}
