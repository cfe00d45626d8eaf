import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// The request context of every route: WebSocket upgrades, and the peer's address for per-IP limits.
///
/// The address is the TCP peer's. Behind a reverse proxy every client shares the proxy's address,
/// so the per-IP limits then apply to the proxy as a whole; raise them accordingly.
struct SwitchboardRequestContext: RequestContext, WebSocketRequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>
    let remoteAddress: SocketAddress?
    /// The event loop of the connection, on which its WebSocket session runs.
    let eventLoop: any EventLoop

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        webSocket = WebSocketHandlerReference()
        remoteAddress = source.channel.remoteAddress
        eventLoop = source.channel.eventLoop
    }
}
