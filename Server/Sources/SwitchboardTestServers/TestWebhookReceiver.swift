import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import SwitchboardProtocol
import SwitchboardTools

/// A webhook receiver for tests: plain HTTP on a free loopback port. It records every request as
/// it came (headers and the body's bytes) and answers as ``answer`` says: 200 by default, or a
/// status a test picks per request (500 to some, 410 to end it all).
public final class TestWebhookReceiver: Sendable {
    /// One request, as received.
    public struct Request: Sendable {
        public var id: String?
        public var timestamp: String?
        public var signature: String?
        public var body: Data
        /// What the receiver answered.
        public var status: Int
        /// The decoded body, if it is a webhook event.
        public var event: WebhookEvent? { try? SwitchboardJSON.decode(WebhookEvent.self, from: body) }
    }

    public let port: Int
    /// Every request, in the order received.
    public let requests: Recorder<Request>
    private let answer: NIOLockedValueBox<@Sendable (Int, String?) -> Int>
    private let runTask: Task<Void, any Error>

    /// The URL to configure as an endpoint.
    public var url: String { "http://127.0.0.1:\(port)/hooks" }

    /// Sets how requests are answered: given the request's number (0, 1, …) and its `webhook-id`,
    /// the HTTP status.
    public func answer(_ decide: @escaping @Sendable (Int, String?) -> Int) {
        answer.withLockedValue { $0 = decide }
    }

    private init(
        port: Int, requests: Recorder<Request>, answer: NIOLockedValueBox<@Sendable (Int, String?) -> Int>,
        runTask: Task<Void, any Error>
    ) {
        self.port = port
        self.requests = requests
        self.answer = answer
        self.runTask = runTask
    }

    public static func start() async throws -> TestWebhookReceiver {
        let answer = NIOLockedValueBox<@Sendable (Int, String?) -> Int>({ _, _ in 200 })
        // Recorded before the answer goes out: whatever the sender did after its answer, the
        // request is already here.
        let requests = Recorder<Request>()
        let count = NIOLockedValueBox(0)
        let router = Router()
        router.post("/hooks") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let id = request.headers[HTTPField.Name(WebhookSignature.idHeader)!]
            let number = count.withLockedValue { count in
                defer { count += 1 }
                return count
            }
            let status = answer.withLockedValue { $0 }(number, id)
            requests.record(
                Request(
                    id: id, timestamp: request.headers[HTTPField.Name(WebhookSignature.timestampHeader)!],
                    signature: request.headers[HTTPField.Name(WebhookSignature.signatureHeader)!],
                    body: Data(buffer: body), status: status))
            return Response(status: HTTPResponse.Status(code: status))
        }
        var logger = Logger(label: "switchboard.test-webhooks")
        logger.logLevel = .critical
        let started = AsyncStream<Int>.makeStream()
        let application = Application(
            router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in started.continuation.yield(channel.localAddress?.port ?? 0) },
            logger: logger)
        let runTask = Task { try await application.runService(gracefulShutdownSignals: []) }
        var iterator = started.stream.makeAsyncIterator()
        let port = await iterator.next() ?? 0
        return TestWebhookReceiver(port: port, requests: requests, answer: answer, runTask: runTask)
    }

    public func stop() async {
        runTask.cancel()
        _ = try? await runTask.value
    }
}
