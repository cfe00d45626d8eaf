import Foundation

/// The `type` of a request frame.
public struct RequestType: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let login = RequestType(rawValue: "login")
    public static let logout = RequestType(rawValue: "logout")
    public static let ping = RequestType(rawValue: "ping")
    public static let setProfile = RequestType(rawValue: "profile.set")
    public static let startCall = RequestType(rawValue: "call.start")
    public static let acceptCall = RequestType(rawValue: "call.accept")
    public static let rejectCall = RequestType(rawValue: "call.reject")
    public static let hangupCall = RequestType(rawValue: "call.hangup")
    public static let updateDeviceState = RequestType(rawValue: "call.deviceState")
    public static let inviteToCall = RequestType(rawValue: "call.invite")
    public static let joinCall = RequestType(rawValue: "call.join")
    public static let changeMediaType = RequestType(rawValue: "call.changeMediaType")
    public static let replyMediaTypeChange = RequestType(rawValue: "call.replyMediaType")
    public static let cancelMediaTypeChange = RequestType(rawValue: "call.cancelMediaType")
    public static let reportStatus = RequestType(rawValue: "call.statusReport")
    public static let queryRecords = RequestType(rawValue: "records.query")
    public static let deleteRecords = RequestType(rawValue: "records.delete")
    public static let deleteAllRecords = RequestType(rawValue: "records.deleteAll")
    public static let blockUsers = RequestType(rawValue: "user.block")
    public static let unblockUsers = RequestType(rawValue: "user.unblock")
    public static let blockedUsers = RequestType(rawValue: "user.blocked")
}

/// A request a client sends; `Response` is the type of its `result`.
public protocol SignalingRequest: Codable, Equatable, Sendable {
    associatedtype Response: Codable, Equatable, Sendable
    static var type: RequestType { get }
}

/// An empty object, for requests without parameters and responses without data.
public struct Empty: Codable, Equatable, Sendable {
    public init() {}
}

/// The protocol version this build speaks. A client sends it at login; the server refuses other
/// major versions with `unsupportedProtocolVersion`.
public let switchboardProtocolVersion = 1

// MARK: - session

/// Authenticate this connection as one device of one user.
public struct LoginRequest: SignalingRequest {
    public typealias Response = LoginResponse
    public static let type = RequestType.login

    public var sdkAppID: SdkAppID
    public var userID: UserID
    public var userSig: String
    public var protocolVersion: Int
    /// A stable id of this device (kept across app launches); the server assigns one when absent.
    /// Logging in again with the same deviceId replaces the older connection and resumes its calls.
    public var deviceId: DeviceID?
    /// Free text such as `ios`, `web`, `cli`, for logs and the online-users list: at most
    /// ``maxPlatformBytes`` UTF-8 bytes of display text (``Swift/String/isBoundedText(maxBytes:)``).
    public var platform: String?

    public static let maxPlatformBytes = 64

    public init(
        sdkAppID: SdkAppID, userID: UserID, userSig: String, protocolVersion: Int = switchboardProtocolVersion,
        deviceId: DeviceID? = nil, platform: String? = nil
    ) {
        self.sdkAppID = sdkAppID
        self.userID = userID
        self.userSig = userSig
        self.protocolVersion = protocolVersion
        self.deviceId = deviceId
        self.platform = platform
    }
}

public struct LoginResponse: Codable, Equatable, Sendable {
    public var userID: UserID
    public var deviceId: DeviceID
    public var protocolVersion: Int
    /// The server's clock, Unix ms, when it answered; clients derive their clock offset from it.
    public var serverTime: Int64
    /// Seconds between the client's `ping`s; the server drops a silent connection after three.
    public var heartbeatInterval: Int
    public var profile: UserProfile

    public init(
        userID: UserID, deviceId: DeviceID, protocolVersion: Int, serverTime: Int64, heartbeatInterval: Int,
        profile: UserProfile
    ) {
        self.userID = userID
        self.deviceId = deviceId
        self.protocolVersion = protocolVersion
        self.serverTime = serverTime
        self.heartbeatInterval = heartbeatInterval
        self.profile = profile
    }
}

/// End this device's session: its connected calls are hung up, and the server closes the socket.
public struct LogoutRequest: SignalingRequest {
    public typealias Response = Empty
    public static let type = RequestType.logout
    public init() {}
}

/// Heartbeat and clock sample.
public struct PingRequest: SignalingRequest {
    public typealias Response = PingResponse
    public static let type = RequestType.ping
    public init() {}
}

public struct PingResponse: Codable, Equatable, Sendable {
    /// The server's clock, Unix ms.
    public var serverTime: Int64
    public init(serverTime: Int64) { self.serverTime = serverTime }
}

