import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import JWTKit
import Logging
import NIOConcurrencyHelpers
import NIOCore
import SwitchboardProtocol
import SwitchboardTools

/// A local stand-in for a browser's push service (RFC 8030), for tests: HTTPS (a self-signed
/// certificate the server under test is told to trust), and the browser's side too. It makes
/// subscriptions as a browser does (``subscribe(applicationServerKey:)``: a P-256 key pair and an
/// auth secret it keeps), and for every message it checks what a push service checks and then
/// decrypts it as the browser would:
///
/// - `Authorization: vapid t=…, k=…` (RFC 8292): `k` is the key the subscription was made with,
///   the JWT is ES256 signed by it, `aud` is this service's origin, `exp` in the future (on the
///   test clock) and at most 24 hours away, `sub` a `mailto:` or `https:` URI;
/// - `TTL` present, `Urgency` one of RFC 8030's, `Topic` at most 32 URL-safe base64 characters,
///   `Content-Encoding: aes128gcm`, a body of at most 4,096 bytes;
/// - the body decrypts (RFC 8291) with the subscription's private key and auth secret.
///
/// It answers 201 Created, or what the test asked for: 410 Gone for an unsubscribed endpoint,
/// 404, 429, 500.
public final class TestWebPushServer: Sendable {
    /// A subscription, as `PushSubscription.toJSON()` gives it to a page.
    public struct Subscription: Sendable {
        public var endpoint: String
        public var keys: WebPushKeys
    }

    /// A message the service accepted, as the browser's service worker gets it.
    public struct Message: Sendable {
        public var endpoint: String
        public var headers: [String: String]
        /// The decrypted body.
        public var plaintext: Data
        /// What it says, when it is a Switchboard push.
        public var push: CallPush?
        /// The VAPID JWT's claims.
        public var audience: String
        public var expiresAt: Int64
        public var subject: String
        public var ttl: Int? { headers["ttl"].flatMap { Int($0) } }
    }

    public struct Answer: Sendable, Equatable {
        public var endpoint: String
        public var status: Int
        public var reason: String
    }

    public enum Behavior: Sendable {
        case normal
        /// The next `count` messages get 429, with `Retry-After: retryAfter` (seconds) when given.
        case throttle(count: Int, retryAfter: Int? = nil)
        case fail(count: Int)
    }

    private struct Held {
        var privateKey: P256.KeyAgreement.PrivateKey
        var auth: Data
        var applicationServerKey: String
    }

    private struct State {
        var subscriptions: [String: Held] = [:]
        var gone: Set<String> = []
        var notFound: Set<String> = []
        var behavior = Behavior.normal
    }

    public let port: Int
    public let certificatePath: String
    public let messages: Recorder<Message>
    public let answers: Recorder<Answer>
    private let state: NIOLockedValueBox<State>
    private let shutdown: @Sendable () async -> Void

    public var url: String { "https://127.0.0.1:\(port)" }

    public var behavior: Behavior {
        get { state.withLockedValue { $0.behavior } }
        set { state.withLockedValue { $0.behavior = newValue } }
    }

    /// A new subscription for a page whose server has this VAPID public key, as
    /// `pushManager.subscribe({applicationServerKey})` makes one.
    public func subscribe(applicationServerKey: String) -> Subscription {
        let id = UUID().uuidString.lowercased()
        let key = P256.KeyAgreement.PrivateKey()
        let auth = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        state.withLockedValue {
            $0.subscriptions[id] = Held(privateKey: key, auth: auth, applicationServerKey: applicationServerKey)
        }
        return Subscription(
            endpoint: "\(url)/push/\(id)",
            keys: WebPushKeys(p256dh: Base64URL.encode(key.publicKey.x963Representation), auth: Base64URL.encode(auth)))
    }

    /// The browser unsubscribed: messages to the endpoint get 410 Gone.
    public func unsubscribe(_ subscription: Subscription) {
        _ = state.withLockedValue { $0.gone.insert(Self.id(of: subscription.endpoint)) }
    }

    /// Messages to the endpoint get 404 Not Found.
    public func forget(_ subscription: Subscription) {
        _ = state.withLockedValue { $0.notFound.insert(Self.id(of: subscription.endpoint)) }
    }

    private static func id(of endpoint: String) -> String {
        String(endpoint.split(separator: "/").last ?? "")
    }

