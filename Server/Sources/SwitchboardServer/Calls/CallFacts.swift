import SwitchboardProtocol

/// What the call engine looks up for a decision, in one place (``CallEngine``'s `resolve`) and at
/// the moment the decision is made, handed to the state machine beside the request
/// (``CallStateMachine/handle(_:facts:now:)``).
///
/// A request (``StartCallCommand``, ``InviteCommand``, ``JoinCommand``) carries what its sender
/// asked, with the app's settings and the profiles to show that the node which took it read; never
/// a fact about other users. Those change from one moment to the next (a device connects, a push
/// token is registered, someone blocks the caller) and are only true where the call is decided:
/// on a single node, or on the cluster's leader for a request taken by another node.
///
/// Events other than placing a call, inviting and joining need none: they get the empty value.
struct CallFacts: Equatable, Sendable {
    /// Invitees with at least one connected device.
    var online: Set<UserID> = []
    /// Invitees with a device that has no live connection and a ringing push token: those
    /// devices ring through pushes (the user's connected devices ring over their sockets).
    var pushable: Set<UserID> = []
    /// Invitees who block the inviter.
    var blockedBy: Set<UserID> = []
    /// For invitees in `blockedBy`, how long (ms) their screened ringing lasts before they decline
    /// (drawn by the engine; see ``CallStateMachine/Member/Phase/screened(declineAt:deadline:)``).
    var declineDelays: [UserID: Int64] = [:]
    /// Whether the user joining a call is in its chat group.
    var isChatGroupMember = false
    /// Invitees who have received as many invitations as they may for now
    /// (``RateLimits/invitationsPerCallee``): one more does not ring them, and the inviter sees
    /// them offline, as a callee with no device and no push token, never someone else's limit.
    /// Looked at, not taken: the machine counts only the invitations that ring
    /// (``CallAction/countInvitation(_:)``).
    var overBudget: Set<UserID> = []

    /// Invitees the invitation can reach: a connected device or a ringing push token.
    var reachable: Set<UserID> { online.union(pushable) }
}
