import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import SwitchboardProtocol
import WSClient

/// One Janus server, as the signaling server uses it: one WebSocket (subprotocol
/// `janus-protocol`), one Janus session on it kept alive, and requests matched to their answers
/// by transaction. When the socket closes, a request or keepalive goes unanswered for
/// ``Timing/requestTimeout``, or the session is lost, the server counts as down: every waiting
/// request fails, ``Event/down`` is reported (everything made on it is gone: Janus drops a
/// session's handles and their PeerConnections with the socket), and it connects again with
/// backoff; ``Event/up`` says it is back, with a new session.
///
/// Bounds: at most ``Timing/maxPending`` requests wait for answers (a request beyond that fails at
/// once); events wait in a buffer of ``Timing/eventBuffer`` (the oldest are dropped and counted
/// when the rooms fall that far behind).
actor JanusServer {
    struct Timing: Sendable {
        /// How long a request (keepalives included) may wait for its answer.
        var requestTimeout: Duration = .seconds(10)
        /// Janus ends a session after `session_timeout` (60 s by default) without a request.
        var keepaliveInterval: Duration = .seconds(15)
        /// Waits between connection attempts, doubling from the first to the last.
        var reconnectBackoff: ClosedRange<Duration> = .milliseconds(500)...(.seconds(5))
        /// How long a connection attempt may take.
        var connectTimeout: Duration = .seconds(5)
        var maxPending = 4096
        var eventBuffer = 16_384
    }

    /// What the server reports to its owner, in order.
    enum Event: Sendable {
        /// Connected, with a new Janus session.
        case up
        /// The connection or the session is gone, and with it every handle made on it.
        case down
        /// An event of a handle (`sender`): a plugin event not answering a request, or a WebRTC
        /// event (`webrtcup`, `media`, `hangup`, `slowlink`, `detached`, `trickle`).
        case message(JanusMessage)
    }

    /// Failures of requests to Janus.
    enum Failure: Error, Equatable, CustomStringConvertible {
        case down
        case timedOut
        case overloaded
        case janus(JanusError)
        case unexpected(String)

        var description: String {
            switch self {
            case .down: "the Janus server is not connected"
            case .timedOut: "Janus did not answer in time"
            case .overloaded: "too many requests are waiting for Janus"
            case .janus(let error): "\(error)"
            case .unexpected(let text): "unexpected answer from Janus: \(text)"
            }
        }
    }

    /// What completes a request: Janus's `success` (or `error`), its `ack`, or the plugin's
    /// `event` with the request's transaction (Janus acks asynchronous plugin requests first).
    enum Completion: Sendable {
        case success
        case ack
        case event
    }

    nonisolated let url: String
    nonisolated let events: AsyncStream<Event>
    private let eventsContinuation: AsyncStream<Event>.Continuation
    private let secret: String?
    private let timing: Timing
    private let clock: any SwitchboardClock
    private let logger: Logger

    private struct Pending {
        var completion: Completion
        var deadline: Int64
        /// Who waits for the answer; nil for a keepalive, whose answer only has to come in time.
        var continuation: CheckedContinuation<JanusMessage, any Error>?
    }

    private enum State {
        case stopped
        case connecting
        /// Connected: the socket and the Janus session on it.
        case up(JanusSocket, session: UInt64)
    }

    private var state = State.stopped
    private var pending: [String: Pending] = [:]
    private var nextTransaction: UInt64 = 0
    private var lastRequestAt: Int64 = 0
    private var runner: Task<Void, Never>?
    /// Events dropped because the owner fell behind.
    private(set) var droppedEvents = 0

    init(url: String, secret: String?, timing: Timing = Timing(), clock: any SwitchboardClock, logger: Logger) {
        self.url = url
        self.secret = secret
        self.timing = timing
        self.clock = clock
        self.logger = logger
        (events, eventsContinuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(timing.eventBuffer))
    }

    /// Whether the server is connected with a session now.
    var isUp: Bool { if case .up = state { true } else { false } }

    /// Connects, and keeps connecting again whenever the connection is lost, until ``stop()``.
    func start() {
        guard runner == nil else { return }
        runner = Task { await self.run() }
    }

    /// Closes the connection for good (Janus then drops the session and everything made on it).
    func stop() {
        runner?.cancel()
        runner = nil
        if case .up(let socket, _) = state { socket.close() }
        state = .stopped
        failPending(.down)
        eventsContinuation.finish()
    }

    // MARK: - requests

    /// Sends a request and waits for what completes it. A Janus or VideoRoom error is thrown as
    /// ``Failure/janus(_:)``.
    func request(
        _ janus: String, handle: UInt64? = nil, plugin: String? = nil, body: VideoRoomRequest? = nil,
        jsep: JanusJSEP? = nil, candidate: JanusCandidate? = nil, completion: Completion
    ) async throws -> JanusMessage {
        guard case .up(let socket, let session) = state else { throw Failure.down }
        guard pending.count < timing.maxPending else { throw Failure.overloaded }
        let transaction = nextID("t")
        var request = JanusRequest(janus: janus, transaction: transaction)
        request.apisecret = secret
        request.session_id = session
        request.handle_id = handle
        request.plugin = plugin
        request.body = body
        request.jsep = jsep
        request.candidate = candidate
        let text = try String(decoding: JSONEncoder().encode(request), as: UTF8.self)
        let now = clock.now()
        lastRequestAt = now
        let deadline = now + timing.requestTimeout.milliseconds
        let answer = try await withCheckedThrowingContinuation { continuation in
            pending[transaction] = Pending(completion: completion, deadline: deadline, continuation: continuation)
            socket.send(text)
        }
        if let failure = answer.error { throw Failure.janus(failure) }
        if let failure = answer.plugindata?.data.failure { throw Failure.janus(failure) }
        return answer
    }

    // MARK: - the connection

    private func run() async {
        var backoff = timing.reconnectBackoff.lowerBound
        while !Task.isCancelled {
            state = .connecting
            if await connectOnce() {
                backoff = timing.reconnectBackoff.lowerBound
            } else {
                backoff = min(backoff * 2, timing.reconnectBackoff.upperBound)
            }
            guard !Task.isCancelled else { return }
            do {
                try await clock.sleep(for: backoff)
            } catch {
                return
            }
        }
    }

    /// One connection, from the attempt to its loss. Returns whether it got as far as a session.
    private func connectOnce() async -> Bool {
        let socket: JanusSocket
        do {
            socket = try await JanusSocket.connect(url: url, timeout: timing.connectTimeout, clock: clock, logger: logger)
        } catch {
            logger.debug("could not connect to Janus", metadata: ["url": "\(url)", "error": "\(error)"])
            return false
        }
        // The session: `create` is the one request made before the server is up; it is watched
        // by the ticker like any other.
        let create = nextID("t")
        var request = JanusRequest(janus: "create", transaction: create)
        request.apisecret = secret
        guard let text = try? String(decoding: JSONEncoder().encode(request), as: UTF8.self) else { return false }
        pending[create] = Pending(completion: .success, deadline: clock.now() + timing.requestTimeout.milliseconds)
        socket.send(text)
        let ticker = Task { [weak self, clock] in
            while !Task.isCancelled {
                guard (try? await clock.sleep(for: .seconds(1))) != nil else { return }
                await self?.tick(socket: socket)
            }
        }
        defer { ticker.cancel() }
        var session: UInt64?
        for await text in socket.incoming {
            guard let message = try? JSONDecoder().decode(JanusMessage.self, from: Data(text.utf8)) else {
                logger.warning("unreadable message from Janus", metadata: ["url": "\(url)"])
                continue
            }
            if session == nil {
                guard message.transaction == create else { continue }
                pending[create] = nil
                guard message.janus == "success", let id = message.data?.id else {
                    logger.error(
                        "Janus refused the session (is --sfu-secret its api_secret?)",
                        metadata: ["url": "\(url)", "error": "\(message.error?.description ?? message.janus)"])
                    break
                }
                session = id
                state = .up(socket, session: id)
                lastRequestAt = clock.now()
                logger.notice("connected to Janus", metadata: ["url": "\(url)"])
                publish(.up)
                continue
            }
            // Janus ended the session (no keepalive in time): everything made on it is gone.
            if message.janus == "timeout" { break }
            receive(message)
        }
        if case .up(let current, _) = state, current === socket { state = .connecting }
        socket.close()
        failPending(.down)
        guard session != nil else { return false }
        logger.error("lost the connection to Janus", metadata: ["url": "\(url)"])
        publish(.down)
        return true
    }

    private func nextID(_ prefix: String) -> String {
        nextTransaction += 1
        return "\(prefix)\(nextTransaction)"
    }

    /// Once a second: requests past their deadline fail, and one that nobody waits for (the
    /// session's creation, a keepalive) takes the connection down; a keepalive goes out when
    /// nothing was sent for a while.
    private func tick(socket: JanusSocket) {
        let now = clock.now()
        let expired = pending.filter { $0.value.deadline <= now }
        for (transaction, request) in expired {
            pending[transaction] = nil
            request.continuation?.resume(throwing: Failure.timedOut)
        }
        if expired.contains(where: { $0.value.continuation == nil }) {
            logger.error("Janus does not answer", metadata: ["url": "\(url)"])
            socket.close()
            return
        }
        guard case .up(let current, let session) = state, current === socket,
            now - lastRequestAt >= timing.keepaliveInterval.milliseconds
        else { return }
        let transaction = nextID("k")
        var keepalive = JanusRequest(janus: "keepalive", transaction: transaction)
        keepalive.apisecret = secret
        keepalive.session_id = session
        guard let text = try? String(decoding: JSONEncoder().encode(keepalive), as: UTF8.self) else { return }
        lastRequestAt = now
        pending[transaction] = Pending(completion: .ack, deadline: now + timing.requestTimeout.milliseconds)
        socket.send(text)
    }

    /// An answer goes to its request; everything else about a handle goes to the owner.
    private func receive(_ message: JanusMessage) {
        if let transaction = message.transaction, let request = pending[transaction] {
            let completes: Bool
            switch (message.janus, request.completion) {
            case ("error", _): completes = true
            case ("success", _): completes = true
            case ("ack", .ack), ("ack", .success): completes = true
            case ("event", .event): completes = true
            default: completes = false
            }
            if completes {
                pending[transaction] = nil
                request.continuation?.resume(returning: message)
                return
            }
            if message.janus == "ack" { return }
        }
        guard message.sender != nil, message.janus != "ack", message.janus != "success" else { return }
        publish(.message(message))
    }

    private func publish(_ event: Event) {
        if case .dropped = eventsContinuation.yield(event) {
            droppedEvents += 1
            logger.warning("Janus events dropped: the rooms fall behind", metadata: ["url": "\(url)"])
        }
    }

    private func failPending(_ failure: Failure) {
        let waiting = pending.values
        pending = [:]
        for request in waiting { request.continuation?.resume(throwing: failure) }
    }
}

