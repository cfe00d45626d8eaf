import Foundation
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

// Server-side recording: the app's policy, who may start and stop, everyone told, the media
// through the SFU, and the take handed over when it ends.
extension CallStateMachineTests {
    static let onRequest = RecordingSettings(policy: .onRequest)

    static func setRecording(
        _ user: String, _ device: String, _ start: Bool, settings: RecordingSettings = onRequest, call: String = "c1"
    ) -> Step {
        .event(
            .setRecording(
                RecordingCommand(
                    command: command(user, device, call), settings: AppSettings(recording: settings), start: start)))
    }

    static let recording: [Row] = [
        Row(
            name: "a call placed with record is recorded through the SFU from its connection: sessions record the take",
            recording: true, setup: [start(params: CallParams(record: true), recording: onRequest)],
            step: accept("bob", "b1"),
            expected: [
                "reply call alice:accept bob:accept",
                "cancel ring(c1,bob)",
                "bob@*-b1 ← callEnded(otherDeviceAccepted by bob)",
                "bob@*-b1 ← callElsewhere(on b1 active)",
                "alice@a1 ← callStarted",
                "bob@b1 ← callStarted",
                "alice@a1 ← sfuSession(#1)",
                "sfu join alice@a1 #1 recorded t1",
                "bob@b1 ← sfuSession(#2)",
                "sfu join bob@b1 #2 recorded t1",
            ]),
        Row(
            name: "the end of a recorded call hands its take over (from the connection, both members) before the records",
            recording: true,
            setup: [start(params: CallParams(record: true), recording: onRequest), accept("bob", "b1"), .wait(8_000)],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(hangup by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "bob@b1 ← callEnded(hangup by alice)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "save recording t1 2000..11000 [alice,bob] by alice",
                "sfu end",
                "records alice:answered/hangup/9s bob:answered/hangup/9s",
            ]),
        Row(
            name: "record in an app whose policy is off is refused and no call is placed",
            recording: true, setup: [],
            step: start(params: CallParams(record: true)),
            expected: ["reply error recordingNotAllowed"]),
        Row(
            name: "record on a server that cannot record is refused",
            setup: [],
            step: start(params: CallParams(record: true), recording: onRequest),
            expected: ["reply error recordingUnavailable"]),
        Row(
            name: "an app that records every call records one placed without asking, by nobody",
            recording: true, setup: [start(recording: RecordingSettings(policy: .always)), accept("bob", "b1")],
            step: setRecording("bob", "b1", false, settings: RecordingSettings(policy: .always)),
            expected: ["reply error recordingNotAllowed"]),
        Row(
            name: "a member starts recording a peer-to-peer call: everyone is told, the media moves to the SFU",
            recording: true, setup: [start(), accept("bob", "b1")],
            step: setRecording("alice", "a1", true),
            expected: [
                "reply call alice:accept bob:accept",
                "alice@a1 ← recordingStarted(by alice)",
                "bob@b1 ← recordingStarted(by alice)",
                "alice@a1 ← callUpdated(alice:accept bob:accept)",
                "bob@b1 ← callUpdated(alice:accept bob:accept)",
                "alice@a1 ← sfuSession(#1)",
                "sfu join alice@a1 #1 recorded t1",
                "bob@b1 ← sfuSession(#2)",
                "sfu join bob@b1 #2 recorded t1",
            ]),
        Row(
            name: "only the caller controls the recording by default",
            recording: true, setup: [start(), accept("bob", "b1")],
            step: setRecording("bob", "b1", true),
            expected: ["reply error recordingNotAllowed"]),
        Row(
            name: "any member may when the app says so",
            recording: true, setup: [start(), accept("bob", "b1")],
            step: setRecording("bob", "b1", true, settings: RecordingSettings(policy: .onRequest, control: .members)),
            expected: [
                "reply call alice:accept bob:accept",
                "alice@a1 ← recordingStarted(by bob)",
                "bob@b1 ← recordingStarted(by bob)",
                "alice@a1 ← callUpdated(alice:accept bob:accept)",
                "bob@b1 ← callUpdated(alice:accept bob:accept)",
                "alice@a1 ← sfuSession(#1)",
                "sfu join alice@a1 #1 recorded t1",
                "bob@b1 ← sfuSession(#2)",
                "sfu join bob@b1 #2 recorded t1",
            ]),
        Row(
            name: "stopping hands the take over and tells everyone; the media stays on the SFU",
            recording: true, setup: [start(), accept("bob", "b1"), setRecording("alice", "a1", true), .wait(4_000)],
            step: setRecording("alice", "a1", false),
            expected: [
                "reply call alice:accept bob:accept",
                "save recording t1 3000..8000 [alice,bob] by alice",
                "alice@a1 ← recordingStopped(by alice)",
                "bob@b1 ← recordingStopped(by alice)",
                "sfu record off",
            ]),
        Row(
            name: "a second start records a new take into new files",
            recording: true,
            setup: [start(), accept("bob", "b1"), setRecording("alice", "a1", true), setRecording("alice", "a1", false)],
            step: setRecording("alice", "a1", true),
            expected: [
                "reply call alice:accept bob:accept",
                "alice@a1 ← recordingStarted(by alice)",
                "bob@b1 ← recordingStarted(by alice)",
                "sfu record t2",
            ]),
        Row(
            name: "starting twice is answered with the call, nothing else",
            recording: true, setup: [start(), accept("bob", "b1"), setRecording("alice", "a1", true)],
            step: setRecording("alice", "a1", true),
            expected: ["reply call alice:accept bob:accept"]),
        Row(
            name: "a member who is not in the call cannot start it",
            recording: true, setup: [start(), accept("bob", "b1")],
            step: setRecording("carol", "k1", true),
            expected: ["reply error notInCall"]),
        Row(
            name: "a device other than the one in the call cannot start it",
            recording: true, setup: [start(), accept("bob", "b1")],
            step: setRecording("alice", "a2", true),
            expected: ["reply error notInCall"]),
        Row(
            name: "an invitee still ringing hears the recording start (the invitation's snapshot will say so too)",
            recording: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: setRecording("alice", "a1", true),
            expected: [
                "reply call alice:accept bob:accept carol:waiting",
                "alice@a1 ← recordingStarted(by alice)",
                "bob@b1 ← recordingStarted(by alice)",
                "carol@* ← recordingStarted(by alice)",
                "sfu record t1",
            ]),
        Row(
            name: "a member who answers while the call is recorded is recorded, and in the take",
            recording: true,
            setup: [
                start(to: ["bob", "carol"]), accept("bob", "b1"), setRecording("alice", "a1", true), accept("carol", "k1"),
                .wait(2_000),
            ],
            step: setRecording("alice", "a1", false),
            expected: [
                "reply call alice:accept bob:accept carol:accept",
                "save recording t1 3000..7000 [alice,bob,carol] by alice",
                "alice@a1 ← recordingStopped(by alice)",
                "bob@b1 ← recordingStopped(by alice)",
                "carol@k1 ← recordingStopped(by alice)",
                "sfu record off",
            ]),
        Row(
            name: "a recorded call that never connected leaves no take",
            recording: true, setup: [start(params: CallParams(record: true), recording: onRequest)],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(canceled by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(canceled by alice)",
                "records alice:canceled/canceled/0s bob:missed/canceled/0s",
            ]),
    ]
}
