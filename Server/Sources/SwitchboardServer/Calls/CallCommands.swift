import SwitchboardProtocol

/// A request to place a call, as the node that took it saw it: the caller's request, the app's
/// settings and the profiles to show. What the decision needs to know about the invitees comes
/// beside it (``CallFacts``).
struct StartCallCommand: Equatable, Sendable {
    var caller: UserKey
    var device: DeviceID
    var callId: CallID
    /// Used when the request names no roomId.
    var generatedRoomId: RoomID
    var request: StartCallRequest
    var settings: AppSettings
    /// Nicknames and avatars to show, for the caller and invitees that have them.
    var profiles: [UserID: UserProfile]
}

/// Invitations into a call in progress, as the node that took them saw them (``StartCallCommand``).
struct InviteCommand: Equatable, Sendable {
    var command: CallCommand
    var invitees: [UserID]
    var settings: AppSettings
    var profiles: [UserID: UserProfile]
}

/// A user joining a group call by themselves.
struct JoinCommand: Equatable, Sendable {
    var command: CallCommand
    var settings: AppSettings
    var profile: UserProfile?
}

/// A device taking its user's call onto itself, with the app's settings (whether it may without
/// an offer: ``AppSettings/callPull``).
struct TakeCommand: Equatable, Sendable, Codable {
    var command: CallCommand
    var settings: AppSettings
}

/// A member starting (or stopping) the call's recording, with the app's settings (its policy).
struct RecordingCommand: Equatable, Sendable, Codable {
    var command: CallCommand
    var settings: AppSettings
    var start: Bool
}

// MARK: - between nodes
//
// The call requests travel between cluster nodes (a node forwards them to the leader) as JSON.
// Before the engine's facts (``CallFacts``) went beside the request, the requests carried them as
// fields the leader overwrote, and a leader of that version requires them. So they are still
// written, empty, for such a leader during a rolling deploy, and ignored when read: every leader
// looks them up itself.

extension StartCallCommand: Codable {
    private enum CodingKeys: String, CodingKey {
        case caller, device, callId, generatedRoomId, request, settings, profiles
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(caller, forKey: .caller)
        try container.encode(device, forKey: .device)
        try container.encode(callId, forKey: .callId)
        try container.encode(generatedRoomId, forKey: .generatedRoomId)
        try container.encode(request, forKey: .request)
        try container.encode(settings, forKey: .settings)
        try container.encode(profiles, forKey: .profiles)
        try LegacyFacts.encodeInvitees(to: encoder)
    }
}

extension InviteCommand: Codable {
    private enum CodingKeys: String, CodingKey {
        case command, invitees, settings, profiles
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(command, forKey: .command)
        try container.encode(invitees, forKey: .invitees)
        try container.encode(settings, forKey: .settings)
        try container.encode(profiles, forKey: .profiles)
        try LegacyFacts.encodeInvitees(to: encoder)
    }
}

extension JoinCommand: Codable {
    private enum CodingKeys: String, CodingKey {
        case command, settings, profile
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(command, forKey: .command)
        try container.encode(settings, forKey: .settings)
        try container.encodeIfPresent(profile, forKey: .profile)
        var legacy = encoder.container(keyedBy: LegacyFacts.self)
        try legacy.encode(false, forKey: .isChatGroupMember)
    }
}

/// The facts a leader of before ``CallFacts`` reads from a request, written empty.
private enum LegacyFacts: String, CodingKey {
    case online, blockedBy, pushable, isChatGroupMember

    static func encodeInvitees(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: LegacyFacts.self)
        let none: Set<UserID> = []
        try container.encode(none, forKey: .online)
        try container.encode(none, forKey: .blockedBy)
        try container.encode(none, forKey: .pushable)
    }
}
