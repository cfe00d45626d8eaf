import SwitchboardProtocol

extension CallStore {
    /// The store's one state value (STYLE habit 6).
    public struct State: Equatable, Sendable {
        /// The call on screen: the one you are in, else the newest one ringing; nil when idle.
        public var activeCall: ActiveCall?
        /// You, in the active call (`none` when idle).
        public var selfInfo: CallParticipantInfo
        /// Every member of the active call, you included, the caller first.
        public var allParticipants: [CallParticipantInfo]
        /// The member other than you who is speaking loudest in the active call (the pip layout
        /// shows them); it stays on the last speaker through silence.
        public var activeSpeakerId: UserID?
        /// Calls ringing while you are in another one (call waiting), newest last.
        public var waitingCalls: [CallInfo]
        /// An open media-type change in the active call.
        public var mediaTypeChange: MediaTypeChange?
        /// Calls you are in on another of your devices.
        public var callsOnOtherDevices: [CallInfo]
        /// Calls another of your devices offers to this one, oldest first (at most
        /// ``moveOfferLimit``).
        public var moveOffers: [CallMoveOffer] = []
        /// Most offers kept: the oldest goes first.
        static let moveOfferLimit = 16

        /// Every call this device takes part in, by id.
        /// Whose state this is: the user logged in (the store's rules read it; `selfInfo` is
        /// recomputed from it).
        var userId: UserID
        /// This device, as the server knows it (nil before the first login).
        var deviceId: DeviceID?
        var calls: [CallID: Tracked] = [:]
        /// The calls this device heard end, newest last (at most ``heardEndedLimit``): one the
        /// server resumes afterwards (a node that died before storing the end came back with the
        /// call as it last stored it) is hung up, not shown again.
        var heardEnded: [CallID] = []
        static let heardEndedLimit = 32
        /// The order calls arrived in, to pick the newest.
        var arrival: [CallID] = []
        /// Your own quality and volume, from your reports.
        var ownStatus: OwnStatus?

        struct OwnStatus: Equatable, Sendable {
            var quality: NetworkQuality
            var volume: VolumeLevel
            var statistics: MemberStatistics
        }

        struct Tracked: Equatable, Sendable {
            var info: CallInfo
            var direction: CallDirection
            var inviterId: UserID
            var announcedStart = false
            /// The other members' last raw statistics (`memberStats`).
            var statistics: [UserID: MemberStatistics] = [:]
            /// Members this device has no media path to (its connection to them gave up restarting
            /// ICE): their network quality shows `down`, whatever their own reports say.
            var unreachable: Set<UserID> = []
            /// Members whose media stopped arriving here (``MediaStallWatch``): `down` too, until
            /// packets come again.
            var stalled: Set<UserID> = []

            /// The quality to show for `userId`, given what they report.
            func quality(of userId: UserID, reported: NetworkQuality?) -> NetworkQuality {
                unreachable.contains(userId) || stalled.contains(userId) ? .down : reported ?? .unknown
            }
        }

        /// A state as the store would publish it, for previews of call views and for tests of view
        /// logic; the store makes its own.
        public init(
            activeCall: ActiveCall?, selfInfo: CallParticipantInfo, allParticipants: [CallParticipantInfo],
            activeSpeakerId: UserID? = nil, waitingCalls: [CallInfo] = [], mediaTypeChange: MediaTypeChange? = nil,
            callsOnOtherDevices: [CallInfo] = []
        ) {
            self.activeCall = activeCall
            self.selfInfo = selfInfo
            self.allParticipants = allParticipants
            self.activeSpeakerId = activeSpeakerId
            self.waitingCalls = waitingCalls
            self.mediaTypeChange = mediaTypeChange
            self.callsOnOtherDevices = callsOnOtherDevices
            self.userId = selfInfo.userId
        }

        init(userId: UserID) {
            self.userId = userId
            self.activeCall = nil
            self.selfInfo = CallParticipantInfo(userId: userId)
            self.allParticipants = []
            self.activeSpeakerId = nil
            self.waitingCalls = []
            self.mediaTypeChange = nil
            self.callsOnOtherDevices = []
        }
    }
}

extension CallStore.State {
    /// An `onCallReceived` for each call ringing for you, oldest first.
    var ringingCalls: [CallStoreEvent] {
        arrival.compactMap { id -> CallStoreEvent? in
            guard let call = calls[id], call.direction == .incoming,
                call.info.participant(selfInfo.userId)?.status == .waiting
            else { return nil }
            return .onCallReceived(
                callId: id, callerId: call.info.callerId, inviterId: call.inviterId, mediaType: call.info.mediaType,
                userData: call.info.userData)
        }
    }

    /// Stops tracking a call; false when it was not tracked.
    mutating func forget(_ callId: CallID) -> Bool {
        guard calls.removeValue(forKey: callId) != nil else { return false }
        arrival.removeAll { $0 == callId }
        if mediaTypeChange?.callId == callId { mediaTypeChange = nil }
        return true
    }

    mutating func track(_ call: Tracked) {
        if calls[call.info.callId] == nil { arrival.append(call.info.callId) }
        var call = call
        call.announcedStart = calls[call.info.callId]?.announcedStart ?? false
        calls[call.info.callId] = call
    }

