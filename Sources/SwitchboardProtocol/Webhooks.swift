import Foundation

/// What a webhook reports (the `type` of its body), named as Standard Webhooks recommends:
/// full-stop delimited and hierarchical. docs/WEBHOOKS.md shows each one's JSON.
public enum WebhookEventType: String, Codable, Sendable, CaseIterable, Comparable {
    /// A call was placed (its invitees follow as `call.member.invited`).
    case callCreated = "call.created"
    /// Someone was invited: by the caller at the start, or by a member into a call in progress.
    case memberInvited = "call.member.invited"
    /// An invitee's devices ring: over their connections, through pushes, or both; again with a
    /// `deviceId` when a device connects while the invitation still rings (it gets it then).
    case memberRinging = "call.member.ringing"
    /// An invitee answered and is in the call.
    case memberAnswered = "call.member.answered"
    /// Someone who was not ringing entered a group call (`join`: a chat group's member, or a member
    /// who had left).
    case memberJoined = "call.member.joined"
    /// An invitee declined.
    case memberRejected = "call.member.rejected"
    /// An invitee was not reached or did not answer: no answer in time, offline, busy, or the call
    /// was canceled or ended while they rang.
    case memberMissed = "call.member.missed"
    /// A member who was in the call left it (hung up, dropped for longer than the reconnect grace,
    /// or the call ended around them).
    case memberLeft = "call.member.left"
    /// A member took the call onto another of their devices (the member stays in the call).
    case memberMoved = "call.member.moved"
    /// A one-to-one call switched between audio and video (both members agreed).
    case mediaTypeChanged = "call.media_type.changed"
    /// The call is over, with its end reason, duration and every member's outcome.
    case callEnded = "call.ended"
    /// A member's call record was stored (one event per record; none for ephemeral calls).
    case recordWritten = "call.record.written"
    /// A user blocked callers (the users newly blocked).
    case userBlocked = "user.blocked"
    /// A user unblocked callers (the users no longer blocked).
    case userUnblocked = "user.unblocked"
    /// A recording's files are ready to download.
    case recordingReady = "recording.ready"
    /// A recording's conversion failed for good.
    case recordingFailed = "recording.failed"
    /// A recording's files were deleted (the app's retention, or the admin API).
    case recordingDeleted = "recording.deleted"

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// One webhook's body: the envelope Standard Webhooks recommends (`type`, `timestamp`, `data`),
/// with the event's id (also the `webhook-id` header, the same on every retry: the receiver's
/// idempotency key), the app, and the time as Unix milliseconds besides the ISO 8601 form.
public struct WebhookEvent: Codable, Equatable, Sendable {
    /// Unique per event; the same on every attempt and replay (`webhook-id`).
    public var id: String
    /// nil for a type this build does not know (``WebhookEventData/unknown(type:)``).
    public var type: WebhookEventType? { data.type }
    /// When the event happened, ISO 8601 in UTC with milliseconds (``time`` in another form).
    public var timestamp: String { Self.isoTimestamp(time) }
    /// When the event happened, Unix milliseconds on the server's clock.
    public var time: Int64
    public var sdkAppID: SdkAppID
    public var data: WebhookEventData

    public init(id: String, time: Int64, sdkAppID: SdkAppID, data: WebhookEventData) {
        self.id = id
        self.time = time
        self.sdkAppID = sdkAppID
        self.data = data
    }

    enum CodingKeys: String, CodingKey {
        case id, type, timestamp, time, sdkAppID, data
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        time = try container.decode(Int64.self, forKey: .time)
        sdkAppID = try container.decode(SdkAppID.self, forKey: .sdkAppID)
        let raw = try container.decode(String.self, forKey: .type)
        guard let type = WebhookEventType(rawValue: raw) else {
            data = .unknown(type: raw)
            return
        }
        data = try WebhookEventData(type: type, from: container)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(data.typeName, forKey: .type)
        try container.encode(timestamp, forKey: .timestamp)
        try container.encode(time, forKey: .time)
        try container.encode(sdkAppID, forKey: .sdkAppID)
        try data.encode(into: &container)
    }

