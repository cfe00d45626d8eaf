import Foundation
import Hummingbird
import SwitchboardProtocol

/// The admin API's webhooks (docs/WEBHOOKS.md): an app's endpoints, their deliveries, replays,
/// pausing; and the app's call records with filters.
extension AdminAPI {
    /// Most endpoints per app.
    static let maxWebhookEndpoints = 10
    /// Most events one range replay queues.
    static let maxReplay = 10_000

    /// An endpoint as the admin API shows it. The secret only in the answers that make one
    /// (creation, rotation): listings never carry it.
    struct WebhookEndpointView: Codable, Sendable, Equatable {
        struct Backlog: Codable, Sendable, Equatable {
            var pending: Int
            var oldestEventTime: Int64?
            /// Set while it is at its bound: new events are not queued for it.
            var fullSince: Int64?
        }

        var id: String
        var sdkAppID: SdkAppID
        var url: String
        /// The event types it gets; `["*"]`: every type.
        var events: [String]
        var description: String?
        var paused: Bool
        var pausedReason: String?
        var secret: String?
        var previousSecretExpiresAt: Int64?
        var backlog: Backlog?
        var gaps: [WebhookGap]
        var createdAt: Int64
        var updatedAt: Int64

        init(_ endpoint: WebhookEndpoint, backlog: WebhookBacklog?, showSecret: Bool, now: Int64) {
            id = endpoint.id
            sdkAppID = endpoint.app
            url = endpoint.url
            events = endpoint.events.map { $0.map(\.rawValue).sorted() } ?? ["*"]
            description = endpoint.description
            paused = endpoint.paused
            pausedReason = endpoint.pausedReason
            secret = showSecret ? endpoint.secret : nil
            previousSecretExpiresAt = endpoint.previousSecretUntil.flatMap { $0 > now ? $0 : nil }
            self.backlog = backlog.map {
                Backlog(pending: $0.pending, oldestEventTime: $0.oldestEventTime, fullSince: endpoint.fullSince)
            }
            gaps = endpoint.gaps
            createdAt = endpoint.createdAt
            updatedAt = endpoint.updatedAt
        }
    }

    struct WebhookEndpointBody: Codable, Sendable {
        var url: String?
        /// Event types, or `["*"]` for all (also what an endpoint made without `events` gets).
        var events: [String]?
        var description: String?
    }

    struct WebhookEndpointList: Codable, Sendable {
        var endpoints: [WebhookEndpointView]
    }

    struct RotateBody: Codable, Sendable {
        /// Seconds the secret before keeps signing (both are sent meanwhile): 0-604800, default 86400.
        var previousSecretValidFor: Int?
        /// The new secret (`whsec_` and base64 of 24-64 bytes); default: a random one.
        var secret: String?
    }

    struct ReplayBody: Codable, Sendable {
        var eventId: String?
        var from: Int64?
        var to: Int64?
        var limit: Int?
    }

    struct ReplayResult: Codable, Sendable, Equatable {
        var queued: Int
        /// More events are in the range: replay again from here.
        var continueFrom: Int64?
    }

    struct DeliveryPage: Codable, Sendable {
        var deliveries: [DeliveryInfo]
        /// Pass as `before` for the next page.
        var nextBefore: Int64?
    }

    struct AppRecordView: Codable, Sendable, Equatable {
        var userId: UserID
        var record: CallRecord
    }

    struct AppRecordPageView: Codable, Sendable {
        var records: [AppRecordView]
        var nextCursor: String?
    }

    static func events(_ names: [String]?) -> Result<Set<WebhookEventType>?, SwitchboardError> {
        guard let names, names != ["*"] else { return .success(nil) }
        guard !names.isEmpty, names.count <= 64 else {
            return .failure(SwitchboardError(.unknownWebhookEvent, "events lists event types, or [\"*\"] for all"))
        }
        var types = Set<WebhookEventType>()
        for name in names {
            guard let type = WebhookEventType(rawValue: name) else {
                return .failure(SwitchboardError(.unknownWebhookEvent, "'\(name.prefix(60))' is not an event type"))
            }
            types.insert(type)
        }
        return .success(types)
    }

