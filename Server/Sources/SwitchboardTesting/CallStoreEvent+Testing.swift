import Switchboard
import SwitchboardProtocol

/// The payloads tests read from SDK events, nil for other events, so that a test writes
/// `try #require(event.record)` and fails when the event is not the one it expected.
extension CallStoreEvent {
    /// The record of an `onCallRecord` event.
    public var record: CallRecord? {
        if case .onCallRecord(let record) = self { record } else { nil }
    }

    /// The server's start time of an `onCallStarted` event.
    public var startTime: Int64? {
        if case .onCallStarted(_, _, let startTime) = self { startTime } else { nil }
    }

    /// The call of an `onCallReceived` event.
    public var receivedCallId: CallID? {
        if case .onCallReceived(let callId, _, _, _, _) = self { callId } else { nil }
    }
}
