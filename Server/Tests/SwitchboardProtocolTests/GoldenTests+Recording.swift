import Foundation
import SwitchboardProtocol
import Testing

/// Recording a call on the server (docs/PROTOCOL.md, "Recording").
extension GoldenTests {
    /// The connected call while bob records it: through the SFU, with who started it and when.
    static let recorded: CallInfo = {
        var call = connected
        call.media = .sfu
        call.recording = CallRecordingState(startedBy: "bob", startedAt: created + 10_000)
        return call
    }()

    @Test func recordingACall() throws {
        try check("request.call.startRecording", RequestEnvelope(id: "50", data: StartRecordingRequest(callId: Self.callId)))
        try check("request.call.stopRecording", RequestEnvelope(id: "51", data: StopRecordingRequest(callId: Self.callId)))
        try check(
            "response.call.startRecording", ResponseEnvelope(id: "50", outcome: .success(CallSnapshotResponse(call: Self.recorded))))
        try check(
            "response.error.recordingNotAllowed",
            ResponseEnvelope<Empty>(id: "51", outcome: .failure(SwitchboardError(.recordingNotAllowed))))
        try check(
            "response.error.recordingUnavailable",
            ResponseEnvelope<Empty>(id: "50", outcome: .failure(SwitchboardError(.recordingUnavailable))))
        try check(
            "request.call.start.record",
            RequestEnvelope(
                id: "52", data: StartCallRequest(participantIds: ["bob"], mediaType: .audio, params: CallParams(record: true))))
        try check(
            "event.recordingStarted",
            ServerEvent.recordingStarted(
                RecordingStartedEvent(
                    callId: Self.callId, recording: CallRecordingState(startedBy: "bob", startedAt: Self.created + 10_000))))
        // The app records every call: nobody started it.
        try check(
            "event.recordingStarted.policy",
            ServerEvent.recordingStarted(
                RecordingStartedEvent(callId: Self.callId, recording: CallRecordingState(startedBy: nil, startedAt: Self.created + 3000))))
        try check(
            "event.recordingStopped",
            ServerEvent.recordingStopped(RecordingStoppedEvent(callId: Self.callId, stoppedBy: "alice", stoppedAt: Self.created + 70_000)))
        try check("event.callUpdated.recording", ServerEvent.callUpdated(CallUpdatedEvent(call: Self.recorded)))
        // A call recorded from its start rings with its recording: the callee's notice before answering.
        var ringing = Self.ringing
        ringing.media = .sfu
        ringing.recording = CallRecordingState(startedBy: nil, startedAt: Self.created)
        try check("event.callReceived.recorded", ServerEvent.callReceived(CallReceivedEvent(call: ringing, inviterId: "alice")))
    }

    /// A snapshot without `recording` (every one before this feature) decodes as not recorded, and
    /// a recording without `startedBy` as the app's policy.
    @Test func recordingIsOptionalOnTheWire() throws {
        let data = try Data(contentsOf: Self.goldenDirectory.appendingPathComponent("event.callStarted.json"))
        guard case .callStarted(let started) = try SwitchboardJSON.decode(ServerEvent.self, from: data) else {
            Issue.record("not a callStarted")
            return
        }
        #expect(started.call.recording == nil)
        let policy = try SwitchboardJSON.decode(CallRecordingState.self, from: Data(#"{"startedAt":5}"#.utf8))
        #expect(policy == CallRecordingState(startedBy: nil, startedAt: 5))
    }
}