    static func registerWebhooks(on admin: RouterGroup<SwitchboardRequestContext>, services: AdminServices) {
        @Sendable func appOf(_ context: SwitchboardRequestContext) throws -> SdkAppID? {
            guard let value = Int64(try context.parameters.require("app")), services.apps.app(SdkAppID(value)) != nil else {
                return nil
            }
            return SdkAppID(value)
        }
        @Sendable func endpointOf(_ context: SwitchboardRequestContext, app: SdkAppID) async throws
            -> Result<WebhookEndpoint, SwitchboardError>
        {
            let id = try context.parameters.require("endpoint")
            do {
                guard let found = try await services.storage.webhookEndpoints(app: app).first(where: { $0.id == id }) else {
                    return .failure(SwitchboardError(.notFound, "no such webhook endpoint"))
                }
                return .success(found)
            } catch {
                return .failure(SwitchboardError(.storageUnavailable))
            }
        }
        @Sendable func viewOf(_ endpoint: WebhookEndpoint, showSecret: Bool = false) async -> WebhookEndpointView {
            let backlog = try? await services.storage.webhookBacklogs()[endpoint.id]
            return WebhookEndpointView(
                endpoint, backlog: backlog ?? WebhookBacklog(pending: 0, oldestEventTime: nil), showSecret: showSecret,
                now: services.clock.now())
        }
        /// Saves and makes every node use it.
        @Sendable func save(_ endpoint: WebhookEndpoint) async -> SwitchboardError? {
            do {
                try await services.storage.saveWebhookEndpoint(endpoint)
                await services.webhookEndpointsChanged()
                return nil
            } catch {
                return SwitchboardError(.storageUnavailable)
            }
        }

        admin.get("/apps/:app/webhooks") { _, context in
            guard let app = try appOf(context) else { return error(SwitchboardError(.unknownApp)) }
            do {
                var views: [WebhookEndpointView] = []
                for endpoint in try await services.storage.webhookEndpoints(app: app) { views.append(await viewOf(endpoint)) }
                return encoded(WebhookEndpointList(endpoints: views))
            } catch {
                return Self.error(SwitchboardError(.storageUnavailable))
            }
        }

        admin.post("/apps/:app/webhooks") { request, context in
            guard let app = try appOf(context) else { return error(SwitchboardError(.unknownApp)) }
            let body: WebhookEndpointBody
            switch await Self.body(WebhookEndpointBody.self, request) {
            case .failure(let error): return Self.error(error)
            case .success(let parsed): body = parsed
            }
            guard let url = body.url else { return error(SwitchboardError(.invalidWebhookURL, "url is required")) }
            if case .failure(let refusal) = await services.webhookPolicy.check(url) { return error(refusal) }
            let types: Set<WebhookEventType>?
            switch events(body.events) {
            case .failure(let error): return Self.error(error)
            case .success(let parsed): types = parsed
            }
            guard (body.description?.count ?? 0) <= 200 else {
                return error(SwitchboardError(.invalidParams, "description is at most 200 characters"))
            }
            do {
                guard try await services.storage.webhookEndpoints(app: app).count < maxWebhookEndpoints else {
                    return error(SwitchboardError(.tooManyWebhookEndpoints))
                }
            } catch {
                return Self.error(SwitchboardError(.storageUnavailable))
            }
            let now = services.clock.now()
            let endpoint = WebhookEndpoint(
                id: "ep_" + randomHex(bytes: 8), app: app, url: url, events: types, description: body.description,
                secret: WebhookSignature.newSecret(), paused: false, gaps: [], createdAt: now, updatedAt: now)
            if let failure = await save(endpoint) { return error(failure) }
            return encoded(await viewOf(endpoint, showSecret: true), status: .created)
        }

        admin.get("/apps/:app/webhooks/:endpoint") { _, context in
            guard let app = try appOf(context) else { return error(SwitchboardError(.unknownApp)) }
            switch try await endpointOf(context, app: app) {
            case .failure(let error): return Self.error(error)
            case .success(let found): return encoded(await viewOf(found))
            }
        }

        admin.patch("/apps/:app/webhooks/:endpoint") { request, context in
            guard let app = try appOf(context) else { return error(SwitchboardError(.unknownApp)) }
            var found: WebhookEndpoint
            switch try await endpointOf(context, app: app) {
            case .failure(let error): return Self.error(error)
            case .success(let endpoint): found = endpoint
            }
            let body: WebhookEndpointBody
            switch await Self.body(WebhookEndpointBody.self, request) {
            case .failure(let error): return Self.error(error)
            case .success(let parsed): body = parsed
            }
            if let url = body.url {
                if case .failure(let refusal) = await services.webhookPolicy.check(url) { return error(refusal) }
                found.url = url
            }
            if body.events != nil {
                switch events(body.events) {
                case .failure(let error): return Self.error(error)
                case .success(let parsed): found.events = parsed
                }
            }
            if let description = body.description {
                guard description.count <= 200 else {
                    return error(SwitchboardError(.invalidParams, "description is at most 200 characters"))
                }
                found.description = description
            }
            found.updatedAt = services.clock.now()
            if let failure = await save(found) { return error(failure) }
            return encoded(await viewOf(found))
        }

        admin.delete("/apps/:app/webhooks/:endpoint") { _, context in
            guard let app = try appOf(context) else { return error(SwitchboardError(.unknownApp)) }
            let id = try context.parameters.require("endpoint")
            do {
                guard try await services.storage.deleteWebhookEndpoint(app: app, id: id) else {
                    return error(SwitchboardError(.notFound, "no such webhook endpoint"))
                }
                await services.webhookEndpointsChanged()
                return json(["id": id, "deleted": true] as [String: any Sendable])
            } catch {
                return Self.error(SwitchboardError(.storageUnavailable))
            }
        }

        for (action, paused) in [("pause", true), ("resume", false)] {
            admin.post("/apps/:app/webhooks/:endpoint/\(action)") { _, context in
                guard let app = try appOf(context) else { return error(SwitchboardError(.unknownApp)) }
                var found: WebhookEndpoint
                switch try await endpointOf(context, app: app) {
                case .failure(let error): return Self.error(error)
                case .success(let endpoint): found = endpoint
                }
                found.paused = paused
                found.pausedReason = paused ? "operator" : nil
                found.updatedAt = services.clock.now()
                if let failure = await save(found) { return error(failure) }
                return encoded(await viewOf(found))
            }
        }

        admin.post("/apps/:app/webhooks/:endpoint/rotate-secret") { request, context in
            guard let app = try appOf(context) else { return error(SwitchboardError(.unknownApp)) }
            var found: WebhookEndpoint
            switch try await endpointOf(context, app: app) {
            case .failure(let error): return Self.error(error)
            case .success(let endpoint): found = endpoint
            }
            let body: RotateBody
            switch await Self.body(RotateBody.self, request) {
            case .failure(let error): return Self.error(error)
            case .success(let parsed): body = parsed
            }
            let validFor = body.previousSecretValidFor ?? 86_400
            guard (0...604_800).contains(validFor) else {
                return error(SwitchboardError(.invalidParams, "previousSecretValidFor is 0-604800 seconds"))
            }
            if let secret = body.secret, WebhookSignature.key(secret) == nil || !secret.hasPrefix(WebhookSignature.secretPrefix) {
                return error(SwitchboardError(.invalidParams, "a secret is whsec_ and the base64 of 24-64 bytes"))
            }
            let now = services.clock.now()
            found.previousSecret = validFor > 0 ? found.secret : nil
            found.previousSecretUntil = validFor > 0 ? now + Int64(validFor) * 1000 : nil
            found.secret = body.secret ?? WebhookSignature.newSecret()
            found.updatedAt = now
            if let failure = await save(found) { return error(failure) }
            return encoded(await viewOf(found, showSecret: true))
        }

        admin.get("/apps/:app/webhooks/:endpoint/deliveries") { request, context in
            guard let app = try appOf(context) else { return error(SwitchboardError(.unknownApp)) }
            let found: WebhookEndpoint
            switch try await endpointOf(context, app: app) {
            case .failure(let error): return Self.error(error)
            case .success(let endpoint): found = endpoint
            }
            let query = request.uri.queryParameters
            var state: DeliveryInfo.State?
            if let text = query["state"].map(String.init) {
                guard let parsed = DeliveryInfo.State(rawValue: text) else {
                    return error(SwitchboardError(.invalidParams, "state is pending, delivered or failed"))
                }
                state = parsed
            }
            let limit = query["limit"].flatMap { Int(String($0)) } ?? 50
            guard (1...500).contains(limit) else { return error(SwitchboardError(.invalidParams, "limit is 1-500")) }
            let before = query["before"].flatMap { Int64(String($0)) }
            do {
                let deliveries = try await services.storage.webhookDeliveries(
                    endpoint: found.id, state: state, before: before, limit: limit)
                return encoded(
                    DeliveryPage(deliveries: deliveries, nextBefore: deliveries.count == limit ? deliveries.last?.seq : nil))
            } catch {
                return Self.error(SwitchboardError(.storageUnavailable))
            }
        }

        admin.post("/apps/:app/webhooks/:endpoint/replay") { request, context in
            guard let app = try appOf(context) else { return error(SwitchboardError(.unknownApp)) }
            let found: WebhookEndpoint
            switch try await endpointOf(context, app: app) {
            case .failure(let error): return Self.error(error)
            case .success(let endpoint): found = endpoint
            }
            let body: ReplayBody
            switch await Self.body(ReplayBody.self, request) {
            case .failure(let error): return Self.error(error)
            case .success(let parsed): body = parsed
            }
            let now = services.clock.now()
            do {
                let result: ReplayResult
                if let eventId = body.eventId {
                    guard body.from == nil, body.to == nil, eventId.utf8.count <= 100 else {
                        return error(SwitchboardError(.invalidParams, "replay either an eventId or a range from-to"))
                    }
                    guard try await services.storage.replayWebhookEvent(endpoint: found.id, eventId: eventId, now: now) else {
                        return error(SwitchboardError(.notFound, "no such event for this endpoint (or no longer kept)"))
                    }
                    result = ReplayResult(queued: 1)
                } else {
                    guard let from = body.from, let to = body.to, from >= 0, from < to else {
                        return error(SwitchboardError(.invalidTimeRange))
                    }
                    let limit = body.limit ?? maxReplay
                    guard (1...maxReplay).contains(limit) else {
                        return error(SwitchboardError(.invalidParams, "limit is 1-\(maxReplay)"))
                    }
                    let (queued, next) = try await services.storage.replayWebhookEvents(
                        endpoint: found.id, from: from, to: to, limit: limit, now: now)
                    result = ReplayResult(queued: queued, continueFrom: next)
                }
                services.webhookDispatcher.wake()
                return encoded(result)
            } catch {
                return Self.error(SwitchboardError(.storageUnavailable))
            }
        }

        admin.get("/apps/:app/records") { request, context in
            guard let app = try appOf(context) else { return error(SwitchboardError(.unknownApp)) }
            let query = request.uri.queryParameters
            var filter = AppRecordFilter()
            if let text = query["userId"].map(String.init) {
                let user = UserID(rawValue: text)
                guard user.isValid else { return error(SwitchboardError(.invalidUserID)) }
                filter.user = user
            }
            for (name, keyPath) in [("from", \AppRecordFilter.from), ("to", \AppRecordFilter.to)] {
                guard let text = query[Substring(name)].map(String.init) else { continue }
                guard let value = Int64(text), value >= 0 else { return error(SwitchboardError(.invalidTimeRange)) }
                filter[keyPath: keyPath] = value
            }
            if let from = filter.from, let to = filter.to, from >= to { return error(SwitchboardError(.invalidTimeRange)) }
            if let text = query["result"].map(String.init) {
                guard let result = CallRecordResult.allCases.first(where: { $0.rawValue == text && $0 != .unknown }) else {
                    return error(SwitchboardError(.invalidParams, "unknown result"))
                }
                filter.result = result
            }
            if let text = query["mediaType"].map(String.init) {
                guard let media = CallMediaType(rawValue: text) else {
                    return error(SwitchboardError(.invalidParams, "mediaType is audio or video"))
                }
                filter.mediaType = media
            }
            let limit = query["limit"].flatMap { Int(String($0)) } ?? 100
            guard (1...500).contains(limit) else { return error(SwitchboardError(.invalidParams, "limit is 1-500")) }
            var cursor: AppRecordCursor?
            if let text = query["cursor"].map(String.init) {
                guard let parsed = AppRecordCursor(token: text) else { return error(SwitchboardError(.invalidCursor)) }
                cursor = parsed
            }
            do {
                let page = try await services.storage.queryAppRecords(app: app, filter: filter, after: cursor, limit: limit)
                return encoded(
                    AppRecordPageView(
                        records: page.records.map { AppRecordView(userId: $0.owner.user, record: $0.record) },
                        nextCursor: page.next?.token))
            } catch {
                return Self.error(SwitchboardError(.storageUnavailable))
            }
        }
    }
}
