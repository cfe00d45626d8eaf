import Dispatch
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@testable import SwitchboardServer

/// A connection's frames leave in the order they were sent, from any thread, and what one round of
/// its event loop sends goes out with one flush (one `writev`).
struct LoopOutboxTests {
    /// Counts the flushes that reach the socket.
    final class FlushCounter: ChannelOutboundHandler, @unchecked Sendable {
        typealias OutboundIn = ByteBuffer
        let flushes = NIOLockedValueBox(0)

        func flush(context: ChannelHandlerContext) {
            flushes.withLockedValue { $0 += 1 }
            context.flush()
        }
    }

    @Test(.timeLimit(.minutes(1))) func framesFromAnyThreadKeepTheirOrderAndEachRoundIsFlushedOnce() async throws {
        let channel = NIOAsyncTestingChannel()
        let loop = channel.eventLoop
        let outbox = LoopOutbox(eventLoop: loop)
        let counter = FlushCounter()
        let connection = try await loop.submit {
            let handler = WebSocketConnectionHandler(
                limits: ConnectionLimits(), pingInterval: .seconds(10), metrics: ServerMetrics(), outbox: outbox,
                logger: Logger(label: "test"))
            try channel.pipeline.syncOperations.addHandler(counter)
            try channel.pipeline.syncOperations.addHandler(WebSocketFrameEncoder())
            try channel.pipeline.syncOperations.addHandler(handler)
            return Connection(id: 1, remoteAddress: "test", channel: channel, handler: handler, outbox: outbox)
        }.get()

        // Three frames from another thread while the loop is busy: one round, one flush.
        let busy = DispatchSemaphore(value: 0)
        loop.execute { busy.wait() }
        connection.enqueue("a")
        connection.enqueue("b")
        connection.enqueue("c")
        busy.signal()
        #expect(try await texts(channel, count: 3) == ["a", "b", "c"])
        #expect(counter.flushes.withLockedValue { $0 } == 1)

        // Two frames sent on the loop in one round: one flush.
        try await loop.submit {
            connection.enqueue("d")
            connection.enqueue("e")
        }.get()
        #expect(try await texts(channel, count: 2) == ["d", "e"])
        #expect(counter.flushes.withLockedValue { $0 } == 2)

        // A frame from another thread that arrived first goes first, even when the loop sends its
        // own before the outbox's round comes.
        let resume = DispatchSemaphore(value: 0)
        let sentOnLoop = loop.submit {
            resume.wait()
            connection.enqueue("g")
        }
        connection.enqueue("f")
        resume.signal()
        try await sentOnLoop.get()
        #expect(try await texts(channel, count: 2) == ["f", "g"])
        #expect(counter.flushes.withLockedValue { $0 } == 3)
        _ = try? await channel.finish()
    }

    /// The text of the next `count` frames written to the socket (unmasked text frames under 126
    /// bytes, as the server writes these; the encoder writes a frame's header and payload apart).
    private func texts(_ channel: NIOAsyncTestingChannel, count: Int) async throws -> [String] {
        var bytes: [UInt8] = []
        var texts: [String] = []
        while texts.count < count {
            let written = try await channel.waitForOutboundWrite(as: ByteBuffer.self)
            bytes += written.readableBytesView
            while bytes.count >= 2, bytes.count >= 2 + Int(bytes[1]) {
                try #require(bytes[0] == 0x81 && bytes[1] < 126)
                texts.append(String(decoding: bytes[2..<2 + Int(bytes[1])], as: UTF8.self))
                bytes.removeFirst(2 + Int(bytes[1]))
            }
        }
        try #require(bytes.isEmpty)
        return texts
    }
}
