#if GStreamer
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol

/// What a ``PeerConnection`` is for: which way its local tracks go, and whose each track it
/// receives is. The one thing that differs between a mesh connection and the two connections
/// with the SFU; the rest of the machinery (senders, receiving chains, negotiation, statistics)
/// is the same.
enum ConnectionRole: Sendable {
    /// A mesh connection to one member: sends the local tracks and receives that member's.
    case peer(UserID)
    /// The SFU's publish connection: every local track `sendonly`; nothing arrives on it.
    case sfuPublish
    /// The SFU's subscribe connection: sends nothing; each section carries the track of the
    /// member the table names for its `a=mid`.
    case sfuSubscribe(SFUTrackTable)

    /// Whose track arrives on `mid`, and which one; `detected` is what the connection itself
    /// made of it (audio or video from the transceiver, a screen from the peer's stream ids).
    /// nil: nobody's (a section the SFU did not name): it is received and dropped.
    func name(mid: String?, detected: TrackKind) -> (owner: UserID, kind: TrackKind)? {
        switch self {
        case .peer(let peer):
            return (peer, detected)
        case .sfuPublish:
            return nil
        case .sfuSubscribe(let table):
            guard let mid, let track = table.track(mid: mid) else { return nil }
            let kind: TrackKind =
                switch track.source {
                case .microphone: .audio
                case .camera: .video
                case .screen: .screen
                }
            // The transceiver knows audio from video for sure; a table that says otherwise is wrong.
            guard kind.isVideo == detected.isVideo else { return nil }
            return (track.userId, kind)
        }
    }

    /// The member this connection's sent tracks reach (nil: the SFU, not a member).
    var sendsTo: UserID? {
        if case .peer(let peer) = self { peer } else { nil }
    }

    /// Local tracks go out only: the SFU sends nothing back on the publish connection.
    var sendsOnly: Bool {
        if case .sfuPublish = self { true } else { false }
    }

    /// No local track goes out: the subscribe connection only receives.
    var receivesOnly: Bool {
        if case .sfuSubscribe = self { true } else { false }
    }
}

/// What each section of the subscribe connection carries (``SFUMediaEngine/setSFUTracks(_:)``),
/// read from GStreamer's threads when a track arrives.
///
/// Bound: each list replaces the one before (the server sends the whole list with every offer),
/// and at most ``limit`` entries are kept; sections past them are received and dropped.
final class SFUTrackTable: Sendable {
    /// A call has at most 16 members with 3 tracks each (docs/PROTOCOL.md), so 64 is never reached
    /// by a server that follows the protocol.
    static let limit = 64

    private let tracks = NIOLockedValueBox<[String: SFUTrack]>([:])

    func set(_ list: [SFUTrack]) {
        let table = Dictionary(list.prefix(Self.limit).map { ($0.mid, $0) }, uniquingKeysWith: { _, last in last })
        tracks.withLockedValue { $0 = table }
    }

    func track(mid: String) -> SFUTrack? {
        tracks.withLockedValue { $0[mid] }
    }
}
#endif
