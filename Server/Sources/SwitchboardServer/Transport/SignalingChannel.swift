import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket
import SwitchboardProtocol

/// How each accepted connection is set up, plugged into Hummingbird's server: the connection
/// gate first, then HTTP/1.1 with a WebSocket upgrade at `/v1/ws`. An upgraded connection is
/// served by channel handlers on its event loop (``WebSocketConnectionHandler``), with no task
/// waiting on it; any other request goes to the router (admin API, metrics, the web client).
struct SignalingChannel: ServerChildChannel, HTTPChannelHandler {
    enum Outcome: Sendable {
        /// An HTTP request for the router.
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        /// A WebSocket, served by its handlers from now on.
        case upgraded
        /// Turned away at the gate, already closing.
        case refused
    }

    struct Value: ServerChildChannelValue {
        let outcome: EventLoopFuture<Outcome>
        let channel: any Channel
    }

    static let path = "/v1/ws"

    /// How much each read of a connection may take: from 512 bytes, growing up to 64 KiB while
    /// reads fill it, and shrinking back.
    static let receiveBuffers = AdaptiveRecvByteBufferAllocator(minimum: 256, initial: 512, maximum: 64 * 1024)

    let responder: HTTPChannelHandler.Responder
    let services: ChannelServices

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let id = services.connections.nextID()
            let address = channel.remoteAddress?.ipAddress ?? "unknown"
            let admission = services.gate.admit(id, address: address) { [weak channel] in channel?.close(promise: nil) }
            guard admission == .admitted else {
                services.metrics.connectionRefused(admission == .full ? "full" : "address_full")
                channel.close(promise: nil)
                return Value(outcome: channel.eventLoop.makeSucceededFuture(.refused), channel: channel)
            }
            // The closure lives as long as the connection: it holds the two parts it needs, not
            // the services (240 bytes of closure context per held connection where 56 do).
            let deadlines = services.deadlines
            let gate = services.gate
            channel.closeFuture.whenComplete { _ in
                deadlines.disarm(id)
                gate.closed(id)
            }
            // The request head must arrive in time (slowloris).
            deadlines.arm(id, after: services.limits.headTimeout) { [weak channel] in
                channel?.close(promise: nil)
            }
            // Reads start small: a logged-in connection keeps its last receive buffer between
            // reads, and most frames are a few hundred bytes (NIO's default starts every
            // connection at 2 KiB); the buffer grows for larger messages as NIO sees them fill it.
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: Self.receiveBuffers)
            let undecided = UndecidedConnection()
            try channel.pipeline.syncOperations.addHandler(undecided)
            let outcome = try configure(channel, id: id, address: address, logger: logger)
            // Once the connection is HTTP or a WebSocket, its own handlers take over.
            outcome.whenSuccess { _ in channel.pipeline.removeHandler(undecided, promise: nil) }
            return Value(outcome: outcome, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            if case .http(let http) = try await value.outcome.get() {
                await handleHTTP(asyncChannel: http, logger: logger)
            }
        } catch {
            logger.debug("connection setup failed", metadata: ["error": "\(error)"])
        }
    }

    private func configure(_ channel: any Channel, id: UInt64, address: String, logger: Logger) throws
        -> EventLoopFuture<Outcome>
    {
        let services = self.services
        let limits = services.limits
        let upgrader = NIOTypedWebSocketServerUpgrader<Outcome>(
            maxFrameSize: NodeContext.hardMessageLimit,
            enableAutomaticErrorHandling: false,
            shouldUpgrade: { channel, head in
                let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
                return channel.eventLoop.makeSucceededFuture(path == Self.path ? HTTPHeaders() : nil)
            },
            upgradePipelineHandler: { channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    let outbox = services.outboxes[channel.eventLoop]
                    let handler = WebSocketConnectionHandler(
                        limits: limits, pingInterval: .seconds(services.heartbeatInterval),
                        metrics: services.metrics, outbox: outbox, logger: logger)
                    let connection = Connection(
                        id: id, remoteAddress: address, channel: channel, handler: handler, outbox: outbox)
                    let session = SignalingSession(services: services.sessions, connection: connection, logger: logger)
                    let runner = SessionRunner(session: session, channel: channel, executor: services.executors[channel.eventLoop])
                    handler.attach(runner)
                    try channel.pipeline.syncOperations.addHandlers(
                        WebSocketConnectionHandler.frameHandlers(maxMessageBytes: NodeContext.hardMessageLimit) + [handler])
                    // From the upgrade on, the connection has this long to log in.
                    services.deadlines.arm(id, after: limits.loginTimeout) {
                        connection.close(SwitchboardError(.loginTimeout))
                    }
                    return .upgraded
                }
            })
        var configuration = NIOUpgradableHTTPServerPipelineConfiguration<Outcome>(
            upgradeConfiguration: NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try channel.pipeline.syncOperations.addHandler(
                            HTTPRequestDeadlines(id: id, deadlines: services.deadlines, limits: limits))
                        // Closes the connection between requests when the server shuts down.
                        try channel.pipeline.syncOperations.addHandler(HTTPConnectionStateHandler(logger: logger))
                        return .http(
                            try NIOAsyncChannel(
                                wrappingChannelSynchronously: channel,
                                configuration: .init(isOutboundHalfClosureEnabled: true)))
                    }
                }))
        configuration.enablePipelining = false  // NIOAsyncChannel reads one request at a time
        configuration.enableErrorHandling = false  // Hummingbird answers parse errors
        configuration.enableResponseHeaderValidation = false  // HTTPTypes validated them
        return try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
    }
}

/// The deadlines of a plain HTTP connection: a request's body must arrive within the request
/// timeout of its head, and a keep-alive connection must send its next request head within the
/// idle timeout of the last response.
final class HTTPRequestDeadlines: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let id: UInt64
    private let deadlines: ConnectionDeadlines
    private let limits: ConnectionLimits

    init(id: UInt64, deadlines: ConnectionDeadlines, limits: ConnectionLimits) {
        self.id = id
        self.deadlines = deadlines
        self.limits = limits
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            let channel = context.channel
            deadlines.arm(id, after: limits.requestTimeout) { channel.close(promise: nil) }
        case .end:
            deadlines.disarm(id)  // the response may take its time (a records query)
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            let channel = context.channel
            deadlines.arm(id, after: limits.idleTimeout) { channel.close(promise: nil) }
        }
        context.write(data, promise: promise)
    }
}

/// Closes a connection that has not finished its first request head when the server shuts down.
/// Removed once it is an HTTP or a WebSocket connection, whose own handlers decide then.
final class UndecidedConnection: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
