import Foundation

/// Audio-only or audio and video.
public enum CallMediaType: String, Codable, Sendable, CaseIterable {
    case audio
    case video
}

/// One-to-one (one invitee) or group (several invitees, or a chat group).
public enum CallType: String, Codable, Sendable, CaseIterable {
    case oneToOne
    case group
}

/// A member's status in a call, as the reference SDKs define it.
public enum CallParticipantStatus: String, Codable, Sendable, CaseIterable {
    /// Not in the call (never was, or has left).
    case none
    /// Being called (callee ringing) or calling (caller before anyone answered).
    case waiting
    /// In the connected call.
    case accept
}

/// Why a call ended for the device that receives the event (SPEC §3).
public enum CallEndReason: String, Codable, Sendable, CaseIterable {
    case unknown
    case hangup
    case reject
    case noResponse
    case offline
    case lineBusy
    case canceled
    case otherDeviceAccepted
    case otherDeviceReject
    case endByServer

    /// Decodes unknown future reasons as ``unknown`` so old clients keep working.
    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        self = CallEndReason(rawValue: raw) ?? .unknown
    }
}

/// What a call was for one user, kept in their call record.
///
/// For the caller: `answered`, `canceled` (hung up before an answer), `rejected` (the callee
/// rejected), `noAnswer` (nobody answered in time), `busy`, `offline`.
/// For a callee: `answered` (on any of their devices), `rejected`, `missed` (timed out, or the
/// caller canceled before an answer), `busy` (auto-rejected because they were in another call).
public enum CallRecordResult: String, Codable, Sendable, CaseIterable {
    case answered
    case missed
    /// The caller's side of a call nobody answered in time: a phone shows it as "no answer",
    /// not as a missed call. (Before it existed the caller's record said `missed`; older clients
    /// decode it as `unknown`.)
    case noAnswer
    case rejected
    case canceled
    case busy
    case offline
    case unknown

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        self = CallRecordResult(rawValue: raw) ?? .unknown
    }
}

/// Whether the record's owner placed the call or received it.
public enum CallDirection: String, Codable, Sendable, CaseIterable {
    case outgoing
    case incoming
}

/// The order of a records query.
public enum RecordOrder: String, Codable, Sendable, CaseIterable {
    /// Newest first (syncTime -1 starts at the newest record).
    case descending
    /// Oldest first (syncTime -1 starts at the oldest record).
    case ascending
}

/// What happens when a callee is already in a call (per app).
public enum BusyPolicy: String, Codable, Sendable, CaseIterable {
    /// The caller gets `lineBusy` for that callee.
    case reject
    /// The new call rings; accepting it hangs up the current one.
    case callWaiting
}

/// How a blocked caller sees the user who blocked them (per app).
public enum BlockedCallerSees: String, Codable, Sendable, CaseIterable {
    /// As if the callee rejected the call (`reject`).
    case reject
    /// As if the callee had no device online (`offline`).
    case offline
}

/// On or off, for a microphone or a camera.
public enum DeviceSwitch: String, Codable, Sendable, CaseIterable {
    case on
    case off
}

/// How well a member's media gets through, from their status reports (SPEC §3).
///
/// From packet loss `L` (%) and round-trip time `R` (ms), the worse of the two decides:
/// excellent `L < 1`, `R < 100`; good `L < 3`, `R < 200`; poor `L < 8`, `R < 400`;
/// bad `L < 15`, `R < 800`; veryBad above. `unknown` before the first report, `down` while the
/// member's connection is dropped.
public enum NetworkQuality: String, Codable, Sendable, CaseIterable, Comparable {
    case unknown
    case excellent
    case good
    case poor
    case bad
    case veryBad
    case down

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        self = NetworkQuality(rawValue: raw) ?? .unknown
    }

    /// The quality for a report's packet loss (%) and round-trip time (ms).
    public static func from(packetLoss: Double, rtt: Int) -> NetworkQuality {
        func lossLevel() -> NetworkQuality {
            switch packetLoss {
            case ..<1: .excellent
            case ..<3: .good
            case ..<8: .poor
            case ..<15: .bad
            default: .veryBad
            }
        }
        func rttLevel() -> NetworkQuality {
            switch rtt {
            case ..<100: .excellent
            case ..<200: .good
            case ..<400: .poor
            case ..<800: .bad
            default: .veryBad
            }
        }
        return max(lossLevel(), rttLevel())
    }

    private var rank: Int { Self.allCases.firstIndex(of: self)! }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }
}

/// How loud a member is (SPEC §3): `mute` when the microphone is off or silent, then by audio
/// level 0–100: low (0, 25], medium (25, 50], high (50, 75], peak (75, 100].
public enum VolumeLevel: String, Codable, Sendable, CaseIterable, Comparable {
    case mute
    case low
    case medium
    case high
    case peak

    public init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(String.self)
        self = VolumeLevel(rawValue: raw) ?? .mute
    }

    /// The level for an audio level of 0–100 (clamped) with the microphone on or off.
    public static func from(audioLevel: Int, microphoneOn: Bool) -> VolumeLevel {
        guard microphoneOn else { return .mute }
        switch min(100, audioLevel) {
        case ...0: return .mute
        case ...25: return .low
        case ...50: return .medium
        case ...75: return .high
        default: return .peak
        }
    }

    private var rank: Int { Self.allCases.firstIndex(of: self)! }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }
}

/// How a media-type change ended.
public enum MediaTypeChangeResult: String, Codable, Sendable, CaseIterable {
    /// The peer agreed: the call's media type changed for both.
    case agreed
    /// The peer declined.
    case declined
    /// The requester canceled before the peer answered.
    case canceled
    /// The peer did not answer in time (a decline).
    case timedOut
}
