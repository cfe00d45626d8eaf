import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOWebSocket
import SwitchboardProtocol
import WSClient

/// Opens signaling connections. The SDK ships ``WebSocketTransport``; an app may plug another
/// (URLSessionWebSocketTask, a proxy-aware socket) without touching the stores.
public protocol SignalingTransport: Sendable {
    /// Opens a connection to the server's WebSocket endpoint.
    func connect(to url: URL) async throws -> any SignalingConnection
}

/// One open signaling connection.
public protocol SignalingConnection: Sendable {
    /// Text messages from the server, in order; finishes when the connection closes.
    var incoming: AsyncStream<String> { get }
    /// Queues a text message.
    func send(_ text: String)
    /// Closes the connection.
    func close()
}

/// The default transport: a WebSocket over SwiftNIO (swift-websocket's client), on Linux and Apple
/// platforms alike.
public struct WebSocketTransport: SignalingTransport {
    private let logger: Logger

    public init(logger: Logger = Logger(label: "switchboard.transport")) {
        self.logger = logger
    }

    public func connect(to url: URL) async throws -> any SignalingConnection {
        let (incoming, incomingContinuation) = AsyncStream<String>.makeStream()
        let (outgoing, outgoingContinuation) = AsyncStream<Outgoing>.makeStream()
        let opened = OneShotValue<Void>()
        let logger = self.logger
        let task = Task {
            do {
                try await WebSocketClient.connect(
                    url: url.absoluteString,
                    configuration: WebSocketClientConfiguration(maxFrameSize: 1 << 20),
                    logger: logger
                ) { inbound, outbound, _ in
                    opened.succeed(())
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
                            if case .text(let text) = message { incomingContinuation.yield(text) }
                        }
                        group.cancelAll()
                    }
                }
            } catch {
                opened.fail(error)
                logger.debug("websocket ended", metadata: ["error": "\(error)"])
            }
            opened.fail(SwitchboardError(.connectionFailed))
            incomingContinuation.finish()
        }
        do {
            try await withTaskCancellationHandler {
                try await opened.wait()
            } onCancel: {
                opened.fail(CancellationError())
            }
        } catch {
            task.cancel()
            throw SwitchboardError(.connectionFailed, "could not connect to \(url.absoluteString): \(error)")
        }
        return WebSocketConnection(incoming: incoming, outgoing: outgoingContinuation, task: task)
    }

    enum Outgoing: Sendable {
        case text(String)
        case close
    }

    struct WebSocketConnection: SignalingConnection {
        let incoming: AsyncStream<String>
        let outgoing: AsyncStream<Outgoing>.Continuation
        let task: Task<Void, Never>

        func send(_ text: String) { outgoing.yield(.text(text)) }

        func close() {
            outgoing.yield(.close)
            outgoing.finish()
        }
    }
}

/// A value delivered once, awaited by one waiter; later deliveries are refused.
final class OneShotValue<Value: Sendable>: Sendable {
    private let state = NIOLockedValueBox<(result: Result<Value, any Error>?, waiter: CheckedContinuation<Value, any Error>?)>(
        (nil, nil))

    /// Delivers the value; false when a result was already delivered.
    @discardableResult
    func succeed(_ value: Value) -> Bool { complete(.success(value)) }

    @discardableResult
    func fail(_ error: any Error) -> Bool { complete(.failure(error)) }

    private func complete(_ result: Result<Value, any Error>) -> Bool {
        let (accepted, waiter) = state.withLockedValue { state -> (Bool, CheckedContinuation<Value, any Error>?) in
            guard state.result == nil else { return (false, nil) }
            state.result = result
            defer { state.waiter = nil }
            return (true, state.waiter)
        }
        waiter?.resume(with: result)
        return accepted
    }

    func wait() async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            let result = state.withLockedValue { state -> Result<Value, any Error>? in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let result { continuation.resume(with: result) }
        }
    }
}
