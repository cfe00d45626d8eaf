import SwitchboardProtocol

extension CallStore {
    /// What a server event does beside changing the state: the events the app hears, in order,
    /// and the camera to turn on or off (an agreed switch of media type: CallPlus turns the camera
    /// off with audio and on with video).
    struct Reduction: Equatable, Sendable {
        var events: [CallStoreEvent] = []
        var camera: Bool?
        /// A call to hang up: the server resumed one this device had heard end.
        var hangUp: CallID?
    }
}

extension CallStore.State {
    /// The call rules of this device's store: how a server event changes the calls it tracks.
    /// Pure (the store publishes the state and the events and turns the camera); the public fields
    /// are recomputed after it (``refresh()``).
    mutating func reduce(_ event: ServerEvent) -> CallStore.Reduction {
        switch event {
        case .callReceived(let e):
            let isNew = calls[e.call.callId] == nil
            track(Tracked(info: e.call, direction: .incoming, inviterId: e.inviterId))
            guard isNew else { return CallStore.Reduction() }
            return CallStore.Reduction(events: [
                .onCallReceived(
                    callId: e.call.callId, callerId: e.call.callerId, inviterId: e.inviterId,
                    mediaType: e.call.mediaType, userData: e.call.userData)
            ])
        case .callStarted(let e):
            if let refused = refuseResumption(of: e.call) { return refused }
            var events = followed(e.call)
            if calls[e.call.callId]?.announcedStart == false, let start = e.call.startTime {
                calls[e.call.callId]?.announcedStart = true
                events.append(.onCallStarted(callId: e.call.callId, mediaType: e.call.mediaType, startTime: start))
            }
            return CallStore.Reduction(events: events)
        case .callUpdated(let e):
            if let refused = refuseResumption(of: e.call) { return refused }
            return CallStore.Reduction(events: followed(e.call))
        case .callEnded(let e):
            // Ends of calls this device never knew (replayed after a login) are not news.
            guard forget(e.callId) else { return CallStore.Reduction() }
            heardEnded.append(e.callId)
            if heardEnded.count > Self.heardEndedLimit { heardEnded.removeFirst() }
            return CallStore.Reduction(events: [
                .onCallEnded(callId: e.callId, mediaType: e.mediaType, reason: e.reason, userId: e.userId)
            ])
        case .callsSynced(let e):
            // After a login everything missed has been replayed: a call still shown but not
            // listed ended longer ago than the server remembers.
            let current = Set(e.callIds)
            let stale = arrival.filter { !current.contains($0) }
            let events = stale.compactMap { id -> CallStoreEvent? in
                guard let mediaType = calls[id]?.info.mediaType, forget(id) else { return nil }
                return .onCallEnded(callId: id, mediaType: mediaType, reason: .endByServer, userId: nil)
            }
            let elsewhere = Set(e.elsewhereCallIds)
            callsOnOtherDevices.removeAll { !elsewhere.contains($0.callId) }
            return CallStore.Reduction(events: events)
        case .callRecord(let e):
            return CallStore.Reduction(events: [.onCallRecord(e.record)])
        case .deviceChanged(let e):
            let wasSharing = calls[e.callId]?.info.participant(e.userId)?.screenSharing ?? false
            updateParticipant(e.callId, e.userId) {
                $0.microphoneOn = e.microphoneOn
                $0.cameraOn = e.cameraOn
                $0.screenSharing = e.screenSharing ? true : nil
            }
            var events: [CallStoreEvent] = [
                .onRemoteDeviceChanged(callId: e.callId, userId: e.userId, microphoneOn: e.microphoneOn, cameraOn: e.cameraOn)
            ]
            if wasSharing != e.screenSharing {
                events.append(.onRemoteScreenShareChanged(callId: e.callId, userId: e.userId, sharing: e.screenSharing))
            }
            return CallStore.Reduction(events: events)
        case .memberStatus(let e):
            updateParticipant(e.callId, e.userId) {
                $0.networkQuality = e.networkQuality == .unknown ? nil : e.networkQuality
                $0.volumeLevel = e.volumeLevel
            }
            let quality = calls[e.callId]?.quality(of: e.userId, reported: e.networkQuality) ?? e.networkQuality
            return CallStore.Reduction(events: [
                .onMemberStatusChanged(callId: e.callId, userId: e.userId, networkQuality: quality, volumeLevel: e.volumeLevel)
            ])
        case .memberStats(let e):
            // Only members in the call report; the table has one entry per member at most.
            guard calls[e.callId]?.info.participant(e.userId) != nil else { return CallStore.Reduction() }
            calls[e.callId]?.statistics[e.userId] = MemberStatistics(
                packetLoss: e.packetLoss, rtt: e.rtt, bitrate: e.bitrate, audioLevel: e.audioLevel)
            return CallStore.Reduction()
        case .mediaTypeChangeRequested(let e):
            mediaTypeChange = MediaTypeChange(
                callId: e.callId, transactionId: e.transactionId, mediaType: e.mediaType, requesterId: e.userId)
            return CallStore.Reduction(events: [
                .onMediaTypeChangeRequested(
                    callId: e.callId, transactionId: e.transactionId, mediaType: e.mediaType, userId: e.userId)
            ])
        case .mediaTypeChangeResult(let e):
            if mediaTypeChange?.transactionId == e.transactionId { mediaTypeChange = nil }
            return CallStore.Reduction(
                events: [
                    .onMediaTypeChangeResult(
                        callId: e.callId, transactionId: e.transactionId, mediaType: e.mediaType, userId: e.userId,
                        result: e.result)
                ],
                camera: e.result == .agreed ? e.mediaType == .video : nil)
        case .callElsewhere(let e):
            // This device was in the call and another of the user's has it now: it moved while
            // this one was away (its `callMoved` was missed): the same as hearing it.
            if e.active, let device = deviceId, e.deviceId != device,
                calls[e.call.callId]?.info.participant(userId)?.status == .accept
            {
                return CallStore.Reduction(
                    events: moved(CallMovedEvent(call: e.call, fromDeviceId: device, toDeviceId: e.deviceId)))
            }
            callsOnOtherDevices.removeAll { $0.callId == e.call.callId }
            if e.active { callsOnOtherDevices.append(e.call) }
            return CallStore.Reduction(events: [.onCallElsewhere(callId: e.call.callId, deviceId: e.deviceId, active: e.active)])
        case .callMoveOffered(let e):
            moveOffers.removeAll { $0.call.callId == e.call.callId }
            moveOffers.append(CallMoveOffer(call: e.call, fromDeviceId: e.fromDeviceId, expiresAt: e.expiresAt))
            if moveOffers.count > Self.moveOfferLimit { moveOffers.removeFirst() }
            return CallStore.Reduction(events: [
                .onCallMoveOffered(callId: e.call.callId, fromDeviceId: e.fromDeviceId, expiresAt: e.expiresAt)
            ])
        case .callMoveOfferEnded(let e):
            guard moveOffers.contains(where: { $0.call.callId == e.callId }) else { return CallStore.Reduction() }
            moveOffers.removeAll { $0.call.callId == e.callId }
            return CallStore.Reduction(events: [.onCallMoveOfferEnded(callId: e.callId, reason: e.reason)])
        case .callMoved(let e):
            return CallStore.Reduction(events: moved(e))
        case .memberMoved(let e):
            guard calls[e.callId] != nil else { return CallStore.Reduction() }
            return CallStore.Reduction(events: [.onMemberMoved(callId: e.callId, userId: e.userId)])
        case .recordingStarted(let e):
            // Heard once: a snapshot that said so first (a response, an update) already told.
            guard let call = calls[e.callId], call.info.recording != e.recording else { return CallStore.Reduction() }
            calls[e.callId]?.info.recording = e.recording
            return CallStore.Reduction(events: [
                .onRecordingStarted(callId: e.callId, startedBy: e.recording.startedBy, startedAt: e.recording.startedAt)
            ])
        case .recordingStopped(let e):
            guard calls[e.callId]?.info.recording != nil else { return CallStore.Reduction() }
            calls[e.callId]?.info.recording = nil
            return CallStore.Reduction(events: [.onRecordingStopped(callId: e.callId, stoppedBy: e.stoppedBy)])
        case .sessionEnded, .mediaSignal, .sfuSession, .sfuSignal:
            // Media signals go to the media coordinator (SwitchboardClient routes them).
            return CallStore.Reduction()
        }
    }