    /// `2026-01-01T00:00:03.250Z` for Unix milliseconds (proleptic Gregorian, UTC).
    public static func isoTimestamp(_ milliseconds: Int64) -> String {
        let (seconds, millis) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        let (daysRaw, secondOfDayRaw) = seconds.quotientAndRemainder(dividingBy: 86_400)
        // Floor division for times before 1970.
        let borrow = secondOfDayRaw < 0 || (secondOfDayRaw == 0 && millis < 0)
        let days = borrow ? daysRaw - 1 : daysRaw
        var secondOfDay = borrow ? secondOfDayRaw + 86_400 : secondOfDayRaw
        var ms = millis
        if ms < 0 {
            ms += 1000
            secondOfDay -= 1
        }
        // Days to a civil date (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(ms, 3))Z"
    }
}

/// An event's `data`, by its type.
public enum WebhookEventData: Equatable, Sendable {
    case callCreated(WebhookCallCreated)
    case memberInvited(WebhookMemberInvited)
    case memberRinging(WebhookMemberRinging)
    case memberAnswered(WebhookMemberEntered)
    case memberJoined(WebhookMemberEntered)
    case memberRejected(WebhookMemberRejected)
    case memberMissed(WebhookMemberMissed)
    case memberLeft(WebhookMemberLeft)
    case memberMoved(WebhookMemberMoved)
    case mediaTypeChanged(WebhookMediaTypeChanged)
    case callEnded(WebhookCallEnded)
    case recordWritten(WebhookRecordWritten)
    case userBlocked(WebhookBlocks)
    case userUnblocked(WebhookBlocks)
    case recordingReady(WebhookRecording)
    case recordingFailed(WebhookRecording)
    case recordingDeleted(WebhookRecording)
    /// A type this build does not know (a newer server): receivers should ignore it.
    case unknown(type: String)

    /// The event's type; nil for ``unknown(type:)``.
    public var type: WebhookEventType? {
        switch self {
        case .callCreated: .callCreated
        case .memberInvited: .memberInvited
        case .memberRinging: .memberRinging
        case .memberAnswered: .memberAnswered
        case .memberJoined: .memberJoined
        case .memberRejected: .memberRejected
        case .memberMissed: .memberMissed
        case .memberLeft: .memberLeft
        case .memberMoved: .memberMoved
        case .mediaTypeChanged: .mediaTypeChanged
        case .callEnded: .callEnded
        case .recordWritten: .recordWritten
        case .recordingReady: .recordingReady
        case .recordingFailed: .recordingFailed
        case .recordingDeleted: .recordingDeleted
        case .userBlocked: .userBlocked
        case .userUnblocked: .userUnblocked
        case .unknown: nil
        }
    }

    /// The `type` as it is written.
    public var typeName: String {
        if case .unknown(let name) = self { return name }
        return type?.rawValue ?? ""
    }

    /// The call the event is about; nil for user events.
    public var callId: CallID? {
        switch self {
        case .callCreated(let data): data.callId
        case .memberInvited(let data): data.callId
        case .memberRinging(let data): data.callId
        case .memberAnswered(let data), .memberJoined(let data): data.callId
        case .memberRejected(let data): data.callId
        case .memberMissed(let data): data.callId
        case .memberLeft(let data): data.callId
        case .memberMoved(let data): data.callId
        case .mediaTypeChanged(let data): data.callId
        case .callEnded(let data): data.callId
        case .recordWritten(let data): data.callId
        case .recordingReady(let data), .recordingFailed(let data), .recordingDeleted(let data): data.callId
        case .userBlocked, .userUnblocked, .unknown: nil
        }
    }

    /// The event's place among its call's events (1, 2, …); nil for user events.
    public var sequence: Int? {
        switch self {
        case .callCreated(let data): data.sequence
        case .memberInvited(let data): data.sequence
        case .memberRinging(let data): data.sequence
        case .memberAnswered(let data), .memberJoined(let data): data.sequence
        case .memberRejected(let data): data.sequence
        case .memberMissed(let data): data.sequence
        case .memberLeft(let data): data.sequence
        case .memberMoved(let data): data.sequence
        case .mediaTypeChanged(let data): data.sequence
        case .callEnded(let data): data.sequence
        case .recordWritten(let data): data.sequence
        case .userBlocked, .userUnblocked, .recordingReady, .recordingFailed, .recordingDeleted, .unknown: nil
        }
    }

