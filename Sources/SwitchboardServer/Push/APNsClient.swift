import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import SwitchboardProtocol

/// How the server reaches Apple's push service (token authentication with a .p8 key).
public struct APNsConfiguration: Sendable {
    /// The .p8 file of the APNs auth key (an ES256 private key, PKCS#8 PEM).
    public var keyPath: String
    /// The key's id (10 characters, from the developer account).
    public var keyId: String
    /// The team id (10 characters).
    public var teamId: String
    public var productionURL = "https://api.push.apple.com"
    public var sandboxURL = "https://api.sandbox.push.apple.com"
    /// A PEM file of extra certificate authorities to trust for the APNs host (tests, TLS-inspecting proxies).
    public var trustRootsPath: String?
    /// How long one provider token is used before a new one is signed. Apple refuses tokens older
    /// than an hour and asks for no more than one new token every 20 minutes.
    public var tokenLifetime: Duration = .seconds(25 * 60)

    public init(keyPath: String, keyId: String, teamId: String) {
        self.keyPath = keyPath
        self.keyId = keyId
        self.teamId = teamId
    }
}

/// Signs APNs provider tokens (ES256 JWT: `kid` header, `iss` team id, `iat` issue time) and
/// reuses each for ``APNsConfiguration/tokenLifetime``, never one per request.
actor ProviderTokenSigner {
    struct Claims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    private let keys = JWTKeyCollection()
    private let keyId: String
    private let teamId: String
    private let lifetime: Int64
    private let clock: any SwitchboardClock
    private var current: (token: String, issuedAt: Int64)?
    private(set) var signedCount = 0

    init(pem: String, keyId: String, teamId: String, lifetime: Duration, clock: any SwitchboardClock) async throws {
        self.keyId = keyId
        self.teamId = teamId
        self.lifetime = lifetime.milliseconds
        self.clock = clock
        await keys.add(ecdsa: try ES256PrivateKey(pem: pem), kid: JWKIdentifier(string: keyId))
    }

    /// The current token, signing a new one when the current one is too old.
    func token() async throws -> String {
        if let current, clock.now() - current.issuedAt < lifetime { return current.token }
        return try await sign()
    }

    /// APNs said `rejected` expired: sign a new one, unless another request already did.
    func refresh(after rejected: String) async throws -> String {
        if let current, current.token != rejected { return current.token }
        return try await sign()
    }

    private func sign() async throws -> String {
        let now = clock.now()
        let claims = Claims(
            iss: IssuerClaim(value: teamId), iat: IssuedAtClaim(value: Date(timeIntervalSince1970: Double(now / 1000))))
        let token = try await keys.sign(claims, kid: JWKIdentifier(string: keyId))
        current = (token, now)
        signedCount += 1
        return token
    }
}

/// What APNs answered to one push.
enum APNsOutcome: Equatable, Sendable {
    case delivered
    /// 410, or 400 BadDeviceToken / DeviceTokenNotForTopic: the token is dead.
    case tokenInvalid(reason: String)
    /// 403 ExpiredProviderToken.
    case providerTokenExpired
    /// 429 or 5xx, or no answer: worth trying again.
    case retryable(reason: String)
    /// Any other refusal: trying again would not help.
    case rejected(status: Int, reason: String)
}

/// One push as APNs takes it: its kind (which decides the headers and the tokens it goes to), its
/// body, fitted to the kind's size limit, and its ids.
struct APNsNotification: Equatable, Sendable {
    var kind: PushTokenKind
    var callId: CallID
    var body: Data
    /// `apns-id`, a UUID.
    var id: String

    /// The invitation, as a VoIP push: its `apns-id` is the call id (a UUID for the server's calls).
    static func ring(_ push: IncomingCallPush) throws -> APNsNotification {
        let id =
            UUID(uuidString: push.callId.rawValue) != nil
            ? push.callId.rawValue : UUID(nameBasedOn: "\(push.callId.rawValue):incomingCall").uuidString.lowercased()
        return APNsNotification(
            kind: .voip, callId: push.callId, body: try VoIPPush.incomingCall(push).fittedPayload(), id: id)
    }

