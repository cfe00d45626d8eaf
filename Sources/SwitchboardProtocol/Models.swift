import Foundation

/// Optional parameters of a new call, named as in the reference SDKs' `CallParams`.
public struct CallParams: Codable, Equatable, Sendable {
    /// The media room; the server assigns one when absent.
    public var roomId: RoomID?
    /// Seconds each invitee rings before `noResponse`; default 30.
    public var timeout: Int?
    /// Opaque data for the callees (at most ``CallLimits/maxUserDataBytes`` UTF-8 bytes).
    public var userData: String?
    /// The chat group a group call belongs to; its members may join.
    public var chatGroupId: ChatGroupID?
    /// No records are written for an ephemeral call.
    public var isEphemeralCall: Bool?
    /// What the call's pushes carry (CallPlus's push config), and whether a missed call is
    /// announced with an alert push.
    public var pushConfig: PushConfig?
    /// Record the call on the server from its start (the app's recording policy must allow it).
    public var record: Bool?

    public init(
        roomId: RoomID? = nil, timeout: Int? = nil, userData: String? = nil, chatGroupId: ChatGroupID? = nil,
        isEphemeralCall: Bool? = nil, pushConfig: PushConfig? = nil, record: Bool? = nil
    ) {
        self.roomId = roomId
        self.timeout = timeout
        self.userData = userData
        self.chatGroupId = chatGroupId
        self.isEphemeralCall = isEphemeralCall
        self.pushConfig = pushConfig
        self.record = record
    }
}

/// Limits every server enforces and every client may check early.
public enum CallLimits {
    /// Largest `userData`, in UTF-8 bytes.
    public static let maxUserDataBytes = 1024
    /// Default ring timeout, in seconds.
    public static let defaultTimeoutSeconds = 30
    /// Allowed ring timeouts, in seconds.
    public static let timeoutRange = 1...600
    /// Default largest call, the caller included.
    public static let defaultMaxParticipants = 16
    /// Largest text message accepted on the WebSocket, in bytes.
    public static let maxMessageBytes = 64 * 1024
    /// Most records returned by one query.
    public static let maxRecordCount = 100
    /// Most callIds in one delete.
    public static let maxDeleteCallIDs = 100
    /// Longest chatGroupId.
    public static let maxChatGroupIDLength = 64
    /// Most members in one chat group of the registry.
    public static let maxChatGroupMembers = 1000
    /// Seconds the peer has to answer a media-type change before it counts as declined.
    public static let mediaChangeTimeoutSeconds = 20
}

/// One member of a call as every other member sees it.
public struct CallParticipant: Codable, Equatable, Sendable {
    public var userId: UserID
    public var status: CallParticipantStatus
    /// Who invited this member; nil for the caller and for members who joined by themselves.
    public var inviterId: UserID?
    public var microphoneOn: Bool
    public var cameraOn: Bool
    /// Why this member left, once their status is back to `none`.
    public var endReason: CallEndReason?
    public var nickname: String?
    public var avatarURL: String?
    /// The member's network quality from their last status report; absent when unknown.
    public var networkQuality: NetworkQuality?
    /// The member's volume level from their last status report; absent before the first one.
    public var volumeLevel: VolumeLevel?
    /// `true` while the member, in the call, shares a screen; absent otherwise.
    public var screenSharing: Bool?

    public init(
        userId: UserID, status: CallParticipantStatus, inviterId: UserID? = nil, microphoneOn: Bool = true,
        cameraOn: Bool = false, endReason: CallEndReason? = nil, nickname: String? = nil, avatarURL: String? = nil,
        networkQuality: NetworkQuality? = nil, volumeLevel: VolumeLevel? = nil, screenSharing: Bool? = nil
    ) {
        self.userId = userId
        self.status = status
        self.inviterId = inviterId
        self.microphoneOn = microphoneOn
        self.cameraOn = cameraOn
        self.endReason = endReason
        self.nickname = nickname
        self.avatarURL = avatarURL
        self.networkQuality = networkQuality
        self.volumeLevel = volumeLevel
        self.screenSharing = screenSharing
    }
}

/// A snapshot of a call: sent with invitations, on every membership change and on resume.
public struct CallInfo: Codable, Equatable, Sendable {
    public var callId: CallID
    public var roomId: RoomID
    public var callType: CallType
    public var mediaType: CallMediaType
    public var callerId: UserID
    public var chatGroupId: ChatGroupID?
    public var userData: String?
    public var isEphemeral: Bool
    /// Ring timeout in seconds.
    public var timeout: Int
    /// When the caller placed the call, Unix milliseconds on the server's clock.
    public var createdAt: Int64
    /// When the call connected, Unix milliseconds on the server's clock; nil before that.
    /// Every device computes the duration from this value, corrected for its clock offset.
    public var startTime: Int64?
    /// Every member, the caller first.
    public var participants: [CallParticipant]
    /// How the call's media flows: `sfu` through the server's SFU; nil, peer to peer.
    public var media: CallMediaRoute?
    /// The server records the call now; nil, it does not.
    public var recording: CallRecordingState?

