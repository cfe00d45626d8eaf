import Crypto
import Foundation
import Hummingbird
import SwitchboardProtocol

/// Checks `Authorization: Bearer <admin secret>` in constant time.
struct AdminAuthMiddleware<Context: RequestContext>: RouterMiddleware {
    let secret: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let header = request.headers[.authorization] ?? ""
        let prefix = "Bearer "
        guard header.hasPrefix(prefix),
            Self.constantTimeEquals(Array(header.dropFirst(prefix.count).utf8), Array(secret.utf8))
        else {
            return AdminAPI.error(SwitchboardError(.unauthorized, "send Authorization: Bearer <admin secret>"))
        }
        return try await next(request, context)
    }

    static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        // Compare digests so the time depends on neither the secret's length nor its content.
        let digestA = SHA256.hash(data: a)
        let digestB = SHA256.hash(data: b)
        var difference: UInt8 = 0
        for (x, y) in zip(digestA, digestB) { difference |= x ^ y }
        return difference == 0
    }
}

/// The admin HTTP API (SPEC §6) and the health endpoint.
enum AdminAPI {
    static func register(
        on router: Router<SwitchboardRequestContext>, services: AdminServices, adminSecret: String, web: WebPolicy
    ) {
        router.get("/health") { _, _ in
            var body: [String: any Sendable] = ["status": "ok", "devices": services.registry.deviceCount]
            // On a cluster node that does not lead, the calls are the leader's to count.
            if let calls = await services.calls.activeCallCount() { body["activeCalls"] = calls }
            if let standing = services.cluster.standing {
                body["node"] = standing.node
                body["leader"] = standing.leader ?? "none"
            }
            return json(body)
        }

        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: services.metrics.render())))
        }

        // What the browser client needs to know before it connects anywhere: the servers besides
        // its own that it may send a UserSig to, and where members' pictures may come from; with
        // `?sdkAppID=`, the app's VAPID public key, which its service worker subscribes to Web Push with.
        router.get("/v1/web/config") { request, _ in
            let app = request.uri.queryParameters["sdkAppID"].flatMap { Int64(String($0)) }.map { SdkAppID($0) }
                .flatMap { services.apps.app($0)?.sdkAppID }
            let webPushKey = app.flatMap { services.pushCredentials.webPush($0)?.key.publicKey }
            var response = encoded(
                WebConfig(allowedServers: web.allowedServerOrigins, imageOrigins: web.imageOriginNames, webPushKey: webPushKey))
            response.headers[.cacheControl] = "no-store"
            return response
        }

        // Development mode only (the server made its own app): a UserSig for any user, so the
        // browser client can log in without an app backend. Production apps issue UserSigs from
        // their backend with the app's secret. Only to requests for a loopback Host (or one the
        // operator named), so that no site can rebind its name to this server and ask for sigs.
        router.get("/v1/dev/usersig") { request, _ in
            guard let app = services.apps.all.first(where: \.isDevelopment) else {
                return Self.error(
                    SwitchboardError(.developmentOnly, "UserSigs are issued here in development mode only"))
            }
            guard web.issuesDevelopmentSigs(host: request.head.authority) else {
                return Self.error(
                    SwitchboardError(
                        .hostNotAllowed,
                        "development UserSigs are issued only to requests for a loopback host (localhost, 127.0.0.1, [::1]); start the server with --dev-allowed-hosts to name another"
                    ))
            }
            let user = UserID(rawValue: request.uri.queryParameters["userID"].map(String.init) ?? "")
            guard user.isValid else { return Self.error(SwitchboardError(.invalidUserID)) }
            let expire: Int64 = 86_400
            let sig = UserSig.generate(
                sdkAppID: app.sdkAppID, secretKey: app.secretKey, userID: user.rawValue, expire: expire,
                time: services.clock.now() / 1000)
            var response = encoded(DevUserSig(sdkAppID: app.sdkAppID, userID: user, userSig: sig, expire: expire))
            response.headers[.cacheControl] = "no-store"
            return response
        }

        let admin = router.group("/v1").add(middleware: AdminAuthMiddleware(secret: adminSecret))

        admin.post("/calls/:callId/end") { _, context in
            let callId = CallID(rawValue: try context.parameters.require("callId"))
            switch await services.endCall(callId) {
            case .failure(let error): return Self.error(error)
            case .success: return json(["callId": callId.rawValue, "ended": true] as [String: any Sendable])
            }
        }

        admin.get("/apps/:app/users/:user/records") { request, context in
            guard let app = knownApp(try context.parameters.require("app"), services) else {
                return Self.error(SwitchboardError(.unknownApp))
            }
            let user = UserID(rawValue: try context.parameters.require("user"))
            guard user.isValid else { return Self.error(SwitchboardError(.invalidUserID)) }
            let query = request.uri.queryParameters
            let syncTime = query["syncTime"].flatMap { Int64(String($0)) } ?? -1
            let count = query["count"].flatMap { Int(String($0)) } ?? 30
            guard let order = RecordOrder(rawValue: query["order"].map(String.init) ?? "descending") else {
                return Self.error(SwitchboardError(.invalidParams, "order must be descending or ascending"))
            }
            guard (1...CallLimits.maxRecordCount).contains(count) else {
                return Self.error(SwitchboardError(.invalidRecordCount))
            }
            guard syncTime >= -1 else { return Self.error(SwitchboardError(.invalidSyncTime)) }
            do {
                let page = try await services.storage.queryRecords(
                    owner: UserKey(app: app, user: user), syncTime: syncTime, count: count, order: order)
                return encoded(page)
            } catch {
                return Self.error(SwitchboardError(.storageUnavailable))
            }
        }

        registerAppManagement(on: admin, services: services)
        registerPush(on: admin, services: services)
        registerWebhooks(on: admin, services: services)
        registerRecordings(on: admin, router: router, services: services)

        // TURN credentials for an app backend that hands them to its clients itself (logged-in
        // clients ask over the WebSocket: `media.iceServers`).
        admin.get("/apps/:app/users/:user/ice-servers") { _, context in
            guard let app = knownApp(try context.parameters.require("app"), services) else {
                return Self.error(SwitchboardError(.unknownApp))
            }
            let user = UserID(rawValue: try context.parameters.require("user"))
            guard user.isValid else { return Self.error(SwitchboardError(.invalidUserID)) }
            return encoded(services.configuration.ice.iceServers(for: UserKey(app: app, user: user), now: services.clock.now()))
        }

        admin.get("/apps/:app/online") { _, context in
            guard let app = knownApp(try context.parameters.require("app"), services) else {
                return Self.error(SwitchboardError(.unknownApp))
            }
            // Every node's devices (in a cluster, as the cluster's table has them).
            guard let online = try? await services.cluster.onlineUsers(app: app) else {
                return Self.error(SwitchboardError(.storageUnavailable))
            }
            let users = online.map { user, devices in
                OnlineUser(
                    userId: user, devices: devices.map { OnlineUser.Device(deviceId: $0.0, platform: $0.1) })
            }
            return encoded(OnlineUsers(users: users))
        }
    }

    struct SettingsBody: Codable, Sendable, Equatable {
        var busyPolicy: BusyPolicy?
        var maxParticipants: Int?
        var blockedCallerSees: BlockedCallerSees?
        /// Days call records are kept (older ones are swept); 0: kept until their owners delete them.
        var recordRetentionDays: Int?
        /// A user's device may take their call without an offer from the device in it.
        var callPull: Bool?
        /// Server-side recording: policy, who controls it, how long its files are kept.
        var recording: RecordingBody?

        struct RecordingBody: Codable, Sendable, Equatable {
            var policy: RecordingPolicy?
            var control: RecordingControl?
            /// Days a recording's files are kept; 0: until deleted.
            var retentionDays: Int?
        }

        init(_ settings: AppSettings) {
            busyPolicy = settings.busyPolicy
            maxParticipants = settings.maxParticipants
            blockedCallerSees = settings.blockedCallerSees
            recordRetentionDays = settings.recordRetentionDays ?? 0
            callPull = settings.callPull
            recording = RecordingBody(
                policy: settings.recording.policy, control: settings.recording.control,
                retentionDays: settings.recording.retentionDays ?? 0)
        }
    }

    struct GroupMembers: Codable, Sendable, Equatable {
        var groupId: ChatGroupID?
        var userIds: [UserID]
    }

    /// Reads a JSON body of at most 1 MiB.
    static func body<T: Decodable>(_ type: T.Type, _ request: Request) async -> Result<T, SwitchboardError> {
        do {
            let buffer = try await request.body.collect(upTo: 1 << 20)
            return .success(try SwitchboardJSON.decode(type, from: Data(buffer.readableBytesView)))
        } catch let error as DecodingError {
            return .failure(SwitchboardError(.invalidParams, SwitchboardJSON.describe(error)))
        } catch {
            return .failure(SwitchboardError(.invalidParams, "body must be JSON of at most 1 MiB"))
        }
    }

    static func registerAppManagement(on admin: RouterGroup<SwitchboardRequestContext>, services: AdminServices) {
        admin.get("/apps/:app/settings") { _, context in
            guard let app = services.apps.app(knownApp(try context.parameters.require("app"), services) ?? 0) else {
                return Self.error(SwitchboardError(.unknownApp))
            }
            return encoded(SettingsBody(app.settings))
        }

        admin.put("/apps/:app/settings") { request, context in
            guard var app = services.apps.app(knownApp(try context.parameters.require("app"), services) ?? 0) else {
                return Self.error(SwitchboardError(.unknownApp))
            }
            switch await body(SettingsBody.self, request) {
            case .failure(let error):
                return Self.error(error)
            case .success(let settings):
                if let count = settings.maxParticipants {
                    guard (2...CallLimits.maxChatGroupMembers).contains(count) else {
                        return Self.error(SwitchboardError(.invalidParams, "maxParticipants must be 2-1000"))
                    }
                    app.settings.maxParticipants = count
                }
                if let days = settings.recordRetentionDays {
                    guard (0...36_500).contains(days) else {
                        return Self.error(SwitchboardError(.invalidParams, "recordRetentionDays must be 0-36500"))
                    }
                    app.settings.recordRetentionDays = days == 0 ? nil : days
                }
                if let policy = settings.busyPolicy { app.settings.busyPolicy = policy }
                if let sees = settings.blockedCallerSees { app.settings.blockedCallerSees = sees }
                if let pull = settings.callPull { app.settings.callPull = pull }
                if let recording = settings.recording {
                    if let days = recording.retentionDays {
                        guard (0...36_500).contains(days) else {
                            return Self.error(SwitchboardError(.invalidParams, "recording.retentionDays must be 0-36500"))
                        }
                        app.settings.recording.retentionDays = days == 0 ? nil : days
                    }
                    if let policy = recording.policy { app.settings.recording.policy = policy }
                    if let control = recording.control { app.settings.recording.control = control }
                }
                do {
                    try await services.storage.saveApp(app)
                } catch {
                    return Self.error(SwitchboardError(.storageUnavailable))
                }
                services.apps.update(app)
                await services.cluster.appsChanged()
                return encoded(SettingsBody(app.settings))
            }
        }

        admin.put("/apps/:app/groups/:group/members") { request, context in
            guard let app = knownApp(try context.parameters.require("app"), services) else {
                return Self.error(SwitchboardError(.unknownApp))
            }
            let group = ChatGroupID(rawValue: try context.parameters.require("group"))
            guard CallStateMachine.isValidToken(group.rawValue, maxLength: CallLimits.maxChatGroupIDLength) else {
                return Self.error(SwitchboardError(.invalidChatGroupID))
            }
            switch await body(GroupMembers.self, request) {
            case .failure(let error):
                return Self.error(error)
            case .success(let members):
                guard members.userIds.count <= CallLimits.maxChatGroupMembers else {
                    return Self.error(SwitchboardError(.invalidParams, "at most 1000 members per group"))
                }
                if let bad = members.userIds.first(where: { !$0.isValid }) {
                    return Self.error(SwitchboardError(.invalidUserID, "'\(bad.rawValue.prefix(40))' is not a valid userID"))
                }
                do {
                    try await services.storage.setChatGroupMembers(app: app, group: group, members: members.userIds)
                    let stored = try await services.storage.chatGroupMembers(app: app, group: group)
                    return encoded(GroupMembers(groupId: group, userIds: stored))
                } catch {
                    return Self.error(SwitchboardError(.storageUnavailable))
                }
            }
        }

        admin.get("/apps/:app/groups/:group/members") { _, context in
            guard let app = knownApp(try context.parameters.require("app"), services) else {
                return Self.error(SwitchboardError(.unknownApp))
            }
            let group = ChatGroupID(rawValue: try context.parameters.require("group"))
            do {
                return encoded(
                    GroupMembers(groupId: group, userIds: try await services.storage.chatGroupMembers(app: app, group: group)))
            } catch {
                return Self.error(SwitchboardError(.storageUnavailable))
            }
        }
    }

    static func knownApp(_ text: String, _ services: AdminServices) -> SdkAppID? {
        guard let value = Int64(text), services.apps.app(SdkAppID(value)) != nil else { return nil }
        return SdkAppID(value)
    }

    struct OnlineUser: Codable, Sendable, Equatable {
        struct Device: Codable, Sendable, Equatable {
            var deviceId: DeviceID
            var platform: String?
        }
        var userId: UserID
        var devices: [Device]
    }

    struct DevUserSig: Codable, Sendable, Equatable {
        var sdkAppID: SdkAppID
        var userID: UserID
        var userSig: String
        /// Seconds the UserSig is valid.
        var expire: Int64
    }

    /// `GET /v1/web/config`.
    struct WebConfig: Codable, Sendable, Equatable {
        /// WebSocket origins besides the page's own that the page may connect to.
        var allowedServers: [String]
        /// Origins besides the page's own that avatar images may come from.
        var imageOrigins: [String]
        /// The VAPID public key of the app asked for (`?sdkAppID=`), base64url.
        var webPushKey: String? = nil
    }

    struct OnlineUsers: Codable, Sendable, Equatable {
        var users: [OnlineUser]
    }

    static func encoded(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? SwitchboardJSON.encode(value)) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func json(_ object: [String: any Sendable], status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// `{"error": {"code": …, "message": …}}` with the HTTP status that fits the code.
    static func error(_ error: SwitchboardError) -> Response {
        struct Body: Encodable { var error: SwitchboardError }
        let status: HTTPResponse.Status =
            switch error.code {
            case .unauthorized: .unauthorized
            case .callNotFound, .notFound, .unknownApp: .notFound
            case .callAlreadyEnded: .conflict
            case .developmentOnly, .hostNotAllowed: .forbidden
            case .storageUnavailable, .shuttingDown: .serviceUnavailable
            case .internalError: .internalServerError
            default: .badRequest
            }
        return encoded(Body(error: error), status: status)
    }
}
