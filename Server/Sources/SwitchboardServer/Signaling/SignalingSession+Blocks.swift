import Foundation
import SwitchboardProtocol

/// Blocking: a user's list of callers whose calls never reach them (at most 1,000).
extension SignalingSession {
    func changeBlocks(_ users: [UserID], block: Bool, _ identity: Identity, id: RequestID) async {
        if let bad = users.first(where: { !$0.isValid }) {
            fail(id, SwitchboardError(.invalidUserID, "'\(bad.rawValue.prefix(40))' is not a valid userID"))
            return
        }
        guard users.count <= BlockedUsersResponse.limit else {
            fail(id, SwitchboardError(.invalidParams, "at most \(BlockedUsersResponse.limit) userIds"))
            return
        }
        let user = identity.user
        let others = users.filter { $0 != user.user }
        guard
            let blocked = await storage(
                id,
                {
                    if block {
                        let current = try await self.services.storage.blockedUsers(app: user.app, user: user.user)
                        guard Set(current).union(others).count <= BlockedUsersResponse.limit else {
                            throw SwitchboardError(.invalidParams, "at most \(BlockedUsersResponse.limit) blocked users")
                        }
                        let (webhooks, now) = (self.services.webhooks, self.services.clock.now())
                        try await self.services.storage.block(app: user.app, user: user.user, blocked: others) { added in
                            webhooks.wants(user.app, .userBlocked)
                                ? OutboxEvent.blocks(user, changed: added, blocked: true, time: now) : nil
                        }
                        self.services.webhookDispatcher.wake()
                        if !others.isEmpty, let error = await self.services.calls.blocks(user) { throw error }
                    } else {
                        let (webhooks, now) = (self.services.webhooks, self.services.clock.now())
                        try await self.services.storage.unblock(app: user.app, user: user.user, blocked: others) { removed in
                            webhooks.wants(user.app, .userUnblocked)
                                ? OutboxEvent.blocks(user, changed: removed, blocked: false, time: now) : nil
                        }
                        self.services.webhookDispatcher.wake()
                    }
                    return try await self.services.storage.blockedUsers(app: user.app, user: user.user)
                })
        else { return }
        succeed(id, BlockedUsersResponse(userIds: blocked))
    }

    func blockedUsers(_ identity: Identity, id: RequestID) async {
        let user = identity.user
        if let blocked = await storage(id, { try await self.services.storage.blockedUsers(app: user.app, user: user.user) }) {
            succeed(id, BlockedUsersResponse(userIds: blocked))
        }
    }
}
