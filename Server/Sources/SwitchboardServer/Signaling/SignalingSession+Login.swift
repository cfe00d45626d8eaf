import Foundation
import SwitchboardProtocol

/// The session itself: login (with the abuse limits on it), logout, disconnection, the profile.
extension SignalingSession {
    func login(_ request: LoginRequest, id: RequestID) async {
        guard identity == nil else {
            fail(id, SwitchboardError(.alreadyLoggedIn))
            return
        }
        guard !services.isShuttingDown else {
            fail(id, SwitchboardError(.shuttingDown))
            return
        }
        guard request.protocolVersion == switchboardProtocolVersion else {
            fail(
                id,
                SwitchboardError(
                    .unsupportedProtocolVersion,
                    "this server speaks protocol version \(switchboardProtocolVersion), not \(request.protocolVersion)"))
            return
        }
        let now = services.clock.now()
        let limiter = services.limiter
        // Every attempt costs the address a token before any work is done.
        if let limited = limiter.take(limits.loginsPerIP, "login-ip", remoteAddress, now: now) {
            fail(id, limited)
            return
        }
        guard request.userID.isValid else {
            loginFailed(id, SwitchboardError(.invalidUserID), user: nil, now: now)
            return
        }
        if let device = request.deviceId,
            !CallStateMachine.isValidToken(device.rawValue, maxLength: DeviceID.maxLength)
        {
            fail(id, SwitchboardError(.invalidDeviceID, "deviceId must be 1-64 visible characters"))
            return
        }
        if let platform = request.platform, !platform.isBoundedText(maxBytes: LoginRequest.maxPlatformBytes) {
            fail(
                id,
                SwitchboardError(
                    .invalidParams,
                    "platform: at most \(LoginRequest.maxPlatformBytes) UTF-8 bytes, no control or format characters"))
            return
        }
        guard let app = services.apps.app(request.sdkAppID) else {
            // Nobody's user is named by an app that does not exist: only the address pays.
            loginFailed(id, SwitchboardError(.unknownApp, "no app with sdkAppID \(request.sdkAppID)"), user: nil, now: now)
            return
        }
        let key = UserKey(app: app.sdkAppID, user: request.userID)
        do {
            _ = try UserSig.verify(
                request.userSig, sdkAppID: app.sdkAppID, secretKey: app.secretKey, userID: request.userID.rawValue,
                now: now / 1000)
        } catch {
            loginFailed(id, error, user: key, now: now)
            return
        }
        // A valid signature is proof: strangers' failures, from this address or any other, never
        // lock the user out. What is limited per user is how often they log in (a reconnect loop).
        if let limited = limiter.take(limits.loginsPerUser, "login-user", key.description, now: now) {
            fail(id, limited)
            return
        }
        guard let profile = await storage(id, { try await self.services.profiles.profiles(app: key.app, users: [key.user]) })
        else { return }
        let device = request.deviceId ?? DeviceID.random()
        // Frames for the device wait in the connection until the login answer is written: the
        // engine learns of the device (its pending invitations, its resumed calls) before the
        // answer, so that a call placed right after the login — from any node — rings here, and
        // the client still hears the answer first.
        connection.holdFrames()
        let replaced: (any EventSink)?
        switch services.registry.register(
            connection, user: key, device: device, platform: request.platform,
            maxDevices: services.configuration.connections.maxDevicesPerUser)
        {
        case .tooManyDevices:
            connection.releaseFrames(after: nil)
            fail(
                id,
                SwitchboardError(
                    .tooManyDevices,
                    "at most \(services.configuration.connections.maxDevicesPerUser) devices connected at once"))
            return
        case .registered(let old):
            replaced = old
        }
        identity = Identity(user: key, device: device)
        replaced?.close(SwitchboardError(.sessionReplaced))
        if let refused = await services.calls.deviceOnline(key, device, platform: request.platform) {
            // The engine could not be told of the device (a cluster between leaders): a login that
            // went on would miss its calls. Refused like any login: the client tries again, on
            // this connection, at another node or later.
            logger.notice("login refused: the engine could not be told", metadata: ["user": "\(key)", "error": "\(refused)"])
            identity = nil
            _ = services.registry.remove(connection, user: key, device: device)
            connection.releaseFrames(after: nil)
            services.metrics.login(refused.code.name)
            fail(id, refused)
            return
        }
        services.deadlines.disarm(connection.id)
        services.gate.loggedIn(connection.id)
        connection.markLoggedIn()
        services.metrics.login("ok")
        services.metrics.connectedDevices.set(Int64(services.registry.deviceCount))
        logger.info("login", metadata: ["user": "\(key)", "device": "\(device)", "connection": "\(connection.id)"])
        let answer = try? SwitchboardJSON.encodeString(
            ResponseEnvelope(
                id: id,
                outcome: .success(
                    LoginResponse(
                        userID: key.user, deviceId: device, protocolVersion: switchboardProtocolVersion,
                        serverTime: services.clock.now(), heartbeatInterval: services.configuration.heartbeatInterval,
                        profile: profile[key.user] ?? UserProfile(userId: key.user)))))
        connection.releaseFrames(after: answer)
    }

