import Foundation

/// An incoming call for this user: ring.
public struct CallReceivedEvent: Codable, Equatable, Sendable {
    public var call: CallInfo
    /// Who invited this user (the caller, or a member who invited them mid-call).
    public var inviterId: UserID
    public init(call: CallInfo, inviterId: UserID) {
        self.call = call
        self.inviterId = inviterId
    }
}

/// The call connected for this device; `call.startTime` is the server's start time.
/// Sent again after a resume so the timer is corrected.
public struct CallStartedEvent: Codable, Equatable, Sendable {
    public var call: CallInfo
    public init(call: CallInfo) { self.call = call }
}

/// The call's members or media type changed; the snapshot replaces the previous one.
public struct CallUpdatedEvent: Codable, Equatable, Sendable {
    public var call: CallInfo
    public init(call: CallInfo) { self.call = call }
}

/// The call ended for this device.
public struct CallEndedEvent: Codable, Equatable, Sendable {
    public var callId: CallID
    public var mediaType: CallMediaType
    public var reason: CallEndReason
    /// The user whose action ended it (who hung up, rejected, did not answer…); nil when the
    /// server ended it.
    public var userId: UserID?

    public init(callId: CallID, mediaType: CallMediaType, reason: CallEndReason, userId: UserID?) {
        self.callId = callId
        self.mediaType = mediaType
        self.reason = reason
        self.userId = userId
    }
}

/// A record of a call this user took part in, rejected or missed; it is already stored.
public struct CallRecordEvent: Codable, Equatable, Sendable {
    public var record: CallRecord
    public init(record: CallRecord) { self.record = record }
}

/// Another member turned their microphone or camera on or off, or started or stopped sharing a screen.
public struct DeviceChangedEvent: Codable, Equatable, Sendable {
    public var callId: CallID
    public var userId: UserID
    public var microphoneOn: Bool
    public var cameraOn: Bool
    /// Whether the member shares a screen (a second video track).
    public var screenSharing: Bool

    public init(callId: CallID, userId: UserID, microphoneOn: Bool, cameraOn: Bool, screenSharing: Bool = false) {
        self.callId = callId
        self.userId = userId
        self.microphoneOn = microphoneOn
        self.cameraOn = cameraOn
        self.screenSharing = screenSharing
    }

    private enum CodingKeys: String, CodingKey {
        case callId, userId, microphoneOn, cameraOn, screenSharing
    }

    /// A server from before screen sharing leaves `screenSharing` out: nobody shares.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        callId = try container.decode(CallID.self, forKey: .callId)
        userId = try container.decode(UserID.self, forKey: .userId)
        microphoneOn = try container.decode(Bool.self, forKey: .microphoneOn)
        cameraOn = try container.decode(Bool.self, forKey: .cameraOn)
        screenSharing = try container.decodeIfPresent(Bool.self, forKey: .screenSharing) ?? false
    }
}

/// The other member of a one-to-one call asks to switch media type; answer with
/// `call.replyMediaType` within the timeout.
public struct MediaTypeChangeRequestedEvent: Codable, Equatable, Sendable {
    public var callId: CallID
    public var transactionId: TransactionID
    public var mediaType: CallMediaType
    /// Who asked.
    public var userId: UserID

    public init(callId: CallID, transactionId: TransactionID, mediaType: CallMediaType, userId: UserID) {
        self.callId = callId
        self.transactionId = transactionId
        self.mediaType = mediaType
        self.userId = userId
    }
}

/// How a media-type change ended; sent to both members.
public struct MediaTypeChangeResultEvent: Codable, Equatable, Sendable {
    public var callId: CallID
    public var transactionId: TransactionID
    /// The media type that was asked for.
    public var mediaType: CallMediaType
    /// Who asked.
    public var userId: UserID
    public var result: MediaTypeChangeResult

    public init(
        callId: CallID, transactionId: TransactionID, mediaType: CallMediaType, userId: UserID,
        result: MediaTypeChangeResult
    ) {
        self.callId = callId
        self.transactionId = transactionId
        self.mediaType = mediaType
        self.userId = userId
        self.result = result
    }
}

/// A member's network quality or volume level changed.
public struct MemberStatusEvent: Codable, Equatable, Sendable {
    public var callId: CallID
    public var userId: UserID
    public var networkQuality: NetworkQuality
    public var volumeLevel: VolumeLevel

    public init(callId: CallID, userId: UserID, networkQuality: NetworkQuality, volumeLevel: VolumeLevel) {
        self.callId = callId
        self.userId = userId
        self.networkQuality = networkQuality
        self.volumeLevel = volumeLevel
    }
}

/// Another member's raw media statistics, from their last status report (CallPlus's per-member
/// packet loss, bitrate and delay); at most about once a second per member.
public struct MemberStatsEvent: Codable, Equatable, Sendable {
    public var callId: CallID
    public var userId: UserID
    /// Packet loss, percent (0–100).
    public var packetLoss: Double
    /// Round-trip time, ms.
    public var rtt: Int
    /// Send bitrate, kbps.
    public var bitrate: Int
    /// Microphone level, 0–100.
    public var audioLevel: Int

