import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import SwitchboardProtocol

/// Where the server reaches Firebase Cloud Messaging, and the service account of the apps that
/// have none of their own (admin API).
public struct FCMConfiguration: Sendable {
    /// The server's service account; nil: only apps with an account of their own push to Android.
    public var serviceAccount: FCMServiceAccount?
    /// The HTTP v1 API's base URL.
    public var apiURL = "https://fcm.googleapis.com"
    /// A PEM file of extra certificate authorities to trust for FCM and the token endpoint (tests,
    /// TLS-inspecting proxies).
    public var trustRootsPath: String?

    public init() {}
}

/// Sends FCM HTTP v1 messages to Android apps: `POST /v1/projects/{project}/messages:send` with an
/// OAuth2 access token of the app's service account, data messages only (the app decides what to
/// show), an invitation and the end of a ringing at high priority with a time to live of the rest
/// of the ringing, a missed call at normal priority.
final class FCMTransport: PushTransport {
    let name = "fcm"
    let kinds: Set<PushTokenKind> = [.fcm]
    /// FCM's limit on a data message's keys and values together.
    static let maxDataBytes = 4096
    /// The data key that holds the ``CallPush`` object.
    static let dataKey = "switchboard"
    private let http: HTTPClient
    private let configuration: FCMConfiguration
    private let credentials: PushCredentials
    private let tokens: FCMAccessTokens
    private let logger: Logger