    public init(
        callId: CallID, roomId: RoomID, callType: CallType, mediaType: CallMediaType, callerId: UserID,
        chatGroupId: ChatGroupID? = nil, userData: String? = nil, isEphemeral: Bool = false, timeout: Int,
        createdAt: Int64, startTime: Int64? = nil, participants: [CallParticipant], media: CallMediaRoute? = nil,
        recording: CallRecordingState? = nil
    ) {
        self.callId = callId
        self.roomId = roomId
        self.callType = callType
        self.mediaType = mediaType
        self.callerId = callerId
        self.chatGroupId = chatGroupId
        self.userData = userData
        self.isEphemeral = isEphemeral
        self.timeout = timeout
        self.createdAt = createdAt
        self.startTime = startTime
        self.participants = participants
        self.media = media
        self.recording = recording
    }

    /// The member with this userId, if any.
    public func participant(_ userId: UserID) -> CallParticipant? {
        participants.first { $0.userId == userId }
    }
}

/// One user's record of one call, kept by the server (SPEC §4).
public struct CallRecord: Codable, Equatable, Sendable {
    public var callId: CallID
    public var roomId: RoomID
    public var callType: CallType
    public var mediaType: CallMediaType
    public var callerId: UserID
    /// Who invited the record's owner; the owner's own id for outgoing calls.
    public var inviterId: UserID
    /// Every member of the call, the caller first.
    public var participantIds: [UserID]
    public var chatGroupId: ChatGroupID?
    public var direction: CallDirection
    public var result: CallRecordResult
    /// When the call connected for this user (Unix ms); nil when it never did.
    public var startTime: Int64?
    /// When the call ended for this user (Unix ms).
    public var endTime: Int64
    /// Whole seconds between ``startTime`` and ``endTime``; 0 when never connected.
    public var duration: Int
    /// The end reason this user was given.
    public var endReason: CallEndReason
    /// The record's position for paging; unique and increasing per user (≈ endTime in ms).
    public var syncTime: Int64

    public init(
        callId: CallID, roomId: RoomID, callType: CallType, mediaType: CallMediaType, callerId: UserID,
        inviterId: UserID, participantIds: [UserID], chatGroupId: ChatGroupID? = nil, direction: CallDirection,
        result: CallRecordResult, startTime: Int64?, endTime: Int64, duration: Int, endReason: CallEndReason,
        syncTime: Int64
    ) {
        self.callId = callId
        self.roomId = roomId
        self.callType = callType
        self.mediaType = mediaType
        self.callerId = callerId
        self.inviterId = inviterId
        self.participantIds = participantIds
        self.chatGroupId = chatGroupId
        self.direction = direction
        self.result = result
        self.startTime = startTime
        self.endTime = endTime
        self.duration = duration
        self.endReason = endReason
        self.syncTime = syncTime
    }
}

/// A user's public profile, shown to the people they call.
public struct UserProfile: Codable, Equatable, Sendable {
    public var userId: UserID
    public var nickname: String?
    public var avatarURL: String?

    public init(userId: UserID, nickname: String? = nil, avatarURL: String? = nil) {
        self.userId = userId
        self.nickname = nickname
        self.avatarURL = avatarURL
    }

    /// Longest nickname, in UTF-8 bytes (64 characters of most scripts). Sizes are bytes, not
    /// characters: one "character" can carry thousands of combining marks.
    public static let maxNicknameBytes = 192
    /// Longest avatar URL, in UTF-8 bytes.
    public static let maxAvatarURLBytes = 1024
}

extension UserProfile {
    /// The nickname, when it is text the server accepts now (``String/isBoundedText(maxBytes:)``):
    /// what pushes may show on a lock screen. A nickname saved before a rule refused it is left out
    /// (the app shows the caller's id instead).
    public var displayableNickname: String? {
        nickname.flatMap { $0.isBoundedText(maxBytes: Self.maxNicknameBytes) ? $0 : nil }
    }
}

extension String {
    /// At most `maxBytes` UTF-8 bytes of text that shows what it says: text a client may hand to
    /// others (nicknames, push titles and bodies, platform names) and that every copy of it can
    /// afford. Refused: control characters (C0, DEL, C1), line and paragraph separators (U+2028,
    /// U+2029), and format characters (Unicode general category Cf) — among them the bidirectional
    /// controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C), which reorder what a lock
    /// screen shows, and invisible ones (U+200B, U+2060, U+FEFF, U+00AD, tags), which hide text.
    /// Allowed of Cf: the zero-width joiner and non-joiner (U+200D, U+200C), which emoji sequences
    /// and several scripts need and which neither reorder nor hide anything.
    public func isBoundedText(maxBytes: Int) -> Bool {
        utf8.count <= maxBytes && unicodeScalars.allSatisfy(Self.isShownAsWritten)
    }

    private static func isShownAsWritten(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: return false
        case 0x200C, 0x200D: return true
        default: break
        }
        switch scalar.properties.generalCategory {
        case .format, .lineSeparator, .paragraphSeparator: return false
        default: return true
        }
    }
}
