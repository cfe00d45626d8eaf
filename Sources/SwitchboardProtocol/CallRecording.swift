import Foundation

// Server-side recording of a call (docs/PROTOCOL.md, "Recording"): the app's policy says whether
// calls may be recorded; a recorded call's media goes through the SFU, which records each member's
// tracks; every member is told when recording starts and stops; after the call the server makes
// one audio file per member and a mixed file, and hands them to the app's backend.

extension RequestType {
    public static let startRecording = RequestType(rawValue: "call.startRecording")
    public static let stopRecording = RequestType(rawValue: "call.stopRecording")
}

/// Whether an app's calls are recorded (an app setting).
public enum RecordingPolicy: String, Codable, Sendable, CaseIterable {
    /// Never: `record` and `call.startRecording` are refused.
    case off
    /// When a call asks for it (`record` in `call.start`, or `call.startRecording` later).
    case onRequest
    /// Every call, from its start to its end; nobody can stop it.
    case always
}

/// Which members may start and stop a recording under ``RecordingPolicy/onRequest`` (an app setting).
public enum RecordingControl: String, Codable, Sendable, CaseIterable {
    /// The member who placed the call.
    case caller
    /// Any member in the call.
    case members
}

/// A call's recording while it runs (in ``CallInfo/recording``).
public struct CallRecordingState: Codable, Equatable, Sendable {
    /// Who started it; absent when the app's policy records every call.
    public var startedBy: UserID?
    /// When it started, Unix ms, server clock.
    public var startedAt: Int64

    public init(startedBy: UserID?, startedAt: Int64) {
        self.startedBy = startedBy
        self.startedAt = startedAt
    }
}

/// Start recording the call (a member in it, when the app's policy and control allow).
public struct StartRecordingRequest: SignalingRequest {
    public typealias Response = CallSnapshotResponse
    public static let type = RequestType.startRecording

    public var callId: CallID
    public init(callId: CallID) { self.callId = callId }
}

/// Stop recording the call; what was recorded so far is kept and delivered.
public struct StopRecordingRequest: SignalingRequest {
    public typealias Response = CallSnapshotResponse
    public static let type = RequestType.stopRecording

    public var callId: CallID
    public init(callId: CallID) { self.callId = callId }
}

/// To every member (in the call or ringing): the call is being recorded from now on.
public struct RecordingStartedEvent: Codable, Equatable, Sendable {
    public var callId: CallID
    public var recording: CallRecordingState

    public init(callId: CallID, recording: CallRecordingState) {
        self.callId = callId
        self.recording = recording
    }
}

/// To every member (in the call or ringing): the call is no longer recorded. (A call that ends
/// while recorded gets no stop: its end stops the recording.)
public struct RecordingStoppedEvent: Codable, Equatable, Sendable {
    public var callId: CallID
    /// Who stopped it.
    public var stoppedBy: UserID
    public var stoppedAt: Int64

    public init(callId: CallID, stoppedBy: UserID, stoppedAt: Int64) {
        self.callId = callId
        self.stoppedBy = stoppedBy
        self.stoppedAt = stoppedAt
    }
}

/// A file a recording's conversion made.
public struct RecordedFile: Codable, Equatable, Sendable {
    public enum Kind: String, Codable, Sendable {
        /// One member's audio over the whole recording (silence where the member sent none).
        case member
        /// Every member's audio mixed, with a video grid where members sent video.
        case mixed
    }

    /// The file's name, as the download URL names it.
    public var name: String
    public var kind: Kind
    /// The member, for a member's file.
    public var userId: UserID?
    public var contentType: String
    /// Bytes.
    public var size: Int64
    /// Milliseconds.
    public var duration: Int64
    /// Whether it has a video track.
    public var video: Bool

    public init(
        name: String, kind: Kind, userId: UserID?, contentType: String, size: Int64, duration: Int64, video: Bool
    ) {
        self.name = name
        self.kind = kind
        self.userId = userId
        self.contentType = contentType
        self.size = size
        self.duration = duration
        self.video = video
    }
}

/// `recording.ready`, `recording.failed` and `recording.deleted`: a recording of a call (one
/// take: from a start to a stop or the call's end). Ready: with its files; failed: with the
/// reason, after the server's attempts; deleted: its files are gone (the app's retention, or the
/// admin API).
public struct WebhookRecording: Codable, Equatable, Sendable {
    public var recordingId: String
    public var callId: CallID
    /// The recording's number in its call, from 1.
    public var take: Int
    public var startedBy: UserID?
    public var startedAt: Int64
    public var stoppedAt: Int64
    /// Milliseconds.
    public var duration: Int64
    /// The members who were in the call while it was recorded.
    public var members: [UserID]
    /// `recording.ready`: the files.
    public var files: [RecordedFile]?
    /// `recording.failed`: why; `recording.deleted`: `retention` or `deleted`.
    public var reason: String?
    /// `recording.failed`: how many times the conversion was tried.
    public var attempts: Int?

    public init(
        recordingId: String, callId: CallID, take: Int, startedBy: UserID?, startedAt: Int64, stoppedAt: Int64,
        members: [UserID], files: [RecordedFile]? = nil, reason: String? = nil, attempts: Int? = nil
    ) {
        self.recordingId = recordingId
        self.callId = callId
        self.take = take
        self.startedBy = startedBy
        self.startedAt = startedAt
        self.stoppedAt = stoppedAt
        self.duration = stoppedAt - startedAt
        self.members = members
        self.files = files
        self.reason = reason
        self.attempts = attempts
    }
}