    /// Replaces a tracked call's snapshot, returning an event for each member whose status changed,
    /// for the other members in the call each change of device or of status report, and a start or
    /// stop of the recording.
    mutating func update(with info: CallInfo) -> [CallStoreEvent] {
        let selfId = userId
        guard let old = calls[info.callId]?.info else { return [] }
        calls[info.callId]?.info = info
        var events: [CallStoreEvent] = []
        for participant in info.participants {
            let before = old.participant(participant.userId)
            if before?.status != participant.status {
                events.append(
                    .onParticipantStatusChanged(
                        callId: info.callId, userId: participant.userId, status: participant.status,
                        reason: participant.endReason))
            }
            // What the snapshot says of the others that their events would have said: a device
            // that was away (a reconnect, a server restart) learns what it missed.
            guard let before, participant.userId != selfId, participant.status == .accept else { continue }
            if before.microphoneOn != participant.microphoneOn || before.cameraOn != participant.cameraOn {
                events.append(
                    .onRemoteDeviceChanged(
                        callId: info.callId, userId: participant.userId, microphoneOn: participant.microphoneOn,
                        cameraOn: participant.cameraOn))
            }
            if (before.screenSharing ?? false) != (participant.screenSharing ?? false) {
                events.append(
                    .onRemoteScreenShareChanged(
                        callId: info.callId, userId: participant.userId, sharing: participant.screenSharing ?? false))
            }
            if before.networkQuality != participant.networkQuality || before.volumeLevel != participant.volumeLevel {
                let quality = calls[info.callId]?.quality(of: participant.userId, reported: participant.networkQuality)
                events.append(
                    .onMemberStatusChanged(
                        callId: info.callId, userId: participant.userId,
                        networkQuality: quality ?? .unknown, volumeLevel: participant.volumeLevel ?? .mute))
            }
        }
        // The recording too: a snapshot may tell of it before its event, or instead (a device that
        // was away); the event that follows is then not news.
        if old.recording != info.recording {
            if let recording = info.recording {
                events.append(
                    .onRecordingStarted(callId: info.callId, startedBy: recording.startedBy, startedAt: recording.startedAt))
            } else {
                events.append(.onRecordingStopped(callId: info.callId, stoppedBy: nil))
            }
        }
        return events
    }

    /// Changes one participant of a tracked call's snapshot.
    mutating func updateParticipant(_ callId: CallID, _ userId: UserID, _ change: (inout CallParticipant) -> Void) {
        guard let index = calls[callId]?.info.participants.firstIndex(where: { $0.userId == userId }) else { return }
        change(&calls[callId]!.info.participants[index])
    }

    /// Recomputes the public fields from the tracked calls.
    mutating func refresh() {
        let selfId = userId
        func isIn(_ call: Tracked) -> Bool {
            guard let me = call.info.participant(selfId) else { return false }
            return me.status == .accept || (call.direction == .outgoing && me.status == .waiting)
        }
        let ordered = arrival.compactMap { calls[$0] }
        let current = ordered.last(where: isIn) ?? ordered.last
        guard let current else {
            activeCall = nil
            selfInfo = CallParticipantInfo(userId: selfId)
            allParticipants = []
            activeSpeakerId = nil
            waitingCalls = []
            mediaTypeChange = nil
            ownStatus = nil
            return
        }
        let duration = activeCall?.callId == current.info.callId ? activeCall?.duration ?? 0 : 0
        activeCall = ActiveCall(
            info: current.info, direction: current.direction, inviterId: current.inviterId,
            duration: current.info.startTime == nil ? 0 : duration)
        allParticipants = current.info.participants.map { participant in
            var info = CallParticipantInfo(participant)
            info.statistics = current.statistics[participant.userId]
            info.networkQuality = current.quality(of: participant.userId, reported: info.networkQuality)
            return info
        }
        if let ownStatus, let index = allParticipants.firstIndex(where: { $0.userId == selfId }) {
            allParticipants[index].networkQuality = ownStatus.quality
            allParticipants[index].volumeLevel = ownStatus.volume
            allParticipants[index].statistics = ownStatus.statistics
        }
        selfInfo = allParticipants.first { $0.userId == selfId } ?? CallParticipantInfo(userId: selfId)
        waitingCalls = ordered.filter { $0.info.callId != current.info.callId }.map(\.info)
        activeSpeakerId = Self.speaker(allParticipants, previous: activeSpeakerId, selfId: selfId)
    }

    /// The loudest other member in the call; through silence (or a tie) the previous speaker stays.
    static func speaker(_ participants: [CallParticipantInfo], previous: UserID?, selfId: UserID) -> UserID? {
        let others = participants.filter { $0.userId != selfId && $0.status == .accept }
        guard !others.isEmpty else { return nil }
        let loudest = others.max { $0.volumeLevel < $1.volumeLevel }!
        if let previous, let current = others.first(where: { $0.userId == previous }),
            current.volumeLevel >= loudest.volumeLevel || loudest.volumeLevel == .mute
        {
            return previous
        }
        return loudest.volumeLevel == .mute ? others.first?.userId : loudest.userId
    }
}
