import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import SwitchboardProtocol

/// How the server reaches Apple's push service: where APNs is, and the server's auth key (token
/// authentication with a .p8 key), used by every app that has none of its own (``APNsKey``,
/// set through the admin API).
public struct APNsConfiguration: Sendable {
    /// The .p8 file of the server's APNs auth key (an ES256 private key, PKCS#8 PEM); nil: only
    /// apps with a key of their own push through APNs.
    public var keyPath: String?
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

    /// Where APNs is, without a key of the server's own.
    public init() {
        keyPath = nil
        keyId = ""
        teamId = ""
    }

    /// The server's key, read from ``keyPath``.
    func key() throws -> APNsKey? {
        guard let keyPath else { return nil }
        let key = APNsKey(privateKey: try String(contentsOfFile: keyPath, encoding: .utf8), keyId: keyId, teamId: teamId)
        if let problem = key.problem { throw problem }
        return key
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

    /// The key it signs with.
    let key: APNsKey

    init(key: APNsKey, lifetime: Duration, clock: any SwitchboardClock) async throws {
        self.key = key
        self.keyId = key.keyId
        self.teamId = key.teamId
        self.lifetime = lifetime.milliseconds
        self.clock = clock
        await keys.add(ecdsa: try ES256PrivateKey(pem: key.privateKey), kid: JWKIdentifier(string: key.keyId))
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

/// One push as APNs takes it: its kind (which decides the headers and the tokens it goes to), its
/// body, fitted to the kind's size limit, and its ids.
struct APNsNotification: Equatable, Sendable {
    var kind: PushTokenKind
    var callId: CallID
    var body: Data
    /// `apns-id`, a UUID.
    var id: String

    /// The push as APNs takes it for `token`, sealed when the token has a sealing key. The one
    /// place an APNs body is made for a token:
    /// - an invitation to a VoIP token is a VoIP push; to a ringing alert token (no CallKit), a
    ///   time-sensitive alert with the answer and decline actions. Its `apns-id` is the call id (a
    ///   UUID for the server's calls).
    /// - the end of a ringing (ringing alert tokens only) is an alert that replaces the ringing one
    ///   (same `apns-collapse-id`), ``CallEndedPush/alertPayload()``.
    /// - a missed call is an alert, which replaces a ringing one the same way.
    /// The ids of the others are derived from the call id and the kind.
    static func make(_ push: CallPush, for token: PushToken) throws -> APNsNotification {
        let key = token.sealingKey
        let body: Data
        switch (push, token.kind) {
        case (.incomingCall(let invitation), .voip):
            let voip = VoIPPush.incomingCall(invitation)
            body = try key.map { try voip.fittedSealedPayload(for: $0) } ?? voip.fittedPayload()
        case (.incomingCall(let invitation), .alert):
            body = try key.map { try invitation.fittedSealedAlertPayload(for: $0) } ?? invitation.fittedAlertPayload()
        case (.callEnded(let end), .alert):
            body = try key.map { try end.sealedAlertPayload(for: $0) } ?? end.alertPayload()
        case (.missedCall(let missed), .alert):
            body = try key.map { try missed.fittedSealedPayload(for: $0) } ?? missed.fittedPayload()
        default:
            // Never: ``CallPush/isFor(_:)`` sends APNs nothing else (iOS requires a VoIP push to
            // report a ringing call, so no end of a ringing goes to a VoIP token).
            throw SwitchboardError(.internalError, "APNs carries no \(push.kind) to a \(token.kind.rawValue) token")
        }
        let callId = push.callId
        let id =
            if case .incomingCall = push, UUID(uuidString: callId.rawValue) != nil {
                callId.rawValue
            } else {
                UUID(nameBasedOn: "\(callId.rawValue):\(push.kind)").uuidString.lowercased()
            }
        return APNsNotification(kind: token.kind, callId: callId, body: body, id: id)
    }

    /// The largest body APNs takes for this kind.
    var limit: Int { kind == .voip ? VoIPPush.maxPayloadBytes : MissedCallPush.maxPayloadBytes }
}

/// Sends pushes to APNs over HTTP/2: one long-lived connection per environment (the HTTP client's
/// pool multiplexes every push on it), token authentication with each app's key (its own, else
/// the server's), a provider token per key reused for ``APNsConfiguration/tokenLifetime``.
final class APNsTransport: PushTransport {
    let name = "apns"
    let kinds: Set<PushTokenKind> = [.voip, .alert]
    private let http: HTTPClient
    private let configuration: APNsConfiguration
    private let credentials: PushCredentials
    private let clock: any SwitchboardClock
    private let logger: Logger
    /// One signer per app that pushed, made again when the app's key changes. Bounded by the
    /// apps the server serves.
    private let signers = SignerTable()

    init(configuration: APNsConfiguration, credentials: PushCredentials, clock: any SwitchboardClock, logger: Logger) {
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
        self.credentials = credentials
        self.clock = clock
        self.logger = logger
    }

    func shutdown() async {
        try? await http.shutdown()
    }

    func isConfigured(for app: SdkAppID) -> Bool {
        credentials.apns(app) != nil
    }

    /// How many provider tokens were signed so far, for every app.
    var signedTokens: Int {
        get async { await signers.signedCount }
    }

    /// The app's signer, for its current key.
    private func signer(_ app: SdkAppID) async throws -> ProviderTokenSigner? {
        guard let key = credentials.apns(app)?.key else { return nil }
        return try await signers.signer(app, key: key) {
            try await ProviderTokenSigner(key: key, lifetime: configuration.tokenLifetime, clock: clock)
        }
    }

    func refresh(app: SdkAppID, after rejected: String) async -> Bool {
        guard let signer = try? await signer(app) else { return false }
        return (try? await signer.refresh(after: rejected)) != nil
    }

    /// Sends one push to one token (of the push's kind): a VoIP push to `<bundle>.voip`, an alert
    /// to `<bundle>`, both at priority 10, collapsed by call id.
    func send(_ push: CallPush, to token: PushToken, expiration: Int64) async -> PushOutcome {
        let providerToken: String
        do {
            guard let signer = try await signer(token.user.app) else { return .notSent(reason: "not_configured") }
            providerToken = try await signer.token()
        } catch {
            logger.error("APNs provider token not signed", metadata: ["error": "\(error)"])
            return .notSent(reason: "signing_failed")
        }
        let notification: APNsNotification
        do {
            notification = try APNsNotification.make(push, for: token)
        } catch {
            return .notSent(reason: "encoding_failed")
        }
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
            return Self.outcome(status: Int(response.status.code), reason: reason, providerToken: providerToken)
        } catch {
            logger.debug("push failed", metadata: ["error": "\(error)"])
            return .retryable(reason: "transport: \(type(of: error))")
        }
    }

    static func outcome(status: Int, reason: String, providerToken: String) -> PushOutcome {
        switch (status, reason) {
        case (200, _): .delivered
        case (410, _), (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"): .tokenInvalid(reason: reason.isEmpty ? "Unregistered" : reason)
        case (403, "ExpiredProviderToken"): .credentialExpired(providerToken)
        case (429, _), (500..., _): .retryable(reason: reason.isEmpty ? "HTTP \(status)" : reason)
        default: .rejected(status: status, reason: reason)
        }
    }
}

/// The provider-token signers of the apps, each for the key it was made with.
private actor SignerTable {
    private var signers: [SdkAppID: ProviderTokenSigner] = [:]

    func signer(_ app: SdkAppID, key: APNsKey, make: () async throws -> ProviderTokenSigner) async rethrows
        -> ProviderTokenSigner
    {
        if let signer = signers[app], signer.key == key { return signer }
        let signer = try await make()
        signers[app] = signer
        return signer
    }

    var signedCount: Int {
        get async {
            var count = 0
            for signer in signers.values { count += await signer.signedCount }
            return count
        }
    }
}
