import NIOConcurrencyHelpers
import Switchboard

/// A network path monitor a test drives: ``change()`` tells every client that follows it that the
/// path changed, as a link coming back or a new address would.
public final class ManualNetworkPathMonitor: NetworkPathMonitor {
    private let subscribers = NIOLockedValueBox<[Int: AsyncStream<Void>.Continuation]>([:])
    private let next = NIOLockedValueBox(0)

    public init() {}

    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = next.withLockedValue { value in
            value += 1
            return value
        }
        subscribers.withLockedValue { $0[id] = continuation }
        continuation.onTermination = { [subscribers] _ in subscribers.withLockedValue { _ = $0.removeValue(forKey: id) } }
        return stream
    }

    /// How many clients follow the monitor now (a test waits for its client to before changing).
    public var observerCount: Int { subscribers.withLockedValue { $0.count } }

    /// The path changed.
    public func change() {
        for subscriber in subscribers.withLockedValue({ Array($0.values) }) { subscriber.yield() }
    }
}
