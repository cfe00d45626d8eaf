import NIOConcurrencyHelpers
import NIOCore

/// One value per event loop of a node, made the first time a connection on that loop asks: what
/// the connections of a loop share (their ``LoopOutbox``, the ``EventLoopTaskExecutor`` their
/// sessions run on) is made once per loop, not once per connection. A node has a fixed set of
/// loops, so the map is bounded by their number.
final class PerEventLoop<Value: Sendable>: Sendable {
    private let values = NIOLockedValueBox<[ObjectIdentifier: Value]>([:])
    private let make: @Sendable (any EventLoop) -> Value

    init(_ make: @escaping @Sendable (any EventLoop) -> Value) {
        self.make = make
    }

    subscript(_ eventLoop: any EventLoop) -> Value {
        values.withLockedValue { values in
            let key = ObjectIdentifier(eventLoop as AnyObject)
            if let value = values[key] { return value }
            let value = make(eventLoop)
            values[key] = value
            return value
        }
    }
}
