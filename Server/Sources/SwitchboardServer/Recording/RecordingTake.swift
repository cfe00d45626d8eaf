import SwitchboardProtocol

/// One recording of a call (a "take": from a start to a stop, or to the call's end), as the call
/// state machine hands it over when it ends, to be stored and converted (``RecordingWorker``).
struct RecordingTake: Equatable, Sendable, Codable {
    /// `<callId>-<take>`: unique, and the same however often the take is stored.
    var id: String
    var app: SdkAppID
    var callId: CallID
    /// The take's number in its call, from 1: the SFU's files of the take carry it.
    var take: Int
    var startedBy: UserID?
    /// When media could first be recorded: the later of the start and the call's connection.
    var startedAt: Int64
    var stoppedAt: Int64
    /// The members who were in the call while it was recorded.
    var members: [UserID]
    var mediaType: CallMediaType

    static func id(callId: CallID, take: Int) -> String { "\(callId.rawValue)-\(take)" }
}
