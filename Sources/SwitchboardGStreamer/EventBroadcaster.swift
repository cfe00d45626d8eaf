#if GStreamer
import NIOConcurrencyHelpers
import Switchboard

/// Hands each event to every subscriber (bounded: a subscriber that does not read loses the oldest).
final class EventBroadcaster: Sendable {
    private let subscribers = NIOLockedValueBox<(next: Int, continuations: [Int: AsyncStream<MediaEvent>.Continuation])>(
        (0, [:]))

    func subscribe() -> AsyncStream<MediaEvent> {
        let (stream, continuation) = AsyncStream<MediaEvent>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        let id = subscribers.withLockedValue { state in
            state.next += 1
            state.continuations[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [subscribers] _ in
            subscribers.withLockedValue { _ = $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    func publish(_ event: MediaEvent) {
        for continuation in subscribers.withLockedValue({ Array($0.continuations.values) }) { continuation.yield(event) }
    }
}
#endif