    /// Sets the call's sequence number (the state machine numbers its events as it makes them).
    public mutating func setSequence(_ sequence: Int) {
        switch self {
        case .callCreated(var data): data.sequence = sequence; self = .callCreated(data)
        case .memberInvited(var data): data.sequence = sequence; self = .memberInvited(data)
        case .memberRinging(var data): data.sequence = sequence; self = .memberRinging(data)
        case .memberAnswered(var data): data.sequence = sequence; self = .memberAnswered(data)
        case .memberJoined(var data): data.sequence = sequence; self = .memberJoined(data)
        case .memberRejected(var data): data.sequence = sequence; self = .memberRejected(data)
        case .memberMissed(var data): data.sequence = sequence; self = .memberMissed(data)
        case .memberLeft(var data): data.sequence = sequence; self = .memberLeft(data)
        case .memberMoved(var data): data.sequence = sequence; self = .memberMoved(data)
        case .mediaTypeChanged(var data): data.sequence = sequence; self = .mediaTypeChanged(data)
        case .callEnded(var data): data.sequence = sequence; self = .callEnded(data)
        case .recordWritten(var data): data.sequence = sequence; self = .recordWritten(data)
        case .userBlocked, .userUnblocked, .recordingReady, .recordingFailed, .recordingDeleted, .unknown: break
        }
    }

    init(type: WebhookEventType, from container: KeyedDecodingContainer<WebhookEvent.CodingKeys>) throws {
        func data<T: Decodable>(_ type: T.Type) throws -> T { try container.decode(type, forKey: .data) }
        switch type {
        case .callCreated: self = .callCreated(try data(WebhookCallCreated.self))
        case .memberInvited: self = .memberInvited(try data(WebhookMemberInvited.self))
        case .memberRinging: self = .memberRinging(try data(WebhookMemberRinging.self))
        case .memberAnswered: self = .memberAnswered(try data(WebhookMemberEntered.self))
        case .memberJoined: self = .memberJoined(try data(WebhookMemberEntered.self))
        case .memberRejected: self = .memberRejected(try data(WebhookMemberRejected.self))
        case .memberMissed: self = .memberMissed(try data(WebhookMemberMissed.self))
        case .memberLeft: self = .memberLeft(try data(WebhookMemberLeft.self))
        case .memberMoved: self = .memberMoved(try data(WebhookMemberMoved.self))
        case .mediaTypeChanged: self = .mediaTypeChanged(try data(WebhookMediaTypeChanged.self))
        case .callEnded: self = .callEnded(try data(WebhookCallEnded.self))
        case .recordWritten: self = .recordWritten(try data(WebhookRecordWritten.self))
        case .userBlocked: self = .userBlocked(try data(WebhookBlocks.self))
        case .userUnblocked: self = .userUnblocked(try data(WebhookBlocks.self))
        case .recordingReady: self = .recordingReady(try data(WebhookRecording.self))
        case .recordingFailed: self = .recordingFailed(try data(WebhookRecording.self))
        case .recordingDeleted: self = .recordingDeleted(try data(WebhookRecording.self))
        }
    }

