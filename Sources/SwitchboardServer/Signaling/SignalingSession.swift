import Foundation
import HummingbirdWebSocket
import Logging
import NIOConcurrencyHelpers
import NIOWebSocket
import SwitchboardProtocol

/// One WebSocket connection: its outgoing frame queue, closed by the server or the peer.
final class ClientConnection: EventSink {
    enum Outgoing: Sendable {
        case text(String)
        case close(WebSocketErrorCode)
    }

    let id: UInt64
    private let continuation: AsyncStream<Outgoing>.Continuation
    private let closing = NIOLockedValueBox(false)
    private let closed = NIOLockedValueBox<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    init(id: UInt64, continuation: AsyncStream<Outgoing>.Continuation) {
        self.id = id
        self.continuation = continuation
    }

    func enqueue(_ frame: String) {
        continuation.yield(.text(frame))
    }

    func close(_ error: SwitchboardError?) {
        let first = closing.withLockedValue { closing in
            defer { closing = true }
            return !closing
        }
        guard first else { return }
        if let error {
            enqueue(CallEngine.frame(.sessionEnded(SessionEndedEvent(error: error))))
        }
        continuation.yield(.close(error?.code == .shuttingDown ? .goingAway : .normalClosure))
    }

    var isClosing: Bool { closing.withLockedValue { $0 } }

