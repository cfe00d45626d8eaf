import SwitchboardProtocol
import Testing

@testable import Switchboard

/// The store's rules for a call the server records (docs/PROTOCOL.md, "Recording"): the active
/// call's `recording` follows the snapshots and the two events, and the app hears each start and
/// stop once, whichever of the snapshot and the event comes first.
extension CallStoreReducerTests {
    /// c1 connected, through the SFU, recorded since `at` by `user` (nil: the app's policy).
    static func recorded(_ id: CallID, by user: UserID? = "alice", at: Int64 = 5_000, bob: CallParticipantStatus = .accept)
        -> CallInfo
    {
        var info = call(id, bob: bob, started: bob == .accept)
        info.media = .sfu
        info.recording = CallRecordingState(startedBy: user, startedAt: at)
        return info
    }

    static func recordingStarted(_ id: CallID, by user: UserID? = "alice", at: Int64 = 5_000) -> ServerEvent {
        .recordingStarted(RecordingStartedEvent(callId: id, recording: CallRecordingState(startedBy: user, startedAt: at)))
    }

    static func recordingStopped(_ id: CallID, by user: UserID = "alice") -> ServerEvent {
        .recordingStopped(RecordingStoppedEvent(callId: id, stoppedBy: user, stoppedAt: 9_000))
    }

    static func updated(_ info: CallInfo) -> ServerEvent { .callUpdated(CallUpdatedEvent(call: info)) }

    static let inCall = "active=c1/accept waiting=[] elsewhere=[] change=- peers=alice:unknown"
    static let idle = "active=- waiting=[] elsewhere=[] change=- peers="

    static let recordingRows: [Row] = [
        Row(
            name: "a member starts recording: bob hears who and when", setup: [received("c1"), started("c1")],
            event: recordingStarted("c1"), events: ["recording c1 by alice at 5000"], state: inCall + " recording=alice@5000"),
        Row(
            name: "the app records every call: nobody started it", setup: [received("c1"), started("c1")],
            event: recordingStarted("c1", by: nil, at: 2_000), events: ["recording c1 by app at 2000"],
            state: inCall + " recording=app@2000"),
        Row(
            name: "a snapshot that tells first (the media moved to the SFU) announces it",
            setup: [received("c1"), started("c1")], event: updated(recorded("c1")),
            events: ["recording c1 by alice at 5000"], state: inCall + " recording=alice@5000"),
        Row(
            name: "and the event after it is not news", setup: [received("c1"), started("c1"), updated(recorded("c1"))],
            event: recordingStarted("c1"), events: [], state: inCall + " recording=alice@5000"),
        Row(
            name: "a snapshot repeating it is not news either",
            setup: [received("c1"), started("c1"), recordingStarted("c1")], event: updated(recorded("c1")),
            events: [], state: inCall + " recording=alice@5000"),
        Row(
            name: "a recording started again is news", setup: [received("c1"), started("c1"), recordingStarted("c1")],
            event: recordingStarted("c1", by: "bob", at: 8_000), events: ["recording c1 by bob at 8000"],
            state: inCall + " recording=bob@8000"),
        Row(
            name: "a member stops it: bob hears who", setup: [received("c1"), started("c1"), recordingStarted("c1")],
            event: recordingStopped("c1"), events: ["recording stopped c1 by alice"], state: inCall),
        Row(
            name: "a snapshot without it says it stopped, not who (bob missed the stop)",
            setup: [received("c1"), started("c1"), recordingStarted("c1")], event: updated(call("c1", bob: .accept, started: true)),
            events: ["recording stopped c1 by -"], state: inCall),
        Row(
            name: "a stop of a recording bob did not know of is not news", setup: [received("c1"), started("c1")],
            event: recordingStopped("c1"), events: [], state: inCall),
        Row(
            name: "the recording of a call bob does not have is not news", event: recordingStarted("c9"), events: [],
            state: idle),
        Row(
            name: "a call that rings recorded says so in its snapshot (the notice before answering), with no event",
            event: .callReceived(CallReceivedEvent(call: recorded("c1", by: nil, at: 1_000, bob: .waiting), inviterId: "alice")),
            events: ["received c1 from alice"],
            state: "active=c1/waiting waiting=[] elsewhere=[] change=- peers=alice:unknown recording=app@1000"),
        Row(
            name: "a member who is still ringing hears it start", setup: [received("c1")], event: recordingStarted("c1"),
            events: ["recording c1 by alice at 5000"],
            state: "active=c1/waiting waiting=[] elsewhere=[] change=- peers=alice:unknown recording=alice@5000"),
        Row(
            name: "answering a recorded call keeps it shown, with no second start",
            setup: [.callReceived(CallReceivedEvent(call: recorded("c1", bob: .waiting), inviterId: "alice"))],
            event: .callStarted(CallStartedEvent(call: recorded("c1"))),
            events: ["status c1 bob accept", "started c1"], state: inCall + " recording=alice@5000"),
        Row(
            name: "a call that ends while recorded just ends (its end stops the recording)",
            setup: [received("c1"), started("c1"), recordingStarted("c1")], event: ended("c1"), events: ["ended c1 hangup"],
            state: idle),
        Row(
            name: "a waiting call's recording is not the active call's",
            setup: [received("c1"), started("c1"), received("c2", from: "dave")], event: recordingStarted("c2", by: "dave"),
            events: ["recording c2 by dave at 5000"], state: "active=c1/accept waiting=[c2] elsewhere=[] change=- peers=alice:unknown"),
    ]

    @Test(arguments: recordingRows) func theStoreFollowsTheRecording(_ row: Row) {
        theStoreFollowsTheServer(row)
    }

    /// The answer to bob's own `call.stopRecording`: the stop is his, though the snapshot cannot
    /// say so, and the server's `recordingStopped` after it is not news.
    @Test func bobsOwnStopIsHis() {
        var state = CallStore.State(userId: Self.me)
        for event in [Self.received("c1"), Self.started("c1"), Self.recordingStarted("c1")] {
            _ = state.reduce(event)
            state.refresh()
        }
        let answer = state.recordingStopped(Self.call("c1", bob: .accept, started: true))
        state.refresh()
        #expect(answer.map(Self.describe) == ["recording stopped c1 by bob"])
        #expect(state.activeCall?.recording == nil)
        let event = state.reduce(Self.recordingStopped("c1", by: "bob"))
        #expect(event.events.isEmpty)
        // An answer that still shows a recording (another member started one at once) stops nothing.
        _ = state.reduce(Self.recordingStarted("c1", at: 7_000))
        let stale = state.recordingStopped(Self.recorded("c1", at: 7_000))
        #expect(stale.isEmpty)
    }
}
