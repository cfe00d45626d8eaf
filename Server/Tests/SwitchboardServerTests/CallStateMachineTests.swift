import Foundation
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

/// Table tests of the call rules: each row sets up calls with a list of events, applies one more
/// event, and compares the actions it produced, in order, written one per line:
///
///     reply ok | reply error <code> | reply started busy=[…] | reply call <status…>
///     <user>@<device or *> ← <event>(<reason> by <user>)      events (`*`: all devices, `*-d`: all but d)
///     timer <key> +<ms> | cancel <key>
///     records <user>:<result>/<reason>/<duration>s …
///
/// Time starts at T0; each setup event and the event under test happen 1 s after the previous one
/// unless the row says otherwise.
struct CallStateMachineTests {
    static let app: SdkAppID = 1_400_000_001
    static let t0: Int64 = 1_767_225_600_000

    // MARK: - events

    enum Step: Sendable {
        /// An event, with what the engine looked up for it (placing a call, inviting, joining).
        case event(CallEvent, CallFacts = CallFacts())
        /// Moves time forward (ms) without an event.
        case wait(Int64)
    }

    static func user(_ name: String) -> UserKey { UserKey(app: app, user: UserID(rawValue: name)) }

    /// A device id is the user's first letter and a number: a1, b1, b2…
    static func device(_ name: String) -> DeviceID { DeviceID(rawValue: name) }

    static func start(
        _ caller: String = "alice", _ device: String = "a1", to invitees: [String] = ["bob"], call: String = "c1",
        online: [String]? = nil, media: CallMediaType = .audio, params: CallParams? = nil,
        policy: BusyPolicy = .reject, maxParticipants: Int = 16, blockedBy: [String] = [],
        blockedSees: BlockedCallerSees = .reject, pushable: [String] = [], declineAfter: Int64? = nil,
        recording: RecordingSettings = RecordingSettings()
    ) -> Step {
        .event(
            .start(
                StartCallCommand(
                    caller: user(caller), device: Self.device(device), callId: CallID(rawValue: call),
                    generatedRoomId: RoomID(rawValue: "room-\(call)"),
                    request: StartCallRequest(
                        participantIds: invitees.map(UserID.init(rawValue:)), mediaType: media, params: params),
                    settings: AppSettings(
                        busyPolicy: policy, maxParticipants: maxParticipants, blockedCallerSees: blockedSees,
                        recording: recording),
                    profiles: [:])),
            facts(invitees, online: online, pushable: pushable, blockedBy: blockedBy, declineAfter: declineAfter))
    }

    /// What the engine would have found: every invitee online unless `online` says who is.
    static func facts(
        _ invitees: [String], online: [String]?, pushable: [String], blockedBy: [String], declineAfter: Int64?
    ) -> CallFacts {
        CallFacts(
            online: Set((online ?? invitees).map(UserID.init(rawValue:))),
            pushable: Set(pushable.map(UserID.init(rawValue:))),
            blockedBy: Set(blockedBy.map(UserID.init(rawValue:))),
            declineDelays: declineAfter.map { delay in
                Dictionary(uniqueKeysWithValues: blockedBy.map { (UserID(rawValue: $0), delay) })
            } ?? [:])
    }

    static func command(_ user: String, _ device: String, _ call: String) -> CallCommand {
        CallCommand(user: Self.user(user), device: Self.device(device), callId: CallID(rawValue: call))
    }

    static func accept(_ user: String, _ device: String, _ call: String = "c1") -> Step {
        .event(.accept(command(user, device, call)))
    }
    static func reject(_ user: String, _ device: String, _ call: String = "c1") -> Step {
        .event(.reject(command(user, device, call)))
    }
    static func hangup(_ user: String, _ device: String, _ call: String = "c1") -> Step {
        .event(.hangup(command(user, device, call)))
    }
    static func ringTimeout(_ user: String, _ call: String = "c1") -> Step {
        .event(.timerFired(.ring(CallID(rawValue: call), UserID(rawValue: user))))
    }
    static func graceTimeout(_ user: String, _ call: String = "c1") -> Step {
        .event(.timerFired(.reconnectGrace(CallID(rawValue: call), UserID(rawValue: user))))
    }
    static func offline(_ user: String, _ device: String) -> Step { .event(.deviceOffline(Self.user(user), Self.device(device))) }
    static func online(_ user: String, _ device: String) -> Step { .event(.deviceOnline(Self.user(user), Self.device(device))) }
    static func logout(_ user: String, _ device: String) -> Step { .event(.logout(Self.user(user), Self.device(device))) }
    static func devices(_ user: String, _ device: String, mic: Bool?, camera: Bool?, call: String = "c1") -> Step {
        .event(.updateDevice(command(user, device, call), microphoneOn: mic, cameraOn: camera))
    }

