import NIOCore
import NIOWebSocket

/// Checks each frame a client sends before anything reassembles it: masked (RFC 6455 §5.1), and
/// with no reserved bit set (no extension is negotiated). A frame that is not is an error
/// (``ClientFrameError``), which ``WebSocketConnectionHandler`` answers with a close frame, 1002;
/// it goes no further.
final class ClientFrameCheck: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard frame.maskKey != nil else {
            context.fireErrorCaught(ClientFrameError.unmasked)
            return
        }
        guard !frame.rsv1, !frame.rsv2, !frame.rsv3 else {
            context.fireErrorCaught(ClientFrameError.reservedBit)
            return
        }
        context.fireChannelRead(data)
    }
}

/// A client frame that breaks RFC 6455's rules for clients.
enum ClientFrameError: Error {
    case unmasked
    case reservedBit
}