/// Set the caller's nickname and avatar (fields left out keep their value).
public struct SetProfileRequest: SignalingRequest {
    public typealias Response = UserProfile
    public static let type = RequestType.setProfile

    public var nickname: String?
    public var avatarURL: String?
    public init(nickname: String? = nil, avatarURL: String? = nil) {
        self.nickname = nickname
        self.avatarURL = avatarURL
    }
}

// MARK: - calls

/// Place a call: one participant for one-to-one, several for a group call.
public struct StartCallRequest: SignalingRequest {
    public typealias Response = StartCallResponse
    public static let type = RequestType.startCall

    public var participantIds: [UserID]
    public var mediaType: CallMediaType
    public var params: CallParams?

    public init(participantIds: [UserID], mediaType: CallMediaType, params: CallParams? = nil) {
        self.participantIds = participantIds
        self.mediaType = mediaType
        self.params = params
    }
}

public struct StartCallResponse: Codable, Equatable, Sendable {
    public var callId: CallID
    public var roomId: RoomID
    /// Invitees who were in another call and got `lineBusy` (busy-reject policy).
    public var busyUserIds: [UserID]
    /// The call as it stands after the invitations went out.
    public var call: CallInfo

    public init(callId: CallID, roomId: RoomID, busyUserIds: [UserID], call: CallInfo) {
        self.callId = callId
        self.roomId = roomId
        self.busyUserIds = busyUserIds
        self.call = call
    }
}

/// Accept an incoming call on this device.
public struct AcceptCallRequest: SignalingRequest {
    public typealias Response = CallSnapshotResponse
    public static let type = RequestType.acceptCall
    public var callId: CallID
    public init(callId: CallID) { self.callId = callId }
}

/// Reject an incoming call (on every device of the user).
public struct RejectCallRequest: SignalingRequest {
    public typealias Response = Empty
    public static let type = RequestType.rejectCall
    public var callId: CallID
    public init(callId: CallID) { self.callId = callId }
}

/// Leave a call: a hang-up when connected, a cancel for a caller before any answer,
/// a reject for a ringing callee.
public struct HangupCallRequest: SignalingRequest {
    public typealias Response = Empty
    public static let type = RequestType.hangupCall
    public var callId: CallID
    public init(callId: CallID) { self.callId = callId }
}

public struct CallSnapshotResponse: Codable, Equatable, Sendable {
    public var call: CallInfo
    public init(call: CallInfo) { self.call = call }
}

/// Tell the other members that this member's microphone or camera changed, or that it started or
/// stopped sharing a screen.
public struct UpdateDeviceStateRequest: SignalingRequest {
    public typealias Response = Empty
    public static let type = RequestType.updateDeviceState

    public var callId: CallID
    public var microphoneOn: Bool?
    public var cameraOn: Bool?
    public var screenSharing: Bool?

    public init(callId: CallID, microphoneOn: Bool? = nil, cameraOn: Bool? = nil, screenSharing: Bool? = nil) {
        self.callId = callId
        self.microphoneOn = microphoneOn
        self.cameraOn = cameraOn
        self.screenSharing = screenSharing
    }
}

/// Invite more people into a group call you are in.
public struct InviteToCallRequest: SignalingRequest {
    public typealias Response = InviteToCallResponse
    public static let type = RequestType.inviteToCall

    public var callId: CallID
    public var participantIds: [UserID]

    public init(callId: CallID, participantIds: [UserID]) {
        self.callId = callId
        self.participantIds = participantIds
    }
}

public struct InviteToCallResponse: Codable, Equatable, Sendable {
    /// Invitees who were in another call (`lineBusy`).
    public var busyUserIds: [UserID]
    public var call: CallInfo

    public init(busyUserIds: [UserID], call: CallInfo) {
        self.busyUserIds = busyUserIds
        self.call = call
    }
}

/// Join a group call you were invited to, or that belongs to a chat group you are in.
public struct JoinCallRequest: SignalingRequest {
    public typealias Response = CallSnapshotResponse
    public static let type = RequestType.joinCall
    public var callId: CallID
    public init(callId: CallID) { self.callId = callId }
}

/// Ask the other member of a one-to-one call to switch to another media type.
public struct ChangeMediaTypeRequest: SignalingRequest {
    public typealias Response = ChangeMediaTypeResponse
    public static let type = RequestType.changeMediaType

    public var callId: CallID
    public var mediaType: CallMediaType

    public init(callId: CallID, mediaType: CallMediaType) {
        self.callId = callId
        self.mediaType = mediaType
    }
}