    init(configuration: FCMConfiguration, credentials: PushCredentials, clock: any SwitchboardClock, logger: Logger) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let path = configuration.trustRootsPath {
            tls.additionalTrustRoots = [.file(path)]
        }
        var httpConfiguration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(10), read: .seconds(15)))
        httpConfiguration.httpVersion = .automatic
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
        self.configuration = configuration
        self.credentials = credentials
        tokens = FCMAccessTokens(http: http, clock: clock, logger: logger)
        self.logger = logger
    }

    func shutdown() async {
        try? await http.shutdown()
    }

    func isConfigured(for app: SdkAppID) -> Bool {
        credentials.fcm(app) != nil
    }

    /// How many access tokens were granted so far.
    var grantedTokens: Int {
        get async { await tokens.granted }
    }

    func refresh(app: SdkAppID, after rejected: String) async -> Bool {
        guard let account = credentials.fcm(app)?.account else { return false }
        return (try? await tokens.refresh(account, after: rejected)) != nil
    }

    /// The HTTP v1 request for `token`: a data message whose one key, `switchboard`, holds the
    /// ``CallPush`` object as JSON text (sealed when the token has a sealing key). The one place an
    /// FCM message is made for a token.
    static func message(_ push: CallPush, for token: PushToken, ttl: Int64) throws -> Data {
        let object = try push.fittedObject(limit: maxDataBytes - dataKey.utf8.count, sealingKey: token.sealingKey)
        return try SwitchboardJSON.encode(
            Request(
                message: Request.Message(
                    token: token.token, data: [dataKey: String(decoding: object, as: UTF8.self)],
                    android: Request.Android(
                        priority: push.isUrgent ? "HIGH" : "NORMAL", ttl: "\(max(0, ttl))s",
                        collapseKey: String(push.callId.rawValue.prefix(64))))))
    }

    private struct Request: Encodable {
        struct Message: Encodable {
            var token: String
            var data: [String: String]
            var android: Android
        }
        struct Android: Encodable {
            var priority: String
            var ttl: String
            var collapseKey: String
            enum CodingKeys: String, CodingKey {
                case priority, ttl
                case collapseKey = "collapse_key"
            }
        }
        var message: Message
    }

    func send(_ push: CallPush, to token: PushToken, expiration: Int64) async -> PushOutcome {
        guard let account = credentials.fcm(token.user.app)?.account else { return .notSent(reason: "not_configured") }
        let accessToken: String
        do {
            accessToken = try await tokens.token(account)
        } catch let error as FCMAccessTokens.Failure {
            switch error {
            case .signing: return .notSent(reason: "signing_failed")
            case .refused(let status, let reason) where status < 500 && status != 429:
                return .rejected(status: status, reason: "token endpoint: \(reason)")
            case .refused(let status, _): return .retryable(reason: "token endpoint: HTTP \(status)")
            case .unreachable(let reason): return .retryable(reason: "token endpoint: \(reason)")
            }
        } catch {
            return .retryable(reason: "token endpoint: \(type(of: error))")
        }
        let body: Data
        do {
            body = try Self.message(push, for: token, ttl: (expiration - tokens.now) / 1000)
        } catch {
            return .notSent(reason: "encoding_failed")
        }
        var request = HTTPClientRequest(url: "\(configuration.apiURL)/v1/projects/\(account.projectId)/messages:send")
        request.method = .POST
        request.headers.add(name: "authorization", value: "Bearer \(accessToken)")
        request.headers.add(name: "content-type", value: "application/json; charset=UTF-8")
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await http.execute(request, timeout: .seconds(15))
            let answer = try await response.body.collect(upTo: 64 * 1024)
            return Self.outcome(
                status: Int(response.status.code), body: Data(answer.readableBytesView), accessToken: accessToken,
                retryAfter: RetryAfter.milliseconds(response.headers.first(name: "retry-after"), now: tokens.now))
        } catch {
            logger.debug("FCM push failed", metadata: ["error": "\(error)"])
            return .retryable(reason: "transport: \(type(of: error))")
        }
    }

    /// FCM's answer: 404 or `UNREGISTERED` (the app was uninstalled, the token expired),
    /// `SENDER_ID_MISMATCH` (the token belongs to another project) and `INVALID_ARGUMENT` about the
    /// token kill the token, as Firebase's token guidance says (an `INVALID_ARGUMENT` that names
    /// another field of the message, in a `BadRequest` detail, is the message's fault and keeps
    /// it); 401 means the access token expired; 429 and 5xx are worth retrying, not before
    /// `retryAfter` (ms, the answer's `Retry-After`).
    static func outcome(status: Int, body: Data, accessToken: String, retryAfter: Int64? = nil) -> PushOutcome {
        struct Answer: Decodable {
            struct Failure: Decodable {
                struct Detail: Decodable {
                    struct Violation: Decodable { var field: String? }
                    var errorCode: String?
                    var fieldViolations: [Violation]?
                }
                var status: String?
                var details: [Detail]?
            }
            var error: Failure?
        }
        let failure = (try? JSONDecoder().decode(Answer.self, from: body))?.error
        let code = failure?.details?.compactMap(\.errorCode).first ?? failure?.status ?? ""
        let fields = failure?.details?.flatMap { $0.fieldViolations ?? [] }.compactMap(\.field) ?? []
        switch (status, code) {
        case (200, _): return .delivered
        case (404, _), (_, "UNREGISTERED"), (_, "SENDER_ID_MISMATCH"):
            return .tokenInvalid(reason: code.isEmpty ? "HTTP \(status)" : code)
        case (_, "INVALID_ARGUMENT") where fields.allSatisfy({ $0 == "message.token" }):
            return .tokenInvalid(reason: code)
        case (401, _): return .credentialExpired(accessToken)
        case (429, _), (500..., _): return .retryable(reason: code.isEmpty ? "HTTP \(status)" : code, retryAfter: retryAfter)
        default: return .rejected(status: status, reason: fields.isEmpty ? code : "\(code) (\(fields.joined(separator: ", ")))")
        }
    }
}

