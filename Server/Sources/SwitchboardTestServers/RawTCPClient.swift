import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SwitchboardTools

/// A bare TCP connection that writes whatever bytes a test chooses (half an HTTP request, an
/// unmasked WebSocket frame, nothing at all) and records what comes back and when it closes.
public final class RawTCPClient: Sendable {
    private let channel: any Channel
    private let state: NIOLockedValueBox<State>

    private struct State {
        var received: [UInt8] = []
        var closed = false
        var waiters:
            [(id: UUID, predicate: @Sendable ([UInt8], Bool) -> Bool, continuation: CheckedContinuation<Void, any Error>)] =
                []
    }

    /// Records into the client's state from the first byte on (the server may close before
    /// `connect` returns).
    private final class Reader: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let state = NIOLockedValueBox(State())

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            RawTCPClient.update(state) { $0.received += buffer.readableBytesView }
        }

        func channelInactive(context: ChannelHandlerContext) {
            RawTCPClient.update(state) { $0.closed = true }
        }

        /// The server ended its side (its close frame sent, it reads on for a while): closed,
        /// for what the test waits on, while what the test still writes goes out.
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case ChannelEvent.inputClosed = event { RawTCPClient.update(state) { $0.closed = true } }
            context.fireUserInboundEventTriggered(event)
        }
    }

    private init(channel: any Channel, state: NIOLockedValueBox<State>) {
        self.channel = channel
        self.state = state
    }

    /// Connects to `host:port`, from `sourceAddress` when given (another loopback address).
    public static func connect(host: String = "127.0.0.1", port: Int, sourceAddress: String? = nil) async throws
        -> RawTCPClient
    {
        let reader = Reader()
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(reader) }
            }
        if let sourceAddress {
            bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: sourceAddress, port: 0))
        }
        let channel = try await bootstrap.connect(host: host, port: port).get()
        return RawTCPClient(channel: channel, state: reader.state)
    }

    /// Writes bytes as they are.
    public func send(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes))
    }

    public func send(_ text: String) async throws {
        try await send(Array(text.utf8))
    }

    /// Stops reading the socket (what arrives stays in the kernel's buffers).
    public func stopReading() async {
        try? await channel.setOption(ChannelOptions.autoRead, value: false).get()
    }

    /// Closes the connection.
    public func close() async {
        try? await channel.close()
    }

    /// Everything received so far.
    public var received: [UInt8] { state.withLockedValue { $0.received } }

    /// Whether the other side closed the connection.
    public var isClosed: Bool { state.withLockedValue { $0.closed } }

    /// Waits until what was received (and whether the connection closed) satisfies `predicate`;
    /// throws after `timeout` of real time (a test fails instead of hanging).
    public func wait(
        timeout: Duration = .seconds(30), until predicate: @escaping @Sendable (_ received: [UInt8], _ closed: Bool) -> Bool
    ) async throws {
        let id = UUID()
        let timer = Task { [state] in
            try? await Task.sleep(for: timeout)
            let waiter = state.withLockedValue { state in
                state.waiters.firstIndex { $0.id == id }.map { state.waiters.remove(at: $0) }
            }
            waiter?.continuation.resume(throwing: RecorderTimeout(description: "nothing matching within \(timeout)"))
        }
        defer { timer.cancel() }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let done = state.withLockedValue { state -> Bool in
                if predicate(state.received, state.closed) { return true }
                state.waiters.append((id, predicate, continuation))
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// Waits until the other side closes the connection.
    public func waitUntilClosed() async throws {
        try await wait { _, closed in closed }
    }

    /// Waits until `text` has been received.
    public func wait(for text: String) async throws {
        let needle = Array(text.utf8)
        try await wait { received, closed in closed || received.firstRange(of: needle) != nil }
    }

    private static func update(_ state: NIOLockedValueBox<State>, _ change: (inout State) -> Void) {
        let ready = state.withLockedValue { state -> [CheckedContinuation<Void, any Error>] in
            change(&state)
            var ready: [CheckedContinuation<Void, any Error>] = []
            state.waiters.removeAll { waiter in
                guard waiter.predicate(state.received, state.closed) else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
        ready.forEach { $0.resume() }
    }
}

extension RawTCPClient {
    /// An HTTP response as it came: the status, the header fields in order, the body.
    public struct HTTPResponse: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: String

        /// The value of the first field named `name` (case-insensitive).
        public subscript(name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// One HTTP/1.1 GET with the path exactly as given; returns the status and the body.
    public static func get(port: Int, rawPath: String) async throws -> (status: Int, body: String) {
        let response = try await get(port: port, rawPath: rawPath, host: "127.0.0.1")
        return (response.status, response.body)
    }

    /// One GET with the path and the `Host` header exactly as given (nil: none, as HTTP/1.0).
    public static func get(port: Int, rawPath: String, host: String?) async throws -> HTTPResponse {
        let client = try await connect(port: port)
        let head = host.map { "GET \(rawPath) HTTP/1.1\r\nHost: \($0)\r\n" } ?? "GET \(rawPath) HTTP/1.0\r\n"
        try await client.send(head + "Connection: close\r\n\r\n")
        try await client.waitUntilClosed()
        let text = String(decoding: client.received, as: UTF8.self)
        let end = text.range(of: "\r\n\r\n")
        let lines = text[..<(end?.lowerBound ?? text.endIndex)].components(separatedBy: "\r\n")
        let status = lines.first?.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        let headers = lines.dropFirst().compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return HTTPResponse(status: status, headers: headers, body: end.map { String(text[$0.upperBound...]) } ?? "")
    }
}
