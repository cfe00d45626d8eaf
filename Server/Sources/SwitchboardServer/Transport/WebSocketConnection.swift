import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket
import SwitchboardProtocol

/// One WebSocket connection after the upgrade, as the rest of the server sees it: frames can be
/// queued from any thread, and it can be closed and waited on. The work happens on the channel's
/// event loop, in ``WebSocketConnectionHandler``.
final class Connection: EventSink {
    let id: UInt64
    /// The peer's IP address, for per-address limits.
    let remoteAddress: String
    let channel: any Channel
    private let handler: NIOLoopBound<WebSocketConnectionHandler>
    private let outbox: LoopOutbox
    private let closing = NIOLockedValueBox(false)

    init(id: UInt64, remoteAddress: String, channel: any Channel, handler: WebSocketConnectionHandler, outbox: LoopOutbox) {
        self.id = id
        self.remoteAddress = remoteAddress
        self.channel = channel
        self.handler = NIOLoopBound(handler, eventLoop: channel.eventLoop)
        self.outbox = outbox
    }

    func enqueue(_ frame: String) {
        outbox.post(.frame(handler, frame))
    }

    /// From now on frames wait in the connection instead of going out (see ``releaseFrames(after:)``).
    func holdFrames() {
        outbox.post(.step(handler) { $0.hold() })
    }

    /// Writes `first` (a login answer), then the frames held since ``holdFrames()``, in order.
    func releaseFrames(after first: String?) {
        outbox.post(.step(handler) { $0.release(after: first) })
    }

    func close(_ error: SwitchboardError?) {
        let first = closing.withLockedValue { closing in
            defer { closing = true }
            return !closing
        }
        guard first else { return }
        outbox.post(.step(handler) { $0.close(error) })
    }

    var isClosing: Bool { closing.withLockedValue { $0 } }

    func waitUntilClosed() async {
        try? await channel.closeFuture.get()
    }
}

