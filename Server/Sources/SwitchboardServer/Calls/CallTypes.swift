import Foundation
import SwitchboardProtocol

/// A user of one app. UserIDs are unique within an app only.
public struct UserKey: Hashable, Sendable, Codable, CustomStringConvertible {
    public let app: SdkAppID
    public let user: UserID

    public init(app: SdkAppID, user: UserID) {
        self.app = app
        self.user = user
    }

    public var description: String { "\(app)/\(user)" }
}

/// Settings that differ per app.
public struct AppSettings: Equatable, Sendable, Codable {
    public var busyPolicy: BusyPolicy
    /// Largest call, the caller included.
    public var maxParticipants: Int
    /// How a blocked caller sees the user who blocked them.
    public var blockedCallerSees: BlockedCallerSees
    /// Days call records are kept; older ones are swept (nil: kept until their owners delete them).
    public var recordRetentionDays: Int?
    /// A device of a user in a call may take the call without an offer from the device in it
    /// ("take the call here"); false: only an offered device may (`call.offerMove`).
    public var callPull: Bool
    /// Whether and how the app's calls are recorded on the server.
    public var recording: RecordingSettings

    public init(
        busyPolicy: BusyPolicy = .reject, maxParticipants: Int = CallLimits.defaultMaxParticipants,
        blockedCallerSees: BlockedCallerSees = .reject, recordRetentionDays: Int? = nil, callPull: Bool = false,
        recording: RecordingSettings = RecordingSettings()
    ) {
        self.busyPolicy = busyPolicy
        self.maxParticipants = maxParticipants
        self.blockedCallerSees = blockedCallerSees
        self.recordRetentionDays = recordRetentionDays
        self.callPull = callPull
        self.recording = recording
    }

    private enum CodingKeys: String, CodingKey {
        case busyPolicy, maxParticipants, blockedCallerSees, recordRetentionDays, callPull, recording
    }

    /// Settings written by a node of before `callPull` (a rolling deploy) lack it: false; those of
    /// before recording lack `recording`: off.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        busyPolicy = try container.decode(BusyPolicy.self, forKey: .busyPolicy)
        maxParticipants = try container.decode(Int.self, forKey: .maxParticipants)
        blockedCallerSees = try container.decode(BlockedCallerSees.self, forKey: .blockedCallerSees)
        recordRetentionDays = try container.decodeIfPresent(Int.self, forKey: .recordRetentionDays)
        callPull = try container.decodeIfPresent(Bool.self, forKey: .callPull) ?? false
        recording = try container.decodeIfPresent(RecordingSettings.self, forKey: .recording) ?? RecordingSettings()
    }
}

/// An app's recording settings (docs/PROTOCOL.md, "Recording").
public struct RecordingSettings: Equatable, Sendable, Codable {
    public var policy: RecordingPolicy
    /// Who may start and stop a recording when the policy is ``RecordingPolicy/onRequest``.
    public var control: RecordingControl
    /// Days a recording's files are kept; then they are deleted (nil: until deleted by the admin API).
    public var retentionDays: Int?

    public init(policy: RecordingPolicy = .off, control: RecordingControl = .caller, retentionDays: Int? = nil) {
        self.policy = policy
        self.control = control
        self.retentionDays = retentionDays
    }