/// A WebSocket to Janus: text messages in and out, each way through a buffer of at most
/// ``bufferLimit`` messages. A Janus that sends faster than the server reads, or does not take
/// what the server sends, fills one; at the bound the socket closes, and the server treats Janus as
/// down (its rooms move to another Janus or wait for it), as when the connection is lost.
final class JanusSocket: Sendable {
    /// Messages buffered each way before the socket closes.
    static let bufferLimit = 4096

    let incoming: AsyncStream<String>
    private let outgoing: AsyncStream<Outgoing>.Continuation
    private let task: Task<Void, Never>
    private let logger: Logger

    private enum Outgoing: Sendable {
        case text(String)
        case close
    }

    private init(
        incoming: AsyncStream<String>, outgoing: AsyncStream<Outgoing>.Continuation, task: Task<Void, Never>, logger: Logger
    ) {
        self.incoming = incoming
        self.outgoing = outgoing
        self.task = task
        self.logger = logger
    }

    /// Queues a message for Janus; a full buffer (Janus does not take what is sent) closes the socket.
    func send(_ text: String) {
        guard case .dropped = outgoing.yield(.text(text)) else { return }
        logger.error("Janus does not take what is sent: closing the connection")
        outgoing.finish()
        task.cancel()
    }

    /// Returns once the connection has ended, or once the waiting task is cancelled (tests).
    func waitUntilClosed() async {
        let closed = Outcome()
        let watcher = Task { [task] in
            await task.value
            closed.settle(.success(()))
        }
        await withTaskCancellationHandler {
            try? await closed.wait()
        } onCancel: {
            closed.settle(.failure(CancellationError()))
        }
        watcher.cancel()
    }