    static func invite(
        _ user: String, _ device: String, _ invitees: [String], call: String = "c1", online: [String]? = nil,
        policy: BusyPolicy = .reject, maxParticipants: Int = 16, pushable: [String] = [], blockedBy: [String] = [],
        declineAfter: Int64? = nil
    ) -> Step {
        .event(
            .invite(
                InviteCommand(
                    command: command(user, device, call), invitees: invitees.map(UserID.init(rawValue:)),
                    settings: AppSettings(busyPolicy: policy, maxParticipants: maxParticipants), profiles: [:])),
            facts(invitees, online: online, pushable: pushable, blockedBy: blockedBy, declineAfter: declineAfter))
    }
    static func join(
        _ user: String, _ device: String, call: String = "c1", groupMember: Bool = false, policy: BusyPolicy = .reject
    ) -> Step {
        .event(
            .join(
                JoinCommand(command: command(user, device, call), settings: AppSettings(busyPolicy: policy), profile: nil)),
            CallFacts(isChatGroupMember: groupMember))
    }
    static func changeMedia(_ user: String, _ device: String, to media: CallMediaType, _ transaction: String = "t1") -> Step {
        .event(.changeMediaType(command(user, device, "c1"), media, TransactionID(rawValue: transaction)))
    }
    static func replyMedia(_ user: String, _ device: String, agree: Bool, _ transaction: String = "t1") -> Step {
        .event(.replyMediaType(command(user, device, "c1"), TransactionID(rawValue: transaction), agree: agree))
    }
    static func cancelMedia(_ user: String, _ device: String, _ transaction: String = "t1") -> Step {
        .event(.cancelMediaType(command(user, device, "c1"), TransactionID(rawValue: transaction)))
    }
    static func mediaTimeout(_ transaction: String = "t1") -> Step {
        .event(.timerFired(.mediaChange("c1", TransactionID(rawValue: transaction))))
    }
    static func offerMove(_ user: String, _ device: String, to target: String? = nil, call: String = "c1") -> Step {
        .event(.offerMove(command(user, device, call), to: target.map(Self.device)))
    }
    static func take(_ user: String, _ device: String, call: String = "c1", pull: Bool = false) -> Step {
        .event(.take(TakeCommand(command: command(user, device, call), settings: AppSettings(callPull: pull))))
    }
    static func moveOfferLapses(_ user: String, _ call: String = "c1") -> Step {
        .event(.timerFired(.moveOffer(CallID(rawValue: call), UserID(rawValue: user))))
    }
    static func report(
        _ user: String, _ device: String, loss: Double = 0.5, rtt: Int = 50, level: Int = 80
    ) -> Step {
        .event(
            .statusReport(
                command(user, device, "c1"),
                StatusReport(packetLoss: loss, rtt: rtt, bitrate: 500, audioLevel: level)))
    }