    func waitUntilClosed() async {
        await withCheckedContinuation { continuation in
            let done = closed.withLockedValue { state -> Bool in
                if state.done { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// The socket is closed (or the close frame is written).
    func markClosed() {
        let waiters = closed.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.done = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }
}

/// Reads one connection's requests in order and answers each exactly once.
///
/// Before login only `login` and `ping` are served. Bad frames get an error response addressed
/// to their id when it can be read (`id: null` otherwise) and the connection stays open. Frames
/// above the 64 KiB message limit get `messageTooLarge`; only frames above the transport's hard
/// limit (1 MiB) close the connection.
final class SignalingSession {
    private struct Identity {
        var user: UserKey
        var device: DeviceID
    }

    private let node: NodeContext
    private let connection: ClientConnection
    /// The peer's IP address, for per-IP limits.
    private let remoteAddress: String
    private var identity: Identity?
    /// The state-changing request being handled, whose answer the ledger keeps.
    private var tracked: (id: RequestID, device: RequestLedger.DeviceKey)?
    private let logger: Logger

    init(node: NodeContext, connection: ClientConnection, remoteAddress: String, logger: Logger) {
        self.node = node
        self.connection = connection
        self.remoteAddress = remoteAddress
        self.logger = logger
    }

    private var limits: RateLimits { node.configuration.rateLimits }

    /// Serves the connection until the peer or the server closes it.
    static func serve(
        context node: NodeContext, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter,
        remoteAddress: String, logger: Logger
    ) async {
        let (stream, continuation) = AsyncStream<ClientConnection.Outgoing>.makeStream()
        let connection = ClientConnection(id: node.nextConnectionID(), continuation: continuation)
        let session = SignalingSession(node: node, connection: connection, remoteAddress: remoteAddress, logger: logger)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await item in stream {
                    switch item {
                    case .text(let text):
                        do {
                            try await outbound.write(.text(text))
                        } catch {
                            return
                        }
                    case .close(let code):
                        try? await outbound.close(code, reason: nil)
                        connection.markClosed()
                        return
                    }
                }
            }
            do {
                for try await message in inbound.messages(maxSize: NodeContext.hardMessageLimit) {
                    await session.receive(message)
                }
            } catch {
                logger.debug("connection read ended", metadata: ["error": "\(error)"])
            }
            await session.disconnected()
            continuation.finish()
            await group.waitForAll()
        }
        connection.markClosed()
    }

    // MARK: - frames

    func receive(_ message: WebSocketMessage) async {
        guard !connection.isClosing else { return }
        let data: Data
        switch message {
        case .text(let text): data = Data(text.utf8)
        case .binary(let buffer): data = Data(buffer.readableBytesView)
        }
        let header = try? SwitchboardJSON.decode(RequestHeader.self, from: data)
        let id = header?.id.flatMap { $0.isEmpty || $0.utf8.count > RequestID.maxLength ? nil : RequestID(rawValue: $0) }
        if data.count > CallLimits.maxMessageBytes {
            fail(id, SwitchboardError(.messageTooLarge, "messages are limited to \(CallLimits.maxMessageBytes) bytes"))
            return
        }
        guard let header else {
            fail(nil, SwitchboardError(.malformedMessage, "not a JSON object"))
            return
        }
        guard let rawID = header.id else {
            fail(nil, SwitchboardError(.malformedMessage, "id: missing or not a string"))
            return
        }
        guard let id else {
            fail(nil, SwitchboardError(.invalidRequestID, "id '\(rawID.prefix(16))…' must be 1-64 characters"))
            return
        }
        if let limited = node.limiter.take(
            limits.requestsPerConnection, "connection", String(connection.id), now: node.clock.now())
        {
            fail(id, limited)
            return
        }
        guard let type = header.type else {
            fail(id, SwitchboardError(.malformedMessage, "type: missing or not a string"))
            return
        }
        await dispatch(RequestType(rawValue: type), id: id, data: data)
    }

    /// Requests that change state: a resent one (same id, after a reconnect) gets the first answer
    /// again instead of running twice. Reads, pings and status reports need no such care.
    private static let idempotentRequests: Set<RequestType> = [
        .logout, .setProfile, .startCall, .acceptCall, .rejectCall, .hangupCall, .updateDeviceState,
        .inviteToCall, .joinCall, .changeMediaType, .replyMediaTypeChange, .cancelMediaTypeChange,
        .deleteRecords, .deleteAllRecords, .blockUsers, .unblockUsers, .registerPushToken, .unregisterPushToken,
    ]

    /// The requests that need a logged-in session.
    private static let sessionRequests: Set<RequestType> = [
        .logout, .setProfile, .startCall, .acceptCall, .rejectCall, .hangupCall, .updateDeviceState,
        .inviteToCall, .joinCall, .changeMediaType, .replyMediaTypeChange, .cancelMediaTypeChange, .reportStatus,
        .queryRecords, .deleteRecords, .deleteAllRecords, .blockUsers, .unblockUsers, .blockedUsers,
        .registerPushToken, .unregisterPushToken, .sendMediaSignal, .iceServers,
    ]

    private func dispatch(_ type: RequestType, id: RequestID, data: Data) async {
        switch type {
        case .login:
            if let request = decode(LoginRequest.self, id: id, data: data) { await login(request, id: id) }
            return
        case .ping:
            if decode(PingRequest.self, id: id, data: data) != nil {
                succeed(id, PingResponse(serverTime: node.clock.now()))
            }
            return
        default:
            break
        }
        guard Self.sessionRequests.contains(type) else {
            fail(id, SwitchboardError(.unknownType, "unknown request type '\(type.rawValue.prefix(40))'"))
            return
        }
        guard let identity else {
            fail(id, SwitchboardError(.notLoggedIn))
            return
        }
        if Self.idempotentRequests.contains(type) {
            let device = RequestLedger.DeviceKey(user: identity.user, device: identity.device)
            if let answer = await node.ledger.begin(id, device: device, now: node.clock.now()) {
                connection.enqueue(answer)
                return
            }
            tracked = (id, device)
        }
        defer {
            // Every tracked request is answered on every path; this only guards against a path
            // that forgot, so a duplicate never waits forever.
            if let tracked {
                fail(tracked.id, SwitchboardError(.internalError, "no answer"))
            }
        }
        switch type {
        case .logout:
            if decode(LogoutRequest.self, id: id, data: data) != nil { await logout(identity, id: id) }
        case .setProfile:
            if let request = decode(SetProfileRequest.self, id: id, data: data) {
                await setProfile(request, identity, id: id)
            }
        case .startCall:
            if let request = decode(StartCallRequest.self, id: id, data: data), withinLimit(.invitations, identity, id) {
                await startCall(request, identity, id: id)
            }
        case .acceptCall:
            if let request = decode(AcceptCallRequest.self, id: id, data: data) {
                await call(.accept(command(identity, request.callId)), id: id)
            }
        case .rejectCall:
            if let request = decode(RejectCallRequest.self, id: id, data: data) {
                await call(.reject(command(identity, request.callId)), id: id)
            }
        case .hangupCall:
            if let request = decode(HangupCallRequest.self, id: id, data: data) {
                await call(.hangup(command(identity, request.callId)), id: id)
            }
        case .updateDeviceState:
            if let request = decode(UpdateDeviceStateRequest.self, id: id, data: data) {
                await call(
                    .updateDevice(
                        command(identity, request.callId), microphoneOn: request.microphoneOn,
                        cameraOn: request.cameraOn, screenSharing: request.screenSharing), id: id)
            }
        case .inviteToCall:
            if let request = decode(InviteToCallRequest.self, id: id, data: data), withinLimit(.invitations, identity, id) {
                await invite(request, identity, id: id)
            }
        case .joinCall:
            if let request = decode(JoinCallRequest.self, id: id, data: data) {
                await join(request, identity, id: id)
            }
        case .changeMediaType:
            if let request = decode(ChangeMediaTypeRequest.self, id: id, data: data) {
                let transaction = TransactionID(rawValue: UUID().uuidString.lowercased())
                await call(.changeMediaType(command(identity, request.callId), request.mediaType, transaction), id: id)
            }
        case .replyMediaTypeChange:
            if let request = decode(ReplyMediaTypeChangeRequest.self, id: id, data: data) {
                await call(
                    .replyMediaType(command(identity, request.callId), request.transactionId, agree: request.agree),
                    id: id)
            }
        case .cancelMediaTypeChange:
            if let request = decode(CancelMediaTypeChangeRequest.self, id: id, data: data) {
                await call(.cancelMediaType(command(identity, request.callId), request.transactionId), id: id)
            }
        case .reportStatus:
            if let request = decode(StatusReportRequest.self, id: id, data: data), withinLimit(.statusReports, identity, id) {
                let report = StatusReport(
                    packetLoss: request.packetLoss, rtt: request.rtt, bitrate: request.bitrate,
                    audioLevel: request.audioLevel)
                await call(.statusReport(command(identity, request.callId), report), id: id)
            }
        case .sendMediaSignal:
            if let request = decode(SendMediaSignalRequest.self, id: id, data: data) {
                if let error = request.validationError() {
                    fail(id, error)
                } else {
                    await call(.mediaSignal(command(identity, request.callId), request), id: id)
                }
            }
        case .iceServers:
            if decode(IceServersRequest.self, id: id, data: data) != nil {
                succeed(id, node.iceServers(for: identity.user.user))
            }
        case .registerPushToken:
            if let request = decode(RegisterPushTokenRequest.self, id: id, data: data) {
                await registerPushToken(request, identity, id: id)
            }
        case .unregisterPushToken:
            if decode(UnregisterPushTokenRequest.self, id: id, data: data) != nil {
                if await storage(id, { try await self.node.storage.unregisterPushToken(user: identity.user, device: identity.device) })
                    != nil
                {
                    succeed(id, Empty())
                }
            }
        case .blockUsers:
            if let request = decode(BlockUsersRequest.self, id: id, data: data) {
                await changeBlocks(request.userIds, block: true, identity, id: id)
            }
        case .unblockUsers:
            if let request = decode(UnblockUsersRequest.self, id: id, data: data) {
                await changeBlocks(request.userIds, block: false, identity, id: id)
            }
        case .blockedUsers:
            if decode(BlockedUsersRequest.self, id: id, data: data) != nil {
                let user = identity.user
                if let blocked = await storage(id, { try await self.node.storage.blockedUsers(app: user.app, user: user.user) }) {
                    succeed(id, BlockedUsersResponse(userIds: blocked))
                }
            }
        case .queryRecords:
            if let request = decode(QueryRecordsRequest.self, id: id, data: data) {
                await queryRecords(request, identity, id: id)
            }
        case .deleteRecords:
            if let request = decode(DeleteRecordsRequest.self, id: id, data: data) {
                await deleteRecords(request, identity, id: id)
            }
        case .deleteAllRecords:
            if decode(DeleteAllRecordsRequest.self, id: id, data: data) != nil {
                await storage(id) { try await self.node.storage.deleteAllRecords(owner: identity.user) }
                    .map { succeed(id, DeleteRecordsResponse(deleted: $0)) }
            }
        default:
            fail(id, SwitchboardError(.unknownType))
        }
    }

    private enum UserLimit {
        case invitations
        case statusReports
    }

    /// Takes a token from one of the user's limits, or answers `rateLimited`.
    private func withinLimit(_ kind: UserLimit, _ identity: Identity, _ id: RequestID) -> Bool {
        let (limit, name) =
            switch kind {
            case .invitations: (limits.invitationsPerUser, "invitations")
            case .statusReports: (limits.statusReportsPerUser, "status")
            }
        guard let limited = node.limiter.take(limit, name, identity.user.description, now: node.clock.now()) else {
            return true
        }
        fail(id, limited)
        return false
    }

    // MARK: - session

    private func login(_ request: LoginRequest, id: RequestID) async {
        guard identity == nil else {
            fail(id, SwitchboardError(.alreadyLoggedIn))
            return
        }
        guard !node.isShuttingDown else {
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
        let now = node.clock.now()
        let user = request.userID.rawValue
        let limiter = node.limiter
        if let limited = limiter.take(limits.loginsPerIP, "login-ip", remoteAddress, now: now)
            ?? limiter.check(limits.failedLoginsPerIP, "failed-ip", remoteAddress, now: now)
            ?? limiter.take(limits.loginsPerUser, "login-user", user, now: now)
            ?? limiter.check(limits.failedLoginsPerUser, "failed-user", user, now: now)
        {
            fail(id, limited)
            return
        }
        guard request.userID.isValid else {
            loginFailed(id, SwitchboardError(.invalidUserID), user: user, now: now)
            return
        }
        if let device = request.deviceId,
            !CallStateMachine.isValidToken(device.rawValue, maxLength: DeviceID.maxLength)
        {
            fail(id, SwitchboardError(.invalidDeviceID, "deviceId must be 1-64 visible characters"))
            return
        }
        guard let app = node.apps.app(request.sdkAppID) else {
            loginFailed(id, SwitchboardError(.unknownApp, "no app with sdkAppID \(request.sdkAppID)"), user: user, now: now)
            return
        }
        do {
            _ = try UserSig.verify(
                request.userSig, sdkAppID: app.sdkAppID, secretKey: app.secretKey, userID: request.userID.rawValue,
                now: now / 1000)
        } catch {
            loginFailed(id, error, user: user, now: now)
            return
        }
        let key = UserKey(app: app.sdkAppID, user: request.userID)
        guard let profile = await storage(id, { try await self.node.profiles.profiles(app: key.app, users: [key.user]) })
        else { return }
        let device = request.deviceId ?? DeviceID.random()
        identity = Identity(user: key, device: device)
        succeed(
            id,
            LoginResponse(
                userID: key.user, deviceId: device, protocolVersion: switchboardProtocolVersion,
                serverTime: node.clock.now(), heartbeatInterval: node.configuration.heartbeatInterval,
                profile: profile[key.user] ?? UserProfile(userId: key.user)))
        // Registered after the answer is queued, so the client never sees an event before it.
        if let replaced = node.registry.register(connection, user: key, device: device, platform: request.platform) {
            replaced.close(SwitchboardError(.sessionReplaced))
        }
        node.metrics.login("ok")
        node.metrics.connectedDevices.set(Int64(node.registry.deviceCount))
        logger.info("login", metadata: ["user": "\(key)", "device": "\(device)", "connection": "\(connection.id)"])
        await node.engine.handle(.deviceOnline(key, device))
    }

    /// Answers a refused login and counts it against the address and the user.
    private func loginFailed(_ id: RequestID, _ error: SwitchboardError, user: String, now: Int64) {
        _ = node.limiter.take(limits.failedLoginsPerIP, "failed-ip", remoteAddress, now: now)
        _ = node.limiter.take(limits.failedLoginsPerUser, "failed-user", user, now: now)
        node.metrics.login(error.code.name)
        logger.notice("login refused", metadata: ["code": "\(error.code.name)", "address": "\(remoteAddress)"])
        fail(id, error)
    }

    private func logout(_ identity: Identity, id: RequestID) async {
        await node.engine.handle(.logout(identity.user, identity.device))
        _ = node.registry.remove(connection, user: identity.user, device: identity.device)
        self.identity = nil
        // Signed out: this device must not ring through pushes either.
        try? await node.storage.unregisterPushToken(user: identity.user, device: identity.device)
        succeed(id, Empty())
        node.ledger.forget(RequestLedger.DeviceKey(user: identity.user, device: identity.device))
        connection.close(nil)
    }

    /// The peer went away: a dropped device keeps its calls for the reconnect grace period.
    func disconnected() async {
        guard let identity else { return }
        self.identity = nil
        if node.registry.remove(connection, user: identity.user, device: identity.device) {
            node.metrics.connectedDevices.set(Int64(node.registry.deviceCount))
            await node.engine.handle(.deviceOffline(identity.user, identity.device))
        }
    }

    private func setProfile(_ request: SetProfileRequest, _ identity: Identity, id: RequestID) async {
        if let nickname = request.nickname, nickname.count > UserProfile.maxNicknameLength {
            fail(id, SwitchboardError(.invalidParams, "nickname: at most \(UserProfile.maxNicknameLength) characters"))
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
                    var profile = try await self.node.profiles.profiles(app: user.app, users: [user.user])[user.user]
                        ?? UserProfile(userId: user.user)
                    if let nickname = request.nickname { profile.nickname = nickname }
                    if let avatar = request.avatarURL { profile.avatarURL = avatar }
                    try await self.node.profiles.save(app: user.app, profile, now: self.node.clock.now())
                    return profile
                })
        else { return }
        succeed(id, saved)
    }

    // MARK: - calls

    private func command(_ identity: Identity, _ callId: CallID) -> CallCommand {
        CallCommand(user: identity.user, device: identity.device, callId: callId)
    }

    /// What the state machine needs to know about the people a call rings, looked up once for a
    /// new call and for an invitation: the app's settings, who has a connected device, profiles,
    /// who blocks the inviter, who can be rung by push. Nil once the failure was answered.
    private struct Invitees {
        var settings: AppSettings
        var online: Set<UserID>
        var profiles: [UserID: UserProfile]
        var blockedBy: Set<UserID>
        var pushable: Set<UserID>
    }

    private func invitees(
        _ participantIds: [UserID], inviter: Identity, withInviterProfile: Bool, id: RequestID
    ) async -> Invitees? {
        let app = inviter.user.app
        guard let settings = node.apps.app(app)?.settings else {
            fail(id, SwitchboardError(.unknownApp))
            return nil
        }
        // Only well-formed ids are looked up; the state machine reports the bad ones.
        let invitees = Array(Array(Set(participantIds.filter(\.isValid))).prefix(settings.maxParticipants))
        let profiled = withInviterProfile ? [inviter.user.user] + invitees : invitees
        let online = Set(invitees.filter { node.registry.isOnline(UserKey(app: app, user: $0)) })
        let offline = invitees.filter { !online.contains($0) }
        guard let profiles = await storage(id, { try await self.node.profiles.profiles(app: app, users: profiled) }),
            let blockedBy = await storage(
                id, { try await self.node.storage.usersBlocking(inviter.user.user, among: invitees, app: app) }),
            let pushable = await pushable(offline, app: app, id: id)
        else { return nil }
        return Invitees(settings: settings, online: online, profiles: profiles, blockedBy: blockedBy, pushable: pushable)
    }

    private func startCall(_ request: StartCallRequest, _ identity: Identity, id: RequestID) async {
        guard let found = await invitees(request.participantIds, inviter: identity, withInviterProfile: true, id: id)
        else { return }
        let callId = CallID.random()
        let command = StartCallCommand(
            caller: identity.user, device: identity.device, callId: callId,
            generatedRoomId: RoomID(rawValue: callId.rawValue), request: request, settings: found.settings,
            online: found.online, profiles: found.profiles, blockedBy: found.blockedBy, pushable: found.pushable)
        await call(.start(command), id: id)
    }

    private func invite(_ request: InviteToCallRequest, _ identity: Identity, id: RequestID) async {
        guard let found = await invitees(request.participantIds, inviter: identity, withInviterProfile: false, id: id)
        else { return }
        await call(
            .invite(
                InviteCommand(
                    command: command(identity, request.callId), invitees: request.participantIds,
                    settings: found.settings, online: found.online, profiles: found.profiles,
                    blockedBy: found.blockedBy, pushable: found.pushable)), id: id)
    }

    private func join(_ request: JoinCallRequest, _ identity: Identity, id: RequestID) async {
        let user = identity.user
        guard let settings = node.apps.app(user.app)?.settings else {
            fail(id, SwitchboardError(.unknownApp))
            return
        }
        var isMember = false
        if let group = await node.engine.chatGroup(of: request.callId, app: user.app) {
            guard
                let found = await storage(
                    id, { try await self.node.storage.isChatGroupMember(app: user.app, group: group, user: user.user) })
            else { return }
            isMember = found
        }
        guard let profiles = await storage(id, { try await self.node.profiles.profiles(app: user.app, users: [user.user]) })
        else { return }
        await call(
            .join(
                JoinCommand(
                    command: command(identity, request.callId), isChatGroupMember: isMember, settings: settings,
                    profile: profiles[user.user])), id: id)
    }

    private func call(_ event: CallEvent, id: RequestID) async {
        let connection = self.connection
        let ledger = node.ledger
        let tracked = self.tracked
        self.tracked = nil
        // The engine answers inside its critical section, before the events the request causes.
        let reply = await node.engine.handle(event) { reply in
            let text = Self.encode(reply, id: id)
            if let tracked { ledger.finish(tracked.id, device: tracked.device, answer: text) }
            connection.enqueue(text)
        }
        if reply == nil {
            self.tracked = tracked
            fail(id, SwitchboardError(.internalError, "the call engine gave no answer"))
        }
    }

    static func encode(_ reply: CallReply, id: RequestID) -> String {
        let text: String?
        switch reply {
        case .started(let response):
            text = try? SwitchboardJSON.encodeString(ResponseEnvelope(id: id, outcome: .success(response)))
        case .invited(let response):
            text = try? SwitchboardJSON.encodeString(ResponseEnvelope(id: id, outcome: .success(response)))
        case .call(let info):
            text = try? SwitchboardJSON.encodeString(
                ResponseEnvelope(id: id, outcome: .success(CallSnapshotResponse(call: info))))
        case .mediaChange(let transaction):
            text = try? SwitchboardJSON.encodeString(
                ResponseEnvelope(id: id, outcome: .success(ChangeMediaTypeResponse(transactionId: transaction))))
        case .ok:
            text = try? SwitchboardJSON.encodeString(ResponseEnvelope(id: id, outcome: .success(Empty())))
        case .failure(let error):
            text = try? SwitchboardJSON.encodeString(ResponseEnvelope<Empty>(id: id, outcome: .failure(error)))
        }
        return text ?? "{}"
    }

    // MARK: - push

    private func registerPushToken(_ request: RegisterPushTokenRequest, _ identity: Identity, id: RequestID) async {
        guard RegisterPushTokenRequest.isValidToken(request.token) else {
            fail(id, SwitchboardError(.invalidPushToken, "token must be 32-200 hex digits"))
            return
        }
        guard RegisterPushTokenRequest.isValidBundleID(request.bundleId) else {
            fail(id, SwitchboardError(.invalidBundleID))
            return
        }
        let token = PushToken(
            token: request.token.lowercased(), user: identity.user, device: identity.device,
            environment: request.environment, bundleId: request.bundleId, updatedAt: node.clock.now())
        if await storage(id, { try await self.node.storage.registerPushToken(token) }) != nil {
            succeed(id, Empty())
        }
    }

    /// Which of the `offline` invitees have a push token: they ring through VoIP pushes.
    private func pushable(_ offline: [UserID], app: SdkAppID, id: RequestID) async -> Set<UserID>? {
        guard !offline.isEmpty else { return [] }
        return await storage(id) { try await self.node.storage.pushTokens(app: app, users: offline) }
            .map { Set($0.filter { !$0.value.isEmpty }.keys) }
    }

    // MARK: - blocking

    private func changeBlocks(_ users: [UserID], block: Bool, _ identity: Identity, id: RequestID) async {
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
                        let current = try await self.node.storage.blockedUsers(app: user.app, user: user.user)
                        guard Set(current).union(others).count <= BlockedUsersResponse.limit else {
                            throw SwitchboardError(.invalidParams, "at most \(BlockedUsersResponse.limit) blocked users")
                        }
                        try await self.node.storage.block(app: user.app, user: user.user, blocked: others)
                    } else {
                        try await self.node.storage.unblock(app: user.app, user: user.user, blocked: others)
                    }
                    return try await self.node.storage.blockedUsers(app: user.app, user: user.user)
                })
        else { return }
        succeed(id, BlockedUsersResponse(userIds: blocked))
    }

    // MARK: - records

    private func queryRecords(_ request: QueryRecordsRequest, _ identity: Identity, id: RequestID) async {
        guard (1...CallLimits.maxRecordCount).contains(request.count) else {
            fail(id, SwitchboardError(.invalidRecordCount))
            return
        }
        guard request.syncTime >= -1 else {
            fail(id, SwitchboardError(.invalidSyncTime))
            return
        }
        if let page = await storage(
            id,
            {
                try await self.node.storage.queryRecords(
                    owner: identity.user, syncTime: request.syncTime, count: request.count, order: request.order)
            })
        {
            succeed(id, page)
        }
    }

    private func deleteRecords(_ request: DeleteRecordsRequest, _ identity: Identity, id: RequestID) async {
        guard request.callIds.count <= CallLimits.maxDeleteCallIDs else {
            fail(id, SwitchboardError(.tooManyCallIDs, "at most \(CallLimits.maxDeleteCallIDs) callIds per request"))
            return
        }
        if let deleted = await storage(
            id, { try await self.node.storage.deleteRecords(owner: identity.user, callIds: request.callIds) })
        {
            succeed(id, DeleteRecordsResponse(deleted: deleted))
        }
    }

    // MARK: - answers

    private func decode<R: SignalingRequest>(_ type: R.Type, id: RequestID, data: Data) -> R? {
        do {
            return try SwitchboardJSON.decode(RequestEnvelope<R>.self, from: data).data
        } catch {
            fail(id, SwitchboardError(.invalidParams, SwitchboardJSON.describe(error)))
            return nil
        }
    }

    /// Runs a storage operation; a failure answers `storageUnavailable` and returns nil.
    private func storage<T>(_ id: RequestID, _ operation: () async throws -> T) async -> T? {
        do {
            return try await operation()
        } catch let error as SwitchboardError {
            fail(id, error)
            return nil
        } catch {
            logger.error("storage failed", metadata: ["error": "\(error)"])
            fail(id, SwitchboardError(.storageUnavailable))
            return nil
        }
    }

    private func succeed<R: Codable & Sendable & Equatable>(_ id: RequestID, _ result: R) {
        answer(id, try? SwitchboardJSON.encodeString(ResponseEnvelope(id: id, outcome: .success(result))))
    }

    private func fail(_ id: RequestID?, _ error: SwitchboardError) {
        answer(id, try? SwitchboardJSON.encodeString(ResponseEnvelope<Empty>(id: id, outcome: .failure(error))))
    }

    /// Sends an answer, and keeps it in the ledger when it answers the tracked request.
    private func answer(_ id: RequestID?, _ text: String?) {
        let text = text ?? #"{"id":null,"error":{"code":5001,"message":"could not encode the answer"}}"#
        if let tracked, tracked.id == id {
            node.ledger.finish(tracked.id, device: tracked.device, answer: text)
            self.tracked = nil
        }
        connection.enqueue(text)
    }
}
