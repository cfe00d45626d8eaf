import Foundation
import Logging
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// How the SDK comes back after the network drops.
public struct ReconnectPolicy: Sendable {
    /// The wait before the first attempt.
    public var initialDelay: Duration
    /// The longest wait between attempts.
    public var maxDelay: Duration
    /// Each failed attempt multiplies the wait by this.
    public var multiplier: Double
    /// Each wait is shortened by a random fraction up to this (0…1), so that many clients
    /// dropped together do not come back together.
    public var jitter: Double

    public init(
        initialDelay: Duration = .milliseconds(500), maxDelay: Duration = .seconds(30), multiplier: Double = 2,
        jitter: Double = 0.5
    ) {
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.multiplier = multiplier
        self.jitter = jitter
    }

    /// The wait before attempt `attempt` (0-based), given a random number in 0..<1.
    public func delay(attempt: Int, random: Double) -> Duration {
        let base = Double(initialDelay.milliseconds) * pow(multiplier, Double(attempt))
        let capped = min(base, Double(maxDelay.milliseconds))
        return .milliseconds(Int64(capped * (1 - jitter * random)))
    }
}

/// The SDK's connection to the server: sends requests and matches their responses, delivers
/// events, keeps the heartbeat, measures the clock offset, and reconnects by itself.
///
/// Responses and events are handled in the order they arrive, in this actor: a response's
/// `onResponse` state update runs before any event that followed it on the wire, so the stores
/// never see an event for a call before the answer that created it.
///
/// After a drop it reconnects with backoff and logs in again with the same device id; the server
/// resumes the device's calls. Requests made meanwhile wait, and requests whose answer was lost are
/// sent again with the same id, which the server answers without applying them twice.
actor SignalingClient {
    enum ConnectionEvent: Sendable, Equatable {
        /// The connection dropped; the client is reconnecting.
        case reconnecting(SwitchboardError)
        /// The device's network path changed: the client reconnects at once.
        case pathChanged
        /// A reconnect attempt failed; the next one is scheduled.
        case reconnectAttemptFailed(attempt: Int, SwitchboardError)
        /// A heartbeat went unanswered; one more and the connection counts as lost.
        case heartbeatMissed
        /// The server answered again after a missed heartbeat.
        case heartbeatAnswered
        /// Logged in again after a drop. `afterRestart`: the server had said it was restarting (or
        /// handing its calls to another node) before the drop, so the network did not change.
        case reconnected(LoginResponse, afterRestart: Bool)
        /// The session is over and will not come back by itself (refused login, replaced device).
        case sessionLost(SwitchboardError)
    }

    struct Handlers: Sendable {
        var event: @Sendable (ServerEvent) -> Void = { _ in }
        var connection: @Sendable (ConnectionEvent) -> Void = { _ in }
    }

    private struct Pending {
        let text: String
        let complete: (Data) -> Void
        let fail: (SwitchboardError) -> Void
        let timeout: Task<Void, Never>
    }

    /// What a session runs with: fixed for the session, replaced at each login (the app may have
    /// configured the client anew meanwhile).
    struct Settings: Sendable {
        var transport: any SignalingTransport
        var clock: any SwitchboardClock
        var requestTimeout: Duration
        var policy: ReconnectPolicy
        var logger: Logger
        var paths: (any NetworkPathMonitor)?

        init(_ configuration: SwitchboardConfiguration) {
            paths = configuration.networkPathMonitor
            transport = configuration.transport
            clock = configuration.clock
            requestTimeout = configuration.requestTimeout
            policy = configuration.reconnectPolicy
            logger = configuration.logger
        }
    }

    private var settings: Settings
    private var clock: any SwitchboardClock { settings.clock }
    private var logger: Logger { settings.logger }
    /// Set once by the client that owns this actor, before anything connects.
    nonisolated let handlers = NIOLockedValueBox(Handlers())
    /// Every decision about the connection; the rest of this actor runs them.
    private var lifecycle = SignalingLifecycle<any SignalingConnection>()
    /// Sent again after a reconnect: the state-changing requests; pings and logins are not.
    private var requests = PendingRequests<Pending>()
    /// Request ids are unique per device across reconnects and app launches: a random session
    /// prefix and a counter.
    private let sessionPrefix = String(UInt32.random(in: .min ... .max), radix: 36)
    private var nextRequest: UInt64 = 0
    /// The timers and watches the lifecycle starts and stops.
    private var heartbeat: Task<Void, Never>?
    private var heartbeatInterval: Duration = .seconds(10)
    /// When the next heartbeat tick is due; fixed before each ping goes out.
    private var nextTick: Int64 = 0
    private var reconnectTask: Task<Void, Never>?
    private var pathWatch: Task<Void, Never>?
    /// Server time minus local time, in ms.
    private(set) var clockOffset: Int64 = 0

    init(settings: Settings) {
        self.settings = settings
    }

    /// Opens a connection to the first of `urls` that answers and logs in with `settings`; from then
    /// on the client keeps the session up by itself, moving to the next address when one stops
    /// answering.
    func login(to urls: [URL], _ request: LoginRequest, settings: Settings) async throws -> LoginResponse {
        run(lifecycle.end(SwitchboardError(.notConnected)))
        self.settings = settings
        var lastError: any Error = SwitchboardError(.connectionFailed, "no server address")
        for (index, url) in urls.enumerated() {
            let opened: any SignalingConnection
            do {
                opened = try await connectBounded(url)
            } catch {
                lastError = error
                continue
            }
            let (generation, actions) = lifecycle.opened(opened)
            run(actions)
            read(opened, generation: generation)
            do {
                let response = try await logIn(request, on: opened)
                guard
                    let actions = lifecycle.loggedIn(
                        generation: generation, request, urls: urls, at: index,
                        heartbeat: Self.heartbeatInterval(of: response))
                else { throw SwitchboardError(.connectionLost) }
                run(actions)
                return response
            } catch {
                run(lifecycle.end(SwitchboardError(.notConnected)))
                throw error
            }
        }
        throw lastError
    }

    /// Ends the session: no reconnect, pending requests fail, the connection closes.
    func close() {
        run(lifecycle.end(SwitchboardError(.notConnected)))
    }

    /// Sends a request and waits for its response. While reconnecting the request waits for the
    /// connection; it fails only when its timeout runs out or the session is lost.
    ///
    /// - Parameter onResponse: runs with a successful result in arrival order, before any later
    ///   event is delivered.
    func send<R: SignalingRequest>(
        _ request: R, onResponse: (@Sendable (R.Response) -> Void)? = nil
    ) async throws -> R.Response {
        guard lifecycle.isActive else { throw SwitchboardError(.notConnected) }
        return try await withCheckedThrowingContinuation { continuation in
            enqueue(request) { result in
                if case .success(let response) = result { onResponse?(response) }
                continuation.resume(with: result)
            }
        }
    }

    /// Sends a request without waiting for its response; `completion` gets the outcome. Frames
    /// leave in the order of the calls, so a caller that posts from one task keeps its order
    /// without paying a round trip per request (trickled ICE candidates).
    func post<R: SignalingRequest>(
        _ request: R, completion: @escaping @Sendable (Result<R.Response, SwitchboardError>) -> Void
    ) {
        guard lifecycle.isActive else {
            completion(.failure(SwitchboardError(.notConnected)))
            return
        }
        enqueue(request) { result in completion(result.mapError { $0 as? SwitchboardError ?? SwitchboardError(.invalidResponse) }) }
    }

    /// Registers a request as pending and sends it when connected (else after the reconnect).
    private func enqueue<R: SignalingRequest>(
        _ request: R, completion: @escaping @Sendable (Result<R.Response, any Error>) -> Void
    ) {
        guard let text = register(request, completion: completion) else { return }
        lifecycle.sendingConnection?.send(text)
    }

    /// Gives `request` the next id, registers it as pending with its timeout, and returns the
    /// frame to send (nil: it could not be encoded, and `completion` has been told).
    private func register<R: SignalingRequest>(
        _ request: R, completion: @escaping @Sendable (Result<R.Response, any Error>) -> Void
    ) -> String? {
        nextRequest += 1
        let id = RequestID(rawValue: "\(sessionPrefix).\(nextRequest)")
        let text: String
        do {
            text = try SwitchboardJSON.encodeString(RequestEnvelope(id: id, data: request))
        } catch {
            completion(.failure(SwitchboardError(.invalidParams, SwitchboardJSON.describe(error))))
            return nil
        }
        let deadline = clock.now() + settings.requestTimeout.milliseconds
        let clock = self.clock
        let timeout = Task { [weak self] in
            guard (try? await clock.sleep(until: deadline)) != nil else { return }
            await self?.timedOut(id)
        }
        let pending = Pending(
            text: text,
            complete: { data in
                do {
                    completion(try SwitchboardJSON.decode(ResponseEnvelope<R.Response>.self, from: data).outcome.mapError { $0 })
                } catch {
                    completion(.failure(SwitchboardError(.invalidResponse, SwitchboardJSON.describe(error))))
                }
            },
            fail: { completion(.failure($0)) },
            timeout: timeout)
        requests.add(id, pending, resendable: !(request is PingRequest || request is LoginRequest))
        return text
    }

    private func timedOut(_ id: RequestID) {
        guard let request = requests.remove(id) else { return }
        request.fail(SwitchboardError(.requestTimedOut))
    }

    // MARK: - running the lifecycle's actions

    private func run(_ actions: [SignalingLifecycle<any SignalingConnection>.Action]) {
        for action in actions {
            switch action {
            case .close(let connection):
                connection.close()
            case .startHeartbeat(let interval):
                startHeartbeat(every: interval)
            case .stopHeartbeat:
                heartbeat?.cancel()
                heartbeat = nil
            case .ping:
                // Not awaited: a lost answer must not hold up the next tick.
                Task { [weak self] in await self?.ping() }
            case .watchPaths:
                watchPaths()
            case .stopWatchingPaths:
                pathWatch?.cancel()
                pathWatch = nil
            case .startReconnecting(let round, let immediately):
                startReconnecting(round: round, immediately: immediately)
            case .stopReconnecting:
                reconnectTask?.cancel()
                reconnectTask = nil
            case .failRequests(let which, let error):
                for request in which == .all ? requests.removeAll() : requests.removeNotResendable() {
                    request.timeout.cancel()
                    request.fail(error)
                }
            case .resendRequests(let connection):
                for request in requests.inOrder { connection.send(request.text) }
            case .tell(let event):
                log(event)
                handlers.withLockedValue { $0 }.connection(event)
            }
        }
    }

    private func log(_ event: ConnectionEvent) {
        switch event {
        case .reconnecting(let error):
            logger.info("connection lost, reconnecting", metadata: ["error": "\(error.code.name)", "reason": "\(error.message)"])
        case .pathChanged:
            logger.info("network path changed, reconnecting now")
        case .reconnected:
            logger.info("reconnected")
        case .sessionLost(let error):
            logger.warning("session lost", metadata: ["error": "\(error.code.name)"])
        case .reconnectAttemptFailed, .heartbeatMissed, .heartbeatAnswered:
            break
        }
    }

    // MARK: - connection

    /// Opens a connection, giving up after the request timeout: a server that closes the socket
    /// before answering the upgrade can otherwise leave the attempt hanging.
    private func connectBounded(_ url: URL) async throws -> any SignalingConnection {
        let transport = settings.transport
        let clock = self.clock
        let deadline = clock.now() + settings.requestTimeout.milliseconds
        let outcome = OneShotValue<any SignalingConnection>()
        let attempt = Task {
            do {
                let connection = try await transport.connect(to: url)
                // Connected after the timeout gave up on it: nobody will use this one.
                if !outcome.succeed(connection) { connection.close() }
            } catch {
                outcome.fail(error)
            }
        }
        let timer = Task {
            guard (try? await clock.sleep(until: deadline)) != nil else { return }
            outcome.fail(SwitchboardError(.connectionFailed, "no answer from \(url.absoluteString) in time"))
            attempt.cancel()
        }
        defer { timer.cancel() }
        return try await outcome.wait()
    }

    /// Reads `connection`'s frames here until it closes; the lifecycle says whether each still
    /// counts (by `generation`).
    private func read(_ connection: any SignalingConnection, generation: Int) {
        Task { [weak self] in
            for await text in connection.incoming {
                await self?.received(text, generation: generation)
            }
            await self?.closed(generation: generation)
        }
    }

    /// Logs in on `connection`, pending like any request (so that a drop meanwhile fails it like a
    /// ping), and takes the clock offset from the answer.
    private func logIn(_ request: LoginRequest, on connection: any SignalingConnection) async throws -> LoginResponse {
        let sent = clock.now()
        let response: LoginResponse = try await withCheckedThrowingContinuation { continuation in
            guard let text = register(request, completion: { continuation.resume(with: $0) }) else { return }
            connection.send(text)
        }
        clockOffset = Self.clockOffset(serverTime: response.serverTime, sent: sent, received: clock.now())
        return response
    }

    private static func heartbeatInterval(of response: LoginResponse) -> Duration {
        .seconds(max(1, response.heartbeatInterval))
    }

    /// Server time minus local time, taking the server's time to be of the round trip's midpoint:
    /// accurate to half the round trip, plenty for a call timer.
    static func clockOffset(serverTime: Int64, sent: Int64, received: Int64) -> Int64 {
        serverTime.clampedSubtracting(sent / 2 + received / 2)
    }

    // MARK: - receiving

    private func received(_ text: String, generation: Int) {
        guard lifecycle.heard(generation: generation) else { return }
        let data = Data(text.utf8)
        guard let header = try? SwitchboardJSON.decode(ServerFrameHeader.self, from: data) else {
            logger.warning("unreadable frame from server")
            return
        }
        if header.event != nil {
            let event: ServerEvent
            do {
                event = try SwitchboardJSON.decode(ServerEvent.self, from: data)
            } catch {
                // A newer server may send events this SDK does not know; they are skipped.
                logger.debug("skipped event", metadata: ["event": "\(header.event ?? "")", "error": "\(error)"])
                return
            }
            handlers.withLockedValue { $0 }.event(event)
            if case .sessionEnded(let ended) = event {
                switch ended.error.code {
                case .shuttingDown:
                    // "Come back": the node restarts or hands its calls over; the calls go on.
                    lifecycle.serverGoingAway()
                case .sessionReplaced:
                    run(lifecycle.sessionReplaced(ended.error))
                default:
                    break
                }
            }
        } else if let id = header.id, let request = requests.remove(id) {
            request.timeout.cancel()
            request.complete(data)
        } else {
            logger.debug("response to an unknown request", metadata: ["id": "\(header.id?.rawValue ?? "null")"])
        }
    }

    private func closed(generation: Int) {
        run(lifecycle.closed(generation: generation))
    }

    // MARK: - reconnecting

    /// Starts reconnect round `round` in place of any running: the first attempt at once or after
    /// the policy's first delay, then with backoff.
    private func startReconnecting(round: Int, immediately: Bool) {
        reconnectTask?.cancel()
        let clock = self.clock
        let policy = settings.policy
        let first = immediately ? Duration.zero : policy.delay(attempt: 0, random: Double.random(in: 0..<1))
        var deadline = clock.now() + first.milliseconds
        reconnectTask = Task { [weak self] in
            var attempt = 0
            while true {
                guard (try? await clock.sleep(until: deadline)) != nil, let self,
                    await self.reconnect(attempt: attempt, round: round)
                else { return }
                attempt += 1
                deadline = clock.now() + policy.delay(attempt: attempt, random: Double.random(in: 0..<1)).milliseconds
                await self.attemptFailed(attempt, round: round)
            }
        }
    }

    /// One reconnect attempt; whether round `round` goes on after it (false: logged in again, given
    /// up for good, or another round took over).
    private func reconnect(attempt: Int, round: Int) async -> Bool {
        guard let url = lifecycle.address(forAttempt: attempt, round: round), let login = lifecycle.login else {
            return false
        }
        guard let opened = try? await connectBounded(url) else { return lifecycle.isReconnecting(round: round) }
        guard let generation = lifecycle.attemptConnected(opened, round: round) else {
            opened.close()
            return false
        }
        read(opened, generation: generation)
        // Log in on the new connection directly; queued requests wait until it succeeds.
        do {
            let response = try await logIn(login, on: opened)
            run(lifecycle.attemptLoggedIn(generation: generation, response, heartbeat: Self.heartbeatInterval(of: response)))
        } catch {
            run(lifecycle.attemptRefused(generation: generation, error as? SwitchboardError ?? SwitchboardError(.invalidResponse)))
        }
        return lifecycle.isReconnecting(round: round)
    }

    private func attemptFailed(_ attempt: Int, round: Int) {
        run(lifecycle.attemptFailed(attempt, round: round))
    }

    // MARK: - network path

    private func watchPaths() {
        pathWatch?.cancel()
        guard let paths = settings.paths else { return }
        pathWatch = Task { [weak self] in
            for await _ in paths.changes() {
                await self?.pathChanged()
            }
        }
    }

    /// The device's network path changed: reconnect on the new path now (``SignalingLifecycle/pathChanged()``).
    func pathChanged() {
        run(lifecycle.pathChanged())
    }

    // MARK: - heartbeat

    /// Ticks every interval; the lifecycle's ``HeartbeatWatch`` says when the connection counts as lost.
    private func startHeartbeat(every interval: Duration) {
        heartbeat?.cancel()
        heartbeatInterval = interval
        nextTick = clock.now() + interval.milliseconds
        let clock = self.clock
        heartbeat = Task { [weak self] in
            while !Task.isCancelled {
                guard let deadline = await self?.nextTick, (try? await clock.sleep(until: deadline)) != nil,
                    let self
                else { return }
                await self.tick()
            }
        }
    }

    private func tick() {
        nextTick = clock.now() + heartbeatInterval.milliseconds
        run(lifecycle.tick())
    }

    private func ping() async {
        let sent = clock.now()
        guard let response = try? await send(PingRequest()) else { return }
        clockOffset = Self.clockOffset(serverTime: response.serverTime, sent: sent, received: clock.now())
    }
}
