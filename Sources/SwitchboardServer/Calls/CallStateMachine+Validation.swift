import SwitchboardProtocol

/// The checks a call request passes before it changes anything.
extension CallStateMachine {
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
