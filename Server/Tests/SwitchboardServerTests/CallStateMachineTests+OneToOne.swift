import Foundation
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

// One-to-one calls: ringing, answering, ending, timeouts.
extension CallStateMachineTests {
    static let oneToOne: [Row] = [
        Row(
            name: "start rings the callee on all devices and sets the ring timer",
            step: start(),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +30000",
            ]),
        Row(
            name: "start with an offline callee ends at once with offline",
            step: start(online: []),
            expected: [
                "reply started busy=[] alice:waiting bob:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "alice@a1 ← callEnded(offline by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:offline/offline/0s bob:missed/offline/0s",
            ]),
        Row(
            name: "start with a busy callee (reject policy) ends with lineBusy",
            setup: [start("carol", "c9", to: ["bob"], call: "c0"), accept("bob", "b1", "c0")],
            step: start(),
            expected: [
                "reply started busy=[bob] alice:waiting bob:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "alice@a1 ← callEnded(lineBusy by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:busy/lineBusy/0s bob:busy/lineBusy/0s",
            ]),
        Row(
            name: "a callee who is ringing elsewhere is busy too",
            setup: [start("carol", "c9", to: ["bob"], call: "c0")],
            step: start(),
            expected: [
                "reply started busy=[bob] alice:waiting bob:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "alice@a1 ← callEnded(lineBusy by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:busy/lineBusy/0s bob:busy/lineBusy/0s",
            ]),
        Row(
            name: "with call waiting a busy callee still rings",
            setup: [start("carol", "c9", to: ["bob"], call: "c0"), accept("bob", "b1", "c0")],
            step: start(policy: .callWaiting),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +30000",
            ]),
        Row(
            name: "a caller already in a call cannot start another",
            setup: [start()],
            step: start(to: ["carol"], call: "c2"),
            expected: ["reply error alreadyInCall"]),
        Row(
            name: "accept connects the call and stops the other devices ringing",
            setup: [start()],
            step: accept("bob", "b1"),
            expected: [
                "reply call alice:accept bob:accept",
                "cancel ring(c1,bob)",
                "bob@*-b1 ← callEnded(otherDeviceAccepted by bob)",
                "bob@*-b1 ← callElsewhere(on b1 active)",
                "alice@a1 ← callStarted",
                "bob@b1 ← callStarted",
            ]),
        Row(
            name: "a second accept is refused",
            setup: [start(), accept("bob", "b1")],
            step: accept("bob", "b2"),
            expected: ["reply error alreadyAccepted"]),
        Row(
            name: "the caller cannot accept their own call",
            setup: [start()],
            step: accept("alice", "a1"),
            expected: ["reply error alreadyAccepted"]),
        Row(
            name: "accepting a call one is not in is refused",
            setup: [start()],
            step: accept("mallory", "m1"),
            expected: ["reply error notInCall"]),
        Row(
            name: "accepting an unknown call is refused",
            step: accept("bob", "b1", "nope"),
            expected: ["reply error callNotFound"]),
        Row(
            name: "accepting an ended call says it ended",
            setup: [start(), hangup("alice", "a1")],
            step: accept("bob", "b1"),
            expected: ["reply error callAlreadyEnded"]),
        Row(
            name: "a user of another app cannot see the call",
            setup: [start()],
            step: .event(
                .accept(CallCommand(user: UserKey(app: 7, user: "bob"), device: device("b1"), callId: "c1"))),
            expected: ["reply error callNotFound"]),
        Row(
            name: "reject ends the call for both, other devices get otherDeviceReject",
            setup: [start()],
            step: reject("bob", "b1"),
            expected: [
                "reply ok",
                "cancel ring(c1,bob)",
                "bob@b1 ← callEnded(reject by bob)",
                "bob@*-b1 ← callEnded(otherDeviceReject by bob)",
                "alice@a1 ← callEnded(reject by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:rejected/reject/0s bob:rejected/reject/0s",
            ]),
        Row(
            name: "a ringing callee's hang-up is a reject",
            setup: [start()],
            step: hangup("bob", "b2"),
            expected: [
                "reply ok",
                "cancel ring(c1,bob)",
                "bob@b2 ← callEnded(reject by bob)",
                "bob@*-b2 ← callEnded(otherDeviceReject by bob)",
                "alice@a1 ← callEnded(reject by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:rejected/reject/0s bob:rejected/reject/0s",
            ]),
        Row(
            name: "reject after accept is refused",
            setup: [start(), accept("bob", "b1")],
            step: reject("bob", "b1"),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "the caller cannot reject",
            setup: [start()],
            step: reject("alice", "a1"),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "the caller's hang-up before an answer cancels",
            setup: [start()],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(canceled by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(canceled by alice)",
                "records alice:canceled/canceled/0s bob:missed/canceled/0s",
            ]),
        Row(
            name: "hang-up of a connected call ends it for both with the duration",
            setup: [start(), .wait(2000), accept("bob", "b1"), .wait(60_000)],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(hangup by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "bob@b1 ← callEnded(hangup by alice)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "records alice:answered/hangup/61s bob:answered/hangup/61s",
            ]),
        Row(
            name: "the callee's hang-up ends it too",
            setup: [start(), accept("bob", "b1")],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callEnded(hangup by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:answered/hangup/1s bob:answered/hangup/1s",
            ]),
        Row(
            name: "hanging up someone else's call is refused",
            setup: [start()],
            step: hangup("mallory", "m1"),
            expected: ["reply error notInCall"]),
        Row(
            name: "hanging up an ended call says it ended",
            setup: [start(), reject("bob", "b1")],
            step: hangup("alice", "a1"),
            expected: ["reply error callAlreadyEnded"]),
        Row(
            name: "nobody answering within the timeout is noResponse",
            setup: [start()],
            step: ringTimeout("bob"),
            expected: [
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(noResponse by bob)",
                "alice@a1 ← callEnded(noResponse by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:noAnswer/noResponse/0s bob:missed/noResponse/0s",
            ]),
        Row(
            name: "a ring timer that fires after the answer does nothing",
            setup: [start(), accept("bob", "b1")],
            step: ringTimeout("bob"),
            expected: []),
        Row(
            name: "the server ends a call",
            setup: [start(), accept("bob", "b1")],
            step: .event(.endByServer("c1")),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(endByServer by server)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "bob@b1 ← callEnded(endByServer by server)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "records alice:answered/endByServer/1s bob:answered/endByServer/1s",
            ]),
        Row(
            name: "the server ends a ringing call",
            setup: [start()],
            step: .event(.endByServer("c1")),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(endByServer by server)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(endByServer by server)",
                "records alice:canceled/endByServer/0s bob:missed/endByServer/0s",
            ]),
        Row(
            name: "the server cannot end an unknown call",
            step: .event(.endByServer("nope")),
            expected: ["reply error callNotFound"]),
        Row(
            name: "an ephemeral call writes no records",
            setup: [start(params: CallParams(isEphemeralCall: true))],
            step: reject("bob", "b1"),
            expected: [
                "reply ok",
                "cancel ring(c1,bob)",
                "bob@b1 ← callEnded(reject by bob)",
                "bob@*-b1 ← callEnded(otherDeviceReject by bob)",
                "alice@a1 ← callEnded(reject by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records none",
            ]),
        Row(
            name: "a custom timeout sets the ring timer",
            step: start(params: CallParams(roomId: "my-room", timeout: 5)),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +5000",
            ]),
    ]
}
