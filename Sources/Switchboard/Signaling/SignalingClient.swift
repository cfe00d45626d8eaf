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
    enum ConnectionEvent: Sendable {
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

    private enum Status {
        case idle
        case connected
        case reconnecting
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
    private var transport: any SignalingTransport { settings.transport }
    private var clock: any SwitchboardClock { settings.clock }
    private var requestTimeout: Duration { settings.requestTimeout }
    private var policy: ReconnectPolicy { settings.policy }
    private var logger: Logger { settings.logger }
    /// Set once by the client that owns this actor, before anything connects.
    nonisolated let handlers = NIOLockedValueBox(Handlers())
    private var status = Status.idle
    private var connection: (any SignalingConnection)?
    private var connectionGeneration = 0
    /// Sent again after a reconnect: the state-changing requests; pings and logins are not.
    private var requests = PendingRequests<Pending>()
    /// Request ids are unique per device across reconnects and app launches: a random session
    /// prefix and a counter.
    private let sessionPrefix = String(UInt32.random(in: .min ... .max), radix: 36)
    private var nextRequest: UInt64 = 0
    private var addresses = ServerAddresses()
    private var loginRequest: LoginRequest?
    private var heartbeat: Task<Void, Never>?
    private var heartbeatInterval: Duration = .seconds(10)
    /// When the next heartbeat tick is due; fixed before each ping goes out.
    private var nextTick: Int64 = 0
    private var watch = HeartbeatWatch()
    private var reconnectTask: Task<Void, Never>?
    /// Bumped each time the reconnect loop starts over: an attempt of an earlier round that
    /// connects late (its SYN crossed a link that came back) steps aside.
    private var reconnectRound = 0
    /// Follows the device's network path while a session lasts.
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
        stop(error: SwitchboardError(.notConnected))
        self.settings = settings
        var lastError: any Error = SwitchboardError(.connectionFailed, "no server address")
        for (index, url) in urls.enumerated() {
            do {
                try await open(url)
            } catch {
                lastError = error
                continue
            }
            do {
                let response = try await loginOnOpenConnection(request)
                addresses.loggedIn(urls, at: index)
                self.loginRequest = request
                watchPaths()
                return response
            } catch {
                stop(error: SwitchboardError(.notConnected))
                throw error
            }
        }
        throw lastError
    }

    /// Ends the session: no reconnect, pending requests fail, the connection closes.
    func close() {
        stop(error: SwitchboardError(.notConnected))
    }

    /// Sends a request and waits for its response. While reconnecting the request waits for the
    /// connection; it fails only when its timeout runs out or the session is lost.
    ///
    /// - Parameter onResponse: runs with a successful result in arrival order, before any later
    ///   event is delivered.
    func send<R: SignalingRequest>(
        _ request: R, onResponse: (@Sendable (R.Response) -> Void)? = nil
    ) async throws -> R.Response {
        guard status != .idle else { throw SwitchboardError(.notConnected) }
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
        guard status != .idle else {
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
        if status == .connected { connection?.send(text) }
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
        let deadline = clock.now() + requestTimeout.milliseconds
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

    // MARK: - connection

    /// Opens a connection, giving up after the request timeout: a server that closes the socket
    /// before answering the upgrade can otherwise leave the attempt hanging.
    private func connectBounded(_ url: URL) async throws -> any SignalingConnection {
        let transport = self.transport
        let clock = self.clock
        let deadline = clock.now() + requestTimeout.milliseconds
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

    private func open(_ url: URL) async throws {
        let opened = try await connectBounded(url)
        adopt(opened)
        status = .connected
        watch = HeartbeatWatch()
    }

    /// Makes `opened` the connection: its frames come here until it closes or another connection
    /// takes its place (each has a generation of its own). Returns its generation.
    @discardableResult
    private func adopt(_ opened: any SignalingConnection) -> Int {
        connectionGeneration += 1
        let generation = connectionGeneration
        connection = opened
        Task { [weak self] in
            for await text in opened.incoming {
                await self?.received(text, generation: generation)
            }
            await self?.closed(generation: generation)
        }
        return generation
    }

    private func loginOnOpenConnection(_ request: LoginRequest) async throws -> LoginResponse {
        let sent = clock.now()
        let response = try await send(request)
        clockOffset = Self.clockOffset(serverTime: response.serverTime, sent: sent, received: clock.now())
        startHeartbeat(every: .seconds(max(1, response.heartbeatInterval)))
        return response
    }

    /// Server time minus local time, taking the server's time to be of the round trip's midpoint:
    /// accurate to half the round trip, plenty for a call timer.
    static func clockOffset(serverTime: Int64, sent: Int64, received: Int64) -> Int64 {
        serverTime.clampedSubtracting(sent / 2 + received / 2)
    }

    /// Drops everything: used by logout, failed logins and lost sessions.
    private func stop(error: SwitchboardError) {
        reconnectTask?.cancel()
        reconnectTask = nil
        pathWatch?.cancel()
        pathWatch = nil
        heartbeat?.cancel()
        heartbeat = nil
        connection?.close()
        connection = nil
        connectionGeneration += 1
        status = .idle
        loginRequest = nil
        // A going-away notice of this session does not steer the next one.
        addresses = ServerAddresses()
        for request in requests.removeAll() {
            request.timeout.cancel()
            request.fail(error)
        }
    }

    // MARK: - receiving

    private func received(_ text: String, generation: Int) {
        guard generation == connectionGeneration else { return }
        watch.heard()
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
            if case .sessionEnded(let ended) = event, ended.error.code == .shuttingDown {
                // "Come back": the node restarts or hands its calls over; the calls go on.
                addresses.serverSaidGoingAway()
            }
            if case .sessionEnded(let ended) = event, ended.error.code == .sessionReplaced {
                // Another connection of this device took over: coming back would fight it.
                handlers.withLockedValue { $0 }.event(event)
                stop(error: ended.error)
                handlers.withLockedValue { $0 }.connection(.sessionLost(ended.error))
                return
            }
            handlers.withLockedValue { $0 }.event(event)
        } else if let id = header.id, let request = requests.remove(id) {
            request.timeout.cancel()
            request.complete(data)
        } else {
            logger.debug("response to an unknown request", metadata: ["id": "\(header.id?.rawValue ?? "null")"])
        }
    }

    private func closed(generation: Int) {
        guard generation == connectionGeneration else { return }
        connectionLost(SwitchboardError(.connectionLost))
    }

    /// - Parameter nextAddress: start with the next address (the one in use stopped answering).
    private func connectionLost(_ error: SwitchboardError, immediately: Bool = false, nextAddress: Bool = false) {
        heartbeat?.cancel()
        heartbeat = nil
        connection?.close()
        connection = nil
        connectionGeneration += 1
        guard !addresses.isEmpty, let loginRequest else {
            stop(error: error)
            return
        }
        addresses.dropped(stoppedAnswering: nextAddress)
        status = .reconnecting
        // Pings and logins answer a connection that is gone; state-changing requests are sent again.
        for request in requests.removeNotResendable() {
            request.timeout.cancel()
            request.fail(error)
        }
        // Each deadline is fixed before anyone hears about the attempt, so a test that moves its
        // clock right after seeing `reconnecting` (or a failed attempt) never races the timer.
        let first = immediately ? Duration.zero : policy.delay(attempt: 0, random: Double.random(in: 0..<1))
        startReconnecting(login: loginRequest, firstDelay: first)
        handlers.withLockedValue { $0 }.connection(.reconnecting(error))
        logger.info("connection lost, reconnecting", metadata: ["error": "\(error.code.name)"])
    }

    /// Starts the reconnect loop over: the first attempt after `firstDelay`, then with backoff. An
    /// attempt still waiting for an answer from the previous round is left to fail on its own.
    private func startReconnecting(login loginRequest: LoginRequest, firstDelay: Duration) {
        reconnectTask?.cancel()
        reconnectRound += 1
        // A connection of the previous round still logging in belongs to the old path.
        if connection != nil {
            connection?.close()
            connection = nil
            connectionGeneration += 1
        }
        let round = reconnectRound
        var deadline = clock.now() + firstDelay.milliseconds
        let clock = self.clock
        let policy = self.policy
        reconnectTask = Task { [weak self] in
            var attempt = 0
            while !Task.isCancelled {
                guard (try? await clock.sleep(until: deadline)) != nil, let self else { return }
                if await self.reconnect(attempt: attempt, round: round, login: loginRequest) { return }
                attempt += 1
                deadline = clock.now() + policy.delay(attempt: attempt, random: Double.random(in: 0..<1)).milliseconds
                await self.attemptFailed(attempt, round: round)
            }
        }
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

    /// The device's network path changed (a link came back, an address changed): whatever the
    /// connection was doing, the quickest way back is a new connection on the new path now, not
    /// after two silent heartbeats or the next backoff. The server takes the new connection in
    /// place of the old one, and the calls restart ICE once it is logged in (`reconnected`).
    func pathChanged() {
        guard let loginRequest else { return }
        switch status {
        case .idle:
            return
        case .connected:
            logger.info("network path changed, reconnecting")
            handlers.withLockedValue { $0 }.connection(.pathChanged)
            connectionLost(SwitchboardError(.connectionLost, "the network path changed"), immediately: true)
        case .reconnecting:
            logger.info("network path changed, trying again now")
            handlers.withLockedValue { $0 }.connection(.pathChanged)
            startReconnecting(login: loginRequest, firstDelay: .zero)
        }
    }

    private func attemptFailed(_ attempt: Int, round: Int) {
        guard status == .reconnecting, round == reconnectRound else { return }
        handlers.withLockedValue { $0 }.connection(
            .reconnectAttemptFailed(attempt: attempt, SwitchboardError(.connectionFailed)))
    }

    /// One reconnect attempt; true when it is over (logged in again, or given up for good). The
    /// first attempt goes to the address in use, later ones go round the others.
    private func reconnect(attempt: Int, round: Int, login: LoginRequest) async -> Bool {
        guard status == .reconnecting, round == reconnectRound else { return true }
        guard let url = addresses.address(forAttempt: attempt) else { return true }
        let opened: any SignalingConnection
        do {
            opened = try await connectBounded(url)
        } catch {
            return false
        }
        guard status == .reconnecting, round == reconnectRound else {
            opened.close()
            return true
        }
        let generation = adopt(opened)
        // Log in on the new connection directly; queued requests wait until it succeeds.
        let response: LoginResponse
        do {
            response = try await loginOnReconnectingConnection(opened, login)
        } catch let error as SwitchboardError where Self.isFinal(error) {
            logger.warning("reconnect refused", metadata: ["error": "\(error.code.name)"])
            stop(error: error)
            handlers.withLockedValue { $0 }.connection(.sessionLost(error))
            return true
        } catch {
            if generation == connectionGeneration {
                connection?.close()
                connection = nil
                connectionGeneration += 1
            }
            return false
        }
        guard generation == connectionGeneration else { return false }
        status = .connected
        watch = HeartbeatWatch()
        startHeartbeat(every: .seconds(max(1, response.heartbeatInterval)))
        for request in requests.inOrder { opened.send(request.text) }
        reconnectTask = nil
        let afterRestart = addresses.reconnected()
        logger.info("reconnected", metadata: ["url": "\(url.absoluteString)"])
        handlers.withLockedValue { $0 }.connection(.reconnected(response, afterRestart: afterRestart))
        return true
    }

    private func loginOnReconnectingConnection(
        _ opened: any SignalingConnection, _ request: LoginRequest
    ) async throws -> LoginResponse {
        let sent = clock.now()
        // Pending like any request, so that a drop during this login fails it like a ping.
        let response: LoginResponse = try await withCheckedThrowingContinuation { continuation in
            guard let text = register(request, completion: { continuation.resume(with: $0) }) else { return }
            opened.send(text)
        }
        clockOffset = Self.clockOffset(serverTime: response.serverTime, sent: sent, received: clock.now())
        return response
    }

    /// Errors after which trying again cannot help: the app must log in anew.
    static func isFinal(_ error: SwitchboardError) -> Bool {
        (2000..<3000).contains(error.code.rawValue) || error.code == .unsupportedProtocolVersion
    }

    private func timedOut(_ id: RequestID) {
        guard let request = requests.remove(id) else { return }
        request.fail(SwitchboardError(.requestTimedOut))
    }

    // MARK: - heartbeat

    /// Pings every interval; ``HeartbeatWatch`` says when the connection counts as lost.
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
        guard status == .connected else { return }
        nextTick = clock.now() + heartbeatInterval.milliseconds
        switch watch.tick() {
        case .lost:
            logger.info("no answer to two heartbeats")
            connectionLost(SwitchboardError(.connectionLost, "the server stopped answering"), nextAddress: true)
            return
        case .ping(notice: .missed):
            handlers.withLockedValue { $0 }.connection(.heartbeatMissed)
        case .ping(notice: .answered):
            handlers.withLockedValue { $0 }.connection(.heartbeatAnswered)
        case .ping(notice: nil):
            break
        }
        // The ping is not awaited: a lost answer must not hold up the next tick.
        Task { [weak self] in await self?.ping() }
    }

    private func ping() async {
        let sent = clock.now()
        guard let response = try? await send(PingRequest()) else { return }
        clockOffset = Self.clockOffset(serverTime: response.serverTime, sent: sent, received: clock.now())
    }
}
