import Foundation

// Group calls through the server's selective forwarding unit (SFU): each member publishes its
// tracks once, on a connection of its own, and receives the other members' tracks on a second
// one. The server stands between the members and the SFU: it relays the negotiation of both
// connections and says which remote track belongs to whom. Clients never talk to the SFU's API;
// they reach it only for media (UDP, or through TURN).

/// How a call's media flows: absent from a snapshot, peer to peer (one connection per pair of
/// members); `sfu`, through the server's SFU.
public enum CallMediaRoute: String, Codable, Sendable, CaseIterable {
    case sfu
}

/// One of a member's two connections with the SFU.
public enum SFUConnection: String, Codable, Sendable, CaseIterable {
    /// The member sends its microphone, camera and screen (each once, whatever the number of
    /// members); the member offers, the SFU answers.
    case publish
    /// The member receives the other members' tracks; the SFU offers, the member answers.
    case subscribe
}

/// Which version of another member's camera to receive (CallPlus's `isTiny`, TRTC's small and big
/// streams): the small layer for a thumbnail, the big one for an enlarged tile.
public enum VideoLayer: String, Codable, Sendable, CaseIterable {
    case small
    case big
}

/// What a received track shows or plays.
public enum TrackSource: String, Codable, Sendable, CaseIterable {
    case microphone
    case camera
    case screen
}

/// One section of the subscribe connection: whose track it carries, and which one.
public struct SFUTrack: Codable, Equatable, Hashable, Sendable {
    /// The section's `a=mid` in the SFU's offer.
    public var mid: String
    public var userId: UserID
    public var source: TrackSource

    public init(mid: String, userId: UserID, source: TrackSource) {
        self.mid = mid
        self.userId = userId
        self.source = source
    }
}

/// Limits on SFU signals.
public enum SFULimits {
    /// Longest `mid` the server accepts or sends.
    public static let maxMidLength = 32
    /// Most media sections in a publish offer: microphone, camera, screen and the screen's sound.
    public static let maxPublishedSections = 4

    /// The problem with an SDP the member sends the SFU, if any: it must start with `v=0`, have a
    /// media section, and every media section an `a=mid` of at most ``maxMidLength`` bytes; a
    /// publish offer at most ``maxPublishedSections`` of them.
    public static func descriptionError(_ sdp: String, connection: SFUConnection) -> SwitchboardError? {
        let lines = sdp.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline)
        guard lines.first == "v=0" else {
            return SwitchboardError(.invalidSessionDescription, "sdp must start with v=0")
        }
        var sections = 0
        var midInSection = true
        for line in lines {
            if line.hasPrefix("m=") {
                guard midInSection else {
                    return SwitchboardError(.invalidSessionDescription, "media section \(sections) has no a=mid")
                }
                sections += 1
                midInSection = false
            } else if line.hasPrefix("a=mid:"), sections > 0 {
                let mid = line.dropFirst(6)
                guard !mid.isEmpty, mid.utf8.count <= maxMidLength else {
                    return SwitchboardError(.invalidSessionDescription, "a=mid must be 1-\(maxMidLength) bytes")
                }
                midInSection = true
            }
        }
        guard sections > 0 else { return SwitchboardError(.invalidSessionDescription, "sdp has no media section") }
        guard midInSection else {
            return SwitchboardError(.invalidSessionDescription, "media section \(sections) has no a=mid")
        }
        if connection == .publish, sections > maxPublishedSections {
            return SwitchboardError(
                .tooManyPublishedTracks, "a publish offer has at most \(maxPublishedSections) media sections, not \(sections)")
        }
        return nil
    }
}

/// A step of the negotiation of one of the member's connections with the SFU: the publish offer,
/// the answer to a subscribe offer, a trickled candidate, or (subscribe) a request for a new
/// session when ICE failed. `session` is the one the last `sfuSession` event gave this member.
public struct SendSFUSignalRequest: SignalingRequest {
    public typealias Response = Empty
    public static let type = RequestType.sendSFUSignal

