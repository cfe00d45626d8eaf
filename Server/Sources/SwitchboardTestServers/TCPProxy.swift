import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SwitchboardTools

/// A TCP proxy on a free loopback port in front of a server, for tests that need the network to
/// fail: ``cut()`` closes every connection at once, ``blackhole`` stops forwarding bytes without
/// closing anything (a dead network that still looks open), ``blackholeDownstream`` drops only
/// what the server sends (a request gets through, its answer is lost), ``holdDownstream`` delays
/// what the server sends until it is released (a slow link, nothing lost), ``stall`` holds what
/// either side sends until it is released (a network that drops every packet for a while, as TCP
/// sees it: its retransmissions get through once the network is back), ``refuseNew`` turns new
/// connections away (an outage). ``dropped`` records the size of each chunk the proxy dropped.
public final class TCPProxy: Sendable {
    private struct State {
        var targetHost: String
        var targetPort: Int
        var sourceAddress: String?
        var channels: [ObjectIdentifier: any Channel] = [:]
        var blackholed = false
        var downstreamBlackholed = false
        var downstreamHeld = false
        var stalled = false
        /// Connections one side closed while blackholed, waiting to close the other side.
        var closeWaiters: [CheckedContinuation<Void, Never>] = []
        /// Pumps waiting for ``holdDownstream`` or ``stall`` to be released.
        var heldPumps: [CheckedContinuation<Bool, Never>] = []
        var refusing = false
        var stopped = false

        mutating func takeHeldPumps() -> [CheckedContinuation<Bool, Never>] {
            defer { heldPumps = [] }
            return heldPumps
        }
    }

    public let port: Int
    /// The size of every chunk dropped while blackholed, in order.
    public let dropped: Recorder<Int>
    private let droppedSink: AsyncStream<Int>.Continuation
    private let server: any Channel
    private let state: NIOLockedValueBox<State>
    /// Where connections to the target are made, when not on the accepted connection's loop.
    private let connectingLoop: (any EventLoop)?

    private init(
        port: Int, server: any Channel, targetHost: String, targetPort: Int, sourceAddress: String?,
        connectingLoop: (any EventLoop)?
    ) {
        self.port = port
        self.server = server
        self.connectingLoop = connectingLoop
        self.state = NIOLockedValueBox(State(targetHost: targetHost, targetPort: targetPort, sourceAddress: sourceAddress))
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        self.dropped = Recorder(stream)
        self.droppedSink = continuation
    }

