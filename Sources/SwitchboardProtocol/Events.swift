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

/// Another member turned their microphone or camera on or off.
public struct DeviceChangedEvent: Codable, Equatable, Sendable {
    public var callId: CallID
    public var userId: UserID
    public var microphoneOn: Bool
    public var cameraOn: Bool

    public init(callId: CallID, userId: UserID, microphoneOn: Bool, cameraOn: Bool) {
        self.callId = callId
        self.userId = userId
        self.microphoneOn = microphoneOn
        self.cameraOn = cameraOn
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
    case sessionEnded(SessionEndedEvent)

    /// The wire name in the frame's `event` field.
    public var name: String {
        switch self {
        case .callReceived: "callReceived"
        case .callStarted: "callStarted"
        case .callUpdated: "callUpdated"
        case .callEnded: "callEnded"
        case .callRecord: "callRecord"
        case .deviceChanged: "deviceChanged"
        case .sessionEnded: "sessionEnded"
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
        case .sessionEnded: nil
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
        case "sessionEnded": self = .sessionEnded(try container.decode(SessionEndedEvent.self, forKey: .data))
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
        case .sessionEnded(let e): try container.encode(e, forKey: .data)
        }
    }
}