    func close() {
        outgoing.yield(.close)
        outgoing.finish()
    }

    /// Opens a WebSocket with Janus's subprotocol; fails after `timeout` (NIO's client upgrade can
    /// wait forever on a server that accepts the connection and never answers).
    static func connect(
        url: String, timeout: Duration, clock: any SwitchboardClock, logger: Logger,
        incomingLimit: Int = JanusSocket.bufferLimit, outgoingLimit: Int = JanusSocket.bufferLimit
    ) async throws -> JanusSocket {
        let (incoming, incomingContinuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingOldest(incomingLimit))
        let (outgoing, outgoingContinuation) = AsyncStream<Outgoing>.makeStream(bufferingPolicy: .bufferingOldest(outgoingLimit))
        let opened = Outcome()
        var headers = HTTPFields()
        headers[HTTPField.Name("Sec-WebSocket-Protocol")!] = "janus-protocol"
        let task = Task {
            do {
                try await WebSocketClient.connect(
                    url: url, configuration: WebSocketClientConfiguration(maxFrameSize: 1 << 20, additionalHeaders: headers),
                    logger: logger
                ) { inbound, outbound, _ in
                    opened.settle(.success(()))
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await item in outgoing {
                                switch item {
                                case .text(let text): try await outbound.write(.text(text))
                                case .close:
                                    try await outbound.close(.normalClosure, reason: nil)
                                    return
                                }
                            }
                        }
                        for try await message in inbound.messages(maxSize: 1 << 20) {
                            guard case .text(let text) = message else { continue }
                            if case .dropped = incomingContinuation.yield(text) {
                                logger.error(
                                    "Janus sends faster than it is read: closing the connection", metadata: ["limit": "\(incomingLimit)"])
                                break
                            }
                        }
                        group.cancelAll()
                    }
                }
            } catch {
                opened.settle(.failure(error))
            }
            opened.settle(.failure(JanusServer.Failure.down))
            incomingContinuation.finish()
        }
        let timer = Task {
            guard (try? await clock.sleep(for: timeout)) != nil else { return }
            opened.settle(.failure(JanusServer.Failure.timedOut))
        }
        defer { timer.cancel() }
        do {
            try await opened.wait()
        } catch {
            task.cancel()
            outgoingContinuation.finish()
            throw error
        }
        return JanusSocket(incoming: incoming, outgoing: outgoingContinuation, task: task, logger: logger)
    }

    /// The first result of a connection attempt, for its one waiter.
    private final class Outcome: Sendable {
        private let state = NIOLockedValueBox<(result: Result<Void, any Error>?, waiter: CheckedContinuation<Void, any Error>?)>(
            (nil, nil))

        func settle(_ result: Result<Void, any Error>) {
            let waiter = state.withLockedValue { state -> CheckedContinuation<Void, any Error>? in
                guard state.result == nil else { return nil }
                state.result = result
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(with: result)
        }

        func wait() async throws {
            try await withCheckedThrowingContinuation { continuation in
                let result = state.withLockedValue { state -> Result<Void, any Error>? in
                    if let result = state.result { return result }
                    state.waiter = continuation
                    return nil
                }
                if let result { continuation.resume(with: result) }
            }
        }
    }
}
