import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import SwitchboardProtocol

/// Where the server sends Web Push messages, and who may be sent to.
public struct WebPushConfiguration: Sendable {
    /// The server's VAPID key pair, used by every app that has none of its own (admin API);
    /// nil: each app uses the key pair generated for it at its first start.
    public var vapid: VAPIDKey?
    /// Hosts of endpoints the server sends to even though they are loopback, private or local,
    /// or on another port than 443 (a push service inside the operator's network; tests).
    public var allowedHosts: [String] = []
    /// A PEM file of extra certificate authorities to trust for push services (tests, TLS-inspecting proxies).
    public var trustRootsPath: String?

    public init() {}
}

/// Sends Web Push messages (RFC 8030) to browsers' push services: the body encrypted for the
/// subscription (RFC 8291, `aes128gcm`), the request signed with the app's VAPID key (RFC 8292),
/// `TTL` the time the push is worth delivering (the rest of the ringing), `Urgency: high` for a
/// ringing call and its end (`normal` for a missed call), and `Topic` derived from the call id so
/// that a push service holding the invitation for a browser that is offline replaces it with the
/// end of the ringing. Redirects are not followed (an endpoint's answer cannot send the server
/// elsewhere).
final class WebPushTransport: PushTransport {
    let name = "web"
    let kinds: Set<PushTokenKind> = [.web]
    private let http: HTTPClient
    private let credentials: PushCredentials
    private let policy: WebPushEndpointPolicy
    private let clock: any SwitchboardClock
    private let logger: Logger

    init(
        configuration: WebPushConfiguration, policy: WebPushEndpointPolicy, credentials: PushCredentials,
        clock: any SwitchboardClock, logger: Logger
    ) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let path = configuration.trustRootsPath {
            tls.additionalTrustRoots = [.file(path)]
        }
        var httpConfiguration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(10), read: .seconds(15)))
        httpConfiguration.httpVersion = .automatic
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
        self.credentials = credentials
        self.policy = policy
        self.clock = clock
        self.logger = logger
    }

    func shutdown() async {
        try? await http.shutdown()
    }

    func isConfigured(for app: SdkAppID) -> Bool {
        credentials.webPush(app) != nil
    }

    /// VAPID tokens are signed for each request: nothing to refresh.
    func refresh(app: SdkAppID, after rejected: String) async -> Bool { false }

    /// What a Web Push message carries for `token`: the ``CallPush`` object, sealed when the
    /// token has a sealing key, made to fit one record. The one place a Web Push body is made for
    /// a token.
    static func plaintext(_ push: CallPush, for token: PushToken) throws -> Data {
        try push.fittedObject(limit: WebPushEncryption.maxPlaintext, sealingKey: token.sealingKey)
    }

    /// The `Topic` of a call's pushes: at most 32 characters of the URL-safe base64 alphabet
    /// (RFC 8030 §5.4), derived from the call id.
    static func topic(_ callId: CallID) -> String {
        String(Base64URL.encode(Array(SHA256.hash(data: Data(callId.rawValue.utf8)))).prefix(32))
    }

    func send(_ push: CallPush, to token: PushToken, expiration: Int64) async -> PushOutcome {
        guard let vapid = credentials.webPush(token.user.app)?.key else { return .notSent(reason: "not_configured") }
        guard let signingKey = vapid.signingKey else { return .notSent(reason: "signing_failed") }
        guard let endpoint = URL(string: token.token), let keys = token.webPush, let p256dh = Base64URL.decode(keys.p256dh),
            let auth = Base64URL.decode(keys.auth)
        else { return .tokenInvalid(reason: "BadSubscription") }
        guard policy.problem(token.token) == nil, await policy.resolvesPublicly(endpoint) else {
            logger.warning("Web Push endpoint refused: not a public host", metadata: ["user": "\(token.user)"])
            return .tokenInvalid(reason: "EndpointNotAllowed")
        }
        let now = clock.now()
        let body: Data
        let authorization: String
        do {
            body = try WebPushEncryption.encrypt(try Self.plaintext(push, for: token), p256dh: p256dh, auth: auth)
            authorization = try VAPID.authorization(endpoint: endpoint, key: signingKey, subject: vapid.subject, now: now)
        } catch WebPushEncryption.Failure.badSubscriptionKey {
            return .tokenInvalid(reason: "BadSubscriptionKey")
        } catch {
            logger.error("Web Push not encrypted or signed", metadata: ["error": "\(error)"])
            return .notSent(reason: "encoding_failed")
        }
        var request = HTTPClientRequest(url: token.token)
        request.method = .POST
        request.headers.add(name: "authorization", value: authorization)
        request.headers.add(name: "ttl", value: String(max(0, (expiration - now) / 1000)))
        request.headers.add(name: "urgency", value: push.isUrgent ? "high" : "normal")
        request.headers.add(name: "topic", value: Self.topic(push.callId))
        request.headers.add(name: "content-encoding", value: "aes128gcm")
        request.headers.add(name: "content-type", value: "application/octet-stream")
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await http.execute(request, timeout: .seconds(15))
            let answer = try await response.body.collect(upTo: 16 * 1024)
            let status = Int(response.status.code)
            return Self.outcome(
                status: status, reason: String(decoding: answer.readableBytesView.prefix(200), as: UTF8.self),
                retryAfter: RetryAfter.milliseconds(response.headers.first(name: "retry-after"), now: now))
        } catch {
            logger.debug("Web Push failed", metadata: ["error": "\(error)"])
            return .retryable(reason: "transport: \(type(of: error))")
        }
    }

    /// The push service's answer; 429 and 5xx are retried, not before `retryAfter` (ms, the
    /// answer's `Retry-After`, RFC 8030 §8.4).
    static func outcome(status: Int, reason: String, retryAfter: Int64? = nil) -> PushOutcome {
        switch status {
        case 200..<300: .delivered
        // The subscription expired or was cancelled (RFC 8030 §7.3).
        case 404, 410: .tokenInvalid(reason: "HTTP \(status)")
        case 429, 500...: .retryable(reason: "HTTP \(status)", retryAfter: retryAfter)
        default: .rejected(status: status, reason: reason)
        }
    }
}

extension CallPush {
    /// Whether the push must arrive at once: a ringing call and its end, not a missed-call notice.
    var isUrgent: Bool {
        if case .missedCall = self { return false }
        return true
    }
}
