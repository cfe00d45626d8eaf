import Foundation
import Logging
import NIOCore
import NIOWebSocket

/// Where a connection's complete messages go (the signaling session's ``SessionRunner``); the
/// transport knows nothing more of what is said.
protocol MessageReceiver: AnyObject, Sendable {
    func received(_ message: Data)
    /// The connection is gone (or closing: nothing more will be read).
    func disconnected()
    /// Whether the receiver ends its connection itself at shutdown (a logged-in session does,
    /// with a last message); any other connection is closed at once.
    var endsItselfAtShutdown: Bool { get }
}

/// The WebSocket protocol for one connection, on its event loop (RFC 6455), after
/// ``ClientFrameCheck`` (masked frames, no reserved bits) and NIO's `NIOWebSocketFrameAggregator`
/// (fragments reassembled up to the hard limit).
///
/// One channel handler drives four parts, each a value or a pure rule with one job and its own
/// table test (`TransportPartsTests`): ``FrameOutput`` (where outgoing frames go: out, held until
/// the login answer, or nowhere; the outgoing budget), ``Liveness`` (ping, or close a silent
/// peer), ``CloseCodes`` (the code for each way a connection ends) and the UTF-8 rule for text.
/// They are not four channel handlers, as swift-nio's own are, because every handler in a
/// pipeline costs each held connection its context and its object: four more measured 652 B per
/// held connection (6,005 → 6,657 B, 1.105×; docs/BENCHMARKS.md), for parts that share one
/// connection's state. Complete messages go to the connection's ``MessageReceiver``; the handler
/// knows nothing of sessions or calls (a session's last `sessionEnded` frame is its own, handed
/// to ``close(after:reason:)``).
final class WebSocketConnectionHandler: ChannelInboundHandler, RemovableChannelHandler, NIOScheduledCallbackHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// The heartbeat interval: a connection silent for a whole one is closed.
    private let pingInterval: Duration
    private let metrics: ServerMetrics
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var receiver: (any MessageReceiver)?
    private var liveness = Liveness()
    /// The next ping, scheduled with no promise or future (a `Scheduled` task made both for each
    /// connection at every heartbeat and kept them for its whole interval).
    private var pinger: NIOScheduledCallback?
    private var output: FrameOutput

    /// The longest header of an unmasked frame (RFC 6455: 2 bytes, 2 more for a 16-bit length or
    /// 8 more for a 64-bit one).
    static let headerRoom = 10

    private let outbox: LoopOutbox
    /// Written since the last flush, which the outbox makes at the end of the round.
    private var awaitingFlush = false

    init(
        limits: ConnectionLimits, pingInterval: Duration, metrics: ServerMetrics, outbox: LoopOutbox, logger: Logger
    ) {
        self.output = FrameOutput(budgetBytes: limits.outgoingBudgetBytes, budgetFrames: limits.outgoingBudgetFrames)
        self.pingInterval = pingInterval
        self.outbox = outbox
        self.metrics = metrics
        self.logger = logger
    }

    /// Where complete messages go; set once, right after the handler is added.
    func attach(_ receiver: any MessageReceiver) {
        self.receiver = receiver
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        schedulePing(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        pinger?.cancel()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        _ = output.close()
        pinger?.cancel()
        receiver?.disconnected()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        output.writabilityChanged(writable: context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case ChannelEvent.inputClosed:
            // The peer closed its side without a close frame: it is gone.
            context.close(promise: nil)
        case is ChannelShouldQuiesceEvent:
            // Shutdown: logged-in sessions are closed by the server (with sessionEnded); others now.
            if receiver?.endsItselfAtShutdown != true { close(context, code: .goingAway) }
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// Most fragments one message may come in (NIO's aggregator holds them until the last).
    static let maxFragments = 4_096

    /// The handlers that go before this one on a connection's pipeline, in order.
    static func frameHandlers(maxMessageBytes: Int) -> [any ChannelHandler] {
        [
            ClientFrameCheck(),
            NIOWebSocketFrameAggregator(
                minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: maxFragments, maxAccumulatedFrameSize: maxMessageBytes),
        ]
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let code = CloseCodes.code(for: error) {
            close(context, code: code)
        } else {
            logger.debug("connection error", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        }
    }

    // MARK: - reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !output.isClosed else { return }
        liveness.heard()
        // A whole message (the aggregator joined its fragments) or a control frame.
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary:
            let bytes = Data(frame.unmaskedData.readableBytesView)
            // Text must be UTF-8 (RFC 6455 §8.1); binary frames carry the same JSON and are not checked.
            guard frame.opcode == .binary || String(validating: bytes, as: UTF8.self) != nil else {
                return close(context, code: .dataInconsistentWithMessage)
            }
            receiver?.received(bytes)
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .pong:
            break
        case .connectionClose:
            var data = frame.unmaskedData
            close(context, code: CloseCodes.echo(data.readWebSocketErrorCode()))
        default:
            close(context, code: .protocolError)
        }
    }

    // MARK: - writing

    func hold() {
        output.hold()
    }

    /// Writes `first` (a login answer), then the frames held since ``hold()``, in order.
    func release(after first: String?) {
        let waiting = output.release()
        if let first { send(first) }
        for text in waiting { send(text) }
    }

    /// Writes a text frame, and closes the connection if its peer is not reading (``FrameOutput``).
    func send(_ text: String) {
        guard let context else { return }
        switch output.send(text, writable: context.channel.isWritable) {
        case .held, .drop:
            return
        case .close:
            context.close(promise: nil)
            return
        case .write:
            break
        }
        // Room before the text for the frame's header, which NIO's encoder then writes in place:
        // one buffer and one iovec per frame instead of a header buffer of its own.
        var buffer = context.channel.allocator.buffer(capacity: Self.headerRoom + text.utf8.count)
        buffer.moveWriterIndex(forwardBy: Self.headerRoom)
        buffer.moveReaderIndex(forwardBy: Self.headerRoom)
        buffer.writeString(text)
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: buffer)), promise: nil)
        if !awaitingFlush {
            awaitingFlush = true
            outbox.flushLater(self)
        }
        let waiting = (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
        if output.wrote(buffered: waiting) {
            metrics.slowReaderClosed()
            logger.notice(
                "closing a connection that does not read",
                metadata: ["waitingBytes": "\(waiting)", "frames": "\(output.framesWhileUnwritable)"])
            // Its socket takes nothing: a close frame would wait behind the rest. Drop it all now.
            context.close(promise: nil)
        }
    }

    /// Flushes what ``send(_:)`` wrote this round (called by the outbox).
    func flush() {
        awaitingFlush = false
        guard !output.isClosed, let context else { return }
        context.flush()
    }

    /// Sends `last` (the session's own last frame), then the close frame for `reason`.
    func close(after last: String?, reason: CloseReason) {
        guard let context else { return }
        if let last { send(last) }
        close(context, code: CloseCodes.code(for: reason))
    }

    /// How long a connection that sent its close frame goes on reading (and dropping) what the
    /// peer still sends before the socket is closed.
    static let lingering = TimeAmount.seconds(2)

    /// Sends a close frame with `code`, then ends the connection's sending side and drops what
    /// still comes in, until the peer closes or ``lingering`` is over. A socket closed with input
    /// unread makes the kernel reset the connection, and the reset can reach the peer before it
    /// read the close frame: a client that sent a message in too many fragments saw "connection
    /// reset", not 1009 (TransportLimitTests).
    ///
    /// The session ends with the close frame, not with the socket: a device that closed and logs
    /// in again at once finds its old session gone, as it did when the socket closed at once (the
    /// channel's end later is a second `disconnected`, which the session ignores).
    private func close(_ context: ChannelHandlerContext, code: WebSocketErrorCode) {
        guard output.close() else { return }
        receiver?.disconnected()
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
        context.writeAndFlush(wrapOutboundOut(frame)).assumeIsolated().whenComplete { _ in
            context.close(mode: .output, promise: nil)
            context.channel.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in }
            context.eventLoop.assumeIsolated().scheduleTask(in: Self.lingering) { context.close(promise: nil) }
        }
    }

    // MARK: - liveness

    private func schedulePing(_ context: ChannelHandlerContext) {
        let interval = TimeAmount.nanoseconds(Int64(pingInterval.components.seconds) * 1_000_000_000)
        pinger = try? context.eventLoop.assumeIsolated().scheduleCallback(in: interval, handler: self)
    }

    func handleScheduledCallback(eventLoop: some EventLoop) {
        pinger = nil
        guard !output.isClosed, let context else { return }
        switch liveness.tick() {
        case .close:
            logger.debug("closing a connection that stopped answering pings")
            _ = output.close()
            context.close(promise: nil)
        case .ping:
            let frame = WebSocketFrame(fin: true, opcode: .ping, data: context.channel.allocator.buffer(capacity: 0))
            context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
            schedulePing(context)
        }
    }
}
