import Foundation
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

// Group calls: ringing several, inviting and joining.
extension CallStateMachineTests {
    /// Group calls: bob (b1), carol (k1), dave (d1), erin (e1); alice (a1) calls.
    static let group: [Row] = [
        Row(
            name: "a group call rings every invitee with its own timer",
            step: start(to: ["bob", "carol"]),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting carol:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +30000",
                "carol@* ← callReceived(from alice)",
                "timer ring(c1,carol) +30000",
            ]),
        Row(
            name: "busy and offline invitees leave at once while the others ring",
            setup: [start("dave", "d1", to: ["bob"], call: "c0")],
            step: start(to: ["bob", "carol", "erin"], online: ["bob", "carol"]),
            expected: [
                "reply started busy=[bob] alice:waiting bob:none carol:waiting erin:none",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "carol@* ← callReceived(from alice)",
                "timer ring(c1,carol) +30000",
            ]),
        Row(
            name: "the first answer connects the call for the members in it",
            setup: [start(to: ["bob", "carol"])],
            step: accept("bob", "b1"),
            expected: [
                "reply call alice:accept bob:accept carol:waiting",
                "cancel ring(c1,bob)",
                "bob@*-b1 ← callEnded(otherDeviceAccepted by bob)",
                "bob@*-b1 ← callElsewhere(on b1 active)",
                "alice@a1 ← callStarted",
                "bob@b1 ← callStarted",
                "carol@* ← callUpdated(alice:accept bob:accept carol:waiting)",
            ]),
        Row(
            name: "a later answer starts the call for that member and updates the others",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: accept("carol", "k1"),
            expected: [
                "reply call alice:accept bob:accept carol:accept",
                "cancel ring(c1,carol)",
                "carol@*-k1 ← callEnded(otherDeviceAccepted by carol)",
                "carol@*-k1 ← callElsewhere(on k1 active)",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "carol@k1 ← callStarted",
            ]),
        Row(
            name: "one invitee's timeout leaves the call going for the others",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: ringTimeout("carol"),
            expected: [
                "cancel ring(c1,carol)",
                "carol@* ← callEnded(noResponse by carol)",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:none)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:none)",
            ]),
        Row(
            name: "one invitee's reject leaves the call ringing for the others",
            setup: [start(to: ["bob", "carol"])],
            step: reject("bob", "b1"),
            expected: [
                "reply ok",
                "cancel ring(c1,bob)",
                "bob@b1 ← callEnded(reject by bob)",
                "bob@*-b1 ← callEnded(otherDeviceReject by bob)",
                "alice@a1 ← callUpdated(alice:waiting bob:none carol:waiting)",
                "carol@* ← callUpdated(alice:waiting bob:none carol:waiting)",
            ]),
        Row(
            name: "a member leaving a call of three leaves two talking",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1")],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callUpdated(alice:accept bob:none carol:accept)",
                "carol@k1 ← callUpdated(alice:accept bob:none carol:accept)",
            ]),
        Row(
            name: "the caller may leave a connected group call and it goes on",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1")],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(hangup by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "bob@b1 ← callUpdated(alice:none bob:accept carol:accept)",
                "carol@k1 ← callUpdated(alice:none bob:accept carol:accept)",
            ]),
        Row(
            name: "one member joined and one ringing keeps the call alive",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callUpdated(alice:accept bob:none carol:waiting)",
                "carol@* ← callUpdated(alice:accept bob:none carol:waiting)",
            ]),
        Row(
            name: "when the last member in the call leaves, those still ringing hear it ended",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), hangup("alice", "a1")],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "cancel ring(c1,carol)",
                "carol@* ← callEnded(hangup by bob)",
                "records alice:answered/hangup/1s bob:answered/hangup/2s carol:missed/hangup/0s",
            ]),
        Row(
            name: "the last but one leaving ends the call, each member with their own record",
            setup: [
                start(to: ["bob", "carol", "dave"]), accept("bob", "b1"), reject("carol", "k1"),
                ringTimeout("dave"), .wait(10_000),
            ],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callEnded(hangup by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:answered/hangup/13s bob:answered/hangup/13s carol:rejected/reject/0s dave:missed/noResponse/0s",
            ]),
        Row(
            name: "the caller's hang-up before any answer cancels for everyone",
            setup: [start(to: ["bob", "carol"])],
            step: hangup("alice", "a1"),
            expected: [
                "reply ok",
                "alice@a1 ← callEnded(canceled by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(canceled by alice)",
                "cancel ring(c1,carol)",
                "carol@* ← callEnded(canceled by alice)",
                "records alice:canceled/canceled/0s bob:missed/canceled/0s carol:missed/canceled/0s",
            ]),
        Row(
            name: "a chat group makes a call with one invitee a group call",
            step: start(params: CallParams(chatGroupId: "team")),
            expected: [
                "reply started busy=[] alice:waiting bob:waiting",
                "alice@*-a1 ← callElsewhere(on a1 active)",
                "bob@* ← callReceived(from alice)",
                "timer ring(c1,bob) +30000",
            ]),
    ]

    static let inviteAndJoin: [Row] = [
        Row(
            name: "an invite mid-call rings the new member and updates the others",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: invite("bob", "b1", ["dave"]),
            expected: [
                "reply invited busy=[] alice:accept bob:accept carol:waiting dave:waiting",
                "dave@* ← callReceived(from bob)",
                "timer ring(c1,dave) +30000",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
                "carol@* ← callUpdated(alice:accept bob:accept carol:waiting dave:waiting)",
            ]),
        Row(
            name: "inviting someone ringing or in the call changes nothing for them",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: invite("alice", "a1", ["carol", "bob"]),
            expected: [
                "reply invited busy=[] alice:accept bob:accept carol:waiting",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:waiting)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:waiting)",
                "carol@* ← callUpdated(alice:accept bob:accept carol:waiting)",
            ]),
        Row(
            name: "a busy invitee is listed and does not ring",
            setup: [start("erin", "e1", to: ["dave"], call: "c0"), start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: invite("alice", "a1", ["dave"]),
            expected: [
                "reply invited busy=[dave] alice:accept bob:accept carol:waiting dave:none",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:waiting dave:none)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:waiting dave:none)",
                "carol@* ← callUpdated(alice:accept bob:accept carol:waiting dave:none)",
            ]),
        Row(
            name: "a ringing member cannot invite",
            setup: [start(to: ["bob", "carol"])],
            step: invite("bob", "b1", ["dave"]),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "a stranger cannot invite",
            setup: [start(to: ["bob", "carol"])],
            step: invite("mallory", "m1", ["dave"]),
            expected: ["reply error notInCall"]),
        Row(
            name: "an invitation into a one-to-one call rings the new member",
            setup: [start(), accept("bob", "b1")],
            step: invite("alice", "a1", ["dave"]),
            expected: [
                "reply invited busy=[] alice:accept bob:accept dave:waiting",
                "dave@* ← callReceived(from alice)",
                "timer ring(c1,dave) +30000",
                "alice@a1 ← callUpdated(alice:accept bob:accept dave:waiting)",
                "bob@b1 ← callUpdated(alice:accept bob:accept dave:waiting)",
            ]),
        Row(
            name: "a one-to-one call someone was invited into is a group call: a member who left may join again",
            setup: [start(), accept("bob", "b1"), invite("alice", "a1", ["dave"]), accept("dave", "d1"), hangup("bob", "b1")],
            step: join("bob", "b1"),
            expected: [
                "reply call alice:accept bob:accept dave:accept",
                "bob@*-b1 ← callElsewhere(on b1 active)",
                "alice@a1 ← callUpdated(alice:accept bob:accept dave:accept)",
                "bob@b1 ← callStarted",
                "dave@d1 ← callUpdated(alice:accept bob:accept dave:accept)",
            ]),
        Row(
            name: "no invitation into a one-to-one call while a media-type change is open",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: invite("bob", "b1", ["dave"]),
            expected: ["reply error mediaChangeInProgress"]),
        Row(
            name: "invitations beyond the app's limit are refused",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: invite("alice", "a1", ["dave", "erin"], maxParticipants: 4),
            expected: ["reply error tooManyParticipants"]),
        Row(
            name: "an invited member who declined may join later",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), reject("carol", "k1")],
            step: join("carol", "k1"),
            expected: [
                "reply call alice:accept bob:accept carol:accept",
                "carol@*-k1 ← callElsewhere(on k1 active)",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "carol@k1 ← callStarted",
            ]),
        Row(
            name: "a ringing member joining is an accept",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: join("carol", "k1"),
            expected: [
                "reply call alice:accept bob:accept carol:accept",
                "cancel ring(c1,carol)",
                "carol@*-k1 ← callEnded(otherDeviceAccepted by carol)",
                "carol@*-k1 ← callElsewhere(on k1 active)",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "carol@k1 ← callStarted",
            ]),
        Row(
            name: "a member of the call's chat group may join uninvited",
            setup: [start(params: CallParams(chatGroupId: "team")), accept("bob", "b1")],
            step: join("erin", "e1", groupMember: true),
            expected: [
                "reply call alice:accept bob:accept erin:accept",
                "erin@*-e1 ← callElsewhere(on e1 active)",
                "alice@a1 ← callUpdated(alice:accept bob:accept erin:accept)",
                "bob@b1 ← callUpdated(alice:accept bob:accept erin:accept)",
                "erin@e1 ← callStarted",
            ]),
        Row(
            name: "someone neither invited nor in the chat group may not join",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: join("mallory", "m1"),
            expected: ["reply error joinNotAllowed"]),
        Row(
            name: "a one-to-one call cannot be joined",
            setup: [start(), accept("bob", "b1")],
            step: join("mallory", "m1", groupMember: true),
            expected: ["reply error groupCallOnly"]),
        Row(
            name: "joining twice is refused",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: join("bob", "b1"),
            expected: ["reply error alreadyAccepted"]),
        Row(
            name: "joining from another call is refused under busy-reject",
            setup: [
                start("dave", "d1", to: ["erin"], call: "c0"), accept("erin", "e1", "c0"),
                start(params: CallParams(chatGroupId: "team")), accept("bob", "b1"),
            ],
            step: join("erin", "e1", groupMember: true),
            expected: ["reply error alreadyInCall"]),
        Row(
            name: "joining an ended call says it is gone",
            setup: [start(to: ["bob", "carol"]), hangup("alice", "a1")],
            step: join("mallory", "m1", groupMember: true),
            expected: ["reply error callNotFound"]),
    ]
}
