import Foundation
import SwitchboardProtocol

/// Push tokens: one of each kind per device; a token held by another device moves only when asked to.
extension SignalingSession {
    func registerPushToken(_ request: RegisterPushTokenRequest, _ identity: Identity, id: RequestID) async {
        guard RegisterPushTokenRequest.isValidToken(request.token) else {
            fail(id, SwitchboardError(.invalidPushToken, "token must be 32-200 hex digits"))
            return
        }
        guard RegisterPushTokenRequest.isValidBundleID(request.bundleId) else {
            fail(id, SwitchboardError(.invalidBundleID))
            return
        }
        let token = PushToken(
            token: request.token.lowercased(), user: identity.user, device: identity.device, kind: request.kind ?? .voip,
            environment: request.environment, bundleId: request.bundleId, updatedAt: node.clock.now())
        if await storage(id, { try await self.node.storage.registerPushToken(token, move: request.move ?? false) }) != nil {
            succeed(id, Empty())
        }
    }

    func unregisterPushToken(_ request: UnregisterPushTokenRequest, _ identity: Identity, id: RequestID) async {
        if await storage(id, {
            try await self.node.storage.unregisterPushToken(user: identity.user, device: identity.device, kind: request.kind)
        }) != nil {
            succeed(id, Empty())
        }
    }
}