    public static func start(clock: any SwitchboardClock, directory: URL) async throws -> TestWebPushServer {
        let tls = try TestTLS.make(name: "switchboard test push service", file: "webpush-test-ca.pem", directory: directory)
        let state = NIOLockedValueBox(State())
        // Recorded before the answer goes out, the answer before the message: a test that saw a
        // message, or anything the server under test did after an answer, finds that answer here.
        let messages = Recorder<Message>()
        let answers = Recorder<Answer>()
        let portBox = NIOLockedValueBox(0)
        let router = Router()
        router.post("/push/:id") { request, context -> Response in
            let id = try context.parameters.require("id")
            let endpoint = "https://127.0.0.1:\(portBox.withLockedValue { $0 })/push/\(id)"
            func answer(_ status: HTTPResponse.Status, _ reason: String, headers: HTTPFields = [:]) -> Response {
                answers.record(Answer(endpoint: endpoint, status: Int(status.code), reason: reason))
                return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: reason)))
            }
            func header(_ name: String) -> String? { request.headers[HTTPField.Name(name)!] }
            let (held, gone, notFound, injected, retryAfter) = state.withLockedValue {
                state -> (Held?, Bool, Bool, HTTPResponse.Status?, Int?) in
                var injected: HTTPResponse.Status?
                var retryAfter: Int?
                switch state.behavior {
                case .throttle(let count, let after) where count > 0:
                    state.behavior = count > 1 ? .throttle(count: count - 1, retryAfter: after) : .normal
                    injected = .tooManyRequests
                    retryAfter = after
                case .fail(let count) where count > 0:
                    state.behavior = count > 1 ? .fail(count: count - 1) : .normal
                    injected = .internalServerError
                default: break
                }
                return (state.subscriptions[id], state.gone.contains(id), state.notFound.contains(id), injected, retryAfter)
            }
            guard let held, !notFound else { return answer(.notFound, "no such subscription") }
            if gone { return answer(.gone, "unsubscribed") }
            // RFC 8292: the request is signed by the key the subscription was made with.
            guard let authorization = header("authorization"), authorization.hasPrefix("vapid ") else {
                return answer(.unauthorized, "VAPID authorization required")
            }
            var parameters: [String: String] = [:]
            for part in authorization.dropFirst("vapid ".count).split(separator: ",") {
                let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if pair.count == 2 { parameters[String(pair[0])] = String(pair[1]) }
            }
            guard let jwt = parameters["t"], let key = parameters["k"] else { return answer(.unauthorized, "t and k required") }
            guard key == held.applicationServerKey else { return answer(.forbidden, "not the subscription's key") }
            struct Claims: JWTPayload {
                var aud: AudienceClaim
                var exp: ExpirationClaim
                var sub: SubjectClaim
                func verify(using algorithm: some JWTAlgorithm) async throws {}
            }
            guard let raw = Base64URL.decode(key), let publicKey = try? P256.Signing.PublicKey(x963Representation: raw) else {
                return answer(.unauthorized, "k is not a P-256 key")
            }
            let verifier = JWTKeyCollection()
            await verifier.add(ecdsa: try ES256PublicKey(backing: publicKey))
            guard let claims = try? await verifier.verify(jwt, as: Claims.self),
                TestAPNsServer.header(of: jwt)?["alg"] as? String == "ES256"
            else {
                return answer(.unauthorized, "bad VAPID signature")
            }
            let now = clock.now() / 1000
            let expiresAt = Int64(claims.exp.value.timeIntervalSince1970)
            guard claims.aud.value == ["https://127.0.0.1:\(portBox.withLockedValue { $0 })"] else {
                return answer(.unauthorized, "aud is not this push service's origin")
            }
            guard expiresAt > now, expiresAt <= now + 86_400 else { return answer(.unauthorized, "exp out of range") }
            let subject = claims.sub.value
            guard subject.hasPrefix("mailto:") || subject.hasPrefix("https://") else {
                return answer(.unauthorized, "sub is not a mailto: or https: URI")
            }
            // RFC 8030's headers.
            guard let ttl = header("ttl"), Int(ttl).map({ $0 >= 0 }) == true else { return answer(.badRequest, "TTL required") }
            if let urgency = header("urgency"), !["very-low", "low", "normal", "high"].contains(urgency) {
                return answer(.badRequest, "bad Urgency")
            }
            if let topic = header("topic"),
                topic.utf8.count > 32 || !topic.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
            {
                return answer(.badRequest, "bad Topic")
            }
            guard header("content-encoding") == "aes128gcm" else { return answer(.unsupportedMediaType, "aes128gcm only") }
            let body = try await request.body.collect(upTo: 64 * 1024)
            guard body.readableBytes <= 4096 else { return answer(.contentTooLarge, "payload too large") }
            if let injected {
                return answer(injected, "injected", headers: retryAfter.map { [.retryAfter: "\($0)"] } ?? [:])
            }
            // The browser's side: decrypt with the subscription's keys.
            guard
                let plaintext = try? TestWebPushServer.decrypt(
                    Data(body.readableBytesView), privateKey: held.privateKey, auth: held.auth)
            else {
                return answer(.badRequest, "does not decrypt with the subscription's keys")
            }
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            answers.record(Answer(endpoint: endpoint, status: 201, reason: ""))
            messages.record(
                Message(
                    endpoint: endpoint, headers: headers, plaintext: plaintext, push: CallPush(object: plaintext),
                    audience: claims.aud.value.first ?? "", expiresAt: expiresAt, subject: subject))
            return Response(status: .created, headers: [.location: "\(endpoint)/message/\(UUID().uuidString)"])
        }
        var logger = Logger(label: "switchboard.test-webpush")
        logger.logLevel = .critical
        let open = TestAPNsServer.OpenConnections()
        let started = AsyncStream<Int>.makeStream()
        let application = Application(
            router: router,
            server: try .http2Upgrade(tlsChannelConfiguration: TLSChannelConfiguration(tlsConfiguration: tls.configuration)),
            configuration: ApplicationConfiguration(
                address: .hostname("127.0.0.1", port: 0), availableConnectionsDelegate: ConnectionCounter(open: open)),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                portBox.withLockedValue { $0 = port }
                started.continuation.yield(port)
            },
            logger: logger)
        let runTask = Task { try await application.runService(gracefulShutdownSignals: []) }
        var iterator = started.stream.makeAsyncIterator()
        let port = await iterator.next() ?? 0
        return TestWebPushServer(
            port: port, certificatePath: tls.certificatePath, messages: messages,
            answers: answers, state: state
        ) {
            await open.none()
            runTask.cancel()
        }
    }

    private init(
        port: Int, certificatePath: String, messages: Recorder<Message>, answers: Recorder<Answer>,
        state: NIOLockedValueBox<State>, shutdown: @escaping @Sendable () async -> Void
    ) {
        self.port = port
        self.certificatePath = certificatePath
        self.messages = messages
        self.answers = answers
        self.state = state
        self.shutdown = shutdown
    }

    /// Stops once every client connection has closed (stop the server under test first).
    public func stop() async {
        await shutdown()
    }

    struct ConnectionCounter: AvailableConnectionsDelegate {
        let open: TestAPNsServer.OpenConnections
        mutating func connectionOpened() { open.opened() }
        mutating func connectionClosed() { open.closed() }
        func isAcceptingNewConnections() -> Bool { true }
    }
}