    /// A missed call, as an alert push: its `apns-id` is derived from the call id.
    static func missedCall(_ push: MissedCallPush) throws -> APNsNotification {
        APNsNotification(
            kind: .alert, callId: push.callId, body: try push.fittedPayload(),
            id: UUID(nameBasedOn: "\(push.callId.rawValue):missedCall").uuidString.lowercased())
    }

    /// The largest body APNs takes for this kind.
    var limit: Int { kind == .voip ? VoIPPush.maxPayloadBytes : MissedCallPush.maxPayloadBytes }
}

/// Sends pushes to APNs over HTTP/2: one long-lived connection per environment (the HTTP client's
/// pool multiplexes every push on it), token authentication.
final class APNsClient: Sendable {
    private let http: HTTPClient
    private let configuration: APNsConfiguration
    let signer: ProviderTokenSigner
    private let logger: Logger

    init(configuration: APNsConfiguration, clock: any SwitchboardClock, logger: Logger) async throws {
        let pem = try String(contentsOfFile: configuration.keyPath, encoding: .utf8)
        signer = try await ProviderTokenSigner(
            pem: pem, keyId: configuration.keyId, teamId: configuration.teamId,
            lifetime: configuration.tokenLifetime, clock: clock)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        if let path = configuration.trustRootsPath {
            tls.additionalTrustRoots = [.file(path)]
        }
        var httpConfiguration = HTTPClient.Configuration(
            tlsConfiguration: tls, timeout: .init(connect: .seconds(10), read: .seconds(15)))
        httpConfiguration.httpVersion = .automatic
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
        self.configuration = configuration
        self.logger = logger
    }

    func shutdown() async {
        try? await http.shutdown()
    }

    /// Sends one push to one token (of the push's kind): a VoIP push to `<bundle>.voip`, an alert
    /// to `<bundle>`, both at priority 10, collapsed by call id.
    func send(_ notification: APNsNotification, to token: PushToken, expiration: Int64, providerToken: String) async
        -> APNsOutcome
    {
        let base = token.environment == .sandbox ? configuration.sandboxURL : configuration.productionURL
        var request = HTTPClientRequest(url: "\(base)/3/device/\(token.token)")
        request.method = .POST
        request.headers.add(name: "authorization", value: "bearer \(providerToken)")
        request.headers.add(name: "apns-push-type", value: notification.kind == .voip ? "voip" : "alert")
        request.headers.add(name: "apns-topic", value: notification.kind == .voip ? "\(token.bundleId).voip" : token.bundleId)
        request.headers.add(name: "apns-priority", value: "10")
        request.headers.add(name: "apns-expiration", value: String(expiration / 1000))
        request.headers.add(name: "apns-id", value: notification.id)
        request.headers.add(name: "apns-collapse-id", value: String(notification.callId.rawValue.prefix(64)))
        do {
            guard notification.body.count <= notification.limit else {
                return .rejected(status: 413, reason: "PayloadTooLarge")
            }
            request.body = .bytes(ByteBuffer(bytes: notification.body))
            let response = try await http.execute(request, timeout: .seconds(15))
            let answer = try await response.body.collect(upTo: 16 * 1024)
            let reason =
                (try? JSONSerialization.jsonObject(with: Data(answer.readableBytesView)) as? [String: Any])?["reason"]
                as? String ?? ""
            return Self.outcome(status: Int(response.status.code), reason: reason)
        } catch {
            logger.debug("push failed", metadata: ["error": "\(error)"])
            return .retryable(reason: "transport: \(type(of: error))")
        }
    }

    static func outcome(status: Int, reason: String) -> APNsOutcome {
        switch (status, reason) {
        case (200, _): .delivered
        case (410, _), (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"): .tokenInvalid(reason: reason.isEmpty ? "Unregistered" : reason)
        case (403, "ExpiredProviderToken"): .providerTokenExpired
        case (429, _), (500..., _): .retryable(reason: reason.isEmpty ? "HTTP \(status)" : reason)
        default: .rejected(status: status, reason: reason)
        }
    }
}
