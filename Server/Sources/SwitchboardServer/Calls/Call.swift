import SwitchboardProtocol

extension CallStateMachine {
    /// One member of a call, through its phases: ringing (invited, not answered), joined (the
    /// caller from the start, a callee once they answered) and left. Each phase carries what only
    /// it has, so a ringing member has no device and a joined one always has one.
    ///
    /// On the wire a joined member is `waiting` until the call connects (two members joined), then
    /// `accept`; a left member is `none`.
    struct Member: Codable, Equatable, Sendable {
        enum Phase: Codable, Equatable, Sendable {
            /// Invited and not answered. `pushed`: some of the member's devices had no live
            /// connection and rang through a push, so when the ringing stops the push's retries
            /// stop, and a missed call may be announced with an alert push (to the devices still
            /// without a connection then). `deadline`: when it stops ringing (Unix ms), kept so
            /// that a call restored after a restart times out when it would have.
            case ringing(pushed: Bool, deadline: Int64)
            /// Invited by a caller the user blocks, in an app whose blocked callers see a
            /// rejection: to the others the member rings, but the call never reaches the user (no
            /// device hears of it, no push, not on the roster, so not busy for anyone). At
            /// `declineAt` the member declines, as a person who saw the call would; a `deadline`
            /// before that ends the ringing as for anyone. The caller cannot tell it from ringing.
            case screened(declineAt: Int64, deadline: Int64)
            case joined(Presence)
            /// Rejected, missed, never reached, or left after being in the call.
            case left(Departure)
        }

        /// A joined member's place in the call.
        struct Presence: Codable, Equatable, Sendable {
            /// The device that answered (or placed) the call; events for the member go there only.
            var device: DeviceID
            var joinedAt: Int64
            /// The device dropped and the reconnect grace timer runs.
            var isDown = false
            var quality: NetworkQuality = .unknown
            var volume: VolumeLevel?
            /// Shares a screen (a second video track). Optional: journals from before screen
            /// sharing lack it.
            var screenSharing: Bool?
            /// The credit, in ms, for relaying this member's raw statistics, and when it was last
            /// topped up (see ``CallStateMachine/statsRelayInterval``).
            var statsCredit: Int64?
            var statsCreditAt: Int64?
            /// The bytes of media signals this member may still relay (see
            /// ``CallStateMachine/Configuration/relayBytes``); nil until the first signal.
            var relayBudget: TokenBucket?
            /// The member's current session with the SFU, in a call whose media goes through it;
            /// nil until one starts (and when it is to be replaced: a new one starts at once).
            var sfuSession: Int?
            /// The layers of the other members' cameras this member asked for (small when absent).
            var videoLayers: [UserID: VideoLayer]?
            /// The call offered to another of the user's devices, until taken or lapsed.
            var moveOffer: MoveOffer?
        }

        /// The device in the call offers it to another of the user's devices (`to`), or to all
        /// of them (nil), until `expiresAt` (Unix ms).
        struct MoveOffer: Codable, Equatable, Sendable {
            var to: DeviceID?
            var expiresAt: Int64

            /// Whether `device` may take the call by this offer at `now`.
            func admits(_ device: DeviceID, now: Int64) -> Bool {
                now < expiresAt && (to == nil || to == device)
            }

            /// The event that tells the devices it admits (at the offer, and to a device that
            /// logs in while it stands).
            func event(_ call: CallInfo, from device: DeviceID) -> ServerEvent {
                .callMoveOffered(CallMoveOfferedEvent(call: call, fromDeviceId: device, toDeviceId: to, expiresAt: expiresAt))
            }
        }

        /// How a member's part ended.
        struct Departure: Codable, Equatable, Sendable {
            var at: Int64
            var result: CallRecordResult
            var reason: CallEndReason
            /// Who caused it (the `userId` of the member's `callEnded`).
            var by: UserID?
            /// The device the member was in the call on, if they were.
            var device: DeviceID?
            /// An invitee who blocks the caller: the call never reached them, so they get no record
            /// and their devices never hear of it.
            var blocksCaller = false
        }

