import NIOConcurrencyHelpers
import SwitchboardProtocol

/// The users who block anyone, kept where calls are decided (the node that runs the engine: the
/// single node, or the cluster's leader). Every new call and invitation asks whether an invitee
/// blocks the caller; almost nobody blocks anybody, so the question goes to the database only for
/// the invitees found here.
///
/// A superset of the `blocks` table: read from it whole when the engine's node starts or takes
/// the lead, and a user is added before any block of theirs is answered (``CallRouter/blocks(_:)``,
/// through the leader in a cluster). Unblocks leave the user here: an entry too many costs one
/// lookup, a missing one would let a blocked caller ring, and in a cluster an unblock and a block
/// made on two nodes could arrive in either order. Bounded by the number of users who blocked
/// someone since the table was last read.
final class BlockerIndex: Sendable {
    private let users = NIOLockedValueBox<Set<UserKey>>([])

    /// Everyone who blocks anyone now (the table, read whole).
    func replace(with blockers: [UserKey]) {
        users.withLockedValue { $0 = Set(blockers) }
    }

    func insert(_ user: UserKey) {
        users.withLockedValue { _ = $0.insert(user) }
    }

    /// Those of `candidates` (of `app`) who may block someone.
    func blockers(among candidates: Set<UserID>, app: SdkAppID) -> [UserID] {
        users.withLockedValue { users in
            users.isEmpty ? [] : candidates.filter { users.contains(UserKey(app: app, user: $0)) }.sorted()
        }
    }
}
