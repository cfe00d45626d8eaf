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
import NIOSSL
import SwitchboardProtocol
import SwitchboardTools

/// A local stand-in for Apple's push service, for tests: HTTP/2 over TLS (a self-signed certificate
/// the server under test is told to trust), speaking APNs' protocol.
///
/// It checks what APNs checks: the provider token (ES256 signature with the test key, `kid`, `iss`,
/// an `iat` at most an hour old on the test clock), the headers of a VoIP push (`apns-push-type:
/// voip`, `apns-topic: <bundle>.voip`, payload ≤ 5 KB) or an alert (`apns-push-type: alert`,
/// `apns-topic: <bundle>`, payload ≤ 4 KB with an `aps.alert`), `apns-priority: 10`,
/// `apns-expiration`, a UUID `apns-id`, `apns-collapse-id` ≤ 64 bytes, and that a token the test
/// declared (``declare(_:as:)``) gets only pushes of its kind (else 400 DeviceTokenNotForTopic, as
/// APNs answers a VoIP token pushed with an alert topic). It answers with APNs' status codes and
/// JSON error bodies. Tests can make a token unregistered (410), throttle (429), fail (500) or hang.
public final class TestAPNsServer: Sendable {
    /// A push APNs accepted.
    public struct Push: Sendable {
        public var token: String
        public var headers: [String: String]
        public var payload: Data
        public var providerToken: String
        /// The provider token's `iat`, Unix seconds.
        public var issuedAt: Int64
        /// The decoded Switchboard payload of a VoIP push.
        public var push: VoIPPush?
        /// The decoded Switchboard payload of a missed-call alert.
        public var missedCall: MissedCallPush?
        /// `voip` or `alert`.
        public var pushType: String? { headers["apns-push-type"] }
    }

    /// Every answer, in order: the token and the HTTP status.
    public struct Answer: Sendable, Equatable {
        public var token: String
        public var status: Int
        public var reason: String?
    }

    public enum Behavior: Sendable {
        /// Answer 429 TooManyRequests to the next `count` pushes.
        case throttle(count: Int)
        /// Answer 500 InternalServerError to the next `count` pushes.
        case fail(count: Int)
        /// Answer nothing, ever (an outage without errors).
        case hang
        case normal
    }

    public let port: Int
    public let keyId = "TESTKEY123"
    public let teamId = "TESTTEAM12"
    /// The .p8 file with the provider-token private key.
    public let keyPath: String
    /// The PEM file of the server's self-signed certificate (trust it to connect).
    public let certificatePath: String
    /// Pushes accepted.
    public let pushes: Recorder<Push>
    /// Every answer given.
    public let answers: Recorder<Answer>
    typealias State = (
        unregistered: Set<String>, behavior: Behavior, connections: Int, kinds: [String: PushTokenKind]
    )
    /// Shared with the route that answers pushes.
    private let state: NIOLockedValueBox<State>
    private let runTask: Task<Void, any Error>
    private let shutdown: @Sendable () async -> Void

    public var connectionsOpened: Int { state.withLockedValue { $0.connections } }

    /// Says what a token is, as the phone that made it knows: pushes of the other kind get 400
    /// DeviceTokenNotForTopic.
    public func declare(_ token: String, as kind: PushTokenKind) {
        state.withLockedValue { $0.kinds[token.lowercased()] = kind }
    }

    /// Makes a token unregistered: pushes to it get 410 Unregistered.
    public func unregister(_ token: String) {
        _ = state.withLockedValue { $0.unregistered.insert(token.lowercased()) }
    }

    public var behavior: Behavior {
        get { state.withLockedValue { $0.behavior } }
        set { state.withLockedValue { $0.behavior = newValue } }
    }