/// OAuth2 access tokens of service accounts (the JWT-bearer grant, RFC 7523): one per account,
/// granted when first needed and kept until five minutes before it expires on the server's clock;
/// pushes that need one meanwhile wait for the same grant. Bounded by the accounts configured.
actor FCMAccessTokens {
    enum Failure: Error {
        /// The account's key cannot sign.
        case signing
        /// The token endpoint answered with an error.
        case refused(status: Int, reason: String)
        /// No answer, or one that is not a token.
        case unreachable(String)
    }

    /// The scope of sending FCM messages.
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// How long a grant's assertion is valid (Google allows at most an hour).
    static let assertionLifetime: Int64 = 3600
    /// How long before its expiry a token is replaced.
    static let margin: Int64 = 5 * 60_000

    private struct Held {
        var account: FCMServiceAccount
        var token: String
        /// When it is replaced, Unix ms.
        var renewAt: Int64
    }

    private let http: HTTPClient
    private let clock: any SwitchboardClock
    private let logger: Logger
    private var held: [String: Held] = [:]
    private var granting: [String: Task<Held, any Error>] = [:]
    private(set) var granted = 0

    init(http: HTTPClient, clock: any SwitchboardClock, logger: Logger) {
        self.http = http
        self.clock = clock
        self.logger = logger
    }

    nonisolated var now: Int64 { clock.now() }

    /// The account's current token, granted anew when there is none or it is about to expire.
    func token(_ account: FCMServiceAccount) async throws -> String {
        let key = account.clientEmail + "\n" + account.projectId
        if let current = held[key], current.account == account, clock.now() < current.renewAt { return current.token }
        return try await grant(account, key: key).token
    }

    /// FCM refused `rejected` as expired: grant a new one unless another push already did.
    func refresh(_ account: FCMServiceAccount, after rejected: String) async throws -> String {
        let key = account.clientEmail + "\n" + account.projectId
        if let current = held[key], current.account == account, current.token != rejected { return current.token }
        held[key] = nil
        return try await grant(account, key: key).token
    }

    private func grant(_ account: FCMServiceAccount, key: String) async throws -> Held {
        if let running = granting[key] { return try await running.value }
        let task = Task { try await self.fetch(account) }
        granting[key] = task
        defer { granting[key] = nil }
        let fresh = try await task.value
        held[key] = fresh
        granted += 1
        return fresh
    }

    private struct Grant: JWTPayload {
        var iss: IssuerClaim
        var scope: String
        var aud: AudienceClaim
        var iat: IssuedAtClaim
        var exp: ExpirationClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    private func fetch(_ account: FCMServiceAccount) async throws -> Held {
        let now = clock.now()
        let assertion: String
        do {
            let keys = JWTKeyCollection()
            let kid = account.privateKeyId.map { JWKIdentifier(string: $0) }
            await keys.add(rsa: try Insecure.RSA.PrivateKey(pem: account.privateKey), digestAlgorithm: .sha256, kid: kid)
            assertion = try await keys.sign(
                Grant(
                    iss: IssuerClaim(value: account.clientEmail), scope: Self.scope, aud: AudienceClaim(value: account.tokenURI),
                    iat: IssuedAtClaim(value: Date(timeIntervalSince1970: Double(now / 1000))),
                    exp: ExpirationClaim(value: Date(timeIntervalSince1970: Double(now / 1000 + Self.assertionLifetime)))),
                kid: kid)
        } catch {
            logger.error("FCM grant not signed", metadata: ["error": "\(error)"])
            throw Failure.signing
        }
        var request = HTTPClientRequest(url: account.tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        request.body = .bytes(ByteBuffer(string: form))
        struct Answer: Decodable {
            var access_token: String?
            var expires_in: Int64?
            var error: String?
        }
        let status: Int
        let answer: Answer?
        do {
            let response = try await http.execute(request, timeout: .seconds(15))
            let body = try await response.body.collect(upTo: 64 * 1024)
            status = Int(response.status.code)
            answer = try? JSONDecoder().decode(Answer.self, from: Data(body.readableBytesView))
        } catch {
            throw Failure.unreachable("\(type(of: error))")
        }
        guard status == 200 else { throw Failure.refused(status: status, reason: answer?.error ?? "HTTP \(status)") }
        guard let token = answer?.access_token, !token.isEmpty, let lifetime = answer?.expires_in, lifetime > 0 else {
            throw Failure.unreachable("no access token in the answer")
        }
        // Granted at `now` at the latest: replaced five minutes before it expires, or halfway
        // through a lifetime shorter than ten minutes.
        let lifetimeMs = lifetime * 1000
        return Held(account: account, token: token, renewAt: now + max(lifetimeMs / 2, lifetimeMs - Self.margin))
    }
}