    /// Answers a refused login and counts it against the address and, when the app exists, the user
    /// it named. A guesser whose address or target has no failures left gets `rateLimited` instead
    /// of the reason, so that guessing costs time and teaches nothing.
    func loginFailed(_ id: RequestID, _ error: SwitchboardError, user: UserKey?, now: Int64) {
        let limiter = services.limiter
        let limited =
            limiter.take(limits.failedLoginsPerIP, "failed-ip", remoteAddress, now: now)
            ?? user.flatMap { limiter.take(limits.failedLoginsPerUser, "failed-user", $0.description, now: now) }
        services.metrics.login(error.code.name)
        logger.notice("login refused", metadata: ["code": "\(error.code.name)", "address": "\(remoteAddress)"])
        fail(id, limited ?? error)
    }

    func logout(_ identity: Identity, id: RequestID) async {
        await services.calls.logout(identity.user, identity.device)
        _ = services.registry.remove(connection, user: identity.user, device: identity.device)
        self.identity = nil
        // Signed out: this device must not ring through pushes either.
        try? await services.storage.unregisterPushToken(user: identity.user, device: identity.device, kind: nil)
        succeed(id, Empty())
        services.ledger.forget(RequestLedger.DeviceKey(user: identity.user, device: identity.device))
        connection.close(nil)
    }

    /// The peer went away: a dropped device keeps its calls for the reconnect grace period.
    func disconnected() async {
        guard let identity else { return }
        self.identity = nil
        if services.registry.remove(connection, user: identity.user, device: identity.device) {
            services.metrics.connectedDevices.set(Int64(services.registry.deviceCount))
            await services.calls.deviceOffline(identity.user, identity.device)
        }
    }

    func setProfile(_ request: SetProfileRequest, _ identity: Identity, id: RequestID) async {
        if let nickname = request.nickname, !nickname.isBoundedText(maxBytes: UserProfile.maxNicknameBytes) {
            fail(
                id,
                SwitchboardError(
                    .invalidParams,
                    "nickname: at most \(UserProfile.maxNicknameBytes) UTF-8 bytes, no control, bidirectional or "
                        + "invisible format characters"))
            return
        }
        if let avatar = request.avatarURL, avatar.utf8.count > UserProfile.maxAvatarURLBytes {
            fail(id, SwitchboardError(.invalidParams, "avatarURL: at most \(UserProfile.maxAvatarURLBytes) bytes"))
            return
        }
        let user = identity.user
        guard
            let saved = await storage(
                id,
                {
                    var profile = try await self.services.profiles.profiles(app: user.app, users: [user.user])[user.user]
                        ?? UserProfile(userId: user.user)
                    if let nickname = request.nickname { profile.nickname = nickname }
                    if let avatar = request.avatarURL { profile.avatarURL = avatar }
                    try await self.services.profiles.save(app: user.app, profile, now: self.services.clock.now())
                    return profile
                })
        else { return }
        // The other nodes of a cluster forget what they cached of this profile.
        await services.cluster.profileChanged(user)
        succeed(id, saved)
    }
}
