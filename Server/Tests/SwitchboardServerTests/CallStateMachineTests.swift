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
        blockedSees: BlockedCallerSees = .reject, pushable: [String] = [], declineAfter: Int64? = nil
    ) -> Step {
        .event(
            .start(
                StartCallCommand(
                    caller: user(caller), device: Self.device(device), callId: CallID(rawValue: call),
                    generatedRoomId: RoomID(rawValue: "room-\(call)"),
                    request: StartCallRequest(
                        participantIds: invitees.map(UserID.init(rawValue:)), mediaType: media, params: params),
                    settings: AppSettings(
                        busyPolicy: policy, maxParticipants: maxParticipants, blockedCallerSees: blockedSees),
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
    static func report(
        _ user: String, _ device: String, loss: Double = 0.5, rtt: Int = 50, level: Int = 80
    ) -> Step {
        .event(
            .statusReport(
                command(user, device, "c1"),
                StatusReport(packetLoss: loss, rtt: rtt, bitrate: 500, audioLevel: level)))
    }

    // MARK: - the table

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        /// The server has an SFU: group calls' media goes through it.
        var sfu = false
        var setup: [Step] = []
        var step: Step
        var expected: [String]
        var testDescription: String { name }
    }

    static func sfuSignal(
        _ user: String, _ device: String, session: Int, _ connection: SFUConnection = .publish,
        _ kind: MediaSignalKind = .offer
    ) -> Step {
        .event(
            .sfuSignal(
                command(user, device, "c1"),
                SendSFUSignalRequest(
                    callId: "c1", session: session, connection: connection, kind: kind,
                    sdp: kind == .offer || kind == .answer ? "v=0" : nil,
                    candidate: kind == .candidate ? IceCandidate(candidate: "candidate:1 1 udp 1 127.0.0.1 9 typ host") : nil)))
    }
    static func videoLayer(_ user: String, _ device: String, of target: String, _ layer: VideoLayer) -> Step {
        .event(.videoLayer(command(user, device, "c1"), SetVideoLayerRequest(callId: "c1", userId: UserID(rawValue: target), layer: layer)))
    }
    static func sfuLost(_ user: String? = nil) -> Step {
        .event(.sfuRestart("c1", user.map(UserID.init(rawValue:))))
    }

    static let oneToOne: [Row] = [
        Row(
            name: "start rings the callee on all devices and sets the ring timer",
            step: start(),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +30000",
            ]),
        Row(
            name: "start with an offline callee ends at once with offline",
            step: start(online: []),
            expected: [
                "reply started busy=[] alice:waiting bob:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "alice@a1 ← callEnded(offline by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:offline/offline/0s bob:missed/offline/0s",
            ]),
        Row(
            name: "start with a busy callee (reject policy) ends with lineBusy",
            setup: [start("carol", "c9", to: ["bob"], call: "c0"), accept("bob", "b1", "c0")],
            step: start(),
            expected: [
                "reply started busy=[bob] alice:waiting bob:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "alice@a1 ← callEnded(lineBusy by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:busy/lineBusy/0s bob:busy/lineBusy/0s",
            ]),
        Row(
            name: "a callee who is ringing elsewhere is busy too",
            setup: [start("carol", "c9", to: ["bob"], call: "c0")],
            step: start(),
            expected: [
                "reply started busy=[bob] alice:waiting bob:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "alice@a1 ← callEnded(lineBusy by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:busy/lineBusy/0s bob:busy/lineBusy/0s",
            ]),
        Row(
            name: "with call waiting a busy callee still rings",
            setup: [start("carol", "c9", to: ["bob"], call: "c0"), accept("bob", "b1", "c0")],
            step: start(policy: .callWaiting),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
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
                "reply call alice:accept bob:accept",
                "cancel ring(c1,bob)",
                "bob@*-b1 ← callEnded(otherDeviceAccepted by bob)",
                "bob@*-b1 ← callElsewhere(on b1 active)",
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
                "alice@*-a1 ← callElsewhere(on a1 ended)",
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
                "alice@*-a1 ← callElsewhere(on a1 ended)",
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
                "alice@*-a1 ← callElsewhere(on a1 ended)",
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
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "bob@b1 ← callEnded(hangup by alice)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "records alice:answered/hangup/61s bob:answered/hangup/61s",
            ]),
        Row(
            name: "the callee's hang-up ends it too",
            setup: [start(), accept("bob", "b1")],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callEnded(hangup by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
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
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:noAnswer/noResponse/0s bob:missed/noResponse/0s",
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
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "bob@b1 ← callEnded(endByServer by server)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "records alice:answered/endByServer/1s bob:answered/endByServer/1s",
            ]),
        Row(
            name: "the server ends a ringing call",
            setup: [start()],
            step: .event(.endByServer("c1")),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(endByServer by server)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
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
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records none",
            ]),
        Row(
            name: "a custom timeout sets the ring timer",
            step: start(params: CallParams(roomId: "my-room", timeout: 5)),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +5000",
            ]),
    ]

    /// A callee who blocks the caller is never reached, and the caller cannot tell: under the
    /// default `blockedCallerSees: reject` the call seems to ring (the callee is screened) and is
    /// declined after a person's delay, with the frames of a genuine rejection; busy and offline
    /// callees look as they would to anyone. Under `offline` the callee looks offline at once.
    static let blocking: [Row] = [
        Row(
            name: "a callee who blocks the caller seems to ring: nothing reaches them, the decline is timed",
            step: start(blockedBy: ["bob"], declineAfter: 5000),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "timer ring(c1,bob) +5000",
            ]),
        Row(
            name: "the screened callee declines as a person would; no event and no record for them",
            setup: [start(blockedBy: ["bob"], declineAfter: 5000)],
            step: ringTimeout("bob"),
            expected: [
                "cancel ring(c1,bob)",
                "alice@a1 ← callEnded(reject by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:rejected/reject/0s",
            ]),
        Row(
            name: "a genuine rejection ends the caller's call with the same event and record",
            setup: [start()],
            step: reject("bob", "b1"),
            expected: [
                "reply ok",
                "cancel ring(c1,bob)",
                "bob@b1 ← callEnded(reject by bob)",
                "bob@*-b1 ← callEnded(otherDeviceReject by bob)",
                "alice@a1 ← callEnded(reject by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:rejected/reject/0s bob:rejected/reject/0s",
            ]),
        Row(
            name: "a decline drawn after the ring timeout: the ringing times out, as for anyone",
            setup: [start(blockedBy: ["bob"], declineAfter: 40_000)],
            step: ringTimeout("bob"),
            expected: [
                "cancel ring(c1,bob)",
                "alice@a1 ← callEnded(noResponse by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:noAnswer/noResponse/0s",
            ]),
        Row(
            name: "the ring timer of a decline after the timeout is the timeout",
            step: start(blockedBy: ["bob"], declineAfter: 40_000),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "timer ring(c1,bob) +30000",
            ]),
        Row(
            name: "the caller cancels while the blocker is screened: nothing reaches the blocker",
            setup: [start(blockedBy: ["bob"], declineAfter: 5000)],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(canceled by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "cancel ring(c1,bob)",
                "records alice:canceled/canceled/0s",
            ]),
        Row(
            name: "the blocker's devices never hear of it: one that logs in gets no invitation",
            setup: [start(blockedBy: ["bob"], declineAfter: 5000)],
            step: online("bob", "b3"),
            expected: ["bob@b3 ← callsSynced([] elsewhere [])"]),
        Row(
            name: "nor of its end",
            setup: [start(blockedBy: ["bob"], declineAfter: 5000), ringTimeout("bob")],
            step: online("bob", "b3"),
            expected: ["bob@b3 ← callsSynced([] elsewhere [])"]),
        Row(
            name: "the blocker cannot answer a call that never reached them",
            setup: [start(blockedBy: ["bob"], declineAfter: 5000)],
            step: accept("bob", "b1"),
            expected: ["reply error notInCall"]),
        Row(
            name: "a screened blocker is not busy for anyone else",
            setup: [start(blockedBy: ["bob"], declineAfter: 5000)],
            step: start("carol", "k1", to: ["bob"], call: "c2"),
            expected: [
                "reply started busy=[] carol:waiting bob:waiting",
                "carol@*-k1 ← callElsewhere(on k1 active)",
                "bob@* ← callReceived(from carol)",
                "timer ring(c2,bob) +30000",
            ]),
        Row(
            name: "a blocker without a device or push token is offline to the blocked caller too",
            step: start(online: [], blockedBy: ["bob"], declineAfter: 5000),
            expected: [
                "reply started busy=[] alice:waiting bob:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "alice@a1 ← callEnded(offline by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:offline/offline/0s",
            ]),
        Row(
            name: "a blocker in a call is busy to the blocked caller too",
            setup: [start("bob", "b1", to: ["dave"], call: "c0")],
            step: start(blockedBy: ["bob"], declineAfter: 5000),
            expected: [
                "reply started busy=[bob] alice:waiting bob:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "alice@a1 ← callEnded(lineBusy by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:busy/lineBusy/0s",
            ]),
        Row(
            name: "or the callee looks offline at once, when the app says so",
            step: start(blockedBy: ["bob"], blockedSees: .offline),
            expected: [
                "reply started busy=[] alice:waiting bob:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "alice@a1 ← callEnded(offline by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:offline/offline/0s",
            ]),
        Row(
            name: "as a genuinely offline callee does",
            step: start(online: []),
            expected: [
                "reply started busy=[] alice:waiting bob:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "alice@a1 ← callEnded(offline by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:offline/offline/0s bob:missed/offline/0s",
            ]),
        Row(
            name: "in a group call the others ring and see the blocker ringing",
            step: start(to: ["bob", "carol"], blockedBy: ["bob"], declineAfter: 4000),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting carol:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "timer ring(c1,bob) +4000",
                "carol@* ← callReceived(from alice)",
                "timer ring(c1,carol) +30000",
            ]),
        Row(
            name: "while screened, the call's changes do not reach the blocker",
            setup: [start(to: ["bob", "carol"], blockedBy: ["bob"], declineAfter: 4000)],
            step: accept("carol", "k1"),
            expected: [
                "reply call alice:accept bob:waiting carol:accept",
                "cancel ring(c1,carol)",
                "carol@*-k1 ← callEnded(otherDeviceAccepted by carol)",
                "carol@*-k1 ← callElsewhere(on k1 active)",
                "alice@a1 ← callStarted",
                "carol@k1 ← callStarted",
            ]),
        Row(
            name: "then declining, as a member who declines",
            setup: [start(to: ["bob", "carol"], blockedBy: ["bob"], declineAfter: 4000)],
            step: ringTimeout("bob"),
            expected: [
                "cancel ring(c1,bob)",
                "alice@a1 ← callUpdated(alice:waiting bob:none carol:waiting)",
                "carol@* ← callUpdated(alice:waiting bob:none carol:waiting)",
            ]),
        Row(
            name: "an invitation into a group call from someone the invitee blocks is screened too",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: invite("bob", "b1", ["dave"], blockedBy: ["dave"], declineAfter: 6000),
            expected: [
                "reply invited busy=[] alice:accept bob:accept carol:waiting dave:waiting",
                "timer ring(c1,dave) +6000",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
                "carol@* ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
            ]),
    ]

    /// Invitees without a connected device who have a push token ring through VoIP pushes; when
    /// their ringing stops, the push stops too (never a VoIP push for a call that does not ring),
    /// and a missed call is announced by an alert push when the caller asked for it.
    static let pushes: [Row] = [
        Row(
            name: "a callee with only a push token rings through a push until the ring timeout",
            step: start(online: [], pushable: ["bob"]),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +30000",
                "push bob incomingCall(from alice) until +30000",
            ]),
        Row(
            name: "a callee online on one device gets no push",
            step: start(online: ["bob"], pushable: []),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +30000",
            ]),
        Row(
            name: "the pushed device answers: the invitation push stops",
            setup: [start(online: [], pushable: ["bob"])],
            step: accept("bob", "b1"),
            expected: [
                "reply call alice:accept bob:accept",
                "cancel ring(c1,bob)",
                "bob@*-b1 ← callEnded(otherDeviceAccepted by bob)",
                "push bob ringStopped",
                "bob@*-b1 ← callElsewhere(on b1 active)",
                "alice@a1 ← callStarted",
                "bob@b1 ← callStarted",
            ]),
        Row(
            name: "the pushed callee rejects: the other devices hear otherDeviceReject",
            setup: [start(online: [], pushable: ["bob"])],
            step: reject("bob", "b1"),
            expected: [
                "reply ok",
                "cancel ring(c1,bob)",
                "bob@b1 ← callEnded(reject by bob)",
                "bob@*-b1 ← callEnded(otherDeviceReject by bob)",
                "push bob ringStopped",
                "alice@a1 ← callEnded(reject by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:rejected/reject/0s bob:rejected/reject/0s",
            ]),
        Row(
            name: "the caller cancels a pushed call: the invitation push stops",
            setup: [start(online: [], pushable: ["bob"])],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(canceled by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(canceled by alice)",
                "push bob ringStopped",
                "records alice:canceled/canceled/0s bob:missed/canceled/0s",
            ]),
        Row(
            name: "a pushed call nobody answers: the invitation push stops",
            setup: [start(online: [], pushable: ["bob"])],
            step: ringTimeout("bob"),
            expected: [
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(noResponse by bob)",
                "push bob ringStopped",
                "alice@a1 ← callEnded(noResponse by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:noAnswer/noResponse/0s bob:missed/noResponse/0s",
            ]),
        Row(
            name: "a pushed callee who does not answer gets the missed-call alert the caller asked for, in place of the end",
            setup: [start(online: [], params: CallParams(pushConfig: PushConfig(missedCallAlert: true)), pushable: ["bob"])],
            step: ringTimeout("bob"),
            expected: [
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(noResponse by bob)",
                "push bob missedCall(noResponse) until +86400000",
                "alice@a1 ← callEnded(noResponse by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:noAnswer/noResponse/0s bob:missed/noResponse/0s",
            ]),
        Row(
            name: "a canceled call is a missed call for the pushed callee",
            setup: [start(online: [], params: CallParams(pushConfig: PushConfig(missedCallAlert: true)), pushable: ["bob"])],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(canceled by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(canceled by alice)",
                "push bob missedCall(canceled) until +86400000",
                "records alice:canceled/canceled/0s bob:missed/canceled/0s",
            ]),
        Row(
            name: "a call answered on another device is not missed: no alert",
            setup: [start(online: [], params: CallParams(pushConfig: PushConfig(missedCallAlert: true)), pushable: ["bob"])],
            step: accept("bob", "b1"),
            expected: [
                "reply call alice:accept bob:accept",
                "cancel ring(c1,bob)",
                "bob@*-b1 ← callEnded(otherDeviceAccepted by bob)",
                "push bob ringStopped",
                "bob@*-b1 ← callElsewhere(on b1 active)",
                "alice@a1 ← callStarted",
                "bob@b1 ← callStarted",
            ]),
        Row(
            name: "a callee whose device was connected misses no alert: it rang there",
            setup: [start(online: ["bob"], params: CallParams(pushConfig: PushConfig(missedCallAlert: true)))],
            step: ringTimeout("bob"),
            expected: [
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(noResponse by bob)",
                "alice@a1 ← callEnded(noResponse by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:noAnswer/noResponse/0s bob:missed/noResponse/0s",
            ]),
        Row(
            name: "a group call pushes the invitees without a device and rings the others",
            step: start(to: ["bob", "carol", "dave"], online: ["carol"], pushable: ["bob", "dave"]),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting carol:waiting dave:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +30000",
                "push bob incomingCall(from alice) until +30000",
                "carol@* ← callReceived(from alice)",
                "timer ring(c1,carol) +30000",
                "dave@* ← callReceived(from alice)",
                "timer ring(c1,dave) +30000",
                "push dave incomingCall(from alice) until +30000",
            ]),
        Row(
            name: "a group call that ends stops every pushed invitee's ringing",
            setup: [start(to: ["bob", "carol", "dave"], online: ["carol"], pushable: ["bob", "dave"]), accept("carol", "k1")],
            step: .event(.endByServer("c1")),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(endByServer by server)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(endByServer by server)",
                "push bob ringStopped",
                "carol@k1 ← callEnded(endByServer by server)",
                "carol@*-k1 ← callElsewhere(on k1 ended)",
                "cancel ring(c1,dave)",
                "dave@* ← callEnded(endByServer by server)",
                "push dave ringStopped",
                "records alice:answered/endByServer/1s bob:missed/endByServer/0s carol:answered/endByServer/1s dave:missed/endByServer/0s",
            ]),
        Row(
            name: "an invitee invited mid-call without a device is pushed, from the inviter",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: invite("bob", "b1", ["dave"], online: [], pushable: ["dave"]),
            expected: [
                "reply invited busy=[] alice:accept bob:accept carol:waiting dave:waiting",
                "dave@* ← callReceived(from bob)",
                "timer ring(c1,dave) +30000",
                "push dave incomingCall(from alice invited by bob) until +30000",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
                "carol@* ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
            ]),
    ]

    static let validation: [Row] = [
        Row(name: "no participants", step: start(to: []), expected: ["reply error noParticipants"]),
        Row(name: "invalid userID", step: start(to: ["bob smith"]), expected: ["reply error invalidUserID"]),
        Row(name: "calling oneself", step: start(to: ["alice"]), expected: ["reply error cannotCallSelf"]),
        Row(
            name: "a push title with a control character",
            step: start(params: CallParams(pushConfig: PushConfig(title: "Alice\u{7}"))),
            expected: ["reply error invalidPushConfig"]),
        Row(
            name: "a push title with a right-to-left override",
            step: start(params: CallParams(pushConfig: PushConfig(title: "Alice\u{202E}"))),
            expected: ["reply error invalidPushConfig"]),
        Row(
            name: "a push body with an invisible character",
            step: start(params: CallParams(pushConfig: PushConfig(body: "Missed\u{200B}call"))),
            expected: ["reply error invalidPushConfig"]),
        Row(
            name: "a push config above 2 KB as JSON",
            step: start(params: CallParams(pushConfig: PushConfig(extra: String(repeating: "\"", count: 1024)))),
            expected: ["reply error invalidPushConfig"]),
        Row(
            name: "a push sound that is not a file name",
            step: start(params: CallParams(pushConfig: PushConfig(sound: "../ring.caf"))),
            expected: ["reply error invalidPushConfig"]),
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
            step: start(params: CallParams(chatGroupId: ChatGroupID(rawValue: String(repeating: "g", count: 65)))),
            expected: ["reply error invalidChatGroupID"]),
    ]

    static let devices: [Row] = [
        Row(
            name: "a dropped device gets the reconnect grace period",
            setup: [start(), accept("bob", "b1")],
            step: offline("bob", "b1"),
            expected: [
                "timer reconnectGrace(c1,bob) +15000",
                "alice@a1 ← memberStatus(bob down mute)",
            ]),
        Row(
            name: "a device lost with its node gets the grace its client needs to notice",
            setup: [start(), accept("bob", "b1")],
            step: .event(.deviceLost(Self.user("bob"), Self.device("b1"), grace: 40_000)),
            expected: [
                "timer reconnectGrace(c1,bob) +40000",
                "alice@a1 ← memberStatus(bob down mute)",
            ]),
        Row(
            name: "a dropped ringing device changes nothing (other devices may answer)",
            setup: [start()],
            step: offline("bob", "b1"),
            expected: []),
        Row(
            name: "the device coming back in time resumes the call",
            setup: [start(), accept("bob", "b1"), offline("bob", "b1")],
            step: online("bob", "b1"),
            expected: [
                "cancel reconnectGrace(c1,bob)",
                "alice@a1 ← memberStatus(bob unknown mute)",
                "bob@b1 ← callStarted",
                "bob@b1 ← callsSynced([c1] elsewhere [])",
            ]),
        Row(
            name: "the grace period running out ends the member's part",
            setup: [start(), accept("bob", "b1"), offline("bob", "b1")],
            step: graceTimeout("bob"),
            expected: [
                "bob@b1 ← callEnded(endByServer by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callEnded(endByServer by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:answered/endByServer/2s bob:answered/endByServer/2s",
            ]),
        Row(
            name: "a caller who drops while dialing and does not return cancels the call",
            setup: [start(), offline("alice", "a1")],
            step: graceTimeout("alice"),
            expected: [
                "alice@a1 ← callEnded(endByServer by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(endByServer by alice)",
                "records alice:canceled/endByServer/0s bob:missed/endByServer/0s",
            ]),
        Row(
            name: "a device logging in while the call rings gets the invitation",
            setup: [start()],
            step: online("bob", "b3"),
            expected: [
                "bob@b3 ← callReceived(from alice)",
                "bob@b3 ← callsSynced([c1] elsewhere [])",
            ]),
        Row(
            name: "another device of a member in a connected call learns the call is elsewhere",
            setup: [start(), accept("bob", "b1")],
            step: online("bob", "b2"),
            expected: [
                "bob@b2 ← callElsewhere(on b1 active)",
                "bob@b2 ← callsSynced([] elsewhere [c1])",
            ]),
        Row(
            name: "a device that comes back after its call ended hears how it ended",
            setup: [start(), accept("bob", "b1"), offline("bob", "b1"), graceTimeout("bob")],
            step: online("bob", "b1"),
            expected: [
                "bob@b1 ← callEnded(endByServer by bob)",
                "bob@b1 ← callsSynced([] elsewhere [])",
            ]),
        Row(
            name: "a device that missed a canceled invitation hears it was canceled",
            setup: [start(), hangup("alice", "a1")],
            step: online("bob", "b5"),
            expected: [
                "bob@b5 ← callEnded(canceled by alice)",
                "bob@b5 ← callsSynced([] elsewhere [])",
            ]),
        Row(
            name: "another device hears that the call was answered elsewhere",
            setup: [start(), accept("bob", "b1"), hangup("alice", "a1")],
            step: online("bob", "b5"),
            expected: [
                "bob@b5 ← callEnded(otherDeviceAccepted by bob)",
                "bob@b5 ← callsSynced([] elsewhere [])",
            ]),
        Row(
            name: "another device hears that the call was rejected elsewhere",
            setup: [start(), reject("bob", "b1")],
            step: online("bob", "b5"),
            expected: [
                "bob@b5 ← callEnded(otherDeviceReject by bob)",
                "bob@b5 ← callsSynced([] elsewhere [])",
            ]),
        Row(
            name: "ended calls are forgotten after ten minutes",
            setup: [start(), hangup("alice", "a1"), .wait(10 * 60_000)],
            step: online("bob", "b5"),
            expected: ["bob@b5 ← callsSynced([] elsewhere [])"]),
        Row(
            name: "logout hangs up the device's connected calls",
            setup: [start(), accept("bob", "b1")],
            step: logout("bob", "b1"),
            expected: [
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callEnded(hangup by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
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
                "reply call alice:accept bob:accept",
                "cancel ring(c1,bob)",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "carol@c9 ← callEnded(hangup by bob)",
                "carol@*-c9 ← callElsewhere(on c9 ended)",
                "records carol:answered/hangup/2s bob:answered/hangup/2s",
                "bob@*-b2 ← callEnded(otherDeviceAccepted by bob)",
                "bob@*-b2 ← callElsewhere(on b2 active)",
                "alice@a1 ← callStarted",
                "bob@b2 ← callStarted",
            ]),
    ]


    /// Group calls: bob (b1), carol (k1), dave (d1), erin (e1); alice (a1) calls.
    static let group: [Row] = [
        Row(
            name: "a group call rings every invitee with its own timer",
            step: start(to: ["bob", "carol"]),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting carol:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +30000",
                "carol@* ← callReceived(from alice)",
                "timer ring(c1,carol) +30000",
            ]),
        Row(
            name: "busy and offline invitees leave at once while the others ring",
            setup: [start("dave", "d1", to: ["bob"], call: "c0")],
            step: start(to: ["bob", "carol", "erin"], online: ["bob", "carol"]),
            expected: [
                "reply started busy=[bob] alice:waiting bob:none carol:waiting erin:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "carol@* ← callReceived(from alice)",
                "timer ring(c1,carol) +30000",
            ]),
        Row(
            name: "the first answer connects the call for the members in it",
            setup: [start(to: ["bob", "carol"])],
            step: accept("bob", "b1"),
            expected: [
                "reply call alice:accept bob:accept carol:waiting",
                "cancel ring(c1,bob)",
                "bob@*-b1 ← callEnded(otherDeviceAccepted by bob)",
                "bob@*-b1 ← callElsewhere(on b1 active)",
                "alice@a1 ← callStarted",
                "bob@b1 ← callStarted",
                "carol@* ← callUpdated(alice:accept bob:accept carol:waiting)",
            ]),
        Row(
            name: "a later answer starts the call for that member and updates the others",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: accept("carol", "k1"),
            expected: [
                "reply call alice:accept bob:accept carol:accept",
                "cancel ring(c1,carol)",
                "carol@*-k1 ← callEnded(otherDeviceAccepted by carol)",
                "carol@*-k1 ← callElsewhere(on k1 active)",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "carol@k1 ← callStarted",
            ]),
        Row(
            name: "one invitee's timeout leaves the call going for the others",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: ringTimeout("carol"),
            expected: [
                "cancel ring(c1,carol)",
                "carol@* ← callEnded(noResponse by carol)",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:none)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:none)",
            ]),
        Row(
            name: "one invitee's reject leaves the call ringing for the others",
            setup: [start(to: ["bob", "carol"])],
            step: reject("bob", "b1"),
            expected: [
                "reply ok",
                "cancel ring(c1,bob)",
                "bob@b1 ← callEnded(reject by bob)",
                "bob@*-b1 ← callEnded(otherDeviceReject by bob)",
                "alice@a1 ← callUpdated(alice:waiting bob:none carol:waiting)",
                "carol@* ← callUpdated(alice:waiting bob:none carol:waiting)",
            ]),
        Row(
            name: "a member leaving a call of three leaves two talking",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1")],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callUpdated(alice:accept bob:none carol:accept)",
                "carol@k1 ← callUpdated(alice:accept bob:none carol:accept)",
            ]),
        Row(
            name: "the caller may leave a connected group call and it goes on",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1")],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(hangup by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "bob@b1 ← callUpdated(alice:none bob:accept carol:accept)",
                "carol@k1 ← callUpdated(alice:none bob:accept carol:accept)",
            ]),
        Row(
            name: "one member joined and one ringing keeps the call alive",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callUpdated(alice:accept bob:none carol:waiting)",
                "carol@* ← callUpdated(alice:accept bob:none carol:waiting)",
            ]),
        Row(
            name: "when the last member in the call leaves, those still ringing hear it ended",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), hangup("alice", "a1")],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "cancel ring(c1,carol)",
                "carol@* ← callEnded(hangup by bob)",
                "records alice:answered/hangup/1s bob:answered/hangup/2s carol:missed/hangup/0s",
            ]),
        Row(
            name: "the last but one leaving ends the call, each member with their own record",
            setup: [
                start(to: ["bob", "carol", "dave"]), accept("bob", "b1"), reject("carol", "k1"),
                ringTimeout("dave"), .wait(10_000),
            ],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callEnded(hangup by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:answered/hangup/13s bob:answered/hangup/13s carol:rejected/reject/0s dave:missed/noResponse/0s",
            ]),
        Row(
            name: "the caller's hang-up before any answer cancels for everyone",
            setup: [start(to: ["bob", "carol"])],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(canceled by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(canceled by alice)",
                "cancel ring(c1,carol)",
                "carol@* ← callEnded(canceled by alice)",
                "records alice:canceled/canceled/0s bob:missed/canceled/0s carol:missed/canceled/0s",
            ]),
        Row(
            name: "a chat group makes a call with one invitee a group call",
            step: start(params: CallParams(chatGroupId: "team")),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +30000",
            ]),
    ]

    static let inviteAndJoin: [Row] = [
        Row(
            name: "an invite mid-call rings the new member and updates the others",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: invite("bob", "b1", ["dave"]),
            expected: [
                "reply invited busy=[] alice:accept bob:accept carol:waiting dave:waiting",
                "dave@* ← callReceived(from bob)",
                "timer ring(c1,dave) +30000",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
                "carol@* ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
            ]),
        Row(
            name: "inviting someone ringing or in the call changes nothing for them",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: invite("alice", "a1", ["carol", "bob"]),
            expected: [
                "reply invited busy=[] alice:accept bob:accept carol:waiting",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:waiting)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:waiting)",
                "carol@* ← callUpdated(alice:accept bob:accept carol:waiting)",
            ]),
        Row(
            name: "a busy invitee is listed and does not ring",
            setup: [start("erin", "e1", to: ["dave"], call: "c0"), start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: invite("alice", "a1", ["dave"]),
            expected: [
                "reply invited busy=[dave] alice:accept bob:accept carol:waiting dave:none",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:waiting dave:none)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:waiting dave:none)",
                "carol@* ← callUpdated(alice:accept bob:accept carol:waiting dave:none)",
            ]),
        Row(
            name: "a ringing member cannot invite",
            setup: [start(to: ["bob", "carol"])],
            step: invite("bob", "b1", ["dave"]),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "a stranger cannot invite",
            setup: [start(to: ["bob", "carol"])],
            step: invite("mallory", "m1", ["dave"]),
            expected: ["reply error notInCall"]),
        Row(
            name: "an invitation into a one-to-one call rings the new member",
            setup: [start(), accept("bob", "b1")],
            step: invite("alice", "a1", ["dave"]),
            expected: [
                "reply invited busy=[] alice:accept bob:accept dave:waiting",
                "dave@* ← callReceived(from alice)",
                "timer ring(c1,dave) +30000",
                "alice@a1 ← callUpdated(alice:accept bob:accept dave:waiting)",
                "bob@b1 ← callUpdated(alice:accept bob:accept dave:waiting)",
            ]),
        Row(
            name: "a one-to-one call someone was invited into is a group call: a member who left may join again",
            setup: [start(), accept("bob", "b1"), invite("alice", "a1", ["dave"]), accept("dave", "d1"), hangup("bob", "b1")],
            step: join("bob", "b1"),
            expected: [
                "reply call alice:accept bob:accept dave:accept",
                "bob@*-b1 ← callElsewhere(on b1 active)",
                "alice@a1 ← callUpdated(alice:accept bob:accept dave:accept)",
                "bob@b1 ← callStarted",
                "dave@d1 ← callUpdated(alice:accept bob:accept dave:accept)",
            ]),
        Row(
            name: "no invitation into a one-to-one call while a media-type change is open",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: invite("bob", "b1", ["dave"]),
            expected: ["reply error mediaChangeInProgress"]),
        Row(
            name: "invitations beyond the app's limit are refused",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: invite("alice", "a1", ["dave", "erin"], maxParticipants: 4),
            expected: ["reply error tooManyParticipants"]),
        Row(
            name: "an invited member who declined may join later",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), reject("carol", "k1")],
            step: join("carol", "k1"),
            expected: [
                "reply call alice:accept bob:accept carol:accept",
                "carol@*-k1 ← callElsewhere(on k1 active)",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "carol@k1 ← callStarted",
            ]),
        Row(
            name: "a ringing member joining is an accept",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: join("carol", "k1"),
            expected: [
                "reply call alice:accept bob:accept carol:accept",
                "cancel ring(c1,carol)",
                "carol@*-k1 ← callEnded(otherDeviceAccepted by carol)",
                "carol@*-k1 ← callElsewhere(on k1 active)",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "carol@k1 ← callStarted",
            ]),
        Row(
            name: "a member of the call's chat group may join uninvited",
            setup: [start(params: CallParams(chatGroupId: "team")), accept("bob", "b1")],
            step: join("erin", "e1", groupMember: true),
            expected: [
                "reply call alice:accept bob:accept erin:accept",
                "erin@*-e1 ← callElsewhere(on e1 active)",
                "alice@a1 ← callUpdated(alice:accept bob:accept erin:accept)",
                "bob@b1 ← callUpdated(alice:accept bob:accept erin:accept)",
                "erin@e1 ← callStarted",
            ]),
        Row(
            name: "someone neither invited nor in the chat group may not join",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: join("mallory", "m1"),
            expected: ["reply error joinNotAllowed"]),
        Row(
            name: "a one-to-one call cannot be joined",
            setup: [start(), accept("bob", "b1")],
            step: join("mallory", "m1", groupMember: true),
            expected: ["reply error groupCallOnly"]),
        Row(
            name: "joining twice is refused",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: join("bob", "b1"),
            expected: ["reply error alreadyAccepted"]),
        Row(
            name: "joining from another call is refused under busy-reject",
            setup: [
                start("dave", "d1", to: ["erin"], call: "c0"), accept("erin", "e1", "c0"),
                start(params: CallParams(chatGroupId: "team")), accept("bob", "b1"),
            ],
            step: join("erin", "e1", groupMember: true),
            expected: ["reply error alreadyInCall"]),
        Row(
            name: "joining an ended call says it is gone",
            setup: [start(to: ["bob", "carol"]), hangup("alice", "a1")],
            step: join("mallory", "m1", groupMember: true),
            expected: ["reply error callNotFound"]),
    ]

    /// One-to-one media-type changes: alice (a1) and bob (b1) are in a connected audio call.
    static let mediaChange: [Row] = [
        Row(
            name: "a change request reaches the peer with a transaction and a timer",
            setup: [start(), accept("bob", "b1")],
            step: changeMedia("alice", "a1", to: .video),
            expected: [
                "reply transaction t1",
                "bob@b1 ← mediaTypeChangeRequested(video by alice)",
                "timer mediaChange(c1,t1) +20000",
            ]),
        Row(
            name: "agreeing changes the media type for both",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: replyMedia("bob", "b1", agree: true),
            expected: [
                "reply ok",
                "cancel mediaChange(c1,t1)",
                "alice@a1 ← mediaTypeChangeResult(video agreed)",
                "bob@b1 ← mediaTypeChangeResult(video agreed)",
                "alice@a1 ← callUpdated(alice:accept bob:accept)",
                "bob@b1 ← callUpdated(alice:accept bob:accept)",
            ]),
        Row(
            name: "declining leaves the media type",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: replyMedia("bob", "b1", agree: false),
            expected: [
                "reply ok",
                "cancel mediaChange(c1,t1)",
                "alice@a1 ← mediaTypeChangeResult(video declined)",
                "bob@b1 ← mediaTypeChangeResult(video declined)",
            ]),
        Row(
            name: "the requester may cancel",
            setup: [start(), accept("bob", "b1"), changeMedia("bob", "b1", to: .video)],
            step: cancelMedia("bob", "b1"),
            expected: [
                "reply ok",
                "cancel mediaChange(c1,t1)",
                "alice@a1 ← mediaTypeChangeResult(video canceled)",
                "bob@b1 ← mediaTypeChangeResult(video canceled)",
            ]),
        Row(
            name: "no answer in time counts as declined",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: mediaTimeout(),
            expected: [
                "cancel mediaChange(c1,t1)",
                "alice@a1 ← mediaTypeChangeResult(video timedOut)",
                "bob@b1 ← mediaTypeChangeResult(video timedOut)",
            ]),
        Row(
            name: "a second request while one is open is refused",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: changeMedia("bob", "b1", to: .video, "t2"),
            expected: ["reply error mediaChangeInProgress"]),
        Row(
            name: "the requester cannot answer their own request",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: replyMedia("alice", "a1", agree: true),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "only the requester cancels",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: cancelMedia("bob", "b1"),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "an unknown transaction is refused",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: replyMedia("bob", "b1", agree: true, "t9"),
            expected: ["reply error transactionNotFound"]),
        Row(
            name: "a stranger cannot answer",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: replyMedia("mallory", "m1", agree: true),
            expected: ["reply error notInCall"]),
        Row(
            name: "group calls have no media-type changes",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: changeMedia("alice", "a1", to: .video),
            expected: ["reply error oneToOneOnly"]),
        Row(
            name: "not before the call connects",
            setup: [start()],
            step: changeMedia("alice", "a1", to: .video),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "not to the media type the call already has",
            setup: [start(), accept("bob", "b1")],
            step: changeMedia("alice", "a1", to: .audio),
            expected: ["reply error invalidParams"]),
        Row(
            name: "the call ending drops the open change",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "cancel mediaChange(c1,t1)",
                "alice@a1 ← callEnded(hangup by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:answered/hangup/2s bob:answered/hangup/2s",
            ]),
    ]

    /// A member in the call acts only from the device in the call (alice on a1, bob on b1); the
    /// user's other devices (b2, a2) are refused with notInCall and change nothing. Each request
    /// from the right device is in the tables above and below.
    static let deviceScope: [Row] = [
        Row(
            name: "hang-up from another device of a member",
            setup: [start(), accept("bob", "b1")],
            step: hangup("bob", "b2"),
            expected: ["reply error notInCall"]),
        Row(
            name: "the caller's cancel from another of the caller's devices",
            setup: [start()],
            step: hangup("alice", "a2"),
            expected: ["reply error notInCall"]),
        Row(
            name: "device state from another device",
            setup: [start(), accept("bob", "b1")],
            step: devices("bob", "b2", mic: false, camera: nil),
            expected: ["reply error notInCall"]),
        Row(
            name: "screen sharing from another device",
            setup: [start(), accept("bob", "b1")],
            step: .event(.updateDevice(command("bob", "b2", "c1"), microphoneOn: nil, cameraOn: nil, screenSharing: true)),
            expected: ["reply error notInCall"]),
        Row(
            name: "a status report from another device",
            setup: [start(), accept("bob", "b1")],
            step: report("bob", "b2"),
            expected: ["reply error notInCall"]),
        Row(
            name: "a media-type change request from another device",
            setup: [start(), accept("bob", "b1")],
            step: changeMedia("bob", "b2", to: .video),
            expected: ["reply error notInCall"]),
        Row(
            name: "the answer to a media-type change from another device",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: replyMedia("bob", "b2", agree: true),
            expected: ["reply error notInCall"]),
        Row(
            name: "the cancel of a media-type change from another device",
            setup: [start(), accept("bob", "b1"), changeMedia("bob", "b1", to: .video)],
            step: cancelMedia("bob", "b2"),
            expected: ["reply error notInCall"]),
        Row(
            name: "an invitation from another device",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: invite("bob", "b2", ["dave"]),
            expected: ["reply error notInCall"]),
        Row(
            name: "a media signal from another device",
            setup: [start(), accept("bob", "b1")],
            step: signal("bob", "b2", to: "alice"),
            expected: ["reply error notInCall"]),
        Row(
            name: "accepting again from another device says the user already accepted",
            setup: [start(), accept("bob", "b1")],
            step: accept("bob", "b2"),
            expected: ["reply error alreadyAccepted"]),
        Row(
            name: "while the call rings, any device of the callee may reject it",
            setup: [start()],
            step: hangup("bob", "b2"),
            expected: [
                "reply ok",
                "cancel ring(c1,bob)",
                "bob@b2 ← callEnded(reject by bob)",
                "bob@*-b2 ← callEnded(otherDeviceReject by bob)",
                "alice@a1 ← callEnded(reject by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:rejected/reject/0s bob:rejected/reject/0s",
            ]),
        Row(
            name: "the refused requests left the call as it was: the device in it hangs up",
            setup: [
                start(), accept("bob", "b1"), hangup("bob", "b2"), devices("bob", "b2", mic: false, camera: nil),
                changeMedia("bob", "b2", to: .video),
            ],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callEnded(hangup by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:answered/hangup/4s bob:answered/hangup/4s",
            ]),
    ]

    static func signal(_ user: String, _ device: String, to peer: String, _ kind: MediaSignalKind = .offer, call: String = "c1")
        -> Step
    {
        .event(
            .mediaSignal(
                command(user, device, call),
                SendMediaSignalRequest(
                    callId: CallID(rawValue: call), to: UserID(rawValue: peer), kind: kind,
                    sdp: kind == .offer || kind == .answer ? "v=0" : nil,
                    candidate: kind == .candidate ? IceCandidate(candidate: "candidate:1 1 udp 1 127.0.0.1 9 typ host") : nil)))
    }

    /// Media signals go between members in the call, device to device, and nowhere else.
    static let mediaRelay: [Row] = [
        Row(
            name: "an offer goes to the peer's device in the call",
            setup: [start(), accept("bob", "b2")],
            step: signal("alice", "a1", to: "bob"),
            expected: ["reply ok", "bob@b2 ← mediaSignal(offer from alice)"]),
        Row(
            name: "candidates and answers flow back the same way",
            setup: [start(), accept("bob", "b2"), signal("alice", "a1", to: "bob")],
            step: signal("bob", "b2", to: "alice", .candidate),
            expected: ["reply ok", "alice@a1 ← mediaSignal(candidate from bob)"]),
        Row(
            name: "not to a callee who is still ringing",
            setup: [start()],
            step: signal("alice", "a1", to: "bob"),
            expected: ["reply error peerNotInCall"]),
        Row(
            name: "not from a callee who has not answered",
            setup: [start()],
            step: signal("bob", "b1", to: "alice"),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "a sender who has not answered hears that first, even to someone outside the call",
            setup: [start()],
            step: signal("bob", "b1", to: "mallory"),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "not from another device of a member",
            setup: [start(), accept("bob", "b2")],
            step: signal("bob", "b1", to: "alice"),
            expected: ["reply error notInCall"]),
        Row(
            name: "not from someone outside the call",
            setup: [start(), accept("bob", "b2")],
            step: signal("mallory", "m1", to: "alice"),
            expected: ["reply error notInCall"]),
        Row(
            name: "not to someone outside the call",
            setup: [start(), accept("bob", "b2")],
            step: signal("alice", "a1", to: "mallory", .restart),
            expected: ["reply error peerNotInCall"]),
        Row(
            name: "not to yourself",
            setup: [start(), accept("bob", "b2")],
            step: signal("alice", "a1", to: "alice"),
            expected: ["reply error peerNotInCall"]),
        Row(
            name: "not to a member who left a group call",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1"), hangup("carol", "k1")],
            step: signal("alice", "a1", to: "carol"),
            expected: ["reply error peerNotInCall"]),
        Row(
            name: "between any two members of a group call (mesh)",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1")],
            step: signal("bob", "b1", to: "carol"),
            expected: ["reply ok", "carol@k1 ← mediaSignal(offer from bob)"]),
        Row(
            name: "not in an ended call",
            setup: [start(), accept("bob", "b1"), hangup("bob", "b1")],
            step: signal("alice", "a1", to: "bob"),
            expected: ["reply error callAlreadyEnded"]),
    ]

    /// Status reports in a group call of alice (a1), bob (b1) and carol (k1).
    static let status: [Row] = [
        Row(
            name: "a report tells the other members quality and volume",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1")],
            step: report("bob", "b1"),
            expected: [
                "reply ok",
                "alice@a1 ← memberStatus(bob excellent peak)",
                "carol@k1 ← memberStatus(bob excellent peak)",
                "alice@a1 ← memberStats(bob loss=0.5 rtt=50 bitrate=500 level=80)",
                "carol@k1 ← memberStats(bob loss=0.5 rtt=50 bitrate=500 level=80)",
            ]),
        Row(
            name: "an unchanged report a second later sends only the raw figures",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1"), report("bob", "b1")],
            step: report("bob", "b1", level: 90),
            expected: [
                "reply ok",
                "alice@a1 ← memberStats(bob loss=0.5 rtt=50 bitrate=500 level=90)",
                "carol@k1 ← memberStats(bob loss=0.5 rtt=50 bitrate=500 level=90)",
            ]),
        Row(
            name: "reports faster than one a second: the raw figures wait for their credit",
            setup: [
                start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1"), report("bob", "b1"),
                .wait(-600), report("bob", "b1"), .wait(-600),
            ],
            step: report("bob", "b1", level: 90),
            expected: ["reply ok"]),
        Row(
            name: "a worse network is told",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1"), report("bob", "b1")],
            step: report("bob", "b1", loss: 10, rtt: 300, level: 30),
            expected: [
                "reply ok",
                "alice@a1 ← memberStatus(bob bad medium)",
                "carol@k1 ← memberStatus(bob bad medium)",
                "alice@a1 ← memberStats(bob loss=10.0 rtt=300 bitrate=500 level=30)",
                "carol@k1 ← memberStats(bob loss=10.0 rtt=300 bitrate=500 level=30)",
            ]),
        Row(
            name: "turning the microphone off mutes the volume level",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1"), report("bob", "b1")],
            step: devices("bob", "b1", mic: false, camera: nil),
            expected: [
                "reply ok",
                "alice@a1 ← deviceChanged(bob mic=off camera=off)",
                "carol@k1 ← deviceChanged(bob mic=off camera=off)",
                "alice@a1 ← memberStatus(bob excellent mute)",
                "carol@k1 ← memberStatus(bob excellent mute)",
            ]),
        Row(
            name: "a dropped member is down for the others and unknown when back",
            setup: [
                start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1"), report("bob", "b1"),
                offline("bob", "b1"),
            ],
            step: online("bob", "b1"),
            expected: [
                "cancel reconnectGrace(c1,bob)",
                "alice@a1 ← memberStatus(bob unknown peak)",
                "carol@k1 ← memberStatus(bob unknown peak)",
                "bob@b1 ← callStarted",
                "bob@b1 ← callsSynced([c1] elsewhere [])",
            ]),
        Row(
            name: "values out of range are refused",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: report("bob", "b1", loss: 120),
            expected: ["reply error invalidParams"]),
        Row(
            name: "a ringing member does not report",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: report("carol", "k1"),
            expected: ["reply error invalidCallState"]),
    ]

    /// Group calls through the SFU: sessions, signals, layers, restarts.
    static let sfu: [Row] = [
        Row(
            name: "a group call through the SFU starts a session for each member in it when it connects",
            sfu: true, setup: [start(to: ["bob", "carol"])],
            step: accept("bob", "b1"),
            expected: [
                "reply call alice:accept bob:accept carol:waiting",
                "cancel ring(c1,bob)",
                "bob@*-b1 ← callEnded(otherDeviceAccepted by bob)",
                "bob@*-b1 ← callElsewhere(on b1 active)",
                "alice@a1 ← callStarted",
                "bob@b1 ← callStarted",
                "carol@* ← callUpdated(alice:accept bob:accept carol:waiting)",
                "alice@a1 ← sfuSession(#1)",
                "sfu join alice@a1 #1",
                "bob@b1 ← sfuSession(#2)",
                "sfu join bob@b1 #2",
            ]),
        Row(
            name: "a member who answers later gets the next session",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: accept("carol", "k1"),
            expected: [
                "reply call alice:accept bob:accept carol:accept",
                "cancel ring(c1,carol)",
                "carol@*-k1 ← callEnded(otherDeviceAccepted by carol)",
                "carol@*-k1 ← callElsewhere(on k1 active)",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "carol@k1 ← callStarted",
                "carol@k1 ← sfuSession(#3)",
                "sfu join carol@k1 #3",
            ]),
        Row(
            name: "a one-to-one call stays peer to peer on a server with an SFU",
            sfu: true, setup: [start()],
            step: accept("bob", "b1"),
            expected: [
                "reply call alice:accept bob:accept",
                "cancel ring(c1,bob)",
                "bob@*-b1 ← callEnded(otherDeviceAccepted by bob)",
                "bob@*-b1 ← callElsewhere(on b1 active)",
                "alice@a1 ← callStarted",
                "bob@b1 ← callStarted",
            ]),
        Row(
            name: "a group call on a server without an SFU is a mesh: no sessions",
            setup: [start(to: ["bob", "carol"])],
            step: accept("bob", "b1"),
            expected: [
                "reply call alice:accept bob:accept carol:waiting",
                "cancel ring(c1,bob)",
                "bob@*-b1 ← callEnded(otherDeviceAccepted by bob)",
                "bob@*-b1 ← callElsewhere(on b1 active)",
                "alice@a1 ← callStarted",
                "bob@b1 ← callStarted",
                "carol@* ← callUpdated(alice:accept bob:accept carol:waiting)",
            ]),
        Row(
            name: "an invitation into a one-to-one call moves its media to the SFU at once",
            sfu: true, setup: [start(), accept("bob", "b1")],
            step: invite("alice", "a1", ["carol"]),
            expected: [
                "reply invited busy=[] alice:accept bob:accept carol:waiting",
                "carol@* ← callReceived(from alice)",
                "timer ring(c1,carol) +30000",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:waiting)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:waiting)",
                "alice@a1 ← sfuSession(#1)",
                "sfu join alice@a1 #1",
                "bob@b1 ← sfuSession(#2)",
                "sfu join bob@b1 #2",
            ]),
        Row(
            name: "a member's signal goes to the rooms with the member's current session",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: sfuSignal("bob", "b1", session: 2),
            expected: ["reply ok", "sfu signal bob #2 publish offer"]),
        Row(
            name: "a signal of another session is refused",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: sfuSignal("bob", "b1", session: 1, .subscribe, .answer),
            expected: ["reply error sfuSessionMismatch"]),
        Row(
            name: "SFU signals in a peer-to-peer call are refused",
            sfu: true, setup: [start(), accept("bob", "b1")],
            step: sfuSignal("bob", "b1", session: 1),
            expected: ["reply error sfuNotInUse"]),
        Row(
            name: "not from a member who has not answered",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: sfuSignal("carol", "k1", session: 1),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "not from another device of a member",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: sfuSignal("bob", "b2", session: 2),
            expected: ["reply error notInCall"]),
        Row(
            name: "not from someone outside the call",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: sfuSignal("mallory", "m1", session: 1),
            expected: ["reply error notInCall"]),
        Row(
            name: "a restart starts a new session for that member only",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: sfuSignal("alice", "a1", session: 1, .subscribe, .restart),
            expected: ["reply ok", "alice@a1 ← sfuSession(#3)", "sfu join alice@a1 #3"]),
        Row(
            name: "a layer choice is kept and handed to the rooms",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: videoLayer("alice", "a1", of: "bob", .big),
            expected: ["reply ok", "sfu layer alice sees bob big"]),
        Row(
            name: "the choice holds for the member's next session",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), videoLayer("alice", "a1", of: "bob", .big)],
            step: sfuLost("alice"),
            expected: ["alice@a1 ← sfuSession(#3)", "sfu join alice@a1 #3 [bob=big]"]),
        Row(
            name: "no layer of someone who is not in the call",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: videoLayer("alice", "a1", of: "carol", .big),
            expected: ["reply error peerNotInCall"]),
        Row(
            name: "no layer of oneself",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: videoLayer("alice", "a1", of: "alice", .big),
            expected: ["reply error peerNotInCall"]),
        Row(
            name: "no layers in a peer-to-peer call",
            sfu: true, setup: [start(), accept("bob", "b1")],
            step: videoLayer("alice", "a1", of: "bob", .small),
            expected: ["reply error sfuNotInUse"]),
        Row(
            name: "the rooms losing the call start new sessions for everyone in it",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1")],
            step: sfuLost(),
            expected: [
                "alice@a1 ← sfuSession(#4)", "sfu join alice@a1 #4", "bob@b1 ← sfuSession(#5)", "sfu join bob@b1 #5",
                "carol@k1 ← sfuSession(#6)", "sfu join carol@k1 #6",
            ]),
        Row(
            name: "the device in the call logging in again starts its media over",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), offline("alice", "a1")],
            step: online("alice", "a1"),
            expected: [
                "cancel reconnectGrace(c1,alice)",
                "bob@b1 ← memberStatus(alice unknown mute)",
                "alice@a1 ← callStarted",
                "alice@a1 ← sfuSession(#3)",
                "sfu join alice@a1 #3",
                "alice@a1 ← callsSynced([c1] elsewhere [])",
            ]),
        Row(
            name: "a member who leaves leaves the room",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1")],
            step: hangup("carol", "k1"),
            expected: [
                "reply ok",
                "carol@k1 ← callEnded(hangup by carol)",
                "carol@*-k1 ← callElsewhere(on k1 ended)",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:none)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:none)",
                "sfu leave carol",
            ]),
        Row(
            name: "the call's end ends its room",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), reject("carol", "k1")],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callEnded(hangup by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "sfu end",
                "records alice:answered/hangup/2s bob:answered/hangup/2s carol:rejected/reject/0s",
            ]),
    ]

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

    /// A nickname saved before the rules refused format characters is left out of pushes (the
    /// app shows the caller's id); a valid one goes in.
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
        configuration.sfu = row.sfu
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
        (output.reply.map { [describe($0)] } ?? [])
            + output.actions.filter {
                switch $0 {
                case .notify, .countInvitation: false
                default: true
                }
            }.map { describe($0, now: now) }
    }

    static func describe(_ reply: CallReply) -> String {
        switch reply {
        case .ok: "reply ok"
        case .failure(let error): "reply error \(error.code.name)"
        case .started(let response):
            "reply started busy=[\(response.busyUserIds.map(\.rawValue).joined(separator: ","))] " + statuses(response.call)
        case .call(let info): "reply call " + statuses(info)
        case .invited(let response):
            "reply invited busy=[\(response.busyUserIds.map(\.rawValue).joined(separator: ","))] " + statuses(response.call)
        case .mediaChange(let transaction): "reply transaction \(transaction)"
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
            case .leave(_, let user): return "sfu leave \(user)"
            case .end: return "sfu end"
            case .signal(_, let user, let session, let signal):
                return "sfu signal \(user) #\(session) \(signal.connection.rawValue) \(signal.kind.rawValue)"
            case .layer(_, let viewer, let target, let layer):
                return "sfu layer \(viewer) sees \(target) \(layer.rawValue)"
            }
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
        }
    }
}