public struct ChangeMediaTypeResponse: Codable, Equatable, Sendable {
    public var transactionId: TransactionID
    public init(transactionId: TransactionID) { self.transactionId = transactionId }
}

/// Agree to or decline the peer's media-type change.
public struct ReplyMediaTypeChangeRequest: SignalingRequest {
    public typealias Response = Empty
    public static let type = RequestType.replyMediaTypeChange

    public var callId: CallID
    public var transactionId: TransactionID
    public var agree: Bool

    public init(callId: CallID, transactionId: TransactionID, agree: Bool) {
        self.callId = callId
        self.transactionId = transactionId
        self.agree = agree
    }
}

/// Withdraw your own media-type change before the peer answers.
public struct CancelMediaTypeChangeRequest: SignalingRequest {
    public typealias Response = Empty
    public static let type = RequestType.cancelMediaTypeChange

    public var callId: CallID
    public var transactionId: TransactionID

    public init(callId: CallID, transactionId: TransactionID) {
        self.callId = callId
        self.transactionId = transactionId
    }
}

/// This member's media statistics, about once a second while in a call.
public struct StatusReportRequest: SignalingRequest {
    public typealias Response = Empty
    public static let type = RequestType.reportStatus

    public var callId: CallID
    /// Packet loss, percent (0–100).
    public var packetLoss: Double
    /// Round-trip time, ms.
    public var rtt: Int
    /// Send bitrate, kbps.
    public var bitrate: Int
    /// Microphone level, 0–100.
    public var audioLevel: Int

    public init(callId: CallID, packetLoss: Double, rtt: Int, bitrate: Int, audioLevel: Int) {
        self.callId = callId
        self.packetLoss = packetLoss
        self.rtt = rtt
        self.bitrate = bitrate
        self.audioLevel = audioLevel
    }
}

// MARK: - records

/// Page through the caller's own call records.
public struct QueryRecordsRequest: SignalingRequest {
    public typealias Response = QueryRecordsResponse
    public static let type = RequestType.queryRecords

    /// -1 starts at the newest record (descending) or the oldest (ascending); otherwise the
    /// `syncTime` returned by the previous page.
    public var syncTime: Int64
    /// 1…100.
    public var count: Int
    public var order: RecordOrder

    public init(syncTime: Int64 = -1, count: Int = 30, order: RecordOrder = .descending) {
        self.syncTime = syncTime
        self.count = count
        self.order = order
    }
}

public struct QueryRecordsResponse: Codable, Equatable, Sendable {
    public var records: [CallRecord]
    public var hasMore: Bool
    /// Pass this as the next query's `syncTime` to continue.
    public var syncTime: Int64

    public init(records: [CallRecord], hasMore: Bool, syncTime: Int64) {
        self.records = records
        self.hasMore = hasMore
        self.syncTime = syncTime
    }
}

/// Delete some of the caller's own records; other users' records of the same calls stay.
public struct DeleteRecordsRequest: SignalingRequest {
    public typealias Response = DeleteRecordsResponse
    public static let type = RequestType.deleteRecords
    public var callIds: [CallID]
    public init(callIds: [CallID]) { self.callIds = callIds }
}

/// Delete all of the caller's own records.
public struct DeleteAllRecordsRequest: SignalingRequest {
    public typealias Response = DeleteRecordsResponse
    public static let type = RequestType.deleteAllRecords
    public init() {}
}

public struct DeleteRecordsResponse: Codable, Equatable, Sendable {
    public var deleted: Int
    public init(deleted: Int) { self.deleted = deleted }
}

// MARK: - blocking

/// Stop these users from calling you: their calls never ring; to them you look as if you rejected
/// or were offline (the app's `blockedCallerSees` setting).
public struct BlockUsersRequest: SignalingRequest {
    public typealias Response = BlockedUsersResponse
    public static let type = RequestType.blockUsers
    public var userIds: [UserID]
    public init(userIds: [UserID]) { self.userIds = userIds }
}

/// Let these users call you again.
public struct UnblockUsersRequest: SignalingRequest {
    public typealias Response = BlockedUsersResponse
    public static let type = RequestType.unblockUsers
    public var userIds: [UserID]
    public init(userIds: [UserID]) { self.userIds = userIds }
}

/// The users you blocked.
public struct BlockedUsersRequest: SignalingRequest {
    public typealias Response = BlockedUsersResponse
    public static let type = RequestType.blockedUsers
    public init() {}
}

public struct BlockedUsersResponse: Codable, Equatable, Sendable {
    /// Everyone you block now, sorted.
    public var userIds: [UserID]
    public init(userIds: [UserID]) { self.userIds = userIds }

    /// Most users one user may block.
    public static let limit = 1000
}
