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
/// rejected), `missed` (nobody answered in time), `busy`, `offline`.
/// For a callee: `answered` (on any of their devices), `rejected`, `missed` (timed out, or the
/// caller canceled before an answer), `busy` (auto-rejected because they were in another call).
public enum CallRecordResult: String, Codable, Sendable, CaseIterable {
    case answered
    case missed
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

/// On or off, for a microphone or a camera.
public enum DeviceSwitch: String, Codable, Sendable, CaseIterable {
    case on
    case off
}