    /// As the apps table keeps it (JSON; nil for the defaults, as rows of before recording have).
    var storedText: String? {
        self == RecordingSettings() ? nil : (try? SwitchboardJSON.encode(self)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// From the apps table; a value that cannot be read is the default (off), never an error.
    static func stored(_ text: String?) -> RecordingSettings {
        guard let text, let settings = try? SwitchboardJSON.decode(RecordingSettings.self, from: Data(text.utf8)) else {
            return RecordingSettings()
        }
        return settings
    }
}

/// Who a server event goes to.
enum Recipient: Hashable, Sendable, Codable {
    /// Every connected device of the user.
    case user(UserKey)
    /// One device.
    case device(UserKey, DeviceID)
    /// Every connected device of the user but one.
    case userExcept(UserKey, DeviceID)
}

/// A timer the state machine asks for; it comes back as ``CallEvent/timerFired(_:)``.
enum TimerKey: Hashable, Sendable, Codable {
    /// An invitee's ring timeout.
    case ring(CallID, UserID)
    /// How long a member's dropped device may take to come back.
    case reconnectGrace(CallID, UserID)
    /// How long the peer has to answer a media-type change.
    case mediaChange(CallID, TransactionID)
    /// How long a member's offer to move the call to another device stands.
    case moveOffer(CallID, UserID)
}

/// A record to store for `owner`; the store assigns its `syncTime`.
struct RecordDraft: Equatable, Sendable {
    var owner: UserKey
    var record: CallRecord
}

/// A push to those of a user's devices that registered a token of a kind it goes to
/// (``CallPush/isFor(_:)``) and have no live connection when it is sent.
struct PushMessage: Equatable, Sendable {
    enum Content: Equatable, Sendable {
        /// The invitation (VoIP, Web Push and FCM tokens), while the user rings.
        case ring(IncomingCallPush)
        /// The user stopped ringing: an invitation push not delivered yet is not sent any more, and
        /// the devices that show the ringing themselves are told (ringing alert, Web Push and FCM
        /// tokens).
        case ringStopped(CallEndedPush)
        /// The user stopped ringing and missed the call: as ``ringStopped(_:)``, told as a missed
        /// call (alert, Web Push and FCM tokens).
        case missedCall(MissedCallPush)
    }

    var user: UserKey
    var content: Content
    /// When the push service may give up delivering it (Unix ms): for an invitation, the end of
    /// the ringing.
    var expiration: Int64
    /// The user's tokens when the engine already read them to decide the push (an invitation);
    /// nil: the push service reads them.
    var tokens: [PushToken]?
}

/// The answer to the request that caused an event.
enum CallReply: Equatable, Sendable, Codable {
    case started(StartCallResponse)
    case invited(InviteToCallResponse)
    case call(CallInfo)
    case mediaChange(TransactionID)
    case moveOffered(OfferCallMoveResponse)
    case ok
    case failure(SwitchboardError)
}

/// What the state machine asks its owner to do, in order, after delivering the answer.
enum CallAction: Equatable, Sendable {
    case send(ServerEvent, to: Recipient)
    case setTimer(TimerKey, at: Int64)
    case cancelTimer(TimerKey)
    /// The call ended: store its records (none for an ephemeral call) and drop it from the journal in
    /// one transaction, then send each owner a `callRecord` event.
    case writeRecords(CallID, [RecordDraft])
    /// Send a VoIP push (never waited for).
    case push(PushMessage)
    /// Work for the SFU's rooms (``SFURooms``), which reports back with ``CallEvent/sfuRestart(_:_:)``.
    case sfu(SFUAction)
    /// A recording's take ended: store it for conversion, before the change that ended it (the
    /// call's end or journal save that follows in this output), so that it is never lost.
    case saveRecording(RecordingTake)
    /// Report an event to the app's webhooks: written to the outbox in the same commit as the
    /// call's journal save or end that follows in this output (``CallEngine``).
    case notify(WebhookNotice)
    /// An invitation rang this user: it counts against the invitations they may receive
    /// (``RateLimits/invitationsPerCallee``), whose budget the engine keeps and looked at for
    /// ``CallFacts/overBudget``.
    case countInvitation(UserKey)
}

/// An event of a call for the app's webhooks, numbered by the machine as the call changes.
struct WebhookNotice: Equatable, Sendable {
    /// `evt_<callId>_<sequence>`: unique, and the same however often it is sent.
    var id: String
    var app: SdkAppID
    /// When it happened (the machine's `now`).
    var time: Int64
    var data: WebhookEventData

    var callId: CallID? { data.callId }
}

/// What one event produced: the answer to the request behind it, then the actions in order.
///
/// The answer is a value of its own, not an action among the others, so that "a client receives the
/// answer to its request before the events that request caused" is kept by the type: the owner
/// delivers `reply` before it performs any action.
struct CallOutput: Equatable, Sendable {
    /// The answer to the request that caused the event; nil for timers and the server's own events.
    private(set) var reply: CallReply?
    var actions: [CallAction] = []

    init(reply: CallReply? = nil, actions: [CallAction] = []) {
        self.reply = reply
        self.actions = actions
    }

    /// Sets the answer; a request is answered once.
    mutating func answer(_ reply: CallReply) {
        assert(self.reply == nil, "a request is answered once")
        self.reply = reply
    }

    mutating func append(_ action: CallAction) {
        actions.append(action)
    }

    mutating func append(contentsOf actions: [CallAction]) {
        self.actions.append(contentsOf: actions)
    }

    /// Sends `event` to a member where they hear about `call` (see ``CallStateMachine/Call/recipient(_:)``):
    /// nowhere for a screened member, whom the call never reaches.
    mutating func send(_ event: ServerEvent, to member: CallStateMachine.Member, of call: CallStateMachine.Call) {
        if let recipient = call.recipient(member) { actions.append(.send(event, to: recipient)) }
    }
}

/// A member's request about one call, from one device.
struct CallCommand: Equatable, Sendable, Codable {
    var user: UserKey
    var device: DeviceID
    var callId: CallID
}

/// One status report of a member's media.
struct StatusReport: Equatable, Sendable, Codable {
    var packetLoss: Double
    var rtt: Int
    var bitrate: Int
    var audioLevel: Int
}

/// The inputs of the call state machine.
enum CallEvent: Equatable, Sendable, Codable {
    case start(StartCallCommand)
    case invite(InviteCommand)
    case join(JoinCommand)
    case accept(CallCommand)
    case reject(CallCommand)
    case hangup(CallCommand)
    case updateDevice(CallCommand, microphoneOn: Bool?, cameraOn: Bool?, screenSharing: Bool? = nil)
    case changeMediaType(CallCommand, CallMediaType, TransactionID)
    case replyMediaType(CallCommand, TransactionID, agree: Bool)
    case cancelMediaType(CallCommand, TransactionID)
    case statusReport(CallCommand, StatusReport)
    /// A WebRTC offer, answer, candidate or restart request for another member (already checked
    /// for size and shape).
    case mediaSignal(CallCommand, SendMediaSignalRequest)
    case timerFired(TimerKey)
    /// The admin API (or an operator) ends a call.
    case endByServer(CallID)
    /// A device logged in: it gets pending invitations and resumes its calls.
    case deviceOnline(UserKey, DeviceID)
    /// A device's connection closed without a logout.
    case deviceOffline(UserKey, DeviceID)
    /// A device went with its node, which stopped answering: its client may not know yet (no close
    /// reached it), so its reconnect grace is `grace` ms, long enough for its heartbeat to notice.
    case deviceLost(UserKey, DeviceID, grace: Int64)
    /// A device logged out: its calls are left.
    case logout(UserKey, DeviceID)
    /// A step of a member's negotiation with the SFU (checked for size and shape).
    case sfuSignal(CallCommand, SendSFUSignalRequest)
    /// A member asks for a layer of another member's camera.
    case videoLayer(CallCommand, SetVideoLayerRequest)
    /// The SFU lost the media of the call (its server died, it hung a connection up): the member
    /// (nil: every member) starts a new session.
    case sfuRestart(CallID, UserID?)
    /// The device in the call offers it to another of the user's devices (nil: to all of them).
    case offerMove(CallCommand, to: DeviceID?)
    /// A device takes the call of its user onto itself.
    case take(TakeCommand)
    /// A member starts or stops the call's recording.
    case setRecording(RecordingCommand)
}

extension CallEvent {
    /// A client's request (or the admin API's), which gets an answer; the others (timers, devices
    /// coming and going) get none.
    var isRequest: Bool {
        switch self {
        case .timerFired, .deviceOnline, .deviceOffline, .deviceLost, .logout, .sfuRestart: false
        default: true
        }
    }
}