    public init(callId: CallID, userId: UserID, packetLoss: Double, rtt: Int, bitrate: Int, audioLevel: Int) {
        self.callId = callId
        self.userId = userId
        self.packetLoss = packetLoss
        self.rtt = rtt
        self.bitrate = bitrate
        self.audioLevel = audioLevel
    }
}

/// This user is in a call on another of their devices (`active`), or no longer is.
public struct CallElsewhereEvent: Codable, Equatable, Sendable {
    public var call: CallInfo
    /// The device that has the call.
    public var deviceId: DeviceID
    public var active: Bool

    public init(call: CallInfo, deviceId: DeviceID, active: Bool) {
        self.call = call
        self.deviceId = deviceId
        self.active = active
    }
}

/// Sent to a device right after it logged in, once the server has sent it everything it missed:
/// the ends of calls that ended while it was away, pending invitations and resumed calls.
/// `callIds` are the calls the device is part of now and `elsewhereCallIds` the calls the user is in
/// on other devices; a client forgets any other call it still shows.
public struct CallsSyncedEvent: Codable, Equatable, Sendable {
    public var callIds: [CallID]
    public var elsewhereCallIds: [CallID]
    public init(callIds: [CallID], elsewhereCallIds: [CallID] = []) {
        self.callIds = callIds
        self.elsewhereCallIds = elsewhereCallIds
    }
}

/// The server is about to close this session (same device logged in elsewhere, server shutdown).
public struct SessionEndedEvent: Codable, Equatable, Sendable {
    public var error: SwitchboardError
    public init(error: SwitchboardError) { self.error = error }
}

/// Everything the server pushes without being asked.
public enum ServerEvent: Equatable, Sendable {
    case callReceived(CallReceivedEvent)
    case callStarted(CallStartedEvent)
    case callUpdated(CallUpdatedEvent)
    case callEnded(CallEndedEvent)
    case callRecord(CallRecordEvent)
    case deviceChanged(DeviceChangedEvent)
    case mediaTypeChangeRequested(MediaTypeChangeRequestedEvent)
    case mediaTypeChangeResult(MediaTypeChangeResultEvent)
    case memberStatus(MemberStatusEvent)
    case memberStats(MemberStatsEvent)
    case callElsewhere(CallElsewhereEvent)
    case callsSynced(CallsSyncedEvent)
    case sessionEnded(SessionEndedEvent)
    case mediaSignal(MediaSignalEvent)
    case sfuSession(SFUSessionEvent)
    case sfuSignal(SFUSignalEvent)
    case callMoveOffered(CallMoveOfferedEvent)
    case callMoveOfferEnded(CallMoveOfferEndedEvent)
    case callMoved(CallMovedEvent)
    case memberMoved(MemberMovedEvent)
    case recordingStarted(RecordingStartedEvent)
    case recordingStopped(RecordingStoppedEvent)

    /// The wire name in the frame's `event` field.
    public var name: String {
        switch self {
        case .callReceived: "callReceived"
        case .callStarted: "callStarted"
        case .callUpdated: "callUpdated"
        case .callEnded: "callEnded"
        case .callRecord: "callRecord"
        case .deviceChanged: "deviceChanged"
        case .mediaTypeChangeRequested: "mediaTypeChangeRequested"
        case .mediaTypeChangeResult: "mediaTypeChangeResult"
        case .memberStatus: "memberStatus"
        case .memberStats: "memberStats"
        case .callElsewhere: "callElsewhere"
        case .callsSynced: "callsSynced"
        case .sessionEnded: "sessionEnded"
        case .mediaSignal: "mediaSignal"
        case .sfuSession: "sfuSession"
        case .sfuSignal: "sfuSignal"
        case .callMoveOffered: "callMoveOffered"
        case .callMoveOfferEnded: "callMoveOfferEnded"
        case .callMoved: "callMoved"
        case .memberMoved: "memberMoved"
        case .recordingStarted: "recordingStarted"
        case .recordingStopped: "recordingStopped"
        }
    }

    /// The call the event is about, when there is one.
    public var callId: CallID? {
        switch self {
        case .callReceived(let e): e.call.callId
        case .callStarted(let e): e.call.callId
        case .callUpdated(let e): e.call.callId
        case .callEnded(let e): e.callId
        case .callRecord(let e): e.record.callId
        case .deviceChanged(let e): e.callId
        case .mediaTypeChangeRequested(let e): e.callId
        case .mediaTypeChangeResult(let e): e.callId
        case .memberStatus(let e): e.callId
        case .memberStats(let e): e.callId
        case .callElsewhere(let e): e.call.callId
        case .mediaSignal(let e): e.callId
        case .sfuSession(let e): e.callId
        case .sfuSignal(let e): e.callId
        case .callMoveOffered(let e): e.call.callId
        case .callMoveOfferEnded(let e): e.callId
        case .callMoved(let e): e.call.callId
        case .memberMoved(let e): e.callId
        case .recordingStarted(let e): e.callId
        case .recordingStopped(let e): e.callId
        case .callsSynced, .sessionEnded: nil
        }
    }
}

