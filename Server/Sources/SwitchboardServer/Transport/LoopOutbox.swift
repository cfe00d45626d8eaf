import NIOConcurrencyHelpers
import NIOCore

/// What one event loop's connections are sent, gathered so that the loop's thread is woken once
/// for many frames and each socket is written once per round (docs/BENCHMARKS.md: a wake-up per
/// frame from another thread and a `writev` per frame were a fifth of the server's CPU per call).
///
/// - From another thread (the call engine running on the other loop, the record writer), a frame
///   or a step waits here; only the first of a round wakes the loop, which then runs them all in
///   the order they came.
/// - On the loop, a frame is written at once and its socket flushed at the end of the round, so an
///   answer and the events it caused for the same device go out in one `writev`.
///
/// Order per connection is the order of arrival: a frame sent on the loop first runs what other
/// threads queued before it.
final class LoopOutbox: @unchecked Sendable {
    enum Item {
        case frame(NIOLoopBound<WebSocketConnectionHandler>, String)
        case step(NIOLoopBound<WebSocketConnectionHandler>, @Sendable (WebSocketConnectionHandler) -> Void)
    }

    let eventLoop: any EventLoop
    /// Filled from any thread, emptied on the loop.
    private let incoming = NIOLockedValueBox<[Item]>([])
    // Only on the loop (hence `@unchecked Sendable`):
    private var unflushed: [WebSocketConnectionHandler] = []
    private var flushScheduled = false

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Queues an item from any thread; runs it at once (after what waits) when already on the loop.
    func post(_ item: Item) {
        if eventLoop.inEventLoop {
            runIncoming()
            Self.run(item)
            return
        }
        let first = incoming.withLockedValue { items in
            items.append(item)
            return items.count == 1
        }
        if first {
            eventLoop.execute {
                self.runIncoming()
                self.flushAll()
            }
        }
    }

    /// Runs what other threads queued, in order. On the loop.
    func runIncoming() {
        let items = incoming.withLockedValue { items -> [Item] in
            guard !items.isEmpty else { return [] }
            defer { items = [] }
            return items
        }
        for item in items { Self.run(item) }
    }

    private static func run(_ item: Item) {
        switch item {
        case .frame(let handler, let text): handler.value.send(text)
        case .step(let handler, let body): body(handler.value)
        }
    }

    /// Flushes `handler`'s socket at the end of this round. On the loop.
    func flushLater(_ handler: WebSocketConnectionHandler) {
        unflushed.append(handler)
        guard !flushScheduled else { return }
        flushScheduled = true
        eventLoop.execute { self.flushAll() }
    }

    private func flushAll() {
        flushScheduled = false
        let handlers = unflushed
        unflushed = []
        for handler in handlers { handler.flush() }
    }
}
