import Foundation
import Logging
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// The SDK's connection to the server: sends requests and matches their responses, delivers
/// events, keeps the heartbeat and measures the clock offset.
///
/// Responses and events are handled in the order they arrive, in this actor: a response's
/// `onResponse` state update runs before any event that followed it on the wire, so the stores
/// never see an event for a call before the answer that created it.
actor SignalingClient {
    struct Handlers: Sendable {
        var event: @Sendable (ServerEvent) -> Void = { _ in }
        /// The connection dropped (not after a logout).
        var disconnected: @Sendable (SwitchboardError) -> Void = { _ in }
    }

    private struct Pending {
        let complete: (Data) -> Void
        let fail: (SwitchboardError) -> Void
        let timeout: Task<Void, Never>
    }

    private let transport: any SignalingTransport
    private let clock: any SwitchboardClock
    private let requestTimeout: Duration
    private let logger: Logger
    /// Set once by the client that owns this actor, before anything connects.
    nonisolated let handlers = NIOLockedValueBox(Handlers())
    private var connection: (any SignalingConnection)?
    private var connectionGeneration = 0
    private var pending: [RequestID: Pending] = [:]
    private var nextRequest: UInt64 = 0
    private var heartbeat: Task<Void, Never>?
    /// Server time minus local time, in ms.
    private(set) var clockOffset: Int64 = 0

    init(transport: any SignalingTransport, clock: any SwitchboardClock, requestTimeout: Duration, logger: Logger) {
        self.transport = transport
        self.clock = clock
        self.requestTimeout = requestTimeout
        self.logger = logger
    }

    var isConnected: Bool { connection != nil }

    /// Opens a new connection, closing any previous one.
    func connect(to url: URL) async throws {
        disconnect(error: SwitchboardError(.connectionLost), notify: false)
        let opened = try await transport.connect(to: url)
        connectionGeneration += 1
        let generation = connectionGeneration
        connection = opened
        Task { [weak self] in
            for await text in opened.incoming {
                await self?.received(text, generation: generation)
            }
            await self?.closed(generation: generation)
        }
    }

    /// Logs in on the open connection and starts the heartbeat.
    func login(_ request: LoginRequest) async throws -> LoginResponse {
        let sent = clock.now()
        let response = try await send(request)
        let received = clock.now()
        clockOffset = response.serverTime - (sent + received) / 2
        startHeartbeat(every: .seconds(max(1, response.heartbeatInterval)))
        return response
    }

    /// Closes the connection without reporting a drop (a logout, or a failed login).
    func close() {
        disconnect(error: SwitchboardError(.notConnected), notify: false)
    }

    /// Sends a request and waits for its response.
    ///
    /// - Parameter onResponse: runs with a successful result in arrival order, before any later
    ///   event is delivered.
    func send<R: SignalingRequest>(
        _ request: R, onResponse: (@Sendable (R.Response) -> Void)? = nil
    ) async throws -> R.Response {
        guard let connection else { throw SwitchboardError(.notConnected) }
        nextRequest += 1
        let id = RequestID(rawValue: String(nextRequest))
        let text = try SwitchboardJSON.encodeString(RequestEnvelope(id: id, data: request))
        let deadline = clock.now() + requestTimeout.milliseconds
        let clock = self.clock
        return try await withCheckedThrowingContinuation { continuation in
            let timeout = Task { [weak self] in
                guard (try? await clock.sleep(until: deadline)) != nil else { return }
                await self?.timedOut(id)
            }
            pending[id] = Pending(
                complete: { data in
                    do {
                        switch try SwitchboardJSON.decode(ResponseEnvelope<R.Response>.self, from: data).outcome {
                        case .success(let response):
                            onResponse?(response)
                            continuation.resume(returning: response)
                        case .failure(let error):
                            continuation.resume(throwing: error)
                        }
                    } catch {
                        continuation.resume(throwing: SwitchboardError(.invalidResponse, SwitchboardJSON.describe(error)))
                    }
                },
                fail: { continuation.resume(throwing: $0) },
                timeout: timeout)
            connection.send(text)
        }
    }

    // MARK: - receiving

    private func received(_ text: String, generation: Int) {
        guard generation == connectionGeneration else { return }
        let data = Data(text.utf8)
        guard let header = try? SwitchboardJSON.decode(ServerFrameHeader.self, from: data) else {
            logger.warning("unreadable frame from server")
            return
        }
        if header.event != nil {
            do {
                let event = try SwitchboardJSON.decode(ServerEvent.self, from: data)
                handlers.withLockedValue { $0 }.event(event)
            } catch {
                // A newer server may send events this SDK does not know; they are skipped.
                logger.debug("skipped event", metadata: ["event": "\(header.event ?? "")", "error": "\(error)"])
            }
        } else if let id = header.id, let request = pending.removeValue(forKey: id) {
            request.timeout.cancel()
            request.complete(data)
        } else {
            logger.warning("response to an unknown request", metadata: ["id": "\(header.id?.rawValue ?? "null")"])
        }
    }

    private func closed(generation: Int) {
        guard generation == connectionGeneration, connection != nil else { return }
        disconnect(error: SwitchboardError(.connectionLost), notify: true)
    }

    private func timedOut(_ id: RequestID) {
        pending.removeValue(forKey: id)?.fail(SwitchboardError(.requestTimedOut))
    }

    private func disconnect(error: SwitchboardError, notify: Bool) {
        heartbeat?.cancel()
        heartbeat = nil
        connection?.close()
        connection = nil
        connectionGeneration += 1
        let failed = pending
        pending = [:]
        for request in failed.values {
            request.timeout.cancel()
            request.fail(error)
        }
        if notify { handlers.withLockedValue { $0 }.disconnected(error) }
    }

    // MARK: - heartbeat

    private func startHeartbeat(every interval: Duration) {
        heartbeat?.cancel()
        let clock = self.clock
        heartbeat = Task { [weak self] in
            while !Task.isCancelled {
                guard (try? await clock.sleep(for: interval)) != nil else { return }
                await self?.ping()
            }
        }
    }

    private func ping() async {
        let sent = clock.now()
        guard let response = try? await send(PingRequest()) else { return }
        let received = clock.now()
        // The midpoint of the round trip: accurate to half the RTT, plenty for a call timer.
        clockOffset = response.serverTime - (sent + received) / 2
    }
}