/// The journal of calls in progress and the recovery of calls a crash left open.
struct CallRecoveryTests {
    typealias T = CallStateMachineTests

    func run(_ machine: inout CallStateMachine, _ steps: [T.Step], from time: Int64 = T.t0) -> Int64 {
        var now = time
        for step in steps {
            switch step {
            case .wait(let ms): now += ms
            case .event(let event, let facts):
                now += 1000
                _ = machine.handle(event, facts: facts, now: now)
            }
        }
        return now
    }

    @Test func membershipChangesAreJournaledAndEndedCallsAreNot() {
        var machine = CallStateMachine()
        _ = run(&machine, [T.start(to: ["bob", "carol"])])
        #expect(machine.takeJournalChanges().map(\.id) == ["c1"])
        #expect(machine.takeJournalChanges().isEmpty)
        _ = run(&machine, [T.accept("bob", "b1")])
        let saved = machine.takeJournalChanges()
        #expect(saved.first.map { T.statuses($0.info) } == "alice:accept bob:accept carol:waiting")
        _ = run(&machine, [T.hangup("alice", "a1")], from: T.t0 + 5000)
        #expect(machine.takeJournalChanges().map(\.id) == ["c1"])
        _ = run(&machine, [T.hangup("bob", "b1")], from: T.t0 + 7000)
        // Ended: the end action removes it from the journal instead.
        #expect(machine.takeJournalChanges().isEmpty)
        #expect(machine.calls.isEmpty)
    }

