import SwitchboardProtocol

/// A user of one app. UserIDs are unique within an app only.
public struct UserKey: Hashable, Sendable, CustomStringConvertible {
    public let app: SdkAppID
    public let user: UserID

    public init(app: SdkAppID, user: UserID) {
        self.app = app
        self.user = user
    }

    public var description: String { "\(app)/\(user)" }
}

/// Settings that differ per app.
public struct AppSettings: Equatable, Sendable {
    public var busyPolicy: BusyPolicy
    /// Largest call, the caller included.
    public var maxParticipants: Int
    /// How a blocked caller sees the user who blocked them.
    public var blockedCallerSees: BlockedCallerSees

    public init(
        busyPolicy: BusyPolicy = .reject, maxParticipants: Int = CallLimits.defaultMaxParticipants,
        blockedCallerSees: BlockedCallerSees = .reject
    ) {
        self.busyPolicy = busyPolicy
        self.maxParticipants = maxParticipants
        self.blockedCallerSees = blockedCallerSees
    }
}

/// Who a server event goes to.
enum Recipient: Hashable, Sendable {
    /// Every connected device of the user.
    case user(UserKey)
    /// One device.
    case device(UserKey, DeviceID)
    /// Every connected device of the user but one.
    case userExcept(UserKey, DeviceID)
}

/// A timer the state machine asks for; it comes back as ``CallEvent/timerFired(_:)``.
enum TimerKey: Hashable, Sendable {
    /// An invitee's ring timeout.
    case ring(CallID, UserID)
    /// How long a member's dropped device may take to come back.
    case reconnectGrace(CallID, UserID)
    /// How long the peer has to answer a media-type change.
    case mediaChange(CallID, TransactionID)
}

/// A record to store for `owner`; the store assigns its `syncTime`.
struct RecordDraft: Equatable, Sendable {
    var owner: UserKey
    var record: CallRecord
}

/// A VoIP push to all of a user's devices that registered a token.
struct PushMessage: Equatable, Sendable {
    var user: UserKey
    var push: VoIPPush
    /// When APNs may give up delivering it (Unix ms): for an invitation, the end of the ringing.
    var expiration: Int64
    /// Not to the token of this device (the one that answered or rejected).
    var exceptDevice: DeviceID?
}

/// The answer to the request that caused an event.
enum CallReply: Equatable, Sendable {
    case started(StartCallResponse)
    case invited(InviteToCallResponse)
    case call(CallInfo)
    case mediaChange(TransactionID)
    case ok
    case failure(SwitchboardError)
}

/// What the state machine asks its owner to do, in order.
enum CallAction: Equatable, Sendable {
    case reply(CallReply)
    case send(ServerEvent, to: Recipient)
    case setTimer(TimerKey, at: Int64)
    case cancelTimer(TimerKey)
    /// The call ended: store its records (none for an ephemeral call) and drop it from the journal in
    /// one transaction, then send each owner a `callRecord` event.
    case writeRecords(CallID, [RecordDraft])
    /// Send a VoIP push (never waited for).
    case push(PushMessage)
}

/// A member's request about one call, from one device.
struct CallCommand: Equatable, Sendable {
    var user: UserKey
    var device: DeviceID
    var callId: CallID
}

/// Everything needed to place a call; IDs and reachability are gathered by the engine so that
/// the state machine stays pure.
struct StartCallCommand: Equatable, Sendable {
    var caller: UserKey
    var device: DeviceID
    var callId: CallID
    /// Used when the request names no roomId.
    var generatedRoomId: RoomID
    var request: StartCallRequest
    var settings: AppSettings
    /// Invitees that have at least one connected device.
    var online: Set<UserID>
    /// Nicknames and avatars to show, for the caller and invitees that have them.
    var profiles: [UserID: UserProfile]
    /// Invitees who block the caller.
    var blockedBy: Set<UserID> = []
    /// Invitees without a connected device who have a push token: they ring through VoIP pushes.
    var pushable: Set<UserID> = []
}

/// Invitations into a call in progress, with what the engine gathered about the invitees.
struct InviteCommand: Equatable, Sendable {
    var command: CallCommand
    var invitees: [UserID]
    var settings: AppSettings
    /// Invitees that have at least one connected device.
    var online: Set<UserID>
    var profiles: [UserID: UserProfile]
    /// Invitees who block the inviter.
    var blockedBy: Set<UserID> = []
    /// Invitees without a connected device who have a push token.
    var pushable: Set<UserID> = []
}

/// A user joining a group call by themselves.
struct JoinCommand: Equatable, Sendable {
    var command: CallCommand
    /// Whether the user is in the call's chat group (looked up by the engine).
    var isChatGroupMember: Bool
    var settings: AppSettings
    var profile: UserProfile?
}

/// One status report of a member's media.
struct StatusReport: Equatable, Sendable {
    var packetLoss: Double
    var rtt: Int
    var bitrate: Int
    var audioLevel: Int
}

/// The inputs of the call state machine.
enum CallEvent: Equatable, Sendable {
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
    /// A device logged out: its calls are left.
    case logout(UserKey, DeviceID)
    /// The server is stopping: every call ends with `endByServer`.
    case shutdown
}
