import SwitchboardProtocol

/// A member's session with the SFU, as the call state machine starts it.
struct SFUMemberSession: Equatable, Sendable {
    var callId: CallID
    var member: UserKey
    /// The device in the call: the SFU's answers and offers go there.
    var device: DeviceID
    var session: Int
    /// The layers the member asked for, by the member whose camera it is (small when absent).
    var layers: [UserID: VideoLayer]
    /// The call's recording take while it is recorded: the member's tracks are recorded into its files.
    var recordingTake: Int? = nil
}

/// What the call state machine asks of the SFU's rooms (``SFURooms``). The machine decides who
/// is in a room, with which session and which layers; the rooms carry it out against the SFU and
/// never decide who may do what.
enum SFUAction: Equatable, Sendable {
    /// The member's new session in the call's room (the room is made when missing): whatever the
    /// member had there from an earlier session is dropped.
    case join(SFUMemberSession)
    /// The member left the call: their part of the room goes.
    case leave(CallID, UserID)
    /// The call ended: its room goes.
    case end(CallID)
    /// A step of the member's negotiation, for their current session.
    case signal(CallID, UserID, session: Int, SendSFUSignalRequest)
    /// The member (viewer) wants `layer` of `target`'s camera.
    case layer(CallID, viewer: UserID, target: UserID, VideoLayer)
    /// Record every member's tracks into the files of this take from now on (nil: stop recording).
    case record(CallID, take: Int?)
}
