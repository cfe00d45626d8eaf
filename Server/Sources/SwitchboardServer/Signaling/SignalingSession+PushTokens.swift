import Foundation
import SwitchboardProtocol

/// Push tokens: one of each kind per device; a token held by another device moves only when asked to.
/// Each kind's token is checked as ``RegisterPushTokenRequest/problem`` says, and a Web Push
/// endpoint as ``WebPushEndpointPolicy`` says.
extension SignalingSession {
    func registerPushToken(_ request: RegisterPushTokenRequest, _ identity: Identity, id: RequestID) async {
        if let problem = request.problem {
            fail(id, problem)
            return
        }
        // The server will POST to a Web Push endpoint: none into its own network.
        if request.kind == .web, let problem = services.webPushEndpoints.problem(request.token) {
            fail(id, problem)
            return
        }
        let token = PushToken(
            token: request.normalizedToken, user: identity.user, device: identity.device, kind: request.kind ?? .voip,
            environment: request.environment ?? .production, bundleId: request.bundleId ?? "", updatedAt: services.clock.now(),
            webPush: request.webPush, sealingKey: request.sealingKey, alertRinging: request.alertRinging ?? false)
        guard await storage(id, { try await self.services.storage.registerPushToken(token, move: request.move ?? false) }) != nil
        else { return }
        // A call placed after this answer must know the device can ring by push.
        if token.rings, let problem = await services.calls.ringsByPush(identity.user, identity.device) {
            fail(id, problem)
            return
        }
        succeed(id, Empty())
    }

    func unregisterPushToken(_ request: UnregisterPushTokenRequest, _ identity: Identity, id: RequestID) async {
        if await storage(id, {
            try await self.services.storage.unregisterPushToken(user: identity.user, device: identity.device, kind: request.kind)
        }) != nil {
            succeed(id, Empty())
        }
    }
}