    func encode(into container: inout KeyedEncodingContainer<WebhookEvent.CodingKeys>) throws {
        switch self {
        case .callCreated(let data): try container.encode(data, forKey: .data)
        case .memberInvited(let data): try container.encode(data, forKey: .data)
        case .memberRinging(let data): try container.encode(data, forKey: .data)
        case .memberAnswered(let data), .memberJoined(let data): try container.encode(data, forKey: .data)
        case .memberRejected(let data): try container.encode(data, forKey: .data)
        case .memberMissed(let data): try container.encode(data, forKey: .data)
        case .memberLeft(let data): try container.encode(data, forKey: .data)
        case .memberMoved(let data): try container.encode(data, forKey: .data)
        case .mediaTypeChanged(let data): try container.encode(data, forKey: .data)
        case .callEnded(let data): try container.encode(data, forKey: .data)
        case .recordWritten(let data): try container.encode(data, forKey: .data)
        case .userBlocked(let data), .userUnblocked(let data): try container.encode(data, forKey: .data)
        case .recordingReady(let data), .recordingFailed(let data), .recordingDeleted(let data):
            try container.encode(data, forKey: .data)
        case .unknown: try container.encode([String: String](), forKey: .data)
        }
    }
}

/// `call.created`.
public struct WebhookCallCreated: Codable, Equatable, Sendable {
    public var callId: CallID
    /// This event's place among the call's events: 1, 2, … (see docs/WEBHOOKS.md, "Order").
    public var sequence: Int
    public var roomId: RoomID
    public var callType: CallType
    public var mediaType: CallMediaType
    public var callerId: UserID
    /// The device the call was placed from.
    public var callerDeviceId: DeviceID
    public var inviteeIds: [UserID]
    public var chatGroupId: ChatGroupID?
    public var userData: String?
    /// No records are written for it (its `call.record.written` events do not come).
    public var isEphemeral: Bool
    /// Seconds each invitee rings.
    public var timeout: Int
    public var createdAt: Int64

    public init(
        callId: CallID, sequence: Int = 0, roomId: RoomID, callType: CallType, mediaType: CallMediaType,
        callerId: UserID, callerDeviceId: DeviceID, inviteeIds: [UserID], chatGroupId: ChatGroupID? = nil,
        userData: String? = nil, isEphemeral: Bool = false, timeout: Int, createdAt: Int64
    ) {
        self.callId = callId
        self.sequence = sequence
        self.roomId = roomId
        self.callType = callType
        self.mediaType = mediaType
        self.callerId = callerId
        self.callerDeviceId = callerDeviceId
        self.inviteeIds = inviteeIds
        self.chatGroupId = chatGroupId
        self.userData = userData
        self.isEphemeral = isEphemeral
        self.timeout = timeout
        self.createdAt = createdAt
    }
}

/// `call.member.invited`.
public struct WebhookMemberInvited: Codable, Equatable, Sendable {
    public var callId: CallID
    public var sequence: Int
    public var userId: UserID
    public var inviterId: UserID

    public init(callId: CallID, sequence: Int = 0, userId: UserID, inviterId: UserID) {
        self.callId = callId
        self.sequence = sequence
        self.userId = userId
        self.inviterId = inviterId
    }
}

/// `call.member.ringing`.
public struct WebhookMemberRinging: Codable, Equatable, Sendable {
    public var callId: CallID
    public var sequence: Int
    public var userId: UserID
    /// The invitation went to devices connected to the server.
    public var connected: Bool
    /// The invitation went out as pushes, to devices without a connection.
    public var pushed: Bool
    /// Set when one device got the invitation as it connected while the call rang.
    public var deviceId: DeviceID?
    /// When the ringing stops unless answered (Unix ms).
    public var ringsUntil: Int64

    public init(
        callId: CallID, sequence: Int = 0, userId: UserID, connected: Bool, pushed: Bool, deviceId: DeviceID? = nil,
        ringsUntil: Int64
    ) {
        self.callId = callId
        self.sequence = sequence
        self.userId = userId
        self.connected = connected
        self.pushed = pushed
        self.deviceId = deviceId
        self.ringsUntil = ringsUntil
    }
}

/// `call.member.answered` and `call.member.joined`.
public struct WebhookMemberEntered: Codable, Equatable, Sendable {
    public var callId: CallID
    public var sequence: Int
    public var userId: UserID
    /// The device the member is in the call on.
    public var deviceId: DeviceID
    /// When the call connected (its second member joined): the start of billable time.
    public var callStartTime: Int64