        let userId: UserID
        /// Who invited this member; nil for the caller and for chat-group members who joined.
        var inviterId: UserID?
        let isCaller: Bool
        var phase: Phase
        var microphoneOn = true
        var cameraOn: Bool
        var profile: UserProfile?
        /// Time spent in the connected call, over every time the member joined.
        var connectedMs: Int64 = 0
        /// When the call first connected for this member.
        var firstConnectedAt: Int64?

        /// Waiting for an answer: ringing, or screened (which nobody else can tell from ringing).
        var isRinging: Bool {
            switch phase {
            case .ringing, .screened: true
            case .joined, .left: false
            }
        }
        var isScreened: Bool { if case .screened = phase { true } else { false } }
        var isJoined: Bool { presence != nil }
        /// Ringing (screened included) or joined.
        var isActive: Bool { departure == nil }
        /// Ringing on the user's devices, or joined: the member is on the roster and hears the
        /// call's events.
        var isReached: Bool { isActive && !isScreened }

        var presence: Presence? {
            if case .joined(let presence) = phase { presence } else { nil }
        }

        var departure: Departure? {
            if case .left(let departure) = phase { departure } else { nil }
        }

        /// The device the member is in the call on, or was when they left.
        var device: DeviceID? {
            switch phase {
            case .ringing, .screened: nil
            case .joined(let presence): presence.device
            case .left(let departure): departure.device
            }
        }

        /// Changes a joined member's presence; nothing for the other phases.
        mutating func updatePresence(_ change: (inout Presence) -> Void) {
            guard case .joined(var presence) = phase else { return }
            change(&presence)
            phase = .joined(presence)
        }
    }

    /// A media-type change waiting for the other member's answer.
    struct MediaChange: Codable, Equatable, Sendable {
        let id: TransactionID
        let requester: UserID
        let mediaType: CallMediaType
    }

    /// A call in progress; journaled as JSON so that a restart after a crash can end it properly.
    ///
    /// It ends when fewer than two members are joined and nobody is ringing, or when the caller
    /// hangs up before anybody answered (a cancel); then every member has left.
    struct Call: Codable, Equatable, Sendable {
        let id: CallID
        let app: SdkAppID
        let roomId: RoomID
        /// One-to-one until someone is invited into it: then a group call for the rest of its life.
        var type: CallType
        var mediaType: CallMediaType
        let callerId: UserID
        let chatGroupId: ChatGroupID?
        let userData: String?
        let isEphemeral: Bool
        let timeout: Int
        let createdAt: Int64
        /// When the call connected (its second member joined).
        var startTime: Int64?
        var members: [Member]
        var mediaChange: MediaChange?
        /// What the call's pushes carry (the caller's `pushConfig`).
        var pushConfig: PushConfig?
        /// How its media flows: through the SFU once it is a group call on a server with one;
        /// nil, peer to peer.
        var media: CallMediaRoute?
        /// The last SFU session number given out in this call (to any member): sessions are
        /// unique in a call, so a signal of a member's earlier stay never matches a later one.
        var sfuSessions: Int?
        /// The number of the call's last webhook event (``CallStateMachine/notify(of:now:out:_:)``).
        /// Journaled with the call, so a call restored after a restart numbers on without reusing
        /// one. Optional: journals from before webhooks lack it.
        var eventSequence: Int?
        /// The recording under way (``CallStateMachine/reconcileRecording(_:now:out:)``); nil: none.
        var recording: Recording?
        /// Recordings made so far in this call (each a "take", numbered from 1; nil: none yet).
        var recordingTakes: Int?

        func index(of user: UserID) -> Int? { members.firstIndex { $0.userId == user } }
        var joinedCount: Int { members.count(where: \.isJoined) }
        var ringingCount: Int { members.count(where: \.isRinging) }
        var activeCount: Int { members.count(where: \.isActive) }
        /// Fewer than two members in the call and nobody ringing, or nobody in the call at all
        /// (ringing into an empty call would connect nobody).
        var isOver: Bool { joinedCount == 0 || (joinedCount < 2 && ringingCount == 0) }
        /// Every member has left.
        var isEnded: Bool { activeCount == 0 }