    /// Starts a proxy to `127.0.0.1:targetPort`; with `sourceAddress` (another loopback address such
    /// as 127.0.0.2) the server sees its connections come from there. With `connectingLoop` the
    /// connections to the target are made on that loop's thread (one that joined another network
    /// namespace: ``TestNetwork/proxy(from:to:port:)``).
    public static func start(
        targetHost: String = "127.0.0.1", targetPort: Int, sourceAddress: String? = nil, connectingLoop: (any EventLoop)? = nil
    ) async throws -> TCPProxy {
        let group = MultiThreadedEventLoopGroup.singleton
        // Accepted connections are handed over as they are, not reading yet, and wrapped by the task
        // that serves them: a wrapper made at accept and dropped unserved (the listener closing
        // meanwhile) is a fatal error in NIO.
        let listener = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: false)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeSucceededFuture(channel)
            }
        let proxy = TCPProxy(
            port: listener.channel.localAddress?.port ?? 0, server: listener.channel, targetHost: targetHost,
            targetPort: targetPort, sourceAddress: sourceAddress, connectingLoop: connectingLoop)
        // Ends when the listener is closed (stop), after every accepted connection was taken.
        Task<Void, Never> {
            do {
                try await listener.executeThenClose { inbound in
                    for try await connection in inbound {
                        Task { await proxy.serve(connection) }
                    }
                }
            } catch {}
        }
        return proxy
    }

    /// Closes every connection through the proxy now; new ones are still accepted.
    public func cut() {
        let (channels, held, closing) = state.withLockedValue { state in
            defer {
                state.channels = [:]
                state.closeWaiters = []
            }
            return (Array(state.channels.values), state.takeHeldPumps(), state.closeWaiters)
        }
        for channel in channels { channel.close(promise: nil) }
        closing.forEach { $0.resume() }
        // The held bytes were in flight on connections that are gone: their pumps end.
        held.forEach { $0.resume(returning: false) }
    }

    /// While true, bytes are dropped in both directions and nothing is closed: a side that closes
    /// meanwhile is not heard by the other until the blackhole ends (or ``cut()``), as a close
    /// sent into a dead network is not.
    public var blackhole: Bool {
        get { state.withLockedValue { $0.blackholed } }
        set {
            let closing = state.withLockedValue { state in
                state.blackholed = newValue
                defer { if !newValue { state.closeWaiters = [] } }
                return newValue ? [] : state.closeWaiters
            }
            closing.forEach { $0.resume() }
        }
    }

    /// While true, bytes from the server to clients are dropped; requests still get through.
    public var blackholeDownstream: Bool {
        get { state.withLockedValue { $0.downstreamBlackholed } }
        set { state.withLockedValue { $0.downstreamBlackholed = newValue } }
    }

    /// While true, bytes from the server to clients wait in the proxy; set to false, they are
    /// delivered in order. Requests still get through.
    public var holdDownstream: Bool {
        get { state.withLockedValue { $0.downstreamHeld } }
        set {
            let held = state.withLockedValue { state in
                state.downstreamHeld = newValue
                return newValue ? [] : state.takeHeldPumps()
            }
            held.forEach { $0.resume(returning: true) }
        }
    }

    /// While true, bytes in both directions wait in the proxy; set to false, they are delivered in
    /// order. Nothing is lost or closed: unlike ``blackhole``, whose lost bytes TCP would have sent
    /// again, a connection that carried a request during the stall gets its answer after it.
    public var stall: Bool {
        get { state.withLockedValue { $0.stalled } }
        set {
            let held = state.withLockedValue { state in
                state.stalled = newValue
                return newValue ? [] : state.takeHeldPumps()
            }
            held.forEach { $0.resume(returning: true) }
        }
    }

    /// While true, new connections are closed as soon as they arrive.
    public var refuseNew: Bool {
        get { state.withLockedValue { $0.refusing } }
        set { state.withLockedValue { $0.refusing = newValue } }
    }

    /// Number of connections open through the proxy.
    public var connectionCount: Int { state.withLockedValue { $0.channels.count / 2 } }

    /// Stops listening and closes every connection. The accept loop is not cancelled: connections
    /// accepted in the meantime are taken from it and closed (an accepted NIOAsyncChannel must be
    /// closed through it; dropping it unclosed is a fatal error in NIO).
    public func stop() {
        state.withLockedValue { $0.stopped = true }
        cut()
        server.close(promise: nil)
    }

    /// Sends new connections to another port (a restarted server); open ones are left alone.
    public func retarget(port: Int) {
        state.withLockedValue { $0.targetPort = port }
    }

    private func serve(_ accepted: any Channel) async {
        let (targetHost, targetPort, sourceAddress, stopped) = state.withLockedValue {
            ($0.targetHost, $0.targetPort, $0.sourceAddress, $0.stopped)
        }
        guard !stopped,
            let client = try? await accepted.eventLoop.submit({
                try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: accepted)
            }).get()
        else {
            try? await accepted.close()
            return
        }
        try? await accepted.setOption(ChannelOptions.autoRead, value: true).get()
        if refuseNew {
            // As a load balancer in an outage: 503 and close. (A bare close before the HTTP upgrade
            // answer can leave NIO's client upgrade hanging; the SDK bounds that with a timeout.)
            try? await client.executeThenClose { _, outbound in
                try await outbound.write(
                    ByteBuffer(string: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
            }
            return
        }
        if blackhole {
            // A dead network: swallow everything, answer nothing, close nothing.
            try? await client.executeThenClose { inbound, _ in
                for try await buffer in inbound { droppedSink.yield(buffer.readableBytes) }
            }
            return
        }
        do {
            // The socket is made on the connecting loop's thread: inside the loop, not by the caller.
            let loop = connectingLoop ?? client.channel.eventLoop
            let target = try SocketAddress(ipAddress: targetHost, port: targetPort)
            let source = try sourceAddress.map { try SocketAddress(ipAddress: $0, port: 0) }
            let upstream = try await loop.flatSubmit {
                var bootstrap = ClientBootstrap(group: loop)
                if let source { bootstrap = bootstrap.bind(to: source) }
                return bootstrap.connect(to: target).flatMapThrowing { channel in
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }.get()
            state.withLockedValue { state in
                state.channels[ObjectIdentifier(client.channel)] = client.channel
                state.channels[ObjectIdentifier(upstream.channel)] = upstream.channel
            }
            try await client.executeThenClose { clientIn, clientOut in
                try await upstream.executeThenClose { upstreamIn, upstreamOut in
                    await withTaskGroup(of: Void.self) { group in
                        group.addTask { await self.pump(clientIn, to: upstreamOut, downstream: false) }
                        group.addTask { await self.pump(upstreamIn, to: clientOut, downstream: true) }
                        await group.next()
                        await self.waitWhileBlackholed()
                        group.cancelAll()
                    }
                }
            }
            state.withLockedValue { state in
                state.channels[ObjectIdentifier(client.channel)] = nil
                state.channels[ObjectIdentifier(upstream.channel)] = nil
            }
        } catch {
            // The server is down: answer as a reverse proxy does.
            try? await client.executeThenClose { _, outbound in
                try await outbound.write(
                    ByteBuffer(string: "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
            }
        }
    }

    private func pump(
        _ source: NIOAsyncChannelInboundStream<ByteBuffer>, to destination: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        downstream: Bool
    ) async {
        do {
            for try await buffer in source {
                await waitWhileHeld(downstream: downstream)
                let drop = state.withLockedValue { $0.blackholed || (downstream && $0.downstreamBlackholed) }
                if drop {
                    droppedSink.yield(buffer.readableBytes)
                } else {
                    try await destination.write(buffer)
                }
            }
        } catch {}
    }

    private func waitWhileBlackholed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let blackholed = state.withLockedValue { state in
                if state.blackholed { state.closeWaiters.append(continuation) }
                return state.blackholed
            }
            if !blackholed { continuation.resume() }
        }
    }

    /// Waits while this direction is held; a pump released by one hold looks again (the other
    /// may still hold it), unless its connection was cut meanwhile.
    private func waitWhileHeld(downstream: Bool) async {
        var again = true
        while again {
            again = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let held = state.withLockedValue { state in
                    let held = state.stalled || (downstream && state.downstreamHeld)
                    if held { state.heldPumps.append(continuation) }
                    return held
                }
                if !held { continuation.resume(returning: false) }
            }
        }
    }
}