    /// A restart within the reconnect grace: the call comes back as it was, every joined member
    /// counts as dropped, a ringing member rings until its original deadline, and a device that
    /// logs in again resumes the call with its start time; one that does not is ended after the grace.
    @Test func aRestoredCallGoesOnAndItsStartTimeWithIt() throws {
        var original = CallStateMachine()
        // alice calls bob and carol; bob answers 1 s later; 10 s on, the node stops.
        var now = run(&original, [T.start(to: ["bob", "carol"]), T.accept("bob", "b1"), .wait(10_000)])
        let journaled = try #require(original.takeJournalChanges().last)
        let startTime = try #require(journaled.startTime)
        let decoded = try CallEngine.journaledCall(try #require(CallEngine.journalEntry(journaled)))

        // 4 s later a new process restores it.
        now += 4_000
        var restarted = CallStateMachine()
        let restored = restarted.restore(decoded, now: now)
        #expect(
            T.describe(restored, now: now) == [
                "timer reconnectGrace(c1,alice) +15000",
                "timer reconnectGrace(c1,bob) +15000",
                // carol was invited at t0 + 1 s with a 30 s timeout: 16 s of ringing are left.
                "timer ring(c1,carol) +\(T.t0 + 1_000 + 30_000 - now)",
            ])
        #expect(restarted.invariantViolations() == [])
        #expect(restarted.calls["c1"]?.info.participants.map { $0.networkQuality } == [.down, .down, nil])
        #expect(restarted.restore(decoded, now: now) == CallOutput())

        // bob's phone comes back: the call resumes with its start time, and alice hears he is back.
        now += 2_000
        let back = restarted.handle(.deviceOnline(T.user("bob"), T.device("b1")), now: now)
        #expect(
            T.describe(back, now: now) == [
                "cancel reconnectGrace(c1,bob)",
                "alice@a1 ← memberStatus(bob unknown mute)",
                "bob@b1 ← callStarted",
                "bob@b1 ← callsSynced([c1] elsewhere [])",
            ])
        #expect(restarted.calls["c1"]?.startTime == startTime)

