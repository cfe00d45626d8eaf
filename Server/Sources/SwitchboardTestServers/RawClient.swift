import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOWebSocket
import Switchboard
import SwitchboardProtocol
import SwitchboardTools
import WSClient

/// A bare WebSocket connection that sends any text, for testing what the server does with bad
/// input; it also records how the server closed it.
public final class RawClient: Sendable {
    /// Every frame the server sent; ends when the connection closes.
    public let frames: Recorder<String>
    private let outgoing: AsyncStream<String?>.Continuation
    private let closeBox = NIOLockedValueBox<WebSocketErrorCode?>(nil)

    public init(url: URL) async throws {
        let (incoming, incomingContinuation) = AsyncStream<String>.makeStream()
        let (outgoingStream, outgoing) = AsyncStream<String?>.makeStream()
        self.outgoing = outgoing
        self.frames = Recorder(incoming)
        let opened = OneShotSignal()
        let closeBox = self.closeBox
        Task {
            do {
                let frame = try await WebSocketClient.connect(
                    url: url.absoluteString, configuration: WebSocketClientConfiguration(maxFrameSize: 4 << 20),
                    logger: Logger(label: "raw-client")
                ) { inbound, outbound, _ in
                    opened.signal()
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await text in outgoingStream {
                                guard let text else {
                                    try await outbound.close(.normalClosure, reason: nil)
                                    return
                                }
                                try await outbound.write(.text(text))
                            }
                        }
                        for try await message in inbound.messages(maxSize: 4 << 20) {
                            if case .text(let text) = message { incomingContinuation.yield(text) }
                        }
                        group.cancelAll()
                    }
                }
                closeBox.withLockedValue { $0 = frame?.closeCode }
            } catch {}
            opened.signal()
            incomingContinuation.finish()
        }
        await opened.wait()
    }

    public func send(_ text: String) { outgoing.yield(text) }

    public func close() { outgoing.yield(nil) }

    /// The close code the server sent, once the connection has ended.
    public var closeCode: WebSocketErrorCode? { closeBox.withLockedValue { $0 } }

    /// Sends a frame and returns the response whose `id` is `id` (JSON null when nil).
    public func request(_ text: String, id: String?) async throws -> [String: Any] {
        let start = frames.values.count
        send(text)
        let frame = try await frames.first(from: start) { frame in
            guard let object = Self.object(frame), object["event"] == nil else { return false }
            if let id { return object["id"] as? String == id }
            return object["id"] is NSNull
        }
        return Self.object(frame) ?? [:]
    }

    /// Sends a typed request and returns the raw response object.
    public func request<R: SignalingRequest>(_ request: R, id: String) async throws -> [String: Any] {
        try await self.request(SwitchboardJSON.encodeString(RequestEnvelope(id: RequestID(rawValue: id), data: request)), id: id)
    }

    /// The error code of a response object, if it is an error.
    public static func errorCode(_ response: [String: Any]) -> Int? {
        (response["error"] as? [String: Any])?["code"] as? Int
    }

    public static func object(_ frame: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(frame.utf8))) as? [String: Any]
    }
}

/// Fires once; waiters before or after the signal all go on.
final class OneShotSignal: Sendable {
    private let state = NIOLockedValueBox<(fired: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func signal() {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            guard !state.fired else { return [] }
            state.fired = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let fired = state.withLockedValue { state -> Bool in
                if state.fired { return true }
                state.waiters.append(continuation)
                return false
            }
            if fired { continuation.resume() }
        }
    }
}
