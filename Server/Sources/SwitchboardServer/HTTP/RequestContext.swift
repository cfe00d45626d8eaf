import Hummingbird
import NIOCore

/// The request context of every HTTP route, with the peer's address.
///
/// The address is the TCP peer's. Behind a reverse proxy every client shares the proxy's address,
/// so the per-IP limits then apply to the proxy as a whole; raise them accordingly.
struct SwitchboardRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
