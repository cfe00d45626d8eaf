import SwitchboardProtocol

/// The checks a call request passes before it changes anything.
extension CallStateMachine {
    /// Which of a member's devices may make a request about a call.
    ///
    /// A member in the call (joined) is in it on one device, the one that placed or answered it:
    /// requests that act for the member there (hanging up, inviting, device state, status
    /// reports, media signals, media-type changes) are accepted from that device only, so the
    /// user's other devices cannot change what it reports or answer for it.
    enum Standing {
        /// Any device of a member: answering an invitation, which rings on all of them (a member
        /// who already joined is refused by the request itself: `alreadyAccepted`, or hang up
        /// instead of rejecting).
        case anyDevice
        /// Any device while the member rings; once joined, only the device in the call.
        case deviceInCall
        /// Joined, from the device in the call.
        case joinedDevice
    }

    /// The call and the commanding member's index, or the error to answer with. A screened member
    /// (``Member/Phase/screened(declineAt:deadline:)``) is no member to themselves: the call never
    /// reached them.
    func lookup(_ command: CallCommand, _ standing: Standing = .deviceInCall) -> Result<(Call, Int), SwitchboardError> {
        switch findCall(command.callId, app: command.user.app, user: command.user.user) {
        case .failure(let error):
            return .failure(error)
        case .success(let call):
            guard let index = call.index(of: command.user.user), !call.members[index].isScreened else {
                return .failure(SwitchboardError(.notInCall))
            }
            let member = call.members[index]
            if standing == .joinedDevice, !member.isJoined {
                return .failure(SwitchboardError(.invalidCallState, "answer the call first"))
            }
            if standing != .anyDevice, let device = member.presence?.device, device != command.device {
                return .failure(SwitchboardError(.notInCall, "this device is not the one in the call"))
            }
            return .success((call, index))
        }
    }

    func validate(_ command: StartCallCommand) -> SwitchboardError? {
        let request = command.request
        if roster.isInAnyCall(command.caller) {
            return SwitchboardError(.alreadyInCall)
        }
        if let error = Self.validateInvitees(request.participantIds, inviter: command.caller.user) { return error }
        let count = Set(request.participantIds).count + 1
        if count > command.settings.maxParticipants {
            return SwitchboardError(
                .tooManyParticipants, "at most \(command.settings.maxParticipants) members, the caller included")
        }
        let params = request.params ?? CallParams()
        if let timeout = params.timeout, !CallLimits.timeoutRange.contains(timeout) {
            return SwitchboardError(
                .invalidTimeout,
                "timeout must be \(CallLimits.timeoutRange.lowerBound)-\(CallLimits.timeoutRange.upperBound) seconds")
        }
        if let userData = params.userData, userData.utf8.count > CallLimits.maxUserDataBytes {
            return SwitchboardError(.userDataTooLarge, "userData is limited to \(CallLimits.maxUserDataBytes) bytes")
        }
        if let problem = params.pushConfig?.problem { return problem }
        if let roomId = params.roomId, !Self.isValidToken(roomId.rawValue, maxLength: RoomID.maxLength) {
            return SwitchboardError(.invalidRoomID, "roomId must be 1-\(RoomID.maxLength) visible characters")
        }
        if let group = params.chatGroupId,
            !Self.isValidToken(group.rawValue, maxLength: CallLimits.maxChatGroupIDLength)
        {
            return SwitchboardError(
                .invalidChatGroupID, "chatGroupId must be 1-\(CallLimits.maxChatGroupIDLength) visible characters")
        }
        return nil
    }

    /// The call an invitation is for and the invitees it adds (those not already ringing or in
    /// the call), or why it is refused.
    func validate(_ command: InviteCommand) -> Result<(Call, fresh: [UserID]), SwitchboardError> {
        let found: Call
        let index: Int
        switch lookup(command.command) {
        case .failure(let error):
            return .failure(error)
        case .success(let match):
            (found, index) = match
        }
        // Inviting turns a one-to-one call into a group call (SPEC §3), which takes no media-type
        // changes: an open one is answered or cancelled first.
        if found.type == .oneToOne, found.mediaChange != nil {
            return .failure(SwitchboardError(.mediaChangeInProgress, "answer or cancel the media-type change first"))
        }
        guard found.members[index].isJoined else {
            return .failure(SwitchboardError(.invalidCallState, "join the call before inviting"))
        }
        if let error = Self.validateInvitees(command.invitees, inviter: command.command.user.user) {
            return .failure(error)
        }
        // Members already ringing or in the call are left as they are.
        let fresh = Self.deduplicated(command.invitees).filter { id in
            found.index(of: id).map { !found.members[$0].isActive } ?? true
        }
        if found.activeCount + fresh.count > command.settings.maxParticipants {
            return .failure(
                SwitchboardError(.tooManyParticipants, "at most \(command.settings.maxParticipants) members at once"))
        }
        return .success((found, fresh))
    }

    static func validateInvitees(_ invitees: [UserID], inviter: UserID) -> SwitchboardError? {
        if invitees.isEmpty {
            return SwitchboardError(.noParticipants)
        }
        if let bad = invitees.first(where: { !$0.isValid }) {
            return SwitchboardError(.invalidUserID, "participantIds: '\(bad.rawValue.prefix(40))' is not a valid userID")
        }
        if invitees.contains(inviter) {
            return SwitchboardError(.cannotCallSelf)
        }
        return nil
    }

    /// 1…`maxLength` bytes of visible ASCII (no spaces or control characters).
    static func isValidToken(_ value: String, maxLength: Int) -> Bool {
        let bytes = value.utf8
        return !bytes.isEmpty && bytes.count <= maxLength && bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    static func deduplicated(_ ids: [UserID]) -> [UserID] {
        var seen = Set<UserID>()
        return ids.filter { seen.insert($0).inserted }
    }
}
