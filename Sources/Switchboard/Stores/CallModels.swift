import SwitchboardProtocol

/// The call on screen, with a live duration.
public struct ActiveCall: Equatable, Sendable {
    /// The server's snapshot of the call.
    public var info: CallInfo
    /// Whether you placed the call or received it.
    public var direction: CallDirection
    /// Who invited you (yourself for outgoing calls).
    public var inviterId: UserID
    /// Whole seconds since the call connected, on the server's clock (same on every device);
    /// 0 before it connects. Updated every second.
    public var duration: Int

    public init(info: CallInfo, direction: CallDirection, inviterId: UserID, duration: Int = 0) {
        self.info = info
        self.direction = direction
        self.inviterId = inviterId
        self.duration = duration
    }

    public var callId: CallID { info.callId }
    public var roomId: RoomID { info.roomId }
    public var mediaType: CallMediaType { info.mediaType }
    public var callType: CallType { info.callType }
    public var callerId: UserID { info.callerId }
    public var chatGroupId: ChatGroupID? { info.chatGroupId }
    public var userData: String? { info.userData }
    /// When the call connected, Unix ms on the server's clock.
    public var startTime: Int64? { info.startTime }
    /// `sfu` when the call's media goes through the server's SFU; nil: peer to peer.
    public var media: CallMediaRoute? { info.media }
    /// The server records the call now (who started it, when); nil: it does not. Shown to every
    /// member, a ringing one included (their notice before answering).
    public var recording: CallRecordingState? { info.recording }
}

/// One member of the active call, as the call view shows them.
public struct CallParticipantInfo: Equatable, Sendable {
    public var userId: UserID
    public var nickname: String?
    public var avatarURL: String?
    public var status: CallParticipantStatus
    public var microphoneOn: Bool
    public var cameraOn: Bool
    /// Why the member left, once their status is back to `none`.
    public var endReason: CallEndReason?
    /// From the member's status reports; `down` while their connection is dropped.
    public var networkQuality: NetworkQuality
    /// From the member's status reports; `mute` with the microphone off.
    public var volumeLevel: VolumeLevel
    /// The raw figures of the member's last status report that reached this device (about once a
    /// second); yours from your own reports. Nil before the first one.
    public var statistics: MemberStatistics?
    /// The member shares a screen (a second video track, shown as a screen tile).
    public var screenSharing: Bool

    public init(
        userId: UserID, nickname: String? = nil, avatarURL: String? = nil, status: CallParticipantStatus = .none,
        microphoneOn: Bool = false, cameraOn: Bool = false, endReason: CallEndReason? = nil,
        networkQuality: NetworkQuality = .unknown, volumeLevel: VolumeLevel = .mute, statistics: MemberStatistics? = nil,
        screenSharing: Bool = false
    ) {
        self.userId = userId
        self.nickname = nickname
        self.avatarURL = avatarURL
        self.status = status
        self.microphoneOn = microphoneOn
        self.cameraOn = cameraOn
        self.endReason = endReason
        self.networkQuality = networkQuality
        self.volumeLevel = volumeLevel
        self.statistics = statistics
        self.screenSharing = screenSharing
    }

    init(_ participant: CallParticipant) {
        self.init(
            userId: participant.userId, nickname: participant.nickname, avatarURL: participant.avatarURL,
            status: participant.status, microphoneOn: participant.microphoneOn, cameraOn: participant.cameraOn,
            endReason: participant.endReason, networkQuality: participant.networkQuality ?? .unknown,
            volumeLevel: participant.volumeLevel ?? .mute, screenSharing: participant.screenSharing ?? false)
    }
}

/// A member's media statistics as they reported them (CallPlus's status report: packet loss,
/// bitrate and delay per member).
public struct MemberStatistics: Equatable, Sendable {
    /// Packet loss, percent (0–100).
    public var packetLoss: Double
    /// Round-trip time, ms.
    public var rtt: Int
    /// Send bitrate, kbps.
    public var bitrate: Int
    /// Microphone level, 0–100.
    public var audioLevel: Int

    public init(packetLoss: Double, rtt: Int, bitrate: Int, audioLevel: Int) {
        self.packetLoss = packetLoss
        self.rtt = rtt
        self.bitrate = bitrate
        self.audioLevel = audioLevel
    }
}

/// An open request to change a one-to-one call's media type.
public struct MediaTypeChange: Equatable, Sendable {
    public var callId: CallID
    public var transactionId: TransactionID
    /// The media type asked for.
    public var mediaType: CallMediaType
    /// Who asked: you (waiting for the peer) or the peer (waiting for your answer).
    public var requesterId: UserID
}