        func key(_ member: Member) -> UserKey { UserKey(app: app, user: member.userId) }

        /// A joined member hears about the call on the device that answered; a ringing one on all;
        /// a screened one nowhere (nil).
        func recipient(_ member: Member) -> Recipient? {
            guard !member.isScreened else { return nil }
            return member.device.map { .device(key(member), $0) } ?? .user(key(member))
        }

        /// The wire snapshot of the call.
        var info: CallInfo {
            CallInfo(
                callId: id, roomId: roomId, callType: type, mediaType: mediaType, callerId: callerId,
                chatGroupId: chatGroupId, userData: userData, isEphemeral: isEphemeral, timeout: timeout,
                createdAt: createdAt, startTime: startTime,
                participants: members.map { member in
                    let presence = member.presence
                    return CallParticipant(
                        userId: member.userId, status: status(of: member), inviterId: member.inviterId,
                        microphoneOn: member.microphoneOn, cameraOn: member.cameraOn,
                        endReason: member.departure?.reason, nickname: member.profile?.nickname,
                        avatarURL: member.profile?.avatarURL,
                        networkQuality: presence.flatMap { $0.quality == .unknown ? nil : $0.quality },
                        volumeLevel: presence?.volume,
                        screenSharing: presence?.screenSharing == true ? true : nil)
                }, media: media,
                recording: recording.map { CallRecordingState(startedBy: $0.startedBy, startedAt: $0.startedAt) })
        }

        /// Makes it a group call (for the rest of its life), through the SFU when the server has one.
        mutating func becomeGroup(sfu: Bool) {
            type = .group
            if sfu { media = .sfu }
        }

        /// Whether its members' media goes through the SFU now: an SFU call, connected.
        var isSFUActive: Bool { media == .sfu && startTime != nil }

        func status(of member: Member) -> CallParticipantStatus {
            switch member.phase {
            case .ringing, .screened: .waiting
            case .joined: startTime == nil ? .waiting : .accept
            case .left: .none
            }
        }

        /// The records of an ended call, one per member but those who block the caller.
        func records(now: Int64) -> [RecordDraft] {
            let participantIds = members.map(\.userId)
            return members.filter { $0.departure?.blocksCaller != true }.map { member in
                let departure = member.departure
                return RecordDraft(
                    owner: key(member),
                    record: CallRecord(
                        callId: id, roomId: roomId, callType: type, mediaType: mediaType, callerId: callerId,
                        inviterId: member.inviterId ?? callerId, participantIds: participantIds,
                        chatGroupId: chatGroupId, direction: member.isCaller ? .outgoing : .incoming,
                        result: member.firstConnectedAt != nil ? .answered : departure?.result ?? .unknown,
                        startTime: member.firstConnectedAt, endTime: departure?.at ?? now,
                        duration: Int(member.connectedMs / 1000), endReason: departure?.reason ?? .unknown,
                        syncTime: 0))
            }
        }

        /// What an unanswered call was for its caller, by the reason it ended.
        static func unconnectedCallerResult(_ reason: CallEndReason) -> CallRecordResult {
            switch reason {
            case .reject, .otherDeviceReject: .rejected
            case .noResponse: .noAnswer
            case .lineBusy: .busy
            case .offline: .offline
            case .canceled, .endByServer, .hangup: .canceled
            case .unknown, .otherDeviceAccepted: .unknown
            }
        }
    }
}

extension CallStateMachine {
    /// A call's recording under way: one "take", from a start to a stop or the call's end. The
    /// SFU records each member's tracks into files named after the take
    /// (``SFUMemberSession/recordingTake``); when it ends the take is stored for conversion
    /// (``RecordingTake``).
    struct Recording: Codable, Equatable, Sendable {
        let take: Int
        /// Who started it; nil when the app records every call.
        let startedBy: UserID?
        let startedAt: Int64
        /// Every member who was in the call while it was recorded, in the order they came.
        var members: [UserID]
    }
}
