import NIOConcurrencyHelpers
import NIOCore

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
    private let state = NIOLockedValueBox(State())

    private struct State {
        /// The session logged in (it ends itself at shutdown, with `sessionEnded`).
        var loggedIn = false
        var closing = false
    }

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

    func close(after last: String?, reason: CloseReason) {
        let first = state.withLockedValue { state in
            defer { state.closing = true }
            return !state.closing
        }
        guard first else { return }
        outbox.post(.step(handler) { $0.close(after: last, reason: reason) })
    }

    var isClosing: Bool { state.withLockedValue { $0.closing } }

    /// The session on this connection logged in: from now on it ends itself at shutdown.
    func markLoggedIn() { state.withLockedValue { $0.loggedIn = true } }

    var isLoggedIn: Bool { state.withLockedValue { $0.loggedIn } }

    func waitUntilClosed() async {
        try? await channel.closeFuture.get()
    }
}
