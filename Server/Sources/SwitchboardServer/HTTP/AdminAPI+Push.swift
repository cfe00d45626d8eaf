import Foundation
import Hummingbird
import SwitchboardProtocol

/// `GET`, `PUT /v1/apps/{sdkAppID}/push` and `DELETE /v1/apps/{sdkAppID}/push/{service}`: an app's
/// own push credentials (APNs key, VAPID key pair, FCM service account), kept in the database with
/// the app's secret key. Answers never carry a private key: only what identifies each credential
/// and where it comes from (`app`: its own; `server`: the server's flags; `generated`: the VAPID
/// key pair the server made for the app).
extension AdminAPI {
    struct PushView: Codable, Sendable, Equatable {
        struct APNs: Codable, Sendable, Equatable {
            var keyId: String
            var teamId: String
            var source: PushCredentials.Source
        }
        struct WebPush: Codable, Sendable, Equatable {
            /// The `applicationServerKey` browsers subscribe with.
            var publicKey: String
            var subject: String
            var source: PushCredentials.Source
        }
        struct FCM: Codable, Sendable, Equatable {
            var projectId: String
            var clientEmail: String
            var source: PushCredentials.Source
        }
        var apns: APNs?
        var webPush: WebPush?
        var fcm: FCM?

        init(_ credentials: PushCredentials, app: SdkAppID) {
            apns = credentials.apns(app).map { APNs(keyId: $0.key.keyId, teamId: $0.key.teamId, source: $0.source) }
            webPush = credentials.webPush(app).flatMap { found in
                found.key.publicKey.map { WebPush(publicKey: $0, subject: found.key.subject, source: found.source) }
            }
            fcm = credentials.fcm(app).map {
                FCM(projectId: $0.account.projectId, clientEmail: $0.account.clientEmail, source: $0.source)
            }
        }
    }

    /// What a `PUT` changes: each credential given replaces the app's own.
    struct PushChange: Decodable, Sendable {
        struct WebPush: Decodable, Sendable {
            /// A new key pair's private key; absent: the subject changes, the key pair stays.
            var privateKey: String?
            var subject: String?
        }
        struct FCM: Decodable, Sendable {
            /// The service account's JSON key file, as Firebase gives it.
            var serviceAccount: FCMServiceAccount
        }
        var apns: APNsKey?
        var webPush: WebPush?
        var fcm: FCM?
    }

    static func registerPush(on admin: RouterGroup<SwitchboardRequestContext>, services: AdminServices) {
        admin.get("/apps/:app/push") { _, context in
            guard let app = services.apps.app(knownApp(try context.parameters.require("app"), services) ?? 0) else {
                return Self.error(SwitchboardError(.unknownApp))
            }
            return encoded(PushView(services.pushCredentials, app: app.sdkAppID))
        }

        admin.put("/apps/:app/push") { request, context in
            guard var app = services.apps.app(knownApp(try context.parameters.require("app"), services) ?? 0) else {
                return Self.error(SwitchboardError(.unknownApp))
            }
            let change: PushChange
            switch await body(PushChange.self, request) {
            case .failure(let error): return Self.error(error)
            case .success(let value): change = value
            }
            if let apns = change.apns {
                if let problem = apns.problem { return Self.error(problem) }
                app.push.apns = apns
            }
            if let webPush = change.webPush {
                guard webPush.privateKey != nil || webPush.subject != nil else {
                    return Self.error(SwitchboardError(.invalidParams, "webPush: give privateKey, subject or both"))
                }
                let current = app.push.webPush ?? .generate()
                let key = VAPIDKey(
                    privateKey: webPush.privateKey ?? current.privateKey, subject: webPush.subject ?? current.subject,
                    generated: webPush.privateKey == nil ? current.generated : nil)
                if let problem = key.problem { return Self.error(problem) }
                app.push.webPush = key
            }
            if let fcm = change.fcm {
                if let problem = fcm.serviceAccount.problem { return Self.error(problem) }
                app.push.fcm = fcm.serviceAccount
            }
            return await save(app, services)
        }

        admin.delete("/apps/:app/push/:service") { _, context in
            guard var app = services.apps.app(knownApp(try context.parameters.require("app"), services) ?? 0) else {
                return Self.error(SwitchboardError(.unknownApp))
            }
            switch try context.parameters.require("service") {
            case "apns": app.push.apns = nil
            case "fcm": app.push.fcm = nil
            // An app always has a key pair: removing its own makes a new one (browsers subscribed
            // with the old one are refused by their push services, and subscribe again).
            case "webPush": app.push.webPush = .generate()
            default: return Self.error(SwitchboardError(.notFound, "the push services are apns, webPush and fcm"))
            }
            return await save(app, services)
        }
    }

    private static func save(_ app: AppRecord, _ services: AdminServices) async -> Response {
        do {
            try await services.storage.savePushCredentials(app: app.sdkAppID, app.push, now: services.clock.now())
        } catch {
            return Self.error(SwitchboardError(.storageUnavailable))
        }
        services.apps.update(app)
        await services.cluster.appsChanged()
        return encoded(PushView(services.pushCredentials, app: app.sdkAppID))
    }
}