    // MARK: - the table (its rows are in CallStateMachineTests+*.swift, one file per kind of call)

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// The server has an SFU: group calls' media goes through it.
        var sfu = false
        /// The server records calls (it has an SFU and a recordings directory).
        var recording = false
        var setup: [Step] = []
        var step: Step
        var expected: [String]
        var testDescription: String { name }
    }

    @Test(arguments: oneToOne) func oneToOneCalls(_ row: Row) { check(row) }
    @Test(arguments: group) func groupCalls(_ row: Row) { check(row) }
    @Test(arguments: inviteAndJoin) func invitingAndJoining(_ row: Row) { check(row) }
    @Test(arguments: mediaChange) func mediaTypeChanges(_ row: Row) { check(row) }
    @Test(arguments: status) func statusReports(_ row: Row) { check(row) }
    @Test(arguments: mediaRelay) func mediaSignals(_ row: Row) { check(row) }
    @Test(arguments: deviceScope) func onlyTheDeviceInTheCallActs(_ row: Row) { check(row) }
    @Test(arguments: validation) func startValidation(_ row: Row) { check(row) }
    @Test(arguments: blocking) func blockedCallers(_ row: Row) { check(row) }
    @Test(arguments: pushes) func voipPushes(_ row: Row) { check(row) }
    @Test(arguments: devices) func devicesAndConnections(_ row: Row) { check(row) }
    @Test(arguments: callWaiting) func callWaitingAndShutdown(_ row: Row) { check(row) }
    @Test(arguments: sfu) func groupCallsThroughTheSFU(_ row: Row) { check(row) }
    @Test(arguments: moving) func movingACallBetweenDevices(_ row: Row) { check(row) }
    @Test(arguments: recording) func recordingCalls(_ row: Row) { check(row) }

    /// An invitation counts against a callee's budget where it rings them, and only there: not for
    /// a callee who is busy (under `reject`), unreachable, screened (blocking the caller) or out of
    /// budget; one out of budget is offline to the caller, as a callee with nothing to ring. The
    /// rules are the machine's alone: the engine only looks at the budgets (``CallFacts/overBudget``).
    @Test func invitationsCountWhereTheyRingAndNoBudgetIsOffline() throws {
        var machine = CallStateMachine(configuration: CallStateMachine.Configuration())
        // dave is in a call already (busy under the reject policy).
        _ = machine.handle(
            .start(
                StartCallCommand(
                    caller: Self.user("dave"), device: Self.device("d1"), callId: CallID(rawValue: "c0"),
                    generatedRoomId: RoomID(rawValue: "room-c0"),
                    request: StartCallRequest(participantIds: ["frank"], mediaType: .audio, params: nil),
                    settings: AppSettings(), profiles: [:])),
            facts: CallFacts(online: ["frank"]), now: Self.t0)
        let invitees: [UserID] = ["bob", "carol", "dave", "erin", "grace"]
        let command = StartCallCommand(
            caller: Self.user("alice"), device: Self.device("a1"), callId: CallID(rawValue: "c1"),
            generatedRoomId: RoomID(rawValue: "room-c1"),
            request: StartCallRequest(participantIds: invitees, mediaType: .audio, params: nil),
            settings: AppSettings(busyPolicy: .reject, blockedCallerSees: .reject), profiles: [:])
        let facts = CallFacts(
            online: ["bob", "carol", "dave", "erin"], blockedBy: ["carol"], declineDelays: ["carol": 5_000],
            overBudget: ["erin", "carol"])
        let output = machine.handle(.start(command), facts: facts, now: Self.t0 + 1_000)
        let counted = output.actions.compactMap { action -> UserID? in
            if case .countInvitation(let key) = action { key.user } else { nil }
        }
        // bob rings; carol is screened (her budget is not looked at), dave busy, erin out of
        // budget, grace unreachable (no device, no push token).
        #expect(counted == ["bob"])
        let response = try #require({ if case .started(let response) = output.reply { response } else { nil } }())
        #expect(response.busyUserIds == ["dave"])
        let call = try #require(machine.calls[CallID(rawValue: "c1")])
        let phases = Dictionary(uniqueKeysWithValues: call.members.map { ($0.userId, $0.phase) })
        if case .left(let departure) = try #require(phases["erin"]) {
            #expect(departure.reason == .offline)
            #expect(departure.result == .missed)
        } else {
            Issue.record("erin, out of budget, was not left offline: \(String(describing: phases["erin"]))")
        }
        if case .ringing = try #require(phases["bob"]) {} else { Issue.record("bob does not ring") }
        if case .screened = try #require(phases["carol"]) {} else { Issue.record("carol is not screened") }
    }

    /// A nickname saved before the rules refused format characters is left out of pushes (the
    /// app shows the caller's id); a valid one goes in.
    @Test func aNicknameThatCouldSpoofTheLockScreenStaysOutOfPushes() throws {
        for (nickname, shown) in [("\u{202E}knab ruoY", nil), ("Alice", "Alice")] as [(String, String?)] {
            var machine = CallStateMachine()
            let command = StartCallCommand(
                caller: Self.user("alice"), device: "a1", callId: "c1", generatedRoomId: "room-c1",
                request: StartCallRequest(participantIds: ["bob"], mediaType: .audio), settings: AppSettings(),
                profiles: ["alice": UserProfile(userId: "alice", nickname: nickname)])
            let output = machine.handle(.start(command), facts: CallFacts(pushable: ["bob"]), now: Self.t0)
            let push = try #require(
                output.actions.lazy.compactMap { action -> IncomingCallPush? in
                    if case .push(let message) = action, case .ring(let push) = message.content { push } else { nil }
                }.first)
            #expect(push.callerName == shown)
        }
    }

    // MARK: - running a row

    func check(_ row: Row, sourceLocation: SourceLocation = #_sourceLocation) {
        var configuration = CallStateMachine.Configuration()
        configuration.sfu = row.sfu || row.recording
        configuration.recording = row.recording
        var machine = CallStateMachine(configuration: configuration)
        var now = Self.t0
        func apply(_ step: Step) -> [String]? {
            switch step {
            case .wait(let ms):
                now += ms
                return nil
            case .event(let event, let facts):
                now += 1000
                let output = machine.handle(event, facts: facts, now: now)
                #expect(machine.invariantViolations() == [], sourceLocation: sourceLocation)
                return Self.describe(output, now: now)
            }
        }
        for step in row.setup { _ = apply(step) }
        let actual = apply(row.step) ?? []
        #expect(actual == row.expected, sourceLocation: sourceLocation)
    }

    /// The answer first (it is delivered before anything else), then the actions. The webhook
    /// events have tests of their own (``CallWebhookEventTests``), and so have the invitations
    /// counted against a callee's budget (``invitationsCountWhereTheyRingAndNoBudgetIsOffline()``).
    static func describe(_ output: CallOutput, now: Int64) -> [String] {
        (output.reply.map { [describe($0, now: now)] } ?? [])
            + output.actions.filter {
                switch $0 {
                case .notify, .countInvitation: false
                default: true
                }
            }.map { describe($0, now: now) }
    }

    static func describe(_ reply: CallReply, now: Int64 = 0) -> String {
        switch reply {
        case .ok: "reply ok"
        case .failure(let error): "reply error \(error.code.name)"
        case .started(let response):
            "reply started busy=[\(response.busyUserIds.map(\.rawValue).joined(separator: ","))] " + statuses(response.call)
        case .call(let info): "reply call " + statuses(info)
        case .invited(let response):
            "reply invited busy=[\(response.busyUserIds.map(\.rawValue).joined(separator: ","))] " + statuses(response.call)
        case .mediaChange(let transaction): "reply transaction \(transaction)"
        case .moveOffered(let response): "reply offered until +\(response.expiresAt - now)"
        }
    }

    static func describe(_ action: CallAction, now: Int64) -> String {
        switch action {
        case .send(let event, let recipient): return "\(describe(recipient)) ← \(describe(event))"
        case .setTimer(let key, let deadline): return "timer \(describe(key)) +\(deadline - now)"
        case .cancelTimer(let key): return "cancel \(describe(key))"
        case .push(let message):
            switch message.content {
            case .ring(let push):
                let inviter = push.inviterId.map { $0 == push.callerId ? "" : " invited by \($0)" } ?? ""
                return "push \(message.user.user) incomingCall(from \(push.callerId)\(inviter)) until +\(message.expiration - now)"
            case .ringStopped:
                return "push \(message.user.user) ringStopped"
            case .missedCall(let push):
                return "push \(message.user.user) missedCall(\(push.reason.rawValue)) until +\(message.expiration - now)"
            }
        case .notify(let notice):
            return "notify \(notice.data.typeName)"
        case .countInvitation(let key):
            return "count \(key.user)"
        case .writeRecords(_, let drafts):
            guard !drafts.isEmpty else { return "records none" }
            return "records "
                + drafts.map {
                    "\($0.owner.user):\($0.record.result.rawValue)/\($0.record.endReason.rawValue)/\($0.record.duration)s"
                }.joined(separator: " ")
        case .sfu(let action):
            switch action {
            case .join(let session):
                let layers = session.layers.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key)=\($0.value.rawValue)" }
                return "sfu join \(session.member.user)@\(session.device) #\(session.session)"
                    + (layers.isEmpty ? "" : " [\(layers.joined(separator: ","))]")
                    + (session.recordingTake.map { " recorded t\($0)" } ?? "")
            case .leave(_, let user): return "sfu leave \(user)"
            case .end: return "sfu end"
            case .signal(_, let user, let session, let signal):
                return "sfu signal \(user) #\(session) \(signal.connection.rawValue) \(signal.kind.rawValue)"
            case .layer(_, let viewer, let target, let layer):
                return "sfu layer \(viewer) sees \(target) \(layer.rawValue)"
            case .record(_, let take):
                return "sfu record " + (take.map { "t\($0)" } ?? "off")
            }
        case .saveRecording(let take):
            return "save recording t\(take.take) \(take.startedAt - t0)..\(take.stoppedAt - t0) "
                + "[\(take.members.map(\.rawValue).joined(separator: ","))] by \(take.startedBy?.rawValue ?? "policy")"
        }
    }

    static func statuses(_ info: CallInfo) -> String {
        info.participants.map { "\($0.userId):\($0.status.rawValue)" }.joined(separator: " ")
    }

    static func describe(_ recipient: Recipient) -> String {
        switch recipient {
        case .user(let user): "\(user.user)@*"
        case .device(let user, let device): "\(user.user)@\(device)"
        case .userExcept(let user, let device): "\(user.user)@*-\(device)"
        }
    }

    static func describe(_ key: TimerKey) -> String {
        switch key {
        case .ring(let call, let user): "ring(\(call),\(user))"
        case .reconnectGrace(let call, let user): "reconnectGrace(\(call),\(user))"
        case .mediaChange(let call, let transaction): "mediaChange(\(call),\(transaction))"
        case .moveOffer(let call, let user): "moveOffer(\(call),\(user))"
        }
    }

    static func describe(_ event: ServerEvent) -> String {
        switch event {
        case .callReceived(let e): "callReceived(from \(e.inviterId))"
        case .callStarted: "callStarted"
        case .callUpdated(let e): "callUpdated(\(statuses(e.call)))"
        case .callEnded(let e): "callEnded(\(e.reason.rawValue) by \(e.userId?.rawValue ?? "server"))"
        case .callRecord: "callRecord"
        case .deviceChanged(let e):
            "deviceChanged(\(e.userId) mic=\(e.microphoneOn ? "on" : "off") camera=\(e.cameraOn ? "on" : "off"))"
        case .mediaTypeChangeRequested(let e): "mediaTypeChangeRequested(\(e.mediaType.rawValue) by \(e.userId))"
        case .mediaTypeChangeResult(let e): "mediaTypeChangeResult(\(e.mediaType.rawValue) \(e.result.rawValue))"
        case .memberStatus(let e): "memberStatus(\(e.userId) \(e.networkQuality.rawValue) \(e.volumeLevel.rawValue))"
        case .memberStats(let e): "memberStats(\(e.userId) loss=\(e.packetLoss) rtt=\(e.rtt) bitrate=\(e.bitrate) level=\(e.audioLevel))"
        case .callElsewhere(let e): "callElsewhere(on \(e.deviceId) \(e.active ? "active" : "ended"))"
        case .callsSynced(let e):
            "callsSynced([\(e.callIds.map(\.rawValue).joined(separator: ","))] elsewhere [\(e.elsewhereCallIds.map(\.rawValue).joined(separator: ","))])"
        case .sessionEnded: "sessionEnded"
        case .mediaSignal(let e): "mediaSignal(\(e.kind.rawValue) from \(e.from))"
        case .sfuSession(let e): "sfuSession(#\(e.session))"
        case .sfuSignal(let e): "sfuSignal(#\(e.session) \(e.connection.rawValue) \(e.kind.rawValue))"
        case .callMoveOffered(let e): "callMoveOffered(from \(e.fromDeviceId) to \(e.toDeviceId?.rawValue ?? "*"))"
        case .callMoveOfferEnded(let e): "callMoveOfferEnded(\(e.reason.rawValue))"
        case .callMoved(let e): "callMoved(\(e.fromDeviceId) → \(e.toDeviceId) \(statuses(e.call)))"
        case .memberMoved(let e): "memberMoved(\(e.userId))"
        case .recordingStarted(let e): "recordingStarted(by \(e.recording.startedBy?.rawValue ?? "policy"))"
        case .recordingStopped(let e): "recordingStopped(by \(e.stoppedBy))"
        }
    }
}