    public init(callId: CallID, sequence: Int = 0, userId: UserID, deviceId: DeviceID, callStartTime: Int64) {
        self.callId = callId
        self.sequence = sequence
        self.userId = userId
        self.deviceId = deviceId
        self.callStartTime = callStartTime
    }
}

/// `call.member.rejected`.
public struct WebhookMemberRejected: Codable, Equatable, Sendable {
    public var callId: CallID
    public var sequence: Int
    public var userId: UserID
    /// `reject`; the caller of a call to a user who blocks them sees the same.
    public var reason: CallEndReason
    /// The invitee blocks the caller: the call never reached their devices and the decline was
    /// the server's (the app's `blockedCallerSees` is `reject`). Never tell the caller.
    public var blocksCaller: Bool?

    public init(callId: CallID, sequence: Int = 0, userId: UserID, reason: CallEndReason, blocksCaller: Bool? = nil) {
        self.callId = callId
        self.sequence = sequence
        self.userId = userId
        self.reason = reason
        self.blocksCaller = blocksCaller
    }
}

/// `call.member.missed`.
public struct WebhookMemberMissed: Codable, Equatable, Sendable {
    public var callId: CallID
    public var sequence: Int
    public var userId: UserID
    /// `missed`, or `busy` for an invitee found in another call under the busy-reject policy.
    public var result: CallRecordResult
    /// `noResponse`, `offline`, `lineBusy`, `canceled` (the caller hung up first), `endByServer`…
    public var reason: CallEndReason
    /// An invitee who blocks the caller, seen by the caller as offline or as not answering.
    public var blocksCaller: Bool?

    public init(
        callId: CallID, sequence: Int = 0, userId: UserID, result: CallRecordResult, reason: CallEndReason,
        blocksCaller: Bool? = nil
    ) {
        self.callId = callId
        self.sequence = sequence
        self.userId = userId
        self.result = result
        self.reason = reason
        self.blocksCaller = blocksCaller
    }
}

/// `call.member.left`.
public struct WebhookMemberLeft: Codable, Equatable, Sendable {
    public var callId: CallID
    public var sequence: Int
    public var userId: UserID
    /// The device the member was in the call on.
    public var deviceId: DeviceID?
    /// The member's result so far: `answered` once the call had connected, else the caller's
    /// (`canceled`, `noAnswer`, `rejected`, `busy`, `offline`).
    public var result: CallRecordResult
    public var reason: CallEndReason
    /// Who caused it (the member themselves for a hang-up).
    public var by: UserID?
    /// Milliseconds the member spent in the connected call, over every time they were in it.
    public var connectedMs: Int64

    public init(
        callId: CallID, sequence: Int = 0, userId: UserID, deviceId: DeviceID?, result: CallRecordResult,
        reason: CallEndReason, by: UserID?, connectedMs: Int64
    ) {
        self.callId = callId
        self.sequence = sequence
        self.userId = userId
        self.deviceId = deviceId
        self.result = result
        self.reason = reason
        self.by = by
        self.connectedMs = connectedMs
    }
}

/// `call.media_type.changed`.
public struct WebhookMediaTypeChanged: Codable, Equatable, Sendable {
    public var callId: CallID
    public var sequence: Int
    public var from: CallMediaType
    public var to: CallMediaType
    /// Who asked for the change (the other member agreed).
    public var requesterId: UserID

    public init(callId: CallID, sequence: Int = 0, from: CallMediaType, to: CallMediaType, requesterId: UserID) {
        self.callId = callId
        self.sequence = sequence
        self.from = from
        self.to = to
        self.requesterId = requesterId
    }
}

/// `call.ended`.
public struct WebhookCallEnded: Codable, Equatable, Sendable {
    /// One member's part in the call.
    public struct Member: Codable, Equatable, Sendable {
        public var userId: UserID
        public var isCaller: Bool
        public var inviterId: UserID?
        /// As in the member's call record (`answered` once they were in the connected call).
        public var result: CallRecordResult
        public var reason: CallEndReason
        public var by: UserID?
        /// When the member first was in the connected call.
        public var firstConnectedAt: Int64?
        /// Milliseconds in the connected call, over every time the member was in it.
        public var connectedMs: Int64
        public var leftAt: Int64
        /// The member blocks the caller: the call never reached them (they get no record).
        public var blocksCaller: Bool?