    /// The user's call moved between devices: here (it becomes this device's call, connected as
    /// it was), or away from here (forgotten without an end: it goes on on the other device), or
    /// between two others (shown on the new one).
    private mutating func moved(_ e: CallMovedEvent) -> [CallStoreEvent] {
        let id = e.call.callId
        moveOffers.removeAll { $0.call.callId == id }
        callsOnOtherDevices.removeAll { $0.callId == id }
        if e.toDeviceId == deviceId {
            if calls[id] == nil {
                let direction: CallDirection = e.call.callerId == userId ? .outgoing : .incoming
                track(Tracked(info: e.call, direction: direction, inviterId: e.call.participant(userId)?.inviterId ?? e.call.callerId))
                // It connected long ago, on the other device.
                calls[id]?.announcedStart = e.call.startTime != nil
            } else {
                _ = update(with: e.call)
            }
        } else {
            if e.fromDeviceId == deviceId { _ = forget(id) }
            callsOnOtherDevices.append(e.call)
        }
        return [.onCallMoved(callId: id, fromDeviceId: e.fromDeviceId, toDeviceId: e.toDeviceId)]
    }

    /// The snapshot in the answer to this user's own `call.stopRecording`: the stop is theirs,
    /// which the snapshot alone does not say (the server's `recordingStopped` may come after it,
    /// and is then not news).
    mutating func recordingStopped(_ call: CallInfo) -> [CallStoreEvent] {
        var events: [CallStoreEvent] = []
        if call.recording == nil, calls[call.callId]?.info.recording != nil {
            calls[call.callId]?.info.recording = nil
            events.append(.onRecordingStopped(callId: call.callId, stoppedBy: userId))
        }
        return events + update(with: call)
    }

    /// A snapshot of a call: tracked if new (a call this device learns of from its start or an
    /// update, such as a call it placed from another device), else the events of what changed.
    private mutating func followed(_ call: CallInfo) -> [CallStoreEvent] {
        let me = userId
        guard calls[call.callId] != nil else {
            let direction: CallDirection = call.callerId == me ? .outgoing : .incoming
            track(Tracked(info: call, direction: direction, inviterId: call.participant(me)?.inviterId ?? call.callerId))
            return []
        }
        return update(with: call)
    }
}

extension CallStore.State {
    /// A call this device does not track but heard end, coming back as going on: the server lost
    /// its end (a node killed in the moment between telling the members and storing it resumes
    /// the call as it last stored it). The members heard the end, so the device hangs it up
    /// rather than show it again; the server then ends it and writes its records. A call the user
    /// takes part in again (a join, a take, a new invitation) comes through its own request or
    /// `callReceived`, never through this.
    func refuseResumption(of call: CallInfo) -> CallStore.Reduction? {
        guard calls[call.callId] == nil, heardEnded.contains(call.callId) else { return nil }
        return CallStore.Reduction(hangUp: call.callId)
    }
}
