import SwitchboardProtocol

/// What members tell each other through the server while in a call: microphone and camera state,
/// WebRTC signals, and network quality and volume from their status reports, with the reports'
/// raw figures.
extension CallStateMachine {
    mutating func updateDevice(
        _ command: CallCommand, microphoneOn: Bool?, cameraOn: Bool?, screenSharing: Bool?, out: inout CallOutput
    ) {
        switch lookup(command, .joinedDevice) {
        case .failure(let error):
            out.answer(.failure(error))
        case .success(let (found, index)):
            var call = found
            if let microphoneOn { call.members[index].microphoneOn = microphoneOn }
            if let cameraOn { call.members[index].cameraOn = cameraOn }
            if let screenSharing { call.members[index].updatePresence { $0.screenSharing = screenSharing } }
            let volume = call.members[index].presence?.volume
            let mutedNow = microphoneOn == false && volume != nil && volume != .mute
            if mutedNow { call.members[index].updatePresence { $0.volume = .mute } }
            calls[call.id] = call
            out.answer(.ok)
            let member = call.members[index]
            let event = ServerEvent.deviceChanged(
                DeviceChangedEvent(
                    callId: call.id, userId: member.userId, microphoneOn: member.microphoneOn, cameraOn: member.cameraOn,
                    screenSharing: member.presence?.screenSharing == true))
            for other in call.members where other.isActive && other.userId != member.userId {
                out.send(event, to: other, of: call)
            }
            if mutedNow { broadcastStatus(of: member, in: call, out: &out) }
        }
    }

    /// Takes `bytes` from the member's relay budget (``Configuration/relayBytes``), shared by
    /// peer-to-peer and SFU signals; the refusal when the budget has too few. The call is stored
    /// with its budget taken either way.
    mutating func takeRelayBudget(_ bytes: Int, member index: Int, of call: inout Call, now: Int64) -> SwitchboardError? {
        guard let limit = configuration.relayBytes, bytes > 0 else { return nil }
        var wait: Int64?
        call.members[index].updatePresence { presence in
            var budget = presence.relayBudget ?? TokenBucket(limit, now: now)
            wait = budget.take(bytes, limit, now: now)
            presence.relayBudget = budget
        }
        calls[call.id] = call
        guard let wait else { return nil }
        return SwitchboardError(
            .rateLimited,
            "media signals are limited to \(Int64(limit.rate)) bytes a second (bursts of \(limit.burst)); retry in \(wait) ms",
            retryAfter: wait)
    }

    /// Relays a media signal between two members who are both in the call, from the sender's
    /// device in the call to the peer's, within the sender's relay budget
    /// (``Configuration/relayBytes``).
    mutating func mediaSignal(
        _ command: CallCommand, _ signal: SendMediaSignalRequest, now: Int64, out: inout CallOutput
    ) {
        switch lookup(command, .joinedDevice) {
        case .failure(let error):
            out.answer(.failure(error))
        case .success(let (found, index)):
            var call = found
            let sender = call.members[index]
            guard signal.to != sender.userId, let peer = call.index(of: signal.to).map({ call.members[$0] }),
                peer.isJoined
            else {
                out.answer(.failure(SwitchboardError(.peerNotInCall)))
                return
            }
            if let refusal = takeRelayBudget(signal.payloadBytes, member: index, of: &call, now: now) {
                out.answer(.failure(refusal))
                return
            }
            out.answer(.ok)
            let event = MediaSignalEvent(
                callId: call.id, from: sender.userId, kind: signal.kind, sdp: signal.sdp, candidate: signal.candidate)
            out.send(.mediaSignal(event), to: peer, of: call)
        }
    }

    /// A member's raw statistics reach the others at most once per this many ms on average: each
    /// relay spends this much credit, which grows with time up to ``statsRelayBurst``, so that
    /// reports a second apart pass even when one arrives a little early.
    static let statsRelayInterval: Int64 = 1000
    static let statsRelayBurst: Int64 = 2000

    mutating func statusReport(_ command: CallCommand, _ report: StatusReport, now: Int64, out: inout CallOutput) {
        switch lookup(command, .joinedDevice) {
        case .failure(let error):
            out.answer(.failure(error))
        case .success(let (found, index)):
            guard (0...100).contains(report.packetLoss), report.rtt >= 0, report.bitrate >= 0,
                (0...100).contains(report.audioLevel)
            else {
                out.answer(
                    .failure(
                        SwitchboardError(.invalidParams, "packetLoss and audioLevel must be 0-100, rtt and bitrate >= 0")))
                return
            }
            var call = found
            let member = call.members[index]
            let quality = NetworkQuality.from(packetLoss: report.packetLoss, rtt: report.rtt)
            let volume = VolumeLevel.from(audioLevel: report.audioLevel, microphoneOn: member.microphoneOn)
            out.answer(.ok)
            let levelsChanged = quality != member.presence?.quality || volume != member.presence?.volume
            var relayStats = false
            call.members[index].updatePresence { presence in
                presence.quality = quality
                presence.volume = volume
                let elapsed = max(0, now - (presence.statsCreditAt ?? now))
                var credit = min(Self.statsRelayBurst, (presence.statsCredit ?? Self.statsRelayInterval) + elapsed)
                relayStats = credit >= Self.statsRelayInterval
                if relayStats { credit -= Self.statsRelayInterval }
                presence.statsCredit = credit
                presence.statsCreditAt = now
            }
            calls[call.id] = call
            if levelsChanged { broadcastStatus(of: call.members[index], in: call, out: &out) }
            guard relayStats else { return }
            let stats = ServerEvent.memberStats(
                MemberStatsEvent(
                    callId: call.id, userId: member.userId, packetLoss: report.packetLoss, rtt: report.rtt,
                    bitrate: report.bitrate, audioLevel: report.audioLevel))
            for other in call.members where other.isJoined && other.userId != member.userId {
                out.send(stats, to: other, of: call)
            }
        }
    }

    /// Tells the other joined members a joined member's quality and volume.
    func broadcastStatus(of member: Member, in call: Call, out: inout CallOutput) {
        let event = ServerEvent.memberStatus(
            MemberStatusEvent(
                callId: call.id, userId: member.userId, networkQuality: member.presence?.quality ?? .unknown,
                volumeLevel: member.presence?.volume ?? .mute))
        for other in call.members where other.isJoined && other.userId != member.userId {
            out.send(event, to: other, of: call)
        }
    }
}
