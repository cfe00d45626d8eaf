import NIOConcurrencyHelpers

/// Runs deliveries in the order they were queued, outside any lock, on the thread that queued
/// them (or the one already delivering). Observers may call back into the SDK from a delivery: what
/// that changes is queued and delivered after the current one, never inside it, so nothing
/// deadlocks and nobody sees changes out of order.
package final class Outbox: Sendable {
    /// Most deliveries waiting at once (they wait only while an observer's callback runs); beyond
    /// that the oldest go, so an observer that never returns cannot grow the SDK's memory.
    package static let limit = 65_536

    private let box = NIOLockedValueBox<(queue: [@Sendable () -> Void], draining: Bool)>(([], false))

    package init() {}

    /// Queues a delivery; may be called under the owner's lock (it takes only its own).
    package func enqueue(_ delivery: @escaping @Sendable () -> Void) {
        box.withLockedValue { box in
            box.queue.append(delivery)
            if box.queue.count > Self.limit { box.queue.removeFirst(box.queue.count - Self.limit) }
        }
    }

    /// Runs what is queued, unless this or another thread is already doing it.
    package func drain() {
        let start = box.withLockedValue { box -> Bool in
            guard !box.draining else { return false }
            box.draining = true
            return true
        }
        guard start else { return }
        while true {
            let batch = box.withLockedValue { box -> [@Sendable () -> Void] in
                let batch = box.queue
                box.queue = []
                if batch.isEmpty { box.draining = false }
                return batch
            }
            if batch.isEmpty { return }
            for delivery in batch { delivery() }
        }
    }
}

/// Callbacks that get each published value in order, through an ``Outbox``. The owner publishes
/// and adds observers under its own lock, so that what an observer gets first (a replay of the
/// current state) and what it gets next (the changes) never overlap or leave a gap.
package final class Observers<Value: Sendable>: Sendable {
    private let box = NIOLockedValueBox<(observers: [UInt64: @Sendable (Value) -> Void], next: UInt64)>(([:], 0))
    package let outbox: Outbox

    package init(outbox: Outbox = Outbox()) {
        self.outbox = outbox
    }

    /// Adds an observer that gets `replay` first, then every value published from now on. The
    /// caller drains the outbox once its lock is released.
    package func add(replay: [Value], _ observer: @escaping @Sendable (Value) -> Void) -> UInt64 {
        let id = box.withLockedValue { box in
            box.next += 1
            box.observers[box.next] = observer
            return box.next
        }
        for value in replay { outbox.enqueue { observer(value) } }
        return id
    }

    package func remove(_ id: UInt64) {
        _ = box.withLockedValue { $0.observers.removeValue(forKey: id) }
    }

    /// Queues `value` for every observer; the caller drains the outbox once its lock is released.
    package func publish(_ value: Value) {
        for observer in box.withLockedValue({ $0.observers.sorted { $0.key < $1.key }.map(\.value) }) {
            outbox.enqueue { observer(value) }
        }
    }
}

/// One `State` value changed in one critical section; observers get it as an AsyncSequence (or a
/// Combine publisher) that starts with the current value (STYLE habit 6).
final class StateCell<State: Equatable & Sendable>: Sendable {
    private let box: NIOLockedValueBox<State>
    let observers: Observers<State>

    init(_ initial: State, outbox: Outbox = Outbox()) {
        box = NIOLockedValueBox(initial)
        observers = Observers(outbox: outbox)
    }

    var value: State { box.withLockedValue { $0 } }

    /// Changes the state; observers hear about it only if it really changed.
    @discardableResult
    func update<T>(_ body: (inout State) -> T) -> T {
        let result = box.withLockedValue { state in
            let before = state
            let result = body(&state)
            // Queued under the lock: every observer sees the changes in the order they were made.
            if state != before { observers.publish(state) }
            return result
        }
        observers.outbox.drain()
        return result
    }

    /// Runs `body` with the state, holding the lock: nothing changes meanwhile, and what `body`
    /// queues comes before the next change. Drains the outbox afterwards.
    func withValue<T>(_ body: (State) -> T) -> T {
        let result = box.withLockedValue { body($0) }
        observers.outbox.drain()
        return result
    }

    /// Calls `observer` with the current value, then with every change; returns what stops it.
    func observe(_ observer: @escaping @Sendable (State) -> Void) -> @Sendable () -> Void {
        let observers = self.observers
        let id = withValue { state in observers.add(replay: [state], observer) }
        return { observers.remove(id) }
    }

    /// The current value, then every change.
    func subscribe() -> AsyncStream<State> {
        AsyncStream.observing(observe)
    }
}

/// Most values a stream from ``AsyncStream/observing(_:)`` keeps for a subscriber that does not
/// keep up; beyond that the oldest are dropped. Far more than an app falls behind (a state change
/// or an event is a few per call and second), and a bound on what a stalled subscriber holds.
public let observingBufferLimit = 10_000

extension AsyncStream where Element: Sendable {
    /// A stream of what `observe` delivers, which stops when the subscriber stops iterating. A
    /// subscriber more than ``observingBufferLimit`` values behind loses the oldest.
    package static func observing(
        _ observe: (@escaping @Sendable (Element) -> Void) -> @Sendable () -> Void
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(observingBufferLimit))
        let stop = observe { continuation.yield($0) }
        continuation.onTermination = { _ in stop() }
        return stream
    }
}
