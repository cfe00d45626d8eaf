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
        case event(CallEvent)
        /// Moves time forward (ms) without an event.
        case wait(Int64)
    }

    static func user(_ name: String) -> UserKey { UserKey(app: app, user: UserID(rawValue: name)) }

    /// A device id is the user's first letter and a number: a1, b1, b2…
    static func device(_ name: String) -> DeviceID { DeviceID(rawValue: name) }

    static func start(
        _ caller: String = "alice", _ device: String = "a1", to invitees: [String] = ["bob"], call: String = "c1",
        online: [String]? = nil, media: CallMediaType = .audio, params: CallParams? = nil,
        policy: BusyPolicy = .reject, maxParticipants: Int = 16
    ) -> Step {
        .event(
            .start(
                StartCallCommand(
                    caller: user(caller), device: Self.device(device), callId: CallID(rawValue: call),
                    generatedRoomId: RoomID(rawValue: "room-\(call)"),
                    request: StartCallRequest(
                        participantIds: invitees.map(UserID.init(rawValue:)), mediaType: media, params: params),
                    settings: AppSettings(busyPolicy: policy, maxParticipants: maxParticipants),
                    online: Set((online ?? invitees).map(UserID.init(rawValue:))), profiles: [:])))
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

    // MARK: - the table

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var setup: [Step] = []
        var step: Step
        var expected: [String]
        var testDescription: String { name }
    }

    static let oneToOne: [Row] = [
        Row(
            name: "start rings the callee on all devices and sets the ring timer",
            step: start(),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +30000",
            ]),
        Row(
            name: "start with an offline callee ends at once with offline",
            step: start(online: []),
            expected: [
                "reply started busy=[] alice:waiting bob:none",
                "alice@a1 ← callEnded(offline by bob)",
                "records alice:offline/offline/0s bob:missed/offline/0s",
            ]),
        Row(
            name: "start with a busy callee (reject policy) ends with lineBusy",
            setup: [start("carol", "c9", to: ["bob"], call: "c0"), accept("bob", "b1", "c0")],
            step: start(),
            expected: [
                "reply started busy=[bob] alice:waiting bob:none",
                "alice@a1 ← callEnded(lineBusy by bob)",
                "records alice:busy/lineBusy/0s bob:busy/lineBusy/0s",
            ]),
        Row(
            name: "a callee who is ringing elsewhere is busy too",
            setup: [start("carol", "c9", to: ["bob"], call: "c0")],
            step: start(),
            expected: [
                "reply started busy=[bob] alice:waiting bob:none",
                "alice@a1 ← callEnded(lineBusy by bob)",
                "records alice:busy/lineBusy/0s bob:busy/lineBusy/0s",
            ]),
        Row(
            name: "with call waiting a busy callee still rings",
            setup: [start("carol", "c9", to: ["bob"], call: "c0"), accept("bob", "b1", "c0")],
            step: start(policy: .callWaiting),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +30000",
            ]),
        Row(
            name: "a caller already in a call cannot start another",
            setup: [start()],
            step: start(to: ["carol"], call: "c2"),
            expected: ["reply error alreadyInCall"]),
        Row(
            name: "accept connects the call and stops the other devices ringing",
            setup: [start()],
            step: accept("bob", "b1"),
            expected: [
                "cancel ring(c1,bob)",
                "reply call alice:accept bob:accept",
                "bob@*-b1 ← callEnded(otherDeviceAccepted by bob)",
                "alice@a1 ← callStarted",
                "bob@b1 ← callStarted",
            ]),
        Row(
            name: "a second accept is refused",
            setup: [start(), accept("bob", "b1")],
            step: accept("bob", "b2"),
            expected: ["reply error alreadyAccepted"]),
        Row(
            name: "the caller cannot accept their own call",
            setup: [start()],
            step: accept("alice", "a1"),
            expected: ["reply error alreadyAccepted"]),
        Row(
            name: "accepting a call one is not in is refused",
            setup: [start()],
            step: accept("mallory", "m1"),
            expected: ["reply error notInCall"]),
        Row(
            name: "accepting an unknown call is refused",
            step: accept("bob", "b1", "nope"),
            expected: ["reply error callNotFound"]),
        Row(
            name: "accepting an ended call says it ended",
            setup: [start(), hangup("alice", "a1")],
            step: accept("bob", "b1"),
            expected: ["reply error callAlreadyEnded"]),
        Row(
            name: "a user of another app cannot see the call",
            setup: [start()],
            step: .event(
                .accept(CallCommand(user: UserKey(app: 7, user: "bob"), device: device("b1"), callId: "c1"))),
            expected: ["reply error callNotFound"]),
        Row(
            name: "reject ends the call for both, other devices get otherDeviceReject",
            setup: [start()],
            step: reject("bob", "b1"),
            expected: [
                "reply ok",
                "cancel ring(c1,bob)",
                "bob@b1 ← callEnded(reject by bob)",
                "bob@*-b1 ← callEnded(otherDeviceReject by bob)",
                "alice@a1 ← callEnded(reject by bob)",
                "records alice:rejected/reject/0s bob:rejected/reject/0s",
            ]),
        Row(
            name: "a ringing callee's hang-up is a reject",
            setup: [start()],
            step: hangup("bob", "b2"),
            expected: [
                "reply ok",
                "cancel ring(c1,bob)",
                "bob@b2 ← callEnded(reject by bob)",
                "bob@*-b2 ← callEnded(otherDeviceReject by bob)",
                "alice@a1 ← callEnded(reject by bob)",
                "records alice:rejected/reject/0s bob:rejected/reject/0s",
            ]),
        Row(
            name: "reject after accept is refused",
            setup: [start(), accept("bob", "b1")],
            step: reject("bob", "b1"),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "the caller cannot reject",
            setup: [start()],
            step: reject("alice", "a1"),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "the caller's hang-up before an answer cancels",
            setup: [start()],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(canceled by alice)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(canceled by alice)",
                "records alice:canceled/canceled/0s bob:missed/canceled/0s",
            ]),
        Row(
            name: "hang-up of a connected call ends it for both with the duration",
            setup: [start(), .wait(2000), accept("bob", "b1"), .wait(60_000)],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(hangup by alice)",
                "bob@b1 ← callEnded(hangup by alice)",
                "records alice:answered/hangup/61s bob:answered/hangup/61s",
            ]),
        Row(
            name: "the callee's hang-up ends it too",
            setup: [start(), accept("bob", "b1")],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "alice@a1 ← callEnded(hangup by bob)",
                "records alice:answered/hangup/1s bob:answered/hangup/1s",
            ]),
        Row(
            name: "hanging up someone else's call is refused",
            setup: [start()],
            step: hangup("mallory", "m1"),
            expected: ["reply error notInCall"]),
        Row(
            name: "hanging up an ended call says it ended",
            setup: [start(), reject("bob", "b1")],
            step: hangup("alice", "a1"),
            expected: ["reply error callAlreadyEnded"]),
        Row(
            name: "nobody answering within the timeout is noResponse",
            setup: [start()],
            step: ringTimeout("bob"),
            expected: [
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(noResponse by bob)",
                "alice@a1 ← callEnded(noResponse by bob)",
                "records alice:missed/noResponse/0s bob:missed/noResponse/0s",
            ]),
        Row(
            name: "a ring timer that fires after the answer does nothing",
            setup: [start(), accept("bob", "b1")],
            step: ringTimeout("bob"),
            expected: []),
        Row(
            name: "the server ends a call",
            setup: [start(), accept("bob", "b1")],
            step: .event(.endByServer("c1")),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(endByServer by server)",
                "bob@b1 ← callEnded(endByServer by server)",
                "records alice:answered/endByServer/1s bob:answered/endByServer/1s",
            ]),
        Row(
            name: "the server ends a ringing call",
            setup: [start()],
            step: .event(.endByServer("c1")),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(endByServer by server)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(endByServer by server)",
                "records alice:canceled/endByServer/0s bob:missed/endByServer/0s",
            ]),
        Row(
            name: "the server cannot end an unknown call",
            step: .event(.endByServer("nope")),
            expected: ["reply error callNotFound"]),
        Row(
            name: "an ephemeral call writes no records",
            setup: [start(params: CallParams(isEphemeralCall: true))],
            step: reject("bob", "b1"),
            expected: [
                "reply ok",
                "cancel ring(c1,bob)",
                "bob@b1 ← callEnded(reject by bob)",
                "bob@*-b1 ← callEnded(otherDeviceReject by bob)",
                "alice@a1 ← callEnded(reject by bob)",
            ]),
        Row(
            name: "a custom timeout sets the ring timer",
            step: start(params: CallParams(roomId: "my-room", timeout: 5)),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +5000",
            ]),
    ]

    static let validation: [Row] = [
        Row(name: "no participants", step: start(to: []), expected: ["reply error noParticipants"]),
        Row(name: "invalid userID", step: start(to: ["bob smith"]), expected: ["reply error invalidUserID"]),
        Row(name: "calling oneself", step: start(to: ["alice"]), expected: ["reply error cannotCallSelf"]),
        Row(
            name: "too many participants",
            step: start(to: ["b", "c", "d"], maxParticipants: 3),
            expected: ["reply error tooManyParticipants"]),
        Row(
            name: "timeout out of range",
            step: start(params: CallParams(timeout: 0)),
            expected: ["reply error invalidTimeout"]),
        Row(
            name: "userData too large",
            step: start(params: CallParams(userData: String(repeating: "x", count: 1025))),
            expected: ["reply error userDataTooLarge"]),
        Row(
            name: "roomId with a space",
            step: start(params: CallParams(roomId: "my room")),
            expected: ["reply error invalidRoomID"]),
        Row(
            name: "chatGroupId too long",
            step: start(params: CallParams(chatGroupId: String(repeating: "g", count: 65))),
            expected: ["reply error invalidChatGroupID"]),
    ]

    static let devices: [Row] = [
        Row(
            name: "a dropped device gets the reconnect grace period",
            setup: [start(), accept("bob", "b1")],
            step: offline("bob", "b1"),
            expected: ["timer reconnectGrace(c1,bob) +15000"]),
        Row(
            name: "a dropped ringing device changes nothing (other devices may answer)",
            setup: [start()],
            step: offline("bob", "b1"),
            expected: []),
        Row(
            name: "the device coming back in time resumes the call",
            setup: [start(), accept("bob", "b1"), offline("bob", "b1")],
            step: online("bob", "b1"),
            expected: ["cancel reconnectGrace(c1,bob)", "bob@b1 ← callStarted"]),
        Row(
            name: "the grace period running out ends the member's part",
            setup: [start(), accept("bob", "b1"), offline("bob", "b1")],
            step: graceTimeout("bob"),
            expected: [
                "bob@b1 ← callEnded(endByServer by bob)",
                "alice@a1 ← callEnded(endByServer by bob)",
                "records alice:answered/endByServer/2s bob:answered/endByServer/2s",
            ]),
        Row(
            name: "a caller who drops while dialing and does not return cancels the call",
            setup: [start(), offline("alice", "a1")],
            step: graceTimeout("alice"),
            expected: [
                "alice@a1 ← callEnded(endByServer by alice)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(endByServer by alice)",
                "records alice:canceled/endByServer/0s bob:missed/endByServer/0s",
            ]),
        Row(
            name: "a device logging in while the call rings gets the invitation",
            setup: [start()],
            step: online("bob", "b3"),
            expected: ["bob@b3 ← callReceived(from alice)"]),
        Row(
            name: "another device of a member in a connected call gets nothing",
            setup: [start(), accept("bob", "b1")],
            step: online("bob", "b2"),
            expected: []),
        Row(
            name: "logout hangs up the device's connected calls",
            setup: [start(), accept("bob", "b1")],
            step: logout("bob", "b1"),
            expected: [
                "bob@b1 ← callEnded(hangup by bob)",
                "alice@a1 ← callEnded(hangup by bob)",
                "records alice:answered/hangup/1s bob:answered/hangup/1s",
            ]),
        Row(
            name: "logout of a ringing device leaves the call ringing",
            setup: [start()],
            step: logout("bob", "b1"),
            expected: []),
        Row(
            name: "microphone and camera changes reach the other member",
            setup: [start(), accept("bob", "b1")],
            step: devices("bob", "b1", mic: false, camera: nil),
            expected: ["reply ok", "alice@a1 ← deviceChanged(bob mic=off camera=off)"]),
        Row(
            name: "a ringing callee cannot report devices yet",
            setup: [start()],
            step: devices("bob", "b1", mic: false, camera: nil),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "a stranger cannot report devices into a call",
            setup: [start()],
            step: devices("mallory", "m1", mic: true, camera: true),
            expected: ["reply error notInCall"]),
    ]

    static let callWaiting: [Row] = [
        Row(
            name: "answering a waiting call hangs up the current one",
            setup: [
                start("carol", "c9", to: ["bob"], call: "c0"), accept("bob", "b1", "c0"),
                start(policy: .callWaiting),
            ],
            step: accept("bob", "b2"),
            expected: [
                "cancel ring(c1,bob)",
                "reply call alice:accept bob:accept",
                "bob@b1 ← callEnded(hangup by bob)",
                "carol@c9 ← callEnded(hangup by bob)",
                "records carol:answered/hangup/2s bob:answered/hangup/2s",
                "bob@*-b2 ← callEnded(otherDeviceAccepted by bob)",
                "alice@a1 ← callStarted",
                "bob@b2 ← callStarted",
            ]),
        Row(
            name: "shutdown ends every call with endByServer",
            setup: [start("carol", "c9", to: ["dave"], call: "c0"), start()],
            step: .event(.shutdown),
            expected: [
                "carol@c9 ← callEnded(endByServer by server)",
                "cancel ring(c0,dave)",
                "dave@* ← callEnded(endByServer by server)",
                "records carol:canceled/endByServer/0s dave:missed/endByServer/0s",
                "alice@a1 ← callEnded(endByServer by server)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(endByServer by server)",
                "records alice:canceled/endByServer/0s bob:missed/endByServer/0s",
            ]),
    ]

    @Test(arguments: oneToOne) func oneToOneCalls(_ row: Row) { check(row) }
    @Test(arguments: validation) func startValidation(_ row: Row) { check(row) }
    @Test(arguments: devices) func devicesAndConnections(_ row: Row) { check(row) }
    @Test(arguments: callWaiting) func callWaitingAndShutdown(_ row: Row) { check(row) }

    // MARK: - running a row

    func check(_ row: Row, sourceLocation: SourceLocation = #_sourceLocation) {
        var machine = CallStateMachine()
        var now = Self.t0
        func apply(_ step: Step) -> [String]? {
            switch step {
            case .wait(let ms):
                now += ms
                return nil
            case .event(let event):
                now += 1000
                let actions = machine.handle(event, now: now).map { Self.describe($0, now: now) }
                #expect(machine.invariantViolations() == [], sourceLocation: sourceLocation)
                return actions
            }
        }
        for step in row.setup { _ = apply(step) }
        let actual = apply(row.step) ?? []
        #expect(actual == row.expected, sourceLocation: sourceLocation)
    }

    static func describe(_ action: CallAction, now: Int64) -> String {
        switch action {
        case .reply(.ok): return "reply ok"
        case .reply(.failure(let error)): return "reply error \(error.code.name)"
        case .reply(.started(let response)):
            return "reply started busy=[\(response.busyUserIds.map(\.rawValue).joined(separator: ","))] "
                + statuses(response.call)
        case .reply(.call(let info)): return "reply call " + statuses(info)
        case .send(let event, let recipient): return "\(describe(recipient)) ← \(describe(event))"
        case .setTimer(let key, let deadline): return "timer \(describe(key)) +\(deadline - now)"
        case .cancelTimer(let key): return "cancel \(describe(key))"
        case .writeRecords(let drafts):
            return "records "
                + drafts.map {
                    "\($0.owner.user):\($0.record.result.rawValue)/\($0.record.endReason.rawValue)/\($0.record.duration)s"
                }.joined(separator: " ")
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
        case .sessionEnded: "sessionEnded"
        }
    }
}
