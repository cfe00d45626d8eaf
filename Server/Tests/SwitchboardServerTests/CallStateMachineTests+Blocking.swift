import Foundation
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

// Blocked callers and VoIP pushes.
extension CallStateMachineTests {
    /// A callee who blocks the caller is never reached, and the caller cannot tell: under the
    /// default `blockedCallerSees: reject` the call seems to ring (the callee is screened) and is
    /// declined after a person's delay, with the frames of a genuine rejection; busy and offline
    /// callees look as they would to anyone. Under `offline` the callee looks offline at once.
    static let blocking: [Row] = [
        Row(
            name: "a callee who blocks the caller seems to ring: nothing reaches them, the decline is timed",
            step: start(blockedBy: ["bob"], declineAfter: 5000),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "timer ring(c1,bob) +5000",
            ]),
        Row(
            name: "the screened callee declines as a person would; no event and no record for them",
            setup: [start(blockedBy: ["bob"], declineAfter: 5000)],
            step: ringTimeout("bob"),
            expected: [
                "cancel ring(c1,bob)",
                "alice@a1 ← callEnded(reject by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:rejected/reject/0s",
            ]),
        Row(
            name: "a genuine rejection ends the caller's call with the same event and record",
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
            name: "a decline drawn after the ring timeout: the ringing times out, as for anyone",
            setup: [start(blockedBy: ["bob"], declineAfter: 40_000)],
            step: ringTimeout("bob"),
            expected: [
                "cancel ring(c1,bob)",
                "alice@a1 ← callEnded(noResponse by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:noAnswer/noResponse/0s",
            ]),
        Row(
            name: "the ring timer of a decline after the timeout is the timeout",
            step: start(blockedBy: ["bob"], declineAfter: 40_000),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "timer ring(c1,bob) +30000",
            ]),
        Row(
            name: "the caller cancels while the blocker is screened: nothing reaches the blocker",
            setup: [start(blockedBy: ["bob"], declineAfter: 5000)],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(canceled by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "cancel ring(c1,bob)",
                "records alice:canceled/canceled/0s",
            ]),
        Row(
            name: "the blocker's devices never hear of it: one that logs in gets no invitation",
            setup: [start(blockedBy: ["bob"], declineAfter: 5000)],
            step: online("bob", "b3"),
            expected: ["bob@b3 ← callsSynced([] elsewhere [])"]),
        Row(
            name: "nor of its end",
            setup: [start(blockedBy: ["bob"], declineAfter: 5000), ringTimeout("bob")],
            step: online("bob", "b3"),
            expected: ["bob@b3 ← callsSynced([] elsewhere [])"]),
        Row(
            name: "the blocker cannot answer a call that never reached them",
            setup: [start(blockedBy: ["bob"], declineAfter: 5000)],
            step: accept("bob", "b1"),
            expected: ["reply error notInCall"]),
        Row(
            name: "a screened blocker is not busy for anyone else",
            setup: [start(blockedBy: ["bob"], declineAfter: 5000)],
            step: start("carol", "k1", to: ["bob"], call: "c2"),
            expected: [
                "reply started busy=[] carol:waiting bob:waiting",
                "carol@*-k1 ← callElsewhere(on k1 active)",
                "bob@* ← callReceived(from carol)",
                "timer ring(c2,bob) +30000",
            ]),
        Row(
            name: "a blocker without a device or push token is offline to the blocked caller too",
            step: start(online: [], blockedBy: ["bob"], declineAfter: 5000),
            expected: [
                "reply started busy=[] alice:waiting bob:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "alice@a1 ← callEnded(offline by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:offline/offline/0s",
            ]),
        Row(
            name: "a blocker in a call is busy to the blocked caller too",
            setup: [start("bob", "b1", to: ["dave"], call: "c0")],
            step: start(blockedBy: ["bob"], declineAfter: 5000),
            expected: [
                "reply started busy=[bob] alice:waiting bob:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "alice@a1 ← callEnded(lineBusy by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:busy/lineBusy/0s",
            ]),
        Row(
            name: "or the callee looks offline at once, when the app says so",
            step: start(blockedBy: ["bob"], blockedSees: .offline),
            expected: [
                "reply started busy=[] alice:waiting bob:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "alice@a1 ← callEnded(offline by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:offline/offline/0s",
            ]),
        Row(
            name: "as a genuinely offline callee does",
            step: start(online: []),
            expected: [
                "reply started busy=[] alice:waiting bob:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "alice@a1 ← callEnded(offline by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:offline/offline/0s bob:missed/offline/0s",
            ]),
        Row(
            name: "in a group call the others ring and see the blocker ringing",
            step: start(to: ["bob", "carol"], blockedBy: ["bob"], declineAfter: 4000),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting carol:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "timer ring(c1,bob) +4000",
                "carol@* ← callReceived(from alice)",
                "timer ring(c1,carol) +30000",
            ]),
        Row(
            name: "while screened, the call's changes do not reach the blocker",
            setup: [start(to: ["bob", "carol"], blockedBy: ["bob"], declineAfter: 4000)],
            step: accept("carol", "k1"),
            expected: [
                "reply call alice:accept bob:waiting carol:accept",
                "cancel ring(c1,carol)",
                "carol@*-k1 ← callEnded(otherDeviceAccepted by carol)",
                "carol@*-k1 ← callElsewhere(on k1 active)",
                "alice@a1 ← callStarted",
                "carol@k1 ← callStarted",
            ]),
        Row(
            name: "then declining, as a member who declines",
            setup: [start(to: ["bob", "carol"], blockedBy: ["bob"], declineAfter: 4000)],
            step: ringTimeout("bob"),
            expected: [
                "cancel ring(c1,bob)",
                "alice@a1 ← callUpdated(alice:waiting bob:none carol:waiting)",
                "carol@* ← callUpdated(alice:waiting bob:none carol:waiting)",
            ]),
        Row(
            name: "an invitation into a group call from someone the invitee blocks is screened too",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: invite("bob", "b1", ["dave"], blockedBy: ["dave"], declineAfter: 6000),
            expected: [
                "reply invited busy=[] alice:accept bob:accept carol:waiting dave:waiting",
                "timer ring(c1,dave) +6000",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
                "carol@* ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
            ]),
    ]

    /// Invitees without a connected device who have a push token ring through VoIP pushes; when
    /// their ringing stops, the push stops too (never a VoIP push for a call that does not ring),
    /// and a missed call is announced by an alert push when the caller asked for it.
    static let pushes: [Row] = [
        Row(
            name: "a callee with only a push token rings through a push until the ring timeout",
            step: start(online: [], pushable: ["bob"]),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +30000",
                "push bob incomingCall(from alice) until +30000",
            ]),
        Row(
            name: "a callee online on one device gets no push",
            step: start(online: ["bob"], pushable: []),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +30000",
            ]),
        Row(
            name: "the pushed device answers: the invitation push stops",
            setup: [start(online: [], pushable: ["bob"])],
            step: accept("bob", "b1"),
            expected: [
                "reply call alice:accept bob:accept",
                "cancel ring(c1,bob)",
                "bob@*-b1 ← callEnded(otherDeviceAccepted by bob)",
                "push bob ringStopped",
                "bob@*-b1 ← callElsewhere(on b1 active)",
                "alice@a1 ← callStarted",
                "bob@b1 ← callStarted",
            ]),
        Row(
            name: "the pushed callee rejects: the other devices hear otherDeviceReject",
            setup: [start(online: [], pushable: ["bob"])],
            step: reject("bob", "b1"),
            expected: [
                "reply ok",
                "cancel ring(c1,bob)",
                "bob@b1 ← callEnded(reject by bob)",
                "bob@*-b1 ← callEnded(otherDeviceReject by bob)",
                "push bob ringStopped",
                "alice@a1 ← callEnded(reject by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:rejected/reject/0s bob:rejected/reject/0s",
            ]),
        Row(
            name: "the caller cancels a pushed call: the invitation push stops",
            setup: [start(online: [], pushable: ["bob"])],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(canceled by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(canceled by alice)",
                "push bob ringStopped",
                "records alice:canceled/canceled/0s bob:missed/canceled/0s",
            ]),
        Row(
            name: "a pushed call nobody answers: the invitation push stops",
            setup: [start(online: [], pushable: ["bob"])],
            step: ringTimeout("bob"),
            expected: [
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(noResponse by bob)",
                "push bob ringStopped",
                "alice@a1 ← callEnded(noResponse by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:noAnswer/noResponse/0s bob:missed/noResponse/0s",
            ]),
        Row(
            name: "a pushed callee who does not answer gets the missed-call alert the caller asked for, in place of the end",
            setup: [start(online: [], params: CallParams(pushConfig: PushConfig(missedCallAlert: true)), pushable: ["bob"])],
            step: ringTimeout("bob"),
            expected: [
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(noResponse by bob)",
                "push bob missedCall(noResponse) until +86400000",
                "alice@a1 ← callEnded(noResponse by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:noAnswer/noResponse/0s bob:missed/noResponse/0s",
            ]),
        Row(
            name: "a canceled call is a missed call for the pushed callee",
            setup: [start(online: [], params: CallParams(pushConfig: PushConfig(missedCallAlert: true)), pushable: ["bob"])],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(canceled by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(canceled by alice)",
                "push bob missedCall(canceled) until +86400000",
                "records alice:canceled/canceled/0s bob:missed/canceled/0s",
            ]),
        Row(
            name: "a call answered on another device is not missed: no alert",
            setup: [start(online: [], params: CallParams(pushConfig: PushConfig(missedCallAlert: true)), pushable: ["bob"])],
            step: accept("bob", "b1"),
            expected: [
                "reply call alice:accept bob:accept",
                "cancel ring(c1,bob)",
                "bob@*-b1 ← callEnded(otherDeviceAccepted by bob)",
                "push bob ringStopped",
                "bob@*-b1 ← callElsewhere(on b1 active)",
                "alice@a1 ← callStarted",
                "bob@b1 ← callStarted",
            ]),
        Row(
            name: "a callee whose device was connected misses no alert: it rang there",
            setup: [start(online: ["bob"], params: CallParams(pushConfig: PushConfig(missedCallAlert: true)))],
            step: ringTimeout("bob"),
            expected: [
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(noResponse by bob)",
                "alice@a1 ← callEnded(noResponse by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:noAnswer/noResponse/0s bob:missed/noResponse/0s",
            ]),
        Row(
            name: "a group call pushes the invitees without a device and rings the others",
            step: start(to: ["bob", "carol", "dave"], online: ["carol"], pushable: ["bob", "dave"]),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting carol:waiting dave:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +30000",
                "push bob incomingCall(from alice) until +30000",
                "carol@* ← callReceived(from alice)",
                "timer ring(c1,carol) +30000",
                "dave@* ← callReceived(from alice)",
                "timer ring(c1,dave) +30000",
                "push dave incomingCall(from alice) until +30000",
            ]),
        Row(
            name: "a group call that ends stops every pushed invitee's ringing",
            setup: [start(to: ["bob", "carol", "dave"], online: ["carol"], pushable: ["bob", "dave"]), accept("carol", "k1")],
            step: .event(.endByServer("c1")),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(endByServer by server)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(endByServer by server)",
                "push bob ringStopped",
                "carol@k1 ← callEnded(endByServer by server)",
                "carol@*-k1 ← callElsewhere(on k1 ended)",
                "cancel ring(c1,dave)",
                "dave@* ← callEnded(endByServer by server)",
                "push dave ringStopped",
                "records alice:answered/endByServer/1s bob:missed/endByServer/0s carol:answered/endByServer/1s dave:missed/endByServer/0s",
            ]),
        Row(
            name: "an invitee invited mid-call without a device is pushed, from the inviter",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: invite("bob", "b1", ["dave"], online: [], pushable: ["dave"]),
            expected: [
                "reply invited busy=[] alice:accept bob:accept carol:waiting dave:waiting",
                "dave@* ← callReceived(from bob)",
                "timer ring(c1,dave) +30000",
                "push dave incomingCall(from alice invited by bob) until +30000",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
                "carol@* ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
            ]),
    ]
}
