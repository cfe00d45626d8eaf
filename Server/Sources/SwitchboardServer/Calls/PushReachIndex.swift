import NIOConcurrencyHelpers
import SwitchboardProtocol

/// The devices that hold a push token that can ring (``PushToken/rings``), kept where calls are
/// decided (the single node, or the cluster's leader). A new call or invitation reads the push
/// tokens of an invitee only when one of these devices has no live connection: a device that is
/// connected rings over its socket, and one without such a token cannot be rung by push, so for
/// most invitations (everyone online, or nobody with a token) the decision needs no database read.
///
/// A superset of the ringing rows of the `push_tokens` table, as ``BlockerIndex`` is of `blocks`:
/// read whole when the engine's node starts or takes the lead, and a device is added before its
/// token's registration is answered (``CallRouter/ringsByPush(_:_:)``, through the leader in a
/// cluster). Tokens unregistered, moved or refused by their service leave their device here: an
/// entry too many costs one read, a missing one would leave a device unrung. Bounded by the
/// devices that registered a ringing token since the table was last read.
final class PushReachIndex: Sendable {
    private let devices = NIOLockedValueBox<[UserKey: Set<DeviceID>]>([:])

    /// Every device with a ringing token now (the table, read whole).
    func replace(with ringing: [(UserKey, DeviceID)]) {
        var table: [UserKey: Set<DeviceID>] = [:]
        for (user, device) in ringing { table[user, default: []].insert(device) }
        devices.withLockedValue { $0 = table }
    }

    func insert(_ user: UserKey, _ device: DeviceID) {
        devices.withLockedValue { _ = $0[user, default: []].insert(device) }
    }

    /// Those of `invitees` (of `app`) with a device that may ring by push and is not among their
    /// `connected` devices: the only invitees whose tokens a decision needs.
    func unconnected(
        among invitees: Set<UserID>, app: SdkAppID, connected: (UserKey) -> Set<DeviceID>
    ) -> Set<UserID> {
        let candidates = devices.withLockedValue { devices -> [(UserID, Set<DeviceID>)] in
            devices.isEmpty
                ? [] : invitees.compactMap { user in devices[UserKey(app: app, user: user)].map { (user, $0) } }
        }
        return Set(
            candidates.filter { user, ringing in !ringing.isSubset(of: connected(UserKey(app: app, user: user))) }
                .map(\.0))
    }
}
