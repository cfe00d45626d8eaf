import SwitchboardProtocol

/// How the views name a member: their nickname, or their user id when they have none (an empty
/// nickname counts as none).
func displayName(nickname: String?, userId: UserID) -> String {
    nickname.flatMap { $0.isEmpty ? nil : $0 } ?? userId.rawValue
}

extension CallParticipantInfo {
    /// The member's name as the views show it (``displayName(nickname:userId:)``).
    public var displayName: String { Switchboard.displayName(nickname: nickname, userId: userId) }
}

extension CallParticipant {
    /// The member's name as the views show it (``displayName(nickname:userId:)``).
    public var displayName: String { Switchboard.displayName(nickname: nickname, userId: userId) }
}
