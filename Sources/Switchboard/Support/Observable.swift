import NIOConcurrencyHelpers

/// Delivers values to any number of subscribers, each through its own AsyncStream.
final class Broadcaster<Value: Sendable>: Sendable {
    private let subscribers = NIOLockedValueBox<[UInt64: AsyncStream<Value>.Continuation]>([:])
    private let counter = NIOLockedValueBox<UInt64>(0)

    /// A stream of every value published from now on; it ends when the subscriber stops iterating.
    func subscribe() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream<Value>.makeStream(bufferingPolicy: .unbounded)
        let id = counter.withLockedValue { counter in
            counter += 1
            return counter
        }
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLockedValue { $0[id] = nil }
        }
        subscribers.withLockedValue { $0[id] = continuation }
        return stream
    }

    func publish(_ value: Value) {
        for continuation in subscribers.withLockedValue({ Array($0.values) }) {
            continuation.yield(value)
        }
    }
}

/// One `State` value changed in one critical section; observers get it as an AsyncSequence that
/// starts with the current value (STYLE habit 6).
final class StateCell<State: Equatable & Sendable>: Sendable {
    private let box: NIOLockedValueBox<(value: State, subscribers: [UInt64: AsyncStream<State>.Continuation], next: UInt64)>

    init(_ initial: State) {
        box = NIOLockedValueBox((initial, [:], 0))
    }

    var value: State { box.withLockedValue { $0.value } }

    /// Changes the state; subscribers hear about it only if it really changed.
    @discardableResult
    func update<T>(_ body: (inout State) -> T) -> T {
        box.withLockedValue { box in
            let before = box.value
            let result = body(&box.value)
            if box.value != before {
                // Yielding under the lock keeps every subscriber's sequence in update order.
                for continuation in box.subscribers.values { continuation.yield(box.value) }
            }
            return result
        }
    }

    /// The current value, then every change.
    func subscribe() -> AsyncStream<State> {
        let (stream, continuation) = AsyncStream<State>.makeStream(bufferingPolicy: .unbounded)
        let id = box.withLockedValue { box in
            box.next += 1
            box.subscribers[box.next] = continuation
            continuation.yield(box.value)
            return box.next
        }
        continuation.onTermination = { [weak self] _ in
            self?.box.withLockedValue { _ = $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }
}
