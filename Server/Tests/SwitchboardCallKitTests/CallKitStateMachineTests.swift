import Foundation
import Switchboard
import SwitchboardProtocol
import Testing

@testable import SwitchboardCallKit

/// Table tests of the CallKit rules without a server or a system: each row feeds setup inputs,
/// then one more, and compares the effects of that one, in order, written one per line:
///
///     report incoming <call> <handle>/<name> <audio|video> | report ended <call> <reason>
///     report connecting <call> | report connected <call> | report updated <call> <handle>/<name> <media>
///     request <action> | fulfill #n | fail #n | start refused <call> | configure audio <media>
///     sdk push <kind> <call> | sdk login | sdk accept <call> #n | sdk reject <call> [then #n]
///     sdk hangup <call> [then #n] | sdk place <call> #n | microphone on|off | deactivate audio
///
/// Calls are named by their id (their UUID is derived from it); `fresh` is the UUID the context
/// offers for a call that needs a new one, `s1` the UUID of a call the app starts.
struct CallKitStateMachineTests {
    typealias Machine = CallKitStateMachine
    typealias Input = CallKitStateMachine.Input

    static let now: Int64 = 1_767_225_600_000
    static let app: SdkAppID = 1_400_000_001
    static let bob = CallKitAccount(sdkAppID: app, userID: "bob", userSig: "sig")
    static let fresh = UUID(uuidString: "00000000-0000-4000-8000-000000000001")!
    static let s1 = UUID(uuidString: "00000000-0000-4000-8000-0000000000a1")!
    static let names: [UUID: String] = Dictionary(
        uniqueKeysWithValues: ["c1", "c2", "c9"].map { (UUID(callId: CallID(rawValue: $0)), $0) } + [(fresh, "fresh"), (s1, "s1")])

    // MARK: - inputs

    static func uuid(_ call: String) -> UUID {
        switch call {
        case "fresh": fresh
        case "s1": s1
        default: UUID(callId: CallID(rawValue: call))
        }
    }

    static func push(
        _ call: String, user: UserID? = "bob", app: SdkAppID? = Self.app, deadline: Int64 = now + 30_000, video: Bool = false
    ) -> Input {
        .push(
            .incomingCall(
                IncomingCallPush(
                    callId: CallID(rawValue: call), sdkAppID: app, userId: user, callerId: "alice", callerName: "Alice",
                    mediaType: video ? .video : .audio, callType: .oneToOne, deadline: deadline)))
    }
    static func stopPush(_ call: String, _ reason: CallEndReason) -> Input {
        .push(.callEnded(CallEndedPush(callId: CallID(rawValue: call), reason: reason, mediaType: .audio)))
    }
    static func reported(_ call: String, _ error: IncomingCallReportError? = nil) -> Input {
        .reportCompleted(uuid(call), error)
    }
    static func received(_ call: String, video: Bool = false) -> Input {
        .callReceived(CallID(rawValue: call), callerId: "alice", video: video, info: nil)
    }
    static func action(_ id: Int, _ action: SystemCallAction) -> Input {
        .providerAction(Machine.ActionID(rawValue: id), action)
    }
    static func answer(_ id: Int, _ call: String) -> Input { action(id, .answer(uuid: uuid(call))) }
    static func end(_ id: Int, _ call: String) -> Input { action(id, .end(uuid: uuid(call))) }
    static func mute(_ id: Int, _ call: String, _ muted: Bool) -> Input { action(id, .setMuted(uuid: uuid(call), muted: muted)) }
    static func start(_ id: Int, _ call: String) -> Input { action(id, .start(uuid: uuid(call), handle: "alice", video: false)) }
    static func answered(_ call: String, _ id: Int, _ succeeded: Bool = true) -> Input {
        .answerFinished(uuid(call), Machine.ActionID(rawValue: id), succeeded: succeeded)
    }
    static func ended(_ call: String, _ reason: CallEndReason, by: UserID? = "alice") -> Input {
        .callEnded(CallID(rawValue: call), reason: reason, by: by)
    }
    static func placed(_ call: String, video: Bool = false) -> Input {
        .callPlaced(CallID(rawValue: call), participantIds: ["alice"], video: video)
    }
    static func started(_ call: String) -> Input { .callStarted(CallID(rawValue: call)) }
    static func placeFinished(_ id: Int, _ call: String?) -> Input {
        .placeFinished(s1, Machine.ActionID(rawValue: id), call.map(CallID.init(rawValue:)))
    }

    /// An incoming call from a push, ringing on the call screen.
    static let ringing: [Input] = [push("c1"), reported("c1")]
    /// An incoming call answered and connected.
    static let connected: [Input] = ringing + [answer(1, "c1"), answered("c1", 1)]

