import CryptoExtras
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
import SwitchboardServer
import SwitchboardTools

/// A local stand-in for Firebase Cloud Messaging's HTTP v1 API and Google's OAuth2 token
/// endpoint, for tests: HTTPS with a self-signed certificate the server under test is told to
/// trust, and a service account of its own (an RSA key it made; ``serviceAccount``).
///
/// The token endpoint (`POST /token`) takes the JWT-bearer grant (RFC 7523) as Google does: the
/// assertion must be RS256 signed by the account's key, with its `kid`, `iss` the account's
/// e-mail, `aud` the token endpoint, the FCM scope, and `iat`/`exp` around now (test clock) at
/// most an hour apart; it answers an access token valid for ``tokenLifetime``. The send endpoint
/// (`POST /v1/projects/{project}/messages:send`) wants one of those tokens, unexpired, for the
/// account's project, and a message with a registration token and a data map of strings within
/// 4,096 bytes; a token the test unregistered gets 404 `UNREGISTERED`, as FCM answers for an app
/// that was uninstalled.
public final class TestFCMServer: Sendable {
    /// A message FCM accepted.
    public struct Message: Sendable {
        public var token: String
        public var data: [String: String]
        public var priority: String?
        /// `android.ttl`, e.g. `28s`.
        public var ttl: String?
        public var collapseKey: String?
        public var accessToken: String
        /// The request body as sent.
        public var body: Data
        /// The Switchboard push in `data.switchboard`.
        public var push: CallPush?
    }

    public struct Answer: Sendable, Equatable {
        public var token: String
        public var status: Int
        public var reason: String
    }

    public enum Behavior: Sendable {
        case normal
        /// The next `count` messages get 429 `QUOTA_EXCEEDED`, with `Retry-After: retryAfter`
        /// (seconds) when given.
        case throttle(count: Int, retryAfter: Int? = nil)
        case fail(count: Int)
    }

    private struct State {
        var unregistered: Set<String> = []
        /// Tokens FCM takes for no registration token at all (400 `INVALID_ARGUMENT`).
        var invalid: Set<String> = []
        /// Access token → when it expires (Unix s, test clock).
        var accessTokens: [String: Int64] = [:]
        var grants = 0
        var behavior = Behavior.normal
    }

    public let port: Int
    public let certificatePath: String
    /// The account the server under test is given (its token endpoint is this server's).
    public let serviceAccount: FCMServiceAccount
    /// The account's key file, as Firebase gives it.
    public let serviceAccountJSON: Data
    public let projectId = "switchboard-test"
    /// How long an access token is valid.
    public let tokenLifetime: Int64 = 3600
    public let messages: Recorder<Message>
    public let answers: Recorder<Answer>
    private let state: NIOLockedValueBox<State>
    private let shutdown: @Sendable () async -> Void

    public var url: String { "https://127.0.0.1:\(port)" }

    /// How many access tokens the token endpoint granted.
    public var grants: Int { state.withLockedValue { $0.grants } }

    public var behavior: Behavior {
        get { state.withLockedValue { $0.behavior } }
        set { state.withLockedValue { $0.behavior = newValue } }
    }

    /// The app was uninstalled: messages to the token get 404 `UNREGISTERED`.
    public func unregister(_ token: String) {
        _ = state.withLockedValue { $0.unregistered.insert(token) }
    }

    /// The token is not a registration token: messages to it get 400 `INVALID_ARGUMENT`, as FCM
    /// answers for a malformed or truncated token.
    public func invalidate(_ token: String) {
        _ = state.withLockedValue { $0.invalid.insert(token) }
    }

    /// Every access token granted so far stops working (401), as after a key rotation.
    public func revokeAccessTokens() {
        state.withLockedValue { $0.accessTokens = [:] }
    }

