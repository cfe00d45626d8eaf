#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import NIOConcurrencyHelpers

// Combine publishers beside the AsyncSequences, in the shapes of TRTC's samples:
// `CallStore.shared.callEventPublisher`, `state.subscribe()` and
// `state.subscribe(StatePublisherSelector(keyPath: \.activeCall))`. Here `state` is the value itself
// (`CallStore.shared.state.activeCall`), so the publishers are the stores' own `subscribe` methods.
// Apple platforms use Combine; elsewhere OpenCombine, the same API, so this code is tested on Linux.

/// Picks one part of a store's state to observe, without repeats (TRTC's `StatePublisherSelector`).
public struct StatePublisherSelector<State: Sendable, Value: Equatable & Sendable>: Sendable {
    let select: @Sendable (State) -> Value

    public init(keyPath: KeyPath<State, Value>) {
        // Key paths are immutable values; they are just not marked Sendable.
        nonisolated(unsafe) let keyPath = keyPath
        select = { $0[keyPath: keyPath] }
    }
}

extension CallStore {
    /// Call events as a publisher: an `onCallReceived` for each call already ringing for you, then
    /// every event as it happens (TRTC's `callEventPublisher`).
    public var callEventPublisher: AnyPublisher<CallStoreEvent, Never> {
        ObserverPublisher(observe: observeEvents).eraseToAnyPublisher()
    }

    /// The state now, then every change.
    public func subscribe() -> AnyPublisher<State, Never> {
        ObserverPublisher(observe: cell.observe).eraseToAnyPublisher()
    }

    /// One part of the state now, then each time it changes.
    public func subscribe<Value>(_ selector: StatePublisherSelector<State, Value>) -> AnyPublisher<Value, Never> {
        subscribe().map(selector.select).removeDuplicates().eraseToAnyPublisher()
    }
}

extension LoginStore {
    /// The state now, then every change.
    public func subscribe() -> AnyPublisher<State, Never> {
        ObserverPublisher(observe: cell.observe).eraseToAnyPublisher()
    }

    /// One part of the state now, then each time it changes.
    public func subscribe<Value>(_ selector: StatePublisherSelector<State, Value>) -> AnyPublisher<Value, Never> {
        subscribe().map(selector.select).removeDuplicates().eraseToAnyPublisher()
    }
}

extension DeviceStore {
    /// The state now, then every change.
    public func subscribe() -> AnyPublisher<State, Never> {
        ObserverPublisher(observe: cell.observe).eraseToAnyPublisher()
    }

    /// One part of the state now, then each time it changes.
    public func subscribe<Value>(_ selector: StatePublisherSelector<State, Value>) -> AnyPublisher<Value, Never> {
        subscribe().map(selector.select).removeDuplicates().eraseToAnyPublisher()
    }
}

/// A publisher over an SDK observation: each subscriber gets its own observer, and values as they
/// are delivered (like a `PassthroughSubject`: a subscriber that asked for fewer values than come
/// misses the ones beyond its demand; `sink` and `assign` ask for all).
struct ObserverPublisher<Output: Sendable>: Publisher {
    typealias Failure = Never

    /// Starts an observation that first delivers what the subscriber must see at once; returns
    /// what stops it.
    let observe: (@escaping @Sendable (Output) -> Void) -> @Sendable () -> Void

    func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Never {
        let subject = SubjectBox(PassthroughSubject<Output, Never>())
        let stop = StopBox()
        // The subscriber is attached before the observation starts, so it gets the first values.
        subject.subject.handleEvents(receiveCancel: { stop.stop() }).receive(subscriber: subscriber)
        stop.set(observe { subject.subject.send($0) })
    }
}

/// Combine's subjects are thread-safe; they are just not marked Sendable.
private final class SubjectBox<Output>: @unchecked Sendable {
    let subject: PassthroughSubject<Output, Never>
    init(_ subject: PassthroughSubject<Output, Never>) { self.subject = subject }
}

/// Ends an observation once, whether the subscriber cancels before or after it started.
private final class StopBox: Sendable {
    /// A struct, not a tuple: a tuple holding a closure is rewrapped on every access of the box
    /// (``LockedCallback``).
    private struct State {
        var stop: (@Sendable () -> Void)?
        var stopped = false
    }

    private let box = NIOLockedValueBox(State())

    func set(_ stop: @escaping @Sendable () -> Void) {
        let stopNow = box.withLockedValue { box -> Bool in
            if box.stopped { return true }
            box.stop = stop
            return false
        }
        if stopNow { stop() }
    }

    func stop() {
        let stop = box.withLockedValue { box -> (@Sendable () -> Void)? in
            box.stopped = true
            defer { box.stop = nil }
            return box.stop
        }
        stop?()
    }
}