/// What ``CallStore`` reports as it happens, named as in the reference SDKs.
public enum CallStoreEvent: Equatable, Sendable {
    /// You placed a call from this device; it is ringing at the invitees.
    case onCallPlaced(callId: CallID, participantIds: [UserID], mediaType: CallMediaType)
    /// A call is ringing for you.
    case onCallReceived(callId: CallID, callerId: UserID, inviterId: UserID, mediaType: CallMediaType, userData: String?)
    /// The call connected for you; `startTime` is the server's (Unix ms).
    case onCallStarted(callId: CallID, mediaType: CallMediaType, startTime: Int64)
    /// The call ended for you; `userId` is who ended it (nil when the server did).
    case onCallEnded(callId: CallID, mediaType: CallMediaType, reason: CallEndReason, userId: UserID?)
    /// The server stored your record of a call.
    case onCallRecord(CallRecord)
    /// Another member turned their microphone or camera on or off.
    case onRemoteDeviceChanged(callId: CallID, userId: UserID, microphoneOn: Bool, cameraOn: Bool)
    /// Another member started or stopped sharing a screen (TRTC's sub-stream availability).
    case onRemoteScreenShareChanged(callId: CallID, userId: UserID, sharing: Bool)
    /// A member's status changed (`waiting` → `accept` → `none`); `reason` says why a member left.
    case onParticipantStatusChanged(callId: CallID, userId: UserID, status: CallParticipantStatus, reason: CallEndReason?)
    /// The other member asks to switch media type; answer with ``CallStore/replyMediaTypeChange(transactionId:agree:)``.
    case onMediaTypeChangeRequested(callId: CallID, transactionId: TransactionID, mediaType: CallMediaType, userId: UserID)
    /// A media-type change ended (for both members); `userId` is who asked.
    case onMediaTypeChangeResult(
        callId: CallID, transactionId: TransactionID, mediaType: CallMediaType, userId: UserID,
        result: MediaTypeChangeResult)
    /// Another member's network quality or volume level changed.
    case onMemberStatusChanged(callId: CallID, userId: UserID, networkQuality: NetworkQuality, volumeLevel: VolumeLevel)
    /// You are in a call on another of your devices (`active`), or no longer are.
    case onCallElsewhere(callId: CallID, deviceId: DeviceID, active: Bool)
    /// The device in your call offers it to this one ("continue here"): take it with
    /// ``CallStore/take(callId:)`` before `expiresAt` (Unix ms, server clock). It is in
    /// ``CallStore/State/moveOffers`` meanwhile.
    case onCallMoveOffered(callId: CallID, fromDeviceId: DeviceID, expiresAt: Int64)
    /// An offer to move a call here ended without a move (it lapsed, or another offer replaced it).
    case onCallMoveOfferEnded(callId: CallID, reason: CallMoveOfferEndReason)
    /// Your call moved from one of your devices to another: to this one (it is the active call
    /// here now, connected, with the same id and start time), away from this one (it goes on
    /// there, not ended), or between two others.
    case onCallMoved(callId: CallID, fromDeviceId: DeviceID, toDeviceId: DeviceID)
    /// Another member moved their part of the call to another of their devices: the same member,
    /// whose media starts over.
    case onMemberMoved(callId: CallID, userId: UserID)
    /// The server records the call from now on: `startedBy` started it (nil: the app records
    /// every call), at `startedAt` (Unix ms, server clock). It is in ``ActiveCall/recording``
    /// meanwhile. A call already recorded when this device first hears of it comes with
    /// `recording` in its snapshot and no event.
    case onRecordingStarted(callId: CallID, startedBy: UserID?, startedAt: Int64)
    /// The server stopped recording the call: `stoppedBy` stopped it (nil when this device learnt
    /// it from a snapshot, having missed the stop: a reconnect). A call that ends while recorded
    /// has no stop: its end stops the recording.
    case onRecordingStopped(callId: CallID, stoppedBy: UserID?)
}

/// A call another of your devices offers to this one (``CallStore/State/moveOffers``).
public struct CallMoveOffer: Equatable, Sendable {
    public var call: CallInfo
    /// The device the call is on.
    public var fromDeviceId: DeviceID
    /// When the offer lapses (Unix ms, server clock).
    public var expiresAt: Int64

    public init(call: CallInfo, fromDeviceId: DeviceID, expiresAt: Int64) {
        self.call = call
        self.fromDeviceId = fromDeviceId
        self.expiresAt = expiresAt
    }
}

/// The result of ``CallStore/calls(participantIds:mediaType:params:)``.
public struct CallStartResult: Equatable, Sendable {
    public var callId: CallID
    public var roomId: RoomID
    /// Invitees who were in another call (`lineBusy`).
    public var busyUserIds: [UserID]
}