    public static func start(clock: any SwitchboardClock, directory: URL) async throws -> TestFCMServer {
        let tls = try TestTLS.make(name: "switchboard test FCM", file: "fcm-test-ca.pem", directory: directory)
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let verifier = JWTKeyCollection()
        let keyId = "test-key-1"
        await verifier.add(
            rsa: try Insecure.RSA.PublicKey(pem: rsa.publicKey.pemRepresentation), digestAlgorithm: .sha256,
            kid: JWKIdentifier(string: keyId))
        let state = NIOLockedValueBox(State())
        // Recorded before the answer goes out, the answer before the message: a test that saw a
        // message, or anything the server under test did after an answer, finds that answer here.
        let messages = Recorder<Message>()
        let answers = Recorder<Answer>()
        let portBox = NIOLockedValueBox(0)
        let projectId = "switchboard-test"
        let clientEmail = "switchboard-push@switchboard-test.iam.gserviceaccount.com"
        let lifetime: Int64 = 3600
        @Sendable func json(_ status: HTTPResponse.Status, _ object: [String: Any]) -> Response {
            let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
            return Response(
                status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
        }

        let router = Router()
        router.post("/token") { request, _ -> Response in
            let tokenURI = "https://127.0.0.1:\(portBox.withLockedValue { $0 })/token"
            let body = try await request.body.collect(upTo: 64 * 1024)
            var form: [String: String] = [:]
            for pair in String(buffer: body).split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? "" }
                if parts.count == 2 { form[parts[0]] = parts[1] }
            }
            guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer", let assertion = form["assertion"] else {
                return json(.badRequest, ["error": "unsupported_grant_type"])
            }
            struct Grant: JWTPayload {
                var iss: IssuerClaim
                var scope: String
                var aud: AudienceClaim
                var iat: IssuedAtClaim
                var exp: ExpirationClaim
                func verify(using algorithm: some JWTAlgorithm) async throws {}
            }
            guard let grant = try? await verifier.verify(assertion, as: Grant.self),
                TestAPNsServer.header(of: assertion)?["alg"] as? String == "RS256",
                TestAPNsServer.header(of: assertion)?["kid"] as? String == keyId
            else {
                return json(.badRequest, ["error": "invalid_grant", "error_description": "Invalid JWT Signature."])
            }
            let now = clock.now() / 1000
            let issued = Int64(grant.iat.value.timeIntervalSince1970)
            let expires = Int64(grant.exp.value.timeIntervalSince1970)
            guard grant.iss.value == clientEmail, grant.aud.value == [tokenURI],
                grant.scope.split(separator: " ").contains("https://www.googleapis.com/auth/firebase.messaging")
            else {
                return json(.badRequest, ["error": "invalid_grant", "error_description": "Invalid claims."])
            }
            guard issued <= now + 60, expires > now, expires - issued <= 3600 else {
                return json(.badRequest, ["error": "invalid_grant", "error_description": "Invalid JWT: Token must be a short-lived token"])
            }
            let token = "ya29.test-" + UUID().uuidString.lowercased()
            state.withLockedValue {
                $0.accessTokens[token] = now + lifetime
                $0.grants += 1
            }
            return json(.ok, ["access_token": token, "expires_in": lifetime, "token_type": "Bearer"])
        }

        router.post("/v1/projects/:project/messages:send") { request, context -> Response in
            /// An error as FCM answers it: `field`, for a message FCM refuses, is the field it names
            /// in a `BadRequest` detail; a token it does not take has an `FcmError` detail instead.
            func failure(
                _ status: HTTPResponse.Status, _ code: String, token: String = "", field: String? = nil,
                headers: HTTPFields = [:]
            ) -> Response {
                answers.record(Answer(token: token, status: Int(status.code), reason: code))
                var error: [String: Any] = ["code": Int(status.code), "message": code, "status": code]
                if code == "UNREGISTERED" {
                    error["status"] = "NOT_FOUND"
                    error["details"] = [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code]]
                } else if code == "INVALID_ARGUMENT", let field {
                    error["details"] = [
                        ["@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [["field": field]]]
                    ]
                } else if code == "INVALID_ARGUMENT" {
                    error["message"] = "The registration token is not a valid FCM registration token"
                    error["details"] = [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code]]
                }
                var response = json(status, ["error": error])
                response.headers.append(contentsOf: headers)
                return response
            }
            let now = clock.now() / 1000
            guard let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer ") else {
                return failure(.unauthorized, "UNAUTHENTICATED")
            }
            let accessToken = String(authorization.dropFirst("Bearer ".count))
            guard let expires = state.withLockedValue({ $0.accessTokens[accessToken] }), expires > now else {
                return failure(.unauthorized, "UNAUTHENTICATED")
            }
            guard try context.parameters.require("project") == projectId else { return failure(.forbidden, "PERMISSION_DENIED") }
            let body = Data((try await request.body.collect(upTo: 64 * 1024)).readableBytesView)
            guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
                let message = object["message"] as? [String: Any], let token = message["token"] as? String
            else { return failure(.badRequest, "INVALID_ARGUMENT", field: "message") }
            guard let rawData = message["data"] as? [String: Any], let data = rawData as? [String: String],
                data.reduce(0, { $0 + $1.key.utf8.count + $1.value.utf8.count }) <= 4096
            else { return failure(.badRequest, "INVALID_ARGUMENT", token: token, field: "message.data") }
            let android = message["android"] as? [String: Any]
            let priority = android?["priority"] as? String
            guard priority == nil || priority == "HIGH" || priority == "NORMAL" else {
                return failure(.badRequest, "INVALID_ARGUMENT", token: token, field: "message.android.priority")
            }
            let ttl = android?["ttl"] as? String
            if let ttl, !(ttl.hasSuffix("s") && Double(ttl.dropLast()) != nil) {
                return failure(.badRequest, "INVALID_ARGUMENT", token: token, field: "message.android.ttl")
            }
            let injected = state.withLockedValue { state -> (HTTPResponse.Status, Int?)? in
                switch state.behavior {
                case .throttle(let count, let retryAfter) where count > 0:
                    state.behavior = count > 1 ? .throttle(count: count - 1, retryAfter: retryAfter) : .normal
                    return (.tooManyRequests, retryAfter)
                case .fail(let count) where count > 0:
                    state.behavior = count > 1 ? .fail(count: count - 1) : .normal
                    return (.internalServerError, nil)
                default:
                    return nil
                }
            }
            if let (status, retryAfter) = injected {
                return failure(
                    status, status == .tooManyRequests ? "QUOTA_EXCEEDED" : "INTERNAL", token: token,
                    headers: retryAfter.map { [.retryAfter: "\($0)"] } ?? [:])
            }
            if state.withLockedValue({ $0.unregistered.contains(token) }) {
                return failure(.notFound, "UNREGISTERED", token: token)
            }
            if state.withLockedValue({ $0.invalid.contains(token) }) {
                return failure(.badRequest, "INVALID_ARGUMENT", token: token)
            }
            answers.record(Answer(token: token, status: 200, reason: ""))
            messages.record(
                Message(
                    token: token, data: data, priority: priority, ttl: ttl, collapseKey: android?["collapse_key"] as? String,
                    accessToken: accessToken, body: body,
                    push: data["switchboard"].flatMap { CallPush(object: Data($0.utf8)) }))
            return json(.ok, ["name": "projects/\(projectId)/messages/\(UUID().uuidString)"])
        }

        var logger = Logger(label: "switchboard.test-fcm")
        logger.logLevel = .critical
        let open = TestAPNsServer.OpenConnections()
        let started = AsyncStream<Int>.makeStream()
        let application = Application(
            router: router,
            server: try .http2Upgrade(tlsChannelConfiguration: TLSChannelConfiguration(tlsConfiguration: tls.configuration)),
            configuration: ApplicationConfiguration(
                address: .hostname("127.0.0.1", port: 0),
                availableConnectionsDelegate: TestWebPushServer.ConnectionCounter(open: open)),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                portBox.withLockedValue { $0 = port }
                started.continuation.yield(port)
            },
            logger: logger)
        let runTask = Task { try await application.runService(gracefulShutdownSignals: []) }
        var iterator = started.stream.makeAsyncIterator()
        let port = await iterator.next() ?? 0
        let keyFile: [String: String] = [
            "type": "service_account", "project_id": projectId, "private_key_id": keyId,
            "private_key": rsa.pkcs8PEMRepresentation, "client_email": clientEmail,
            "token_uri": "https://127.0.0.1:\(port)/token",
        ]
        let keyJSON = try JSONSerialization.data(withJSONObject: keyFile, options: [.sortedKeys])
        return TestFCMServer(
            port: port, certificatePath: tls.certificatePath, serviceAccount: try FCMServiceAccount(json: keyJSON),
            serviceAccountJSON: keyJSON, messages: messages, answers: answers, state: state
        ) {
            await open.none()
            runTask.cancel()
        }
    }

    private init(
        port: Int, certificatePath: String, serviceAccount: FCMServiceAccount, serviceAccountJSON: Data,
        messages: Recorder<Message>, answers: Recorder<Answer>, state: NIOLockedValueBox<State>,
        shutdown: @escaping @Sendable () async -> Void
    ) {
        self.port = port
        self.certificatePath = certificatePath
        self.serviceAccount = serviceAccount
        self.serviceAccountJSON = serviceAccountJSON
        self.messages = messages
        self.answers = answers
        self.state = state
        self.shutdown = shutdown
    }

    /// Stops once every client connection has closed (stop the server under test first).
    public func stop() async {
        await shutdown()
    }
}