    public var callId: CallID
    public var session: Int
    public var connection: SFUConnection
    public var kind: MediaSignalKind
    public var sdp: String?
    public var candidate: IceCandidate?

    public init(
        callId: CallID, session: Int, connection: SFUConnection, kind: MediaSignalKind, sdp: String? = nil,
        candidate: IceCandidate? = nil
    ) {
        self.callId = callId
        self.session = session
        self.connection = connection
        self.kind = kind
        self.sdp = sdp
        self.candidate = candidate
    }

    /// What the signal carries, in UTF-8 bytes (counted against the member's relay budget, as
    /// `call.media` signals are).
    public var payloadBytes: Int {
        asMediaSignal.payloadBytes
    }

    private var asMediaSignal: SendMediaSignalRequest {
        SendMediaSignalRequest(callId: callId, to: "sfu", kind: kind, sdp: sdp, candidate: candidate)
    }

    /// The problem with this signal's content, if any: its fields and sizes as for `call.media`,
    /// and a kind its connection takes (publish: `offer`, `candidate`, `restart`; subscribe:
    /// `answer`, `candidate`, `restart`).
    public func validationError() -> SwitchboardError? {
        guard session >= 1 else { return SwitchboardError(.invalidParams, "session must be 1 or more") }
        switch (connection, kind) {
        case (.publish, .answer):
            return SwitchboardError(.invalidParams, "the publish connection's answers come from the SFU")
        case (.subscribe, .offer):
            return SwitchboardError(.invalidParams, "the subscribe connection's offers come from the SFU")
        default:
            if let error = asMediaSignal.validationError() { return error }
            if let sdp, kind == .offer || kind == .answer {
                return SFULimits.descriptionError(sdp, connection: connection)
            }
            return nil
        }
    }
}

/// Asks for the small or the big layer of another member's camera. The choice holds for the rest
/// of the call (new sessions included) until changed; until then a member gets the small layer.
public struct SetVideoLayerRequest: SignalingRequest {
    public typealias Response = Empty
    public static let type = RequestType.setVideoLayer

    public var callId: CallID
    /// The member whose camera it is.
    public var userId: UserID
    public var layer: VideoLayer

    public init(callId: CallID, userId: UserID, layer: VideoLayer) {
        self.callId = callId
        self.userId = userId
        self.layer = layer
    }
}

/// The member's media with the SFU (re)starts: close the connections of older sessions (and any
/// peer connections of the call), open the publish connection and send its offer; the subscribe
/// connection's offer comes from the server.
public struct SFUSessionEvent: Codable, Equatable, Sendable {
    public var callId: CallID
    /// Numbers this member's sessions in the call, increasing; signals carry it.
    public var session: Int

    public init(callId: CallID, session: Int) {
        self.callId = callId
        self.session = session
    }
}

/// A step of the negotiation from the SFU: the answer to the publish offer, an offer for the
/// subscribe connection (with `tracks`: what each of its sections carries), or a candidate.
public struct SFUSignalEvent: Codable, Equatable, Sendable {
    public var callId: CallID
    public var session: Int
    public var connection: SFUConnection
    public var kind: MediaSignalKind
    public var sdp: String?
    public var candidate: IceCandidate?
    /// With a subscribe offer: every section of the connection that carries a track, by mid.
    public var tracks: [SFUTrack]?

    public init(
        callId: CallID, session: Int, connection: SFUConnection, kind: MediaSignalKind, sdp: String? = nil,
        candidate: IceCandidate? = nil, tracks: [SFUTrack]? = nil
    ) {
        self.callId = callId
        self.session = session
        self.connection = connection
        self.kind = kind
        self.sdp = sdp
        self.candidate = candidate
        self.tracks = tracks
    }
}

extension RequestType {
    public static let sendSFUSignal = RequestType(rawValue: "call.sfu")
    public static let setVideoLayer = RequestType(rawValue: "call.videoLayer")
}
