import Foundation

// WebRTC negotiation relayed by the server between the members of a call, and the ICE servers
// (STUN, TURN with time-limited credentials) clients use. The server never reads an SDP: it checks
// who may send to whom, and sizes.

/// What a media signal carries.
public enum MediaSignalKind: String, Codable, Sendable, CaseIterable {
    /// An SDP offer (`sdp` set).
    case offer
    /// An SDP answer (`sdp` set).
    case answer
    /// A trickled ICE candidate (`candidate` set; an empty candidate string ends the candidates).
    case candidate
    /// Asks the receiver to restart ICE: it sends a new offer with fresh ICE credentials.
    case restart
}

/// An ICE candidate as WebRTC's `RTCIceCandidateInit`.
public struct IceCandidate: Codable, Equatable, Hashable, Sendable {
    /// The `candidate:` line; empty for the end of candidates.
    public var candidate: String
    public var sdpMid: String?
    public var sdpMLineIndex: Int?
    public var usernameFragment: String?

    public init(candidate: String, sdpMid: String? = nil, sdpMLineIndex: Int? = nil, usernameFragment: String? = nil) {
        self.candidate = candidate
        self.sdpMid = sdpMid
        self.sdpMLineIndex = sdpMLineIndex
        self.usernameFragment = usernameFragment
    }
}

/// Limits on relayed media signals.
public enum MediaLimits {
    /// Largest SDP, in UTF-8 bytes (a browser's audio-and-video offer is 5–10 KB).
    public static let maxSDPBytes = 32 * 1024
    /// Largest candidate line, in UTF-8 bytes.
    public static let maxCandidateBytes = 1024
    /// Longest `sdpMid` or `usernameFragment`.
    public static let maxFieldLength = 256
}

/// Sends an offer, answer, candidate or restart request to one other member of a call. Both must
/// be in the call (`accept`), and the sender on the device that is in it; the server relays it to
/// the peer's device in the call as a `mediaSignal` event.
public struct SendMediaSignalRequest: SignalingRequest {
    public typealias Response = Empty
    public static let type = RequestType.sendMediaSignal

    public var callId: CallID
    /// The member it is for.
    public var to: UserID
    public var kind: MediaSignalKind
    public var sdp: String?
    public var candidate: IceCandidate?

    public init(callId: CallID, to: UserID, kind: MediaSignalKind, sdp: String? = nil, candidate: IceCandidate? = nil) {
        self.callId = callId
        self.to = to
        self.kind = kind
        self.sdp = sdp
        self.candidate = candidate
    }

    /// What the signal carries, in UTF-8 bytes: its `sdp`, or its candidate's line, `sdpMid` and
    /// `usernameFragment`. The server's relay budget per member counts these.
    public var payloadBytes: Int {
        (sdp?.utf8.count ?? 0) + (candidate?.candidate.utf8.count ?? 0) + (candidate?.sdpMid?.utf8.count ?? 0)
            + (candidate?.usernameFragment?.utf8.count ?? 0)
    }

    /// The problem with this signal's content, if any (the server checks it; clients may too).
    public func validationError() -> SwitchboardError? {
        switch kind {
        case .offer, .answer:
            guard let sdp, candidate == nil else {
                return SwitchboardError(.invalidParams, "\(kind.rawValue) carries sdp only")
            }
            if sdp.utf8.count > MediaLimits.maxSDPBytes {
                return SwitchboardError(.mediaPayloadTooLarge, "sdp is over \(MediaLimits.maxSDPBytes) bytes")
            }
        case .candidate:
            guard let candidate, sdp == nil else {
                return SwitchboardError(.invalidParams, "candidate carries candidate only")
            }
            if candidate.candidate.utf8.count > MediaLimits.maxCandidateBytes {
                return SwitchboardError(
                    .mediaPayloadTooLarge, "candidate is over \(MediaLimits.maxCandidateBytes) bytes")
            }
            if (candidate.sdpMid?.utf8.count ?? 0) > MediaLimits.maxFieldLength
                || (candidate.usernameFragment?.utf8.count ?? 0) > MediaLimits.maxFieldLength
            {
                return SwitchboardError(.mediaPayloadTooLarge, "sdpMid or usernameFragment too long")
            }
            if let index = candidate.sdpMLineIndex, !(0...1023).contains(index) {
                return SwitchboardError(.invalidParams, "sdpMLineIndex out of range")
            }
        case .restart:
            guard sdp == nil, candidate == nil else {
                return SwitchboardError(.invalidParams, "restart carries nothing")
            }
        }
        return nil
    }
}

/// A media signal from another member of a call.
public struct MediaSignalEvent: Codable, Equatable, Sendable {
    public var callId: CallID
    public var from: UserID
    public var kind: MediaSignalKind
    public var sdp: String?
    public var candidate: IceCandidate?

    public init(callId: CallID, from: UserID, kind: MediaSignalKind, sdp: String? = nil, candidate: IceCandidate? = nil) {
        self.callId = callId
        self.from = from
        self.kind = kind
        self.sdp = sdp
        self.candidate = candidate
    }
}

/// One entry of WebRTC's `iceServers`.
public struct IceServer: Codable, Equatable, Sendable {
    /// `stun:host:port`, `turn:host:port?transport=udp`, `turns:…`.
    public var urls: [String]
    public var username: String?
    public var credential: String?

    public init(urls: [String], username: String? = nil, credential: String? = nil) {
        self.urls = urls
        self.username = username
        self.credential = credential
    }
}

/// The ICE servers this user may use now. TURN entries carry credentials valid until `expiresAt`
/// (coturn's shared-secret scheme); ask again before then.
public struct IceServersRequest: SignalingRequest {
    public typealias Response = IceServersResponse
    public static let type = RequestType.iceServers

    public init() {}
}

public struct IceServersResponse: Codable, Equatable, Sendable {
    /// Empty when the server has no STUN or TURN configured (host candidates only).
    public var iceServers: [IceServer]
    /// When the TURN credentials expire, Unix ms; nil without TURN.
    public var expiresAt: Int64?

    public init(iceServers: [IceServer], expiresAt: Int64?) {
        self.iceServers = iceServers
        self.expiresAt = expiresAt
    }
}

extension RequestType {
    public static let sendMediaSignal = RequestType(rawValue: "call.media")
    public static let iceServers = RequestType(rawValue: "media.iceServers")
}