public enum WebPushDecryptionError: Error {
    case malformed
    case notLastRecord
}

extension TestWebPushServer {
    /// The browser's side of RFC 8291: decrypts an `aes128gcm` body of one record with the
    /// subscription's private key and auth secret. Written from the RFC with HMAC alone (not the HKDF
    /// the server's encryptor uses), so the two check each other.
    public static func decrypt(_ body: Data, privateKey: P256.KeyAgreement.PrivateKey, auth: Data) throws -> Data {
        let bytes = [UInt8](body)
        guard bytes.count > 21 else { throw WebPushDecryptionError.malformed }
        let salt = Data(bytes[0..<16])
        let recordSize = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let idLength = Int(bytes[20])
        guard bytes.count >= 21 + idLength + 17, idLength == 65 else { throw WebPushDecryptionError.malformed }
        let serverPublic = Data(bytes[21..<(21 + idLength)])
        let record = Data(bytes[(21 + idLength)...])
        guard record.count <= recordSize else { throw WebPushDecryptionError.malformed }
        let secret = try privateKey.sharedSecretFromKeyAgreement(
            with: P256.KeyAgreement.PublicKey(x963Representation: serverPublic))
        func hmac(_ key: Data, _ message: Data) -> Data {
            Data(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
        }
        let ecdh = secret.withUnsafeBytes { Data($0) }
        let prkKey = hmac(auth, ecdh)
        let keyInfo = Data("WebPush: info".utf8) + [0] + privateKey.publicKey.x963Representation + serverPublic
        let ikm = hmac(prkKey, keyInfo + [1])
        let prk = hmac(salt, ikm)
        let cek = hmac(prk, Data("Content-Encoding: aes128gcm".utf8) + [0, 1]).prefix(16)
        let nonce = hmac(prk, Data("Content-Encoding: nonce".utf8) + [0, 1]).prefix(12)
        let opened = try AES.GCM.open(
            AES.GCM.SealedBox(combined: nonce + record), using: SymmetricKey(data: cek))
        // Padding: zeros after the delimiter, which is 2 in the last (here the only) record.
        guard let delimiter = opened.lastIndex(where: { $0 != 0 }), opened[delimiter] == 2 else {
            throw WebPushDecryptionError.notLastRecord
        }
        return opened[opened.startIndex..<delimiter]
    }
}