    // MARK: - the table

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var setup: [Input] = []
        var input: Input
        /// The microphone is off (for the inputs that look at it).
        var microphoneOff = false
        var expected: [String]
        var testDescription: String { name }
    }

    static let incoming: [Row] = [
        Row(
            name: "a push is reported at once, reaches the SDK and logs in",
            input: push("c1"),
            expected: ["report incoming c1 alice/Alice audio", "sdk push incomingCall c1", "sdk login"]),
        Row(
            name: "a push that does not decode is reported, then ended when the report completes",
            setup: [.push(nil)],
            input: reported("fresh"),
            expected: ["report ended fresh failed"]),
        Row(
            name: "a push that does not decode is reported as an unknown caller",
            input: .push(nil),
            expected: ["report incoming fresh unknown/Unknown caller audio"]),
        Row(
            name: "a stale push rings and ends unanswered, without reaching the SDK",
            setup: [push("c1", deadline: now)],
            input: reported("c1"),
            expected: ["report ended c1 unanswered"]),
        Row(
            name: "a stale push is still reported first",
            input: push("c1", deadline: now - 1),
            expected: ["report incoming c1 alice/Alice audio"]),
        Row(
            name: "a push for another user ends as failed",
            setup: [push("c1", user: "carol")],
            input: reported("c1"),
            expected: ["report ended c1 failed"]),
        Row(
            name: "a push for another app ends as failed",
            setup: [push("c1", app: 7)],
            input: reported("c1"),
            expected: ["report ended c1 failed"]),
        Row(
            name: "a push with nobody logged in ends as failed",
            setup: [.accountChanged(nil), push("c1")],
            input: reported("c1"),
            expected: ["report ended c1 failed"]),
        Row(
            name: "a duplicate push is reported again for the same UUID, without a new login",
            setup: ringing,
            input: push("c1"),
            expected: ["report incoming c1 alice/Alice audio", "sdk push incomingCall c1"]),
        Row(
            name: "a stop push while it rings reports it again and hands the stop to the SDK",
            setup: ringing,
            input: stopPush("c1", .canceled),
            expected: ["report incoming c1 / audio", "sdk push callEnded c1"]),
        Row(
            name: "that report completing (already exists) ends the call with the stop's reason",
            setup: ringing + [stopPush("c1", .otherDeviceAccepted)],
            input: reported("c1", .callUUIDAlreadyExists),
            expected: ["report ended c1 answeredElsewhere"]),
        Row(
            name: "a stop push for a call this device never saw is reported and ended with its reason",
            setup: [stopPush("c2", .noResponse)],
            input: reported("c2"),
            expected: ["report ended c2 unanswered"]),
        Row(
            name: "a late push for a call that ended here ends with the reason it ended with",
            setup: [received("c1"), reported("c1"), ended("c1", .otherDeviceAccepted, by: "bob"), push("c1")],
            input: reported("c1"),
            expected: ["report ended c1 answeredElsewhere"]),
        Row(
            name: "a call the system does not show (Do Not Disturb) is declined",
            setup: [push("c1")],
            input: reported("c1", .filteredByDoNotDisturb),
            expected: ["sdk reject c1"]),
        Row(
            name: "when the login after a push fails, the ringing call ends on the screen and in the SDK",
            setup: ringing,
            input: .pushLoginFailed,
            expected: ["report ended c1 failed", "sdk push callEnded c1"]),
        Row(
            name: "when it fails before the report completed, the call ends once it does",
            setup: [push("c1"), .pushLoginFailed],
            input: reported("c1"),
            expected: ["report ended c1 failed"]),
        Row(
            name: "an invitation through signaling rings",
            input: received("c1", video: true),
            expected: ["report incoming c1 alice/alice video"]),
        Row(
            name: "an invitation for a call a push rang already does not ring again",
            setup: [push("c1")],
            input: received("c1"),
            expected: []),
        Row(
            name: "the server's end of a call still being reported waits for the report",
            setup: [received("c1")],
            input: ended("c1", .canceled),
            expected: []),
        Row(
            name: "and ends it when the report completes",
            setup: [received("c1"), ended("c1", .canceled)],
            input: reported("c1"),
            expected: ["report ended c1 remoteEnded"]),
    ]

    static let actions: [Row] = [
        Row(
            name: "answer: audio configured, microphone on, the SDK accepts",
            setup: ringing,
            input: answer(1, "c1"),
            expected: ["configure audio audio", "microphone on", "sdk accept c1 #1"]),
        Row(
            name: "an accepted answer is fulfilled",
            setup: ringing + [answer(1, "c1")],
            input: answered("c1", 1),
            expected: ["fulfill #1"]),
        Row(
            name: "a failed answer fails the action and ends the call",
            setup: ringing + [answer(1, "c1")],
            input: answered("c1", 1, false),
            expected: ["fail #1", "report ended c1 failed"]),
        Row(
            name: "answering a call the system does not show fails",
            input: answer(1, "c1"),
            expected: ["fail #1"]),
        Row(
            name: "answering twice fails the second",
            setup: ringing + [answer(1, "c1")],
            input: answer(2, "c1"),
            expected: ["fail #2"]),
        Row(
            name: "ending a ringing call rejects it, then fulfills",
            setup: ringing,
            input: end(1, "c1"),
            expected: ["sdk reject c1 then #1"]),
        Row(
            name: "ending a connected call hangs up, then fulfills",
            setup: connected,
            input: end(2, "c1"),
            expected: ["sdk hangup c1 then #2"]),
        Row(
            name: "ending a call the system does not show is fulfilled",
            input: end(1, "c1"),
            expected: ["fulfill #1"]),
        Row(
            name: "the call screen's mute button mutes the microphone",
            setup: connected,
            input: mute(2, "c1", true),
            expected: ["microphone off", "fulfill #2"]),
        Row(
            name: "muting a call the system does not show fails",
            input: mute(1, "c1", true),
            expected: ["fail #1"]),
        Row(
            name: "hold is refused",
            setup: connected,
            input: action(2, .setHeld(uuid: uuid("c1"), onHold: true)),
            expected: ["fail #2"]),
        Row(
            name: "the system resets: every call ends in the SDK",
            setup: connected + [received("c2")],
            input: .providerReset,
            expected: ["deactivate audio", "sdk hangup c1", "sdk hangup c2"]),
        Row(
            name: "after a reset a late push for those calls ends at once",
            setup: connected + [.providerReset, push("c1")],
            input: reported("c1"),
            expected: ["report ended c1 failed"]),
    ]

    static let mute: [Row] = [
        Row(
            name: "the app mutes: the call screen follows through a transaction",
            setup: connected,
            input: .microphoneChanged,
            microphoneOff: true,
            expected: ["request setMuted c1 on"]),
        Row(
            name: "the transaction's action comes back and is not applied again",
            setup: connected + [.microphoneChanged],
            input: mute(2, "c1", true),
            microphoneOff: true,
            expected: ["fulfill #2"]),
        Row(
            name: "a second change notice while the transaction is out sends nothing",
            setup: connected + [.microphoneChanged],
            input: .microphoneChanged,
            microphoneOff: true,
            expected: []),
        Row(
            name: "a refused mute transaction is forgotten: the system's own action applies",
            setup: connected + [.microphoneChanged, .transactionRefused(.setMuted(uuid: uuid("c1"), muted: true))],
            input: mute(2, "c1", true),
            microphoneOff: true,
            expected: ["microphone off", "fulfill #2"]),
        Row(
            name: "a ringing call's screen is not touched",
            setup: ringing,
            input: .microphoneChanged,
            microphoneOff: true,
            expected: []),
    ]

    static let outgoing: [Row] = [
        Row(
            name: "the app starts a call through the system",
            input: .startRequested(s1, handle: "alice", video: true),
            expected: ["request start s1 alice video"]),
        Row(
            name: "its start action places the call",
            setup: [.startRequested(s1, handle: "alice", video: true)],
            input: start(1, "s1"),
            expected: ["configure audio video", "microphone on", "sdk place s1 #1"]),
        Row(
            name: "a repeated start action finds nothing to place",
            setup: [.startRequested(s1, handle: "alice", video: false), start(1, "s1")],
            input: start(2, "s1"),
            expected: ["fail #2"]),
        Row(
            name: "placed: the action is fulfilled and the call connects on the screen",
            setup: [.startRequested(s1, handle: "alice", video: false), start(1, "s1"), .placing(s1, "c9")],
            input: placeFinished(1, "c9"),
            expected: ["fulfill #1", "report connecting s1"]),
        Row(
            name: "answered before the start completed: connecting and connected at once",
            setup: [.startRequested(s1, handle: "alice", video: false), start(1, "s1"), .placing(s1, "c9"), started("c9")],
            input: placeFinished(1, "c9"),
            expected: ["fulfill #1", "report connecting s1", "report connected s1"]),
        Row(
            name: "ended on the screen while being placed: hung up once placed",
            setup: [.startRequested(s1, handle: "alice", video: false), start(1, "s1"), end(2, "s1")],
            input: placeFinished(1, "c9"),
            expected: ["fulfill #1", "sdk hangup c9"]),
        Row(
            name: "placing failed: the action fails",
            setup: [.startRequested(s1, handle: "alice", video: false), start(1, "s1")],
            input: placeFinished(1, nil),
            expected: ["fail #1"]),
        Row(
            name: "the system refuses the start: the app's request fails",
            setup: [.startRequested(s1, handle: "alice", video: false)],
            input: .transactionRefused(.start(uuid: s1, handle: "alice", video: false)),
            expected: ["start refused s1"]),
        Row(
            name: "a call the app placed through the SDK reaches the system as a start transaction",
            input: placed("c1", video: true),
            expected: ["request start c1 alice video"]),
        Row(
            name: "whose action only confirms, with the audio session set for the call it activates next",
            setup: [placed("c1")],
            input: start(1, "c1"),
            expected: ["configure audio audio", "fulfill #1", "report connecting c1"]),
        Row(
            name: "whose action also shows the app's mute",
            setup: [placed("c1")],
            input: start(1, "c1"),
            microphoneOff: true,
            expected: ["configure audio audio", "fulfill #1", "report connecting c1", "request setMuted c1 on"]),
        Row(
            name: "if the system refuses it the call is hung up",
            setup: [placed("c1")],
            input: .transactionRefused(.start(uuid: uuid("c1"), handle: "alice", video: false)),
            expected: ["sdk hangup c1"]),
        Row(
            name: "the callee answers: connected",
            setup: [placed("c1"), start(1, "c1")],
            input: started("c1"),
            expected: ["report connected c1"]),
    ]

    /// The app shows its own incoming-call screen and accepts through the SDK while the system's
    /// call screen rings too.
    static let answeredInApp: [Row] = [
        Row(
            name: "a call answered in the app reaches the system as an answer transaction",
            setup: ringing,
            input: started("c1"),
            expected: ["request answer c1"]),
        Row(
            name: "whose action only confirms: audio configured, no second accept",
            setup: ringing + [started("c1")],
            input: answer(1, "c1"),
            expected: ["configure audio audio", "fulfill #1"]),
        Row(
            name: "whose action also shows the app's mute",
            setup: ringing + [started("c1")],
            input: answer(1, "c1"),
            microphoneOff: true,
            expected: ["configure audio audio", "fulfill #1", "request setMuted c1 on"]),
        Row(
            name: "answered before the system showed the call: the transaction waits for the report",
            setup: [received("c1")],
            input: started("c1"),
            expected: []),
        Row(
            name: "and goes out when the report completes",
            setup: [received("c1"), started("c1")],
            input: reported("c1"),
            expected: ["request answer c1"]),
        Row(
            name: "if the system refuses it the call is hung up",
            setup: ringing + [started("c1")],
            input: .transactionRefused(.answer(uuid: uuid("c1"))),
            expected: ["report ended c1 failed", "sdk hangup c1"]),
        Row(
            name: "ended in the app afterwards: an end transaction",
            setup: ringing + [started("c1"), answer(1, "c1")],
            input: ended("c1", .hangup, by: "bob"),
            expected: ["request end c1"]),
    ]

    static let ends: [Row] = [
        Row(
            name: "the other side hangs up: the system hears remoteEnded",
            setup: connected,
            input: ended("c1", .hangup),
            expected: ["report ended c1 remoteEnded"]),
        Row(
            name: "nobody answered: unanswered",
            setup: ringing,
            input: ended("c1", .noResponse, by: "bob"),
            expected: ["report ended c1 unanswered"]),
        Row(
            name: "answered on another device: answeredElsewhere",
            setup: ringing,
            input: ended("c1", .otherDeviceAccepted, by: "bob"),
            expected: ["report ended c1 answeredElsewhere"]),
        Row(
            name: "declined on another device: declinedElsewhere",
            setup: ringing,
            input: ended("c1", .otherDeviceReject, by: "bob"),
            expected: ["report ended c1 declinedElsewhere"]),
        Row(
            name: "hung up in the app: an end transaction, not a report",
            setup: connected,
            input: ended("c1", .hangup, by: "bob"),
            expected: ["request end c1"]),
        Row(
            name: "rejected in the app: an end transaction too",
            setup: ringing,
            input: ended("c1", .reject, by: "bob"),
            expected: ["request end c1"]),
        Row(
            name: "the end action of that transaction only confirms",
            setup: connected + [ended("c1", .hangup, by: "bob")],
            input: end(2, "c1"),
            expected: ["fulfill #2"]),
        Row(
            name: "a refused end transaction is reported instead",
            setup: connected + [ended("c1", .hangup, by: "bob")],
            input: .transactionRefused(.end(uuid: uuid("c1"))),
            expected: ["report ended c1 remoteEnded"]),
        Row(
            name: "an end for a call ended here already is not news",
            setup: connected + [end(2, "c1")],
            input: ended("c1", .hangup, by: "bob"),
            expected: []),
        Row(
            name: "a media type change updates the call screen",
            setup: connected,
            input: .mediaTypeChanged(
                "c1", video: true,
                info: CallInfo(
                    callId: "c1", roomId: "r1", callType: .oneToOne, mediaType: .video, callerId: "alice", timeout: 30,
                    createdAt: now,
                    participants: [
                        CallParticipant(userId: "alice", status: .accept, nickname: "Alice"),
                        CallParticipant(userId: "bob", status: .accept),
                    ])),
            expected: ["report updated c1 alice/Alice video"]),
    ]

    @Test(arguments: incoming) func incomingCalls(_ row: Row) { check(row) }
    @Test(arguments: actions) func systemActions(_ row: Row) { check(row) }
    @Test(arguments: mute) func muteWithoutEchoes(_ row: Row) { check(row) }
    @Test(arguments: outgoing) func outgoingCalls(_ row: Row) { check(row) }
    @Test(arguments: answeredInApp) func callsAnsweredInTheApp(_ row: Row) { check(row) }
    @Test(arguments: ends) func howCallsEnd(_ row: Row) { check(row) }

    // MARK: - running a row

    func check(_ row: Row, sourceLocation: SourceLocation = #_sourceLocation) {
        var machine = CallKitStateMachine()
        let context = Machine.Context(now: Self.now, me: "bob", microphoneOff: row.microphoneOff, freshUUID: Self.fresh)
        _ = machine.handle(.accountChanged(Self.bob), context)
        for input in row.setup { _ = machine.handle(input, context) }
        let effects = machine.handle(row.input, context).map(Self.describe)
        #expect(effects == row.expected, sourceLocation: sourceLocation)
    }

    static func name(_ uuid: UUID) -> String { names[uuid] ?? uuid.uuidString }

    static func describe(_ effect: Machine.Effect) -> String {
        func media(_ video: Bool) -> String { video ? "video" : "audio" }
        switch effect {
        case .reportIncoming(let uuid, let update):
            return "report incoming \(name(uuid)) \(update.handle)/\(update.callerName) \(media(update.hasVideo))"
        case .reportStartedConnecting(let uuid): return "report connecting \(name(uuid))"
        case .reportConnected(let uuid): return "report connected \(name(uuid))"
        case .reportEnded(let uuid, let reason): return "report ended \(name(uuid)) \(reason.rawValue)"
        case .reportUpdated(let uuid, let update):
            return "report updated \(name(uuid)) \(update.handle)/\(update.callerName) \(media(update.hasVideo))"
        case .request(let action): return "request \(describe(action))"
        case .fulfill(let id): return "fulfill \(id)"
        case .fail(let id): return "fail \(id)"
        case .configureAudio(let video): return "configure audio \(media(video))"
        case .deliverPush(.incomingCall(let push)): return "sdk push incomingCall \(push.callId)"
        case .deliverPush(.callEnded(let push)): return "sdk push callEnded \(push.callId)"
        case .setMicrophone(let on): return "microphone \(on ? "on" : "off")"
        case .deactivateAudio: return "deactivate audio"
        case .sdk(.logInForPush): return "sdk login"
        case .sdk(.accept(let callId, _, let id)): return "sdk accept \(callId) \(id)"
        case .sdk(.reject(let callId, let then)): return "sdk reject \(callId)" + (then.map { " then \($0)" } ?? "")
        case .sdk(.hangup(let callId, let then)): return "sdk hangup \(callId)" + (then.map { " then \($0)" } ?? "")
        case .sdk(.place(let uuid, let id)): return "sdk place \(name(uuid)) \(id)"
        case .startRefused(let uuid): return "start refused \(name(uuid))"
        }
    }

    static func describe(_ action: SystemCallAction) -> String {
        switch action {
        case .start(let uuid, let handle, let video): "start \(name(uuid)) \(handle) \(video ? "video" : "audio")"
        case .answer(let uuid): "answer \(name(uuid))"
        case .end(let uuid): "end \(name(uuid))"
        case .setMuted(let uuid, let muted): "setMuted \(name(uuid)) \(muted ? "on" : "off")"
        case .setHeld(let uuid, _): "setHeld \(name(uuid))"
        }
    }
}