/// The WebSocket protocol for one connection, on its event loop (RFC 6455), after
/// ``ClientFrameCheck`` (masked frames, no reserved bits) and NIO's `NIOWebSocketFrameAggregator`
/// (fragments reassembled up to the hard limit): checks that text is UTF-8, answers pings and the
/// close handshake, pings the peer, keeps the connection's outgoing budget, and closes with the
/// code for what the handlers before it found. Complete messages go to the connection's
/// ``SessionRunner``.
///
/// Close codes: 1002 for protocol violations (unmasked or reserved-bit frames, bad fragments,
/// unknown opcodes), 1007 for text that is not UTF-8, 1009 for a message above the hard limit or
/// in more than ``maxFragments`` fragments, 1008 for a peer that does not read (over its outgoing
/// budget) or did not log in in time, 1012 (service restart: come back) when the server shuts
/// down, 1000 otherwise.
final class WebSocketConnectionHandler: ChannelInboundHandler, RemovableChannelHandler, NIOScheduledCallbackHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// The outgoing budget (``ConnectionLimits/outgoingBudgetBytes`` and `Frames`): the two
    /// numbers, not the whole limits, are kept for each connection.
    private let budgetBytes: Int
    private let budgetFrames: Int
    /// The heartbeat interval: a connection silent for a whole one is closed.
    private let pingInterval: Duration
    private let metrics: ServerMetrics
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var runner: SessionRunner?
    private var heardSincePing = true
    /// The next ping, scheduled with no promise or future (a `Scheduled` task made both for each
    /// connection at every heartbeat and kept them for its whole interval).
    private var pinger: NIOScheduledCallback?
    private var framesWhileUnwritable = 0
    /// Where frames go: out; held back until a login answer goes first (``hold()``, bounded by the
    /// outgoing budget); or nowhere, once a close frame was sent or the channel is closing (nothing
    /// more is written or read then).
    private enum Output {
        case open
        case holding([String])
        case closed
    }

    private var output = Output.open
    private var closed: Bool {
        if case .closed = output { true } else { false }
    }

    /// The longest header of an unmasked frame (RFC 6455: 2 bytes, 2 more for a 16-bit length or
    /// 8 more for a 64-bit one).
    static let headerRoom = 10

    private let outbox: LoopOutbox
    /// Written since the last flush, which the outbox makes at the end of the round.
    private var awaitingFlush = false

    init(
        limits: ConnectionLimits, pingInterval: Duration, metrics: ServerMetrics, outbox: LoopOutbox, logger: Logger
    ) {
        self.budgetBytes = limits.outgoingBudgetBytes
        self.budgetFrames = limits.outgoingBudgetFrames
        self.pingInterval = pingInterval
        self.outbox = outbox
        self.metrics = metrics
        self.logger = logger
    }

    /// Where complete messages go; set once, right after the handler is added.
    func attach(_ runner: SessionRunner) {
        self.runner = runner
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
        output = .closed
        pinger?.cancel()
        runner?.disconnected()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { framesWhileUnwritable = 0 }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case ChannelEvent.inputClosed:
            // The peer closed its side without a close frame: it is gone.
            context.close(promise: nil)
        case is ChannelShouldQuiesceEvent:
            // Shutdown: logged-in sessions are closed by the server (with sessionEnded); others now.
            if runner?.isLoggedIn != true { close(context, code: .goingAway) }
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
        switch error {
        case NIOWebSocketError.invalidFrameLength,
            NIOWebSocketFrameAggregator.Error.accumulatedFrameSizeIsTooLarge,
            NIOWebSocketFrameAggregator.Error.tooManyFragments:
            close(context, code: .messageTooLarge)
        case is NIOWebSocketError, is NIOWebSocketFrameAggregator.Error, is ClientFrameError:
            close(context, code: .protocolError)
        default:
            logger.debug("connection error", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        }
    }

    // MARK: - reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closed else { return }
        heardSincePing = true
        // A whole message (the aggregator joined its fragments) or a control frame.
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary:
            deliver(context, opcode: frame.opcode, frame.unmaskedData)
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .pong:
            break
        case .connectionClose:
            // Echo the peer's code (RFC 6455 §5.5.1), then close.
            var data = frame.unmaskedData
            let code = data.readWebSocketErrorCode() ?? .normalClosure
            close(context, code: Self.isSendable(code) ? code : .normalClosure)
        default:
            close(context, code: .protocolError)
        }
    }

    private func deliver(_ context: ChannelHandlerContext, opcode: WebSocketOpcode, _ data: ByteBuffer) {
        let bytes = Data(data.readableBytesView)
        // Text must be UTF-8 (RFC 6455 §8.1); binary frames carry the same JSON and are not checked.
        if opcode == .text, String(validating: bytes, as: UTF8.self) == nil {
            close(context, code: .dataInconsistentWithMessage)
            return
        }
        runner?.received(bytes)
    }

    // MARK: - writing

    func hold() {
        if case .open = output { output = .holding([]) }
    }

    func release(after first: String?) {
        guard case .holding(let waiting) = output else {
            if let first { send(first) }
            return
        }
        output = .open
        if let first { send(first) }
        for text in waiting { send(text) }
    }

    /// Writes a text frame, and closes the connection if its peer is not reading: the bytes waiting
    /// for its socket, or the frames sent since the socket stopped taking more, are over budget.
    func send(_ text: String) {
        guard !closed, let context else { return }
        if case .holding(var waiting) = output {
            // Out of the value while it grows, so that appending does not copy it.
            output = .open
            waiting.append(text)
            guard waiting.count <= budgetFrames else {
                // Nobody answers the login in time and frames pile up: as for a peer that does not read.
                output = .closed
                context.close(promise: nil)
                return
            }
            output = .holding(waiting)
            return
        }
        // Room before the text for the frame's header, which NIO's encoder then writes in place:
        // one buffer and one iovec per frame instead of a header buffer of its own.
        var buffer = context.channel.allocator.buffer(capacity: Self.headerRoom + text.utf8.count)
        buffer.moveWriterIndex(forwardBy: Self.headerRoom)
        buffer.moveReaderIndex(forwardBy: Self.headerRoom)
        buffer.writeString(text)
        if !context.channel.isWritable { framesWhileUnwritable += 1 }
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: buffer)), promise: nil)
        if !awaitingFlush {
            awaitingFlush = true
            outbox.flushLater(self)
        }
        let waiting = (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
        if waiting > budgetBytes || framesWhileUnwritable > budgetFrames {
            metrics.slowReaderClosed()
            logger.notice(
                "closing a connection that does not read",
                metadata: ["waitingBytes": "\(waiting)", "frames": "\(framesWhileUnwritable)"])
            // Its socket takes nothing: a close frame would wait behind the rest. Drop it all now.
            output = .closed
            context.close(promise: nil)
        }
    }

    /// Flushes what ``send(_:)`` wrote this round (called by the outbox).
    func flush() {
        awaitingFlush = false
        guard !closed, let context else { return }
        context.flush()
    }

    /// Ends the session: `sessionEnded` with the error, then the close frame.
    func close(_ error: SwitchboardError?) {
        guard let context else { return }
        if let error { send(CallEngine.frame(.sessionEnded(SessionEndedEvent(error: error)))) }
        let code: WebSocketErrorCode =
            switch error?.code {
            // RFC 6455's 1012 Service Restart: come back (to this node or another).
            case .some(.shuttingDown): .unknown(1012)
            case .some(.loginTimeout): .policyViolation
            default: .normalClosure
            }
        close(context, code: code)
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
        guard !closed else { return }
        output = .closed
        runner?.disconnected()
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
        ping()
    }

    private func ping() {
        guard !closed, let context else { return }
        guard heardSincePing else {
            logger.debug("closing a connection that stopped answering pings")
            output = .closed
            context.close(promise: nil)
            return
        }
        heardSincePing = false
        let frame = WebSocketFrame(fin: true, opcode: .ping, data: context.channel.allocator.buffer(capacity: 0))
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
        schedulePing(context)
    }

    /// Codes a peer may put in a close frame and get back (1005, 1006 and 1015 never go on the wire).
    private static func isSendable(_ code: WebSocketErrorCode) -> Bool {
        switch code {
        case .unknown(let value): (3000...4999).contains(value)
        default: true
        }
    }
}