        // alice never comes back: after the grace her part ends; bob and carol... carol still rings.
        now += 13_000
        let gone = restarted.handle(.timerFired(.reconnectGrace("c1", "alice")), now: now)
        #expect(T.describe(gone, now: now).contains("bob@b1 ← callUpdated(alice:none bob:accept carol:waiting)"))
        // carol's ring ends at its original deadline.
        let timeout = restarted.handle(.timerFired(.ring("c1", "carol")), now: T.t0 + 31_000)
        let described = T.describe(timeout, now: T.t0 + 31_000)
        // alice was in the call from its start (t0 + 2 s) to the end of her grace.
        #expect(described.last?.hasPrefix("records alice:answered/endByServer/") == true, "\(described)")
        #expect(restarted.calls.isEmpty)
    }

    @Test func aRecoveredCallEndsWithEndByServerAndIsRemembered() throws {
        var original = CallStateMachine()
        let now = run(&original, [T.start(to: ["bob", "carol"]), T.accept("bob", "b1"), .wait(60_000)])
        let journaled = try #require(original.takeJournalChanges().last)
        // Through the journal's own encoding, as the engine writes and reads it.
        let data = try #require(CallEngine.journalEntry(journaled))
        let decoded = try CallEngine.journaledCall(data)
        #expect(decoded == journaled)

        // A new process: the machine starts empty and recovers the call as of the crash.
        var restarted = CallStateMachine()
        let actions = restarted.recover(decoded, endTime: now)
        #expect(
            T.describe(actions, now: now) == [
                "cancel ring(c1,carol)",
                "records alice:answered/endByServer/60s bob:answered/endByServer/60s carol:missed/endByServer/0s",
            ])
        #expect(restarted.invariantViolations() == [])
        #expect(restarted.recover(decoded, endTime: now) == CallOutput())

        // bob's phone comes back to the new process and hears how the call ended.
        let back = restarted.handle(.deviceOnline(T.user("bob"), T.device("b1")), now: now + 2000)
        #expect(
            T.describe(back, now: now) == [
                "bob@b1 ← callEnded(endByServer by server)", "bob@b1 ← callsSynced([] elsewhere [])",
            ])
    }
}