extension ServerEvent: Codable {
    private enum CodingKeys: String, CodingKey { case event, data }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(String.self, forKey: .event)
        switch name {
        case "callReceived": self = .callReceived(try container.decode(CallReceivedEvent.self, forKey: .data))
        case "callStarted": self = .callStarted(try container.decode(CallStartedEvent.self, forKey: .data))
        case "callUpdated": self = .callUpdated(try container.decode(CallUpdatedEvent.self, forKey: .data))
        case "callEnded": self = .callEnded(try container.decode(CallEndedEvent.self, forKey: .data))
        case "callRecord": self = .callRecord(try container.decode(CallRecordEvent.self, forKey: .data))
        case "deviceChanged": self = .deviceChanged(try container.decode(DeviceChangedEvent.self, forKey: .data))
        case "mediaTypeChangeRequested":
            self = .mediaTypeChangeRequested(try container.decode(MediaTypeChangeRequestedEvent.self, forKey: .data))
        case "mediaTypeChangeResult":
            self = .mediaTypeChangeResult(try container.decode(MediaTypeChangeResultEvent.self, forKey: .data))
        case "memberStatus": self = .memberStatus(try container.decode(MemberStatusEvent.self, forKey: .data))
        case "memberStats": self = .memberStats(try container.decode(MemberStatsEvent.self, forKey: .data))
        case "callElsewhere": self = .callElsewhere(try container.decode(CallElsewhereEvent.self, forKey: .data))
        case "callsSynced": self = .callsSynced(try container.decode(CallsSyncedEvent.self, forKey: .data))
        case "sessionEnded": self = .sessionEnded(try container.decode(SessionEndedEvent.self, forKey: .data))
        case "mediaSignal": self = .mediaSignal(try container.decode(MediaSignalEvent.self, forKey: .data))
        case "sfuSession": self = .sfuSession(try container.decode(SFUSessionEvent.self, forKey: .data))
        case "sfuSignal": self = .sfuSignal(try container.decode(SFUSignalEvent.self, forKey: .data))
        case "callMoveOffered": self = .callMoveOffered(try container.decode(CallMoveOfferedEvent.self, forKey: .data))
        case "callMoveOfferEnded":
            self = .callMoveOfferEnded(try container.decode(CallMoveOfferEndedEvent.self, forKey: .data))
        case "callMoved": self = .callMoved(try container.decode(CallMovedEvent.self, forKey: .data))
        case "memberMoved": self = .memberMoved(try container.decode(MemberMovedEvent.self, forKey: .data))
        case "recordingStarted":
            self = .recordingStarted(try container.decode(RecordingStartedEvent.self, forKey: .data))
        case "recordingStopped":
            self = .recordingStopped(try container.decode(RecordingStoppedEvent.self, forKey: .data))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .event, in: container, debugDescription: "unknown event \(name)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .event)
        switch self {
        case .callReceived(let e): try container.encode(e, forKey: .data)
        case .callStarted(let e): try container.encode(e, forKey: .data)
        case .callUpdated(let e): try container.encode(e, forKey: .data)
        case .callEnded(let e): try container.encode(e, forKey: .data)
        case .callRecord(let e): try container.encode(e, forKey: .data)
        case .deviceChanged(let e): try container.encode(e, forKey: .data)
        case .mediaTypeChangeRequested(let e): try container.encode(e, forKey: .data)
        case .mediaTypeChangeResult(let e): try container.encode(e, forKey: .data)
        case .memberStatus(let e): try container.encode(e, forKey: .data)
        case .memberStats(let e): try container.encode(e, forKey: .data)
        case .callElsewhere(let e): try container.encode(e, forKey: .data)
        case .callsSynced(let e): try container.encode(e, forKey: .data)
        case .sessionEnded(let e): try container.encode(e, forKey: .data)
        case .mediaSignal(let e): try container.encode(e, forKey: .data)
        case .sfuSession(let e): try container.encode(e, forKey: .data)
        case .sfuSignal(let e): try container.encode(e, forKey: .data)
        case .callMoveOffered(let e): try container.encode(e, forKey: .data)
        case .callMoveOfferEnded(let e): try container.encode(e, forKey: .data)
        case .callMoved(let e): try container.encode(e, forKey: .data)
        case .memberMoved(let e): try container.encode(e, forKey: .data)
        case .recordingStarted(let e): try container.encode(e, forKey: .data)
        case .recordingStopped(let e): try container.encode(e, forKey: .data)
        }
    }
}
