import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A bare TCP connection that writes whatever bytes a test chooses (half an HTTP request, an
/// unmasked WebSocket frame, nothing at all) and records what comes back and when it closes.
public final class RawTCPClient: Sendable {
    private let channel: any Channel
    private let state = NIOLockedValueBox<State>(State())

    private struct State {
        var received: [UInt8] = []
        var closed = false
        var waiters: [(predicate: @Sendable ([UInt8], Bool) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private final class Reader: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let client: NIOLockedValueBox<RawTCPClient?> = NIOLockedValueBox(nil)

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            client.withLockedValue { $0 }?.update { $0.received += buffer.readableBytesView }
        }

        func channelInactive(context: ChannelHandlerContext) {
            client.withLockedValue { $0 }?.update { $0.closed = true }
        }
    }

    private init(channel: any Channel) {
        self.channel = channel
    }

    /// Connects to `host:port`, from `sourceAddress` when given (another loopback address).
    public static func connect(host: String = "127.0.0.1", port: Int, sourceAddress: String? = nil) async throws
        -> RawTCPClient
    {
        let reader = Reader()
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(reader) }
            }
        if let sourceAddress {
            bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: sourceAddress, port: 0))
        }
        let channel = try await bootstrap.connect(host: host, port: port).get()
        let client = RawTCPClient(channel: channel)
        reader.client.withLockedValue { $0 = client }
        return client
    }

    /// Writes bytes as they are.
    public func send(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes))
    }

    public func send(_ text: String) async throws {
        try await send(Array(text.utf8))
    }

    /// Closes the connection.
    public func close() async {
        try? await channel.close()
    }

    /// Everything received so far.
    public var received: [UInt8] { state.withLockedValue { $0.received } }

    /// Whether the other side closed the connection.
    public var isClosed: Bool { state.withLockedValue { $0.closed } }

    /// Waits until what was received (and whether the connection closed) satisfies `predicate`.
    public func wait(until predicate: @escaping @Sendable (_ received: [UInt8], _ closed: Bool) -> Bool) async {
        await withCheckedContinuation { continuation in
            let done = state.withLockedValue { state -> Bool in
                if predicate(state.received, state.closed) { return true }
                state.waiters.append((predicate, continuation))
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// Waits until the other side closes the connection.
    public func waitUntilClosed() async {
        await wait { _, closed in closed }
    }

    /// Waits until `text` has been received.
    public func wait(for text: String) async {
        let needle = Array(text.utf8)
        await wait { received, closed in closed || received.firstRange(of: needle) != nil }
    }

    private func update(_ change: (inout State) -> Void) {
        let ready = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            change(&state)
            var ready: [CheckedContinuation<Void, Never>] = []
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
    /// One HTTP/1.1 GET with the path exactly as given; returns the status and the body.
    public static func get(port: Int, rawPath: String) async throws -> (status: Int, body: String) {
        let client = try await connect(port: port)
        try await client.send("GET \(rawPath) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        await client.waitUntilClosed()
        let text = String(decoding: client.received, as: UTF8.self)
        let status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        return (status, body)
    }
}