        public init(
            userId: UserID, isCaller: Bool, inviterId: UserID? = nil, result: CallRecordResult, reason: CallEndReason,
            by: UserID? = nil, firstConnectedAt: Int64? = nil, connectedMs: Int64, leftAt: Int64,
            blocksCaller: Bool? = nil
        ) {
            self.userId = userId
            self.isCaller = isCaller
            self.inviterId = inviterId
            self.result = result
            self.reason = reason
            self.by = by
            self.firstConnectedAt = firstConnectedAt
            self.connectedMs = connectedMs
            self.leftAt = leftAt
            self.blocksCaller = blocksCaller
        }
    }

    public var callId: CallID
    public var sequence: Int
    public var roomId: RoomID
    public var callType: CallType
    /// The media type at the end (after any agreed change).
    public var mediaType: CallMediaType
    public var callerId: UserID
    public var chatGroupId: ChatGroupID?
    /// Why the call ended: the reason of its last departure.
    public var reason: CallEndReason
    public var by: UserID?
    public var createdAt: Int64
    /// When it connected (its second member joined); absent for a call nobody answered.
    public var startTime: Int64?
    public var endTime: Int64
    /// Whole seconds from ``startTime`` to ``endTime`` (0 if it never connected).
    public var duration: Int
    public var isEphemeral: Bool
    public var members: [Member]

    public init(
        callId: CallID, sequence: Int = 0, roomId: RoomID, callType: CallType, mediaType: CallMediaType,
        callerId: UserID, chatGroupId: ChatGroupID? = nil, reason: CallEndReason, by: UserID?, createdAt: Int64,
        startTime: Int64?, endTime: Int64, duration: Int, isEphemeral: Bool = false, members: [Member]
    ) {
        self.callId = callId
        self.sequence = sequence
        self.roomId = roomId
        self.callType = callType
        self.mediaType = mediaType
        self.callerId = callerId
        self.chatGroupId = chatGroupId
        self.reason = reason
        self.by = by
        self.createdAt = createdAt
        self.startTime = startTime
        self.endTime = endTime
        self.duration = duration
        self.isEphemeral = isEphemeral
        self.members = members
    }
}

/// `call.record.written`: the record as its owner's `callRecord` event carries it, without the
/// owner's `syncTime` (a paging cursor of that user's list, assigned by the database).
public struct WebhookRecordWritten: Codable, Equatable, Sendable {
    public var callId: CallID
    public var sequence: Int
    /// Whose record it is.
    public var userId: UserID
    public var roomId: RoomID
    public var callType: CallType
    public var mediaType: CallMediaType
    public var callerId: UserID
    public var inviterId: UserID
    public var participantIds: [UserID]
    public var chatGroupId: ChatGroupID?
    public var direction: CallDirection
    public var result: CallRecordResult
    public var startTime: Int64?
    public var endTime: Int64
    /// Whole seconds the owner was in the connected call.
    public var duration: Int
    public var endReason: CallEndReason

    public init(userId: UserID, record: CallRecord, sequence: Int = 0) {
        self.callId = record.callId
        self.sequence = sequence
        self.userId = userId
        self.roomId = record.roomId
        self.callType = record.callType
        self.mediaType = record.mediaType
        self.callerId = record.callerId
        self.inviterId = record.inviterId
        self.participantIds = record.participantIds
        self.chatGroupId = record.chatGroupId
        self.direction = record.direction
        self.result = record.result
        self.startTime = record.startTime
        self.endTime = record.endTime
        self.duration = record.duration
        self.endReason = record.endReason
    }
}

/// `user.blocked` and `user.unblocked`.
public struct WebhookBlocks: Codable, Equatable, Sendable {
    public var userId: UserID
    /// The users this change blocked (or unblocked); those already so are not named.
    public var userIds: [UserID]

    public init(userId: UserID, userIds: [UserID]) {
        self.userId = userId
        self.userIds = userIds
    }
}