    public static func start(clock: any SwitchboardClock, bundleIds: Set<String>, directory: URL) async throws
        -> TestAPNsServer
    {
        // The provider-token key, as Apple's .p8 file would hold it.
        let providerKey = P256.Signing.PrivateKey()
        let keyPath = directory.appendingPathComponent("AuthKey_TEST.p8").path
        try providerKey.pemRepresentation.write(toFile: keyPath, atomically: true, encoding: .utf8)
        let verifier = JWTKeyCollection()
        await verifier.add(ecdsa: try ES256PublicKey(pem: providerKey.publicKey.pemRepresentation))

        let tlsFiles = try TestTLS.make(name: "switchboard test APNs", file: "apns-test-ca.pem", directory: directory)
        let tls = tlsFiles.configuration
        let certificatePath = tlsFiles.certificatePath

        // Recorded before the answer goes out, the answer before the push: a test that saw a push,
        // or anything the server under test did after an answer, finds that answer here.
        let pushes = Recorder<Push>()
        let answers = Recorder<Answer>()
        let state = NIOLockedValueBox<State>(([], .normal, 0, [:]))
        let keyId = "TESTKEY123"
        let teamId = "TESTTEAM12"
        let router = Router()
        router.post("/3/device/:token") { request, context -> Response in
            let token = try context.parameters.require("token").lowercased()
            func answer(_ status: HTTPResponse.Status, _ reason: String?, extra: String = "") -> Response {
                answers.record(Answer(token: token, status: Int(status.code), reason: reason))
                let body = reason.map { #"{"reason":"\#($0)"\#(extra)}"# } ?? ""
                return Response(
                    status: status, headers: reason == nil ? [:] : [.contentType: "application/json"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
            }
            // The provider token.
            guard let authorization = request.headers[.authorization], authorization.hasPrefix("bearer ") else {
                return answer(.forbidden, "MissingProviderToken")
            }
            let jwt = String(authorization.dropFirst("bearer ".count))
            struct Claims: JWTPayload {
                var iss: IssuerClaim
                var iat: IssuedAtClaim
                func verify(using algorithm: some JWTAlgorithm) async throws {}
            }
            guard let claims = try? await verifier.verify(jwt, as: Claims.self),
                Self.header(of: jwt)?["kid"] as? String == keyId, claims.iss.value == teamId
            else {
                return answer(.forbidden, "InvalidProviderToken")
            }
            let issuedAt = Int64(claims.iat.value.timeIntervalSince1970)
            if clock.now() / 1000 - issuedAt > 3600 {
                return answer(.forbidden, "ExpiredProviderToken")
            }
            // The headers of a VoIP push.
            func header(_ name: String) -> String? { request.headers[HTTPField.Name(name)!] }
            let kind: PushTokenKind
            switch header("apns-push-type") {
            case "voip": kind = .voip
            case "alert": kind = .alert
            default: return answer(.badRequest, "InvalidPushType")
            }
            guard let topic = header("apns-topic") else { return answer(.badRequest, "MissingTopic") }
            let bundle = kind == .voip ? (topic.hasSuffix(".voip") ? String(topic.dropLast(5)) : nil) : topic
            guard let bundle, bundleIds.contains(bundle) else { return answer(.badRequest, "TopicDisallowed") }
            if let declared = state.withLockedValue({ $0.kinds[token] }), declared != kind {
                return answer(.badRequest, "DeviceTokenNotForTopic")
            }
            guard header("apns-priority") == "10" else { return answer(.badRequest, "BadPriority") }
            guard let expiration = header("apns-expiration").flatMap({ Int64($0) }), expiration >= 0 else {
                return answer(.badRequest, "BadExpirationDate")
            }
            guard let id = header("apns-id"), UUID(uuidString: id) != nil else { return answer(.badRequest, "BadMessageId") }
            guard (header("apns-collapse-id")?.utf8.count ?? 0) <= 64 else { return answer(.badRequest, "BadCollapseId") }
            guard token.utf8.count >= 32, token.allSatisfy(\.isHexDigit) else { return answer(.badRequest, "BadDeviceToken") }
            let body = try await request.body.collect(upTo: 64 * 1024)
            let limit = kind == .voip ? VoIPPush.maxPayloadBytes : MissedCallPush.maxPayloadBytes
            guard body.readableBytes <= limit else { return answer(.contentTooLarge, "PayloadTooLarge") }
            guard body.readableBytes > 0 else { return answer(.badRequest, "PayloadEmpty") }
            if kind == .alert {
                let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
                guard (object?["aps"] as? [String: Any])?["alert"] != nil else { return answer(.badRequest, "PayloadEmpty") }
            }

            // What the test asked for.
            enum Injected {
                case none, throttle, fail, hang, unregistered
            }
            let injected = state.withLockedValue { state -> Injected in
                if state.unregistered.contains(token) { return .unregistered }
                switch state.behavior {
                case .throttle(let count) where count > 0:
                    state.behavior = count > 1 ? .throttle(count: count - 1) : .normal
                    return .throttle
                case .fail(let count) where count > 0:
                    state.behavior = count > 1 ? .fail(count: count - 1) : .normal
                    return .fail
                case .hang: return .hang
                default: return .none
                }
            }
            switch injected {
            case .unregistered:
                return answer(.gone, "Unregistered", extra: #","timestamp":\#(clock.now())"#)
            case .throttle: return answer(.tooManyRequests, "TooManyRequests")
            case .fail: return answer(.internalServerError, "InternalServerError")
            case .hang:
                while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
                return answer(.serviceUnavailable, "ServiceUnavailable")
            case .none:
                break
            }
            let payload = Data(body.readableBytesView)
            var headers: [String: String] = [:]
            for field in request.headers where field.name.canonicalName.hasPrefix("apns-") {
                headers[field.name.canonicalName] = field.value
            }
            answers.record(Answer(token: token, status: 200, reason: nil))
            pushes.record(
                Push(
                    token: token, headers: headers, payload: payload, providerToken: jwt, issuedAt: issuedAt,
                    push: kind == .voip ? VoIPPush(json: payload) : nil,
                    missedCall: kind == .alert ? MissedCallPush(json: payload) : nil))
            return Response(status: .ok, headers: [HTTPField.Name("apns-id")!: id])
        }

        var logger = Logger(label: "switchboard.test-apns")
        logger.logLevel = .critical
        let portBox = NIOLockedValueBox<Int?>(nil)
        let open = OpenConnections()
        let started = AsyncStream<Int>.makeStream()
        let application = Application(
            router: router,
            server: try .http2Upgrade(tlsChannelConfiguration: TLSChannelConfiguration(tlsConfiguration: tls)),
            configuration: ApplicationConfiguration(
                address: .hostname("127.0.0.1", port: 0),
                availableConnectionsDelegate: ConnectionCounter(state: state, open: open)),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                portBox.withLockedValue { $0 = port }
                started.continuation.yield(port)
            },
            logger: logger)
        let runTask = Task { try await application.runService(gracefulShutdownSignals: []) }
        var iterator = started.stream.makeAsyncIterator()
        let port = await iterator.next() ?? 0
        return TestAPNsServer(
            port: port, keyPath: keyPath, certificatePath: certificatePath, pushes: pushes,
            answers: answers, state: state, runTask: runTask, open: open)
    }

    private init(
        port: Int, keyPath: String, certificatePath: String, pushes: Recorder<Push>,
        answers: Recorder<Answer>,
        state: NIOLockedValueBox<State>,
        runTask: Task<Void, any Error>, open: OpenConnections
    ) {
        self.port = port
        self.keyPath = keyPath
        self.certificatePath = certificatePath
        self.pushes = pushes
        self.answers = answers
        self.runTask = runTask
        // Cancelling while a client's connection is still open can drop an HTTP/2 stream that
        // arrives during the cancellation, which NIO treats as a fatal error; stop the server
        // under test first (its client closes its connections), then this one.
        self.shutdown = {
            await open.none()
            runTask.cancel()
        }
        self.state = state
    }

    /// The base URL to give the server under test.
    public var url: String { "https://127.0.0.1:\(port)" }

    /// Stops the server once every client connection has closed (stop the server under test first).
    public func stop() async {
        await shutdown()
    }

    static func header(of jwt: String) -> [String: Any]? {
        guard let part = jwt.split(separator: ".").first else { return nil }
        var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
    }

    /// Counts the TCP connections the server accepts.
    /// Counts the connections the server accepted, and the ones still open.
    struct ConnectionCounter: AvailableConnectionsDelegate {
        let state: NIOLockedValueBox<TestAPNsServer.State>
        let open: OpenConnections
        mutating func connectionOpened() {
            state.withLockedValue { $0.connections += 1 }
            open.opened()
        }
        mutating func connectionClosed() { open.closed() }
        func isAcceptingNewConnections() -> Bool { true }
    }

    /// The connections still open, and who waits for there to be none.
    final class OpenConnections: Sendable {
        private let state = NIOLockedValueBox<(count: Int, waiters: [CheckedContinuation<Void, Never>])>((0, []))

        func opened() { state.withLockedValue { $0.count += 1 } }

        func closed() {
            let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
                state.count -= 1
                guard state.count == 0 else { return [] }
                defer { state.waiters = [] }
                return state.waiters
            }
            waiters.forEach { $0.resume() }
        }

        func none() async {
            await withCheckedContinuation { continuation in
                let now = state.withLockedValue { state -> Bool in
                    if state.count == 0 { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }
    }
}
