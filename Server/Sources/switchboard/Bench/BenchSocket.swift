import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

#if canImport(Glibc)
import Glibc
#endif

/// Monotonic nanoseconds: one clock for every timestamp of a run (send and receive happen in this
/// process, so one-way delays are differences of the same clock).
@inline(__always)
func monotonicNanos() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// A lean WebSocket client for the load generator: SwiftNIO with nothing on top, bound to a chosen
/// 127.0.0.x source address (loopback has ~28k ephemeral ports per source address). Text frames are
/// handed over raw, with the time they were read, on the event loop; the scenarios scan them for
/// the few fields they need instead of decoding JSON, so the client spends little of the CPU it
/// shares with the server. The echo floor and every scenario use this same code.
final class BenchSocket: Sendable {
    typealias Receive = @Sendable (ByteBuffer, UInt64) -> Void

    let channel: any Channel

    private init(channel: any Channel) {
        self.channel = channel
    }

    /// Opens a WebSocket to `ws://host:port/path` from `localAddress`.
    static func connect(
        host: String, port: Int, path: String, localAddress: String?, group: any EventLoopGroup,
        onText: @escaping Receive, onClose: @escaping @Sendable () -> Void = {}
    ) async throws -> BenchSocket {
        enum Upgrade {
            case upgraded(any Channel)
            case refused
        }
        var bootstrap = ClientBootstrap(group: group)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
        if let localAddress {
            bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: localAddress, port: 0))
        }
        let upgrade: EventLoopFuture<Upgrade> = try await bootstrap.connect(host: host, port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                let upgrader = NIOTypedWebSocketClientUpgrader<Upgrade>(
                    maxFrameSize: 1 << 20,
                    upgradePipelineHandler: { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(
                                FrameHandler(onText: onText, onClose: onClose))
                            return Upgrade.upgraded(channel)
                        }
                    })
                var headers = HTTPHeaders()
                headers.add(name: "Host", value: "\(host):\(port)")
                let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
                let configuration = NIOTypedHTTPClientUpgradeConfiguration<Upgrade>(
                    upgradeRequestHead: head, upgraders: [upgrader],
                    notUpgradingCompletionHandler: { channel in channel.eventLoop.makeSucceededFuture(.refused) })
                return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
                    configuration: .init(upgradeConfiguration: configuration))
            }
        }
        switch try await upgrade.get() {
        case .upgraded(let channel): return BenchSocket(channel: channel)
        case .refused: throw BenchError("the server refused the WebSocket upgrade")
        }
    }

    /// Sends a text frame (masked, as a client must).
    func send(_ text: String) {
        // Room for the longest masked header (14 bytes), which NIO's encoder then writes in place.
        var buffer = channel.allocator.buffer(capacity: 14 + text.utf8.count)
        buffer.moveWriterIndex(forwardBy: 14)
        buffer.moveReaderIndex(forwardBy: 14)
        buffer.writeString(text)
        let frame = WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: buffer)
        channel.writeAndFlush(frame, promise: nil)
    }

    func close() {
        channel.close(promise: nil)
    }

    /// Reads frames: text (reassembled when fragmented) to `onText`, pings answered, close honoured.
    private final class FrameHandler: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = WebSocketFrame
        typealias OutboundOut = WebSocketFrame

        private let onText: Receive
        private let onClose: @Sendable () -> Void
        private var partial: ByteBuffer?

        init(onText: @escaping Receive, onClose: @escaping @Sendable () -> Void) {
            self.onText = onText
            self.onClose = onClose
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let received = monotonicNanos()
            let frame = unwrapInboundIn(data)
            switch frame.opcode {
            case .text where frame.fin:
                onText(frame.unmaskedData, received)
            case .text:
                partial = frame.unmaskedData
            case .continuation:
                var data = frame.unmaskedData
                partial?.writeBuffer(&data)
                if frame.fin, let whole = partial {
                    partial = nil
                    onText(whole, received)
                }
            case .ping:
                let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
                context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
            case .connectionClose:
                context.close(promise: nil)
            default:
                break
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            onClose()
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension ByteBuffer {
    /// The offset just past the first occurrence of `pattern` in the readable bytes (`memchr` for
    /// its first byte, `memcmp` for the rest): the generator reads every frame of the load, and a
    /// generic collection search cost it half its CPU.
    private func offset(after pattern: StaticString) -> Int? {
        withUnsafeReadableBytes { bytes -> Int? in
            let length = pattern.utf8CodeUnitCount
            guard let base = bytes.baseAddress, length > 0, bytes.count >= length else { return nil }
            var start = 0
            while start <= bytes.count - length,
                let found = memchr(base + start, Int32(pattern.utf8Start.pointee), bytes.count - length - start + 1)
            {
                let offset = base.distance(to: UnsafeRawPointer(found))
                if memcmp(found, pattern.utf8Start, length) == 0 { return offset + length }
                start = offset + 1
            }
            return nil
        }
    }

    /// The string value of the first `"key":"…"` in the frame (ids, event names, call ids contain
    /// no escapes), without decoding the JSON.
    func stringValue(of key: StaticString) -> String? {
        guard let start = offset(after: key) else { return nil }
        return withUnsafeReadableBytes { bytes -> String? in
            guard let end = bytes[start...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }

    /// Whether the frame contains `text`.
    func contains(_ text: StaticString) -> Bool {
        offset(after: text) != nil
    }
}
