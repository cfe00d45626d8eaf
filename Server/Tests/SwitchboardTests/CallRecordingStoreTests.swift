#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import NIOConcurrencyHelpers
import SwitchboardProtocol
import Testing

@testable import Switchboard

/// The store publishes the active call's recording like the rest of its state, and the two
/// events through its event stream, once each (the rows are in CallStoreReducerTests+Recording).
struct CallRecordingStoreTests {
    typealias Rows = CallStoreReducerTests

    @Test func theRecordingIsPublishedWithoutRepeats() async {
        let client = SwitchboardClient()
        let store = client.callStore
        store.loggedIn(as: Rows.me, device: Rows.phone)
        let recordings = NIOLockedValueBox<[CallRecordingState?]>([])
        let events = NIOLockedValueBox<[String]>([])
        // `CallStore.shared.subscribe(StatePublisherSelector(keyPath: \.activeCall?.recording))` (docs/IOS.md).
        let recording = store.subscribe(StatePublisherSelector(keyPath: \.activeCall?.recording)).sink { value in
            recordings.withLockedValue { $0.append(value) }
        }
        let stream = store.callEventPublisher.sink { event in events.withLockedValue { $0.append(Rows.describe(event)) } }

        store.handle(Rows.started("c1"))
        store.handle(Rows.recordingStarted("c1"))
        // The snapshot that follows says the same: no repeat, no second event.
        store.handle(Rows.updated(Rows.recorded("c1")))
        store.handle(Rows.recordingStopped("c1"))
        // Deliveries run on the thread that made the change, before it returns.
        let started = CallRecordingState(startedBy: "alice", startedAt: 5_000)
        #expect(recordings.withLockedValue { $0 } == [nil, started, nil])
        #expect(
            events.withLockedValue { $0 } == ["started c1", "recording c1 by alice at 5000", "recording stopped c1 by alice"])
        #expect(store.state.activeCall?.recording == nil)
        // The AsyncSequence of states carries it too.
        store.handle(Rows.recordingStarted("c1", by: nil, at: 6_000))
        var states = store.stateUpdates.makeAsyncIterator()
        #expect(await states.next()?.activeCall?.recording == CallRecordingState(startedBy: nil, startedAt: 6_000))
        withExtendedLifetime((recording, stream)) {}
    }
}
