import Foundation
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

// Media-type changes, the device in the call, media signals and status reports.
extension CallStateMachineTests {
    /// One-to-one media-type changes: alice (a1) and bob (b1) are in a connected audio call.
    static let mediaChange: [Row] = [
        Row(
            name: "a change request reaches the peer with a transaction and a timer",
            setup: [start(), accept("bob", "b1")],
            step: changeMedia("alice", "a1", to: .video),
            expected: [
                "reply transaction t1",
                "bob@b1 ← mediaTypeChangeRequested(video by alice)",
                "timer mediaChange(c1,t1) +20000",
            ]),
        Row(
            name: "agreeing changes the media type for both",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: replyMedia("bob", "b1", agree: true),
            expected: [
                "reply ok",
                "cancel mediaChange(c1,t1)",
                "alice@a1 ← mediaTypeChangeResult(video agreed)",
                "bob@b1 ← mediaTypeChangeResult(video agreed)",
                "alice@a1 ← callUpdated(alice:accept bob:accept)",
                "bob@b1 ← callUpdated(alice:accept bob:accept)",
            ]),
        Row(
            name: "declining leaves the media type",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: replyMedia("bob", "b1", agree: false),
            expected: [
                "reply ok",
                "cancel mediaChange(c1,t1)",
                "alice@a1 ← mediaTypeChangeResult(video declined)",
                "bob@b1 ← mediaTypeChangeResult(video declined)",
            ]),
        Row(
            name: "the requester may cancel",
            setup: [start(), accept("bob", "b1"), changeMedia("bob", "b1", to: .video)],
            step: cancelMedia("bob", "b1"),
            expected: [
                "reply ok",
                "cancel mediaChange(c1,t1)",
                "alice@a1 ← mediaTypeChangeResult(video canceled)",
                "bob@b1 ← mediaTypeChangeResult(video canceled)",
            ]),
        Row(
            name: "no answer in time counts as declined",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: mediaTimeout(),
            expected: [
                "cancel mediaChange(c1,t1)",
                "alice@a1 ← mediaTypeChangeResult(video timedOut)",
                "bob@b1 ← mediaTypeChangeResult(video timedOut)",
            ]),
        Row(
            name: "a second request while one is open is refused",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: changeMedia("bob", "b1", to: .video, "t2"),
            expected: ["reply error mediaChangeInProgress"]),
        Row(
            name: "the requester cannot answer their own request",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: replyMedia("alice", "a1", agree: true),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "only the requester cancels",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: cancelMedia("bob", "b1"),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "an unknown transaction is refused",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: replyMedia("bob", "b1", agree: true, "t9"),
            expected: ["reply error transactionNotFound"]),
        Row(
            name: "a stranger cannot answer",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: replyMedia("mallory", "m1", agree: true),
            expected: ["reply error notInCall"]),
        Row(
            name: "group calls have no media-type changes",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: changeMedia("alice", "a1", to: .video),
            expected: ["reply error oneToOneOnly"]),
        Row(
            name: "not before the call connects",
            setup: [start()],
            step: changeMedia("alice", "a1", to: .video),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "not to the media type the call already has",
            setup: [start(), accept("bob", "b1")],
            step: changeMedia("alice", "a1", to: .audio),
            expected: ["reply error invalidParams"]),
        Row(
            name: "the call ending drops the open change",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "cancel mediaChange(c1,t1)",
                "alice@a1 ← callEnded(hangup by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:answered/hangup/2s bob:answered/hangup/2s",
            ]),
    ]

    /// A member in the call acts only from the device in the call (alice on a1, bob on b1); the
    /// user's other devices (b2, a2) are refused with notInCall and change nothing. Each request
    /// from the right device is in the tables above and below.
    static let deviceScope: [Row] = [
        Row(
            name: "hang-up from another device of a member",
            setup: [start(), accept("bob", "b1")],
            step: hangup("bob", "b2"),
            expected: ["reply error notInCall"]),
        Row(
            name: "the caller's cancel from another of the caller's devices",
            setup: [start()],
            step: hangup("alice", "a2"),
            expected: ["reply error notInCall"]),
        Row(
            name: "device state from another device",
            setup: [start(), accept("bob", "b1")],
            step: devices("bob", "b2", mic: false, camera: nil),
            expected: ["reply error notInCall"]),
        Row(
            name: "screen sharing from another device",
            setup: [start(), accept("bob", "b1")],
            step: .event(.updateDevice(command("bob", "b2", "c1"), microphoneOn: nil, cameraOn: nil, screenSharing: true)),
            expected: ["reply error notInCall"]),
        Row(
            name: "a status report from another device",
            setup: [start(), accept("bob", "b1")],
            step: report("bob", "b2"),
            expected: ["reply error notInCall"]),
        Row(
            name: "a media-type change request from another device",
            setup: [start(), accept("bob", "b1")],
            step: changeMedia("bob", "b2", to: .video),
            expected: ["reply error notInCall"]),
        Row(
            name: "the answer to a media-type change from another device",
            setup: [start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video)],
            step: replyMedia("bob", "b2", agree: true),
            expected: ["reply error notInCall"]),
        Row(
            name: "the cancel of a media-type change from another device",
            setup: [start(), accept("bob", "b1"), changeMedia("bob", "b1", to: .video)],
            step: cancelMedia("bob", "b2"),
            expected: ["reply error notInCall"]),
        Row(
            name: "an invitation from another device",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: invite("bob", "b2", ["dave"]),
            expected: ["reply error notInCall"]),
        Row(
            name: "a media signal from another device",
            setup: [start(), accept("bob", "b1")],
            step: signal("bob", "b2", to: "alice"),
            expected: ["reply error notInCall"]),
        Row(
            name: "accepting again from another device says the user already accepted",
            setup: [start(), accept("bob", "b1")],
            step: accept("bob", "b2"),
            expected: ["reply error alreadyAccepted"]),
        Row(
            name: "while the call rings, any device of the callee may reject it",
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
            name: "the refused requests left the call as it was: the device in it hangs up",
            setup: [
                start(), accept("bob", "b1"), hangup("bob", "b2"), devices("bob", "b2", mic: false, camera: nil),
                changeMedia("bob", "b2", to: .video),
            ],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callEnded(hangup by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:answered/hangup/4s bob:answered/hangup/4s",
            ]),
    ]

    static func signal(_ user: String, _ device: String, to peer: String, _ kind: MediaSignalKind = .offer, call: String = "c1")
        -> Step
    {
        .event(
            .mediaSignal(
                command(user, device, call),
                SendMediaSignalRequest(
                    callId: CallID(rawValue: call), to: UserID(rawValue: peer), kind: kind,
                    sdp: kind == .offer || kind == .answer ? "v=0" : nil,
                    candidate: kind == .candidate ? IceCandidate(candidate: "candidate:1 1 udp 1 127.0.0.1 9 typ host") : nil)))
    }

    /// Media signals go between members in the call, device to device, and nowhere else.
    static let mediaRelay: [Row] = [
        Row(
            name: "an offer goes to the peer's device in the call",
            setup: [start(), accept("bob", "b2")],
            step: signal("alice", "a1", to: "bob"),
            expected: ["reply ok", "bob@b2 ← mediaSignal(offer from alice)"]),
        Row(
            name: "candidates and answers flow back the same way",
            setup: [start(), accept("bob", "b2"), signal("alice", "a1", to: "bob")],
            step: signal("bob", "b2", to: "alice", .candidate),
            expected: ["reply ok", "alice@a1 ← mediaSignal(candidate from bob)"]),
        Row(
            name: "not to a callee who is still ringing",
            setup: [start()],
            step: signal("alice", "a1", to: "bob"),
            expected: ["reply error peerNotInCall"]),
        Row(
            name: "not from a callee who has not answered",
            setup: [start()],
            step: signal("bob", "b1", to: "alice"),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "a sender who has not answered hears that first, even to someone outside the call",
            setup: [start()],
            step: signal("bob", "b1", to: "mallory"),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "not from another device of a member",
            setup: [start(), accept("bob", "b2")],
            step: signal("bob", "b1", to: "alice"),
            expected: ["reply error notInCall"]),
        Row(
            name: "not from someone outside the call",
            setup: [start(), accept("bob", "b2")],
            step: signal("mallory", "m1", to: "alice"),
            expected: ["reply error notInCall"]),
        Row(
            name: "not to someone outside the call",
            setup: [start(), accept("bob", "b2")],
            step: signal("alice", "a1", to: "mallory", .restart),
            expected: ["reply error peerNotInCall"]),
        Row(
            name: "not to yourself",
            setup: [start(), accept("bob", "b2")],
            step: signal("alice", "a1", to: "alice"),
            expected: ["reply error peerNotInCall"]),
        Row(
            name: "not to a member who left a group call",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1"), hangup("carol", "k1")],
            step: signal("alice", "a1", to: "carol"),
            expected: ["reply error peerNotInCall"]),
        Row(
            name: "between any two members of a group call (mesh)",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1")],
            step: signal("bob", "b1", to: "carol"),
            expected: ["reply ok", "carol@k1 ← mediaSignal(offer from bob)"]),
        Row(
            name: "not in an ended call",
            setup: [start(), accept("bob", "b1"), hangup("bob", "b1")],
            step: signal("alice", "a1", to: "bob"),
            expected: ["reply error callAlreadyEnded"]),
    ]

    /// Status reports in a group call of alice (a1), bob (b1) and carol (k1).
    static let status: [Row] = [
        Row(
            name: "a report tells the other members quality and volume",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1")],
            step: report("bob", "b1"),
            expected: [
                "reply ok",
                "alice@a1 ← memberStatus(bob excellent peak)",
                "carol@k1 ← memberStatus(bob excellent peak)",
                "alice@a1 ← memberStats(bob loss=0.5 rtt=50 bitrate=500 level=80)",
                "carol@k1 ← memberStats(bob loss=0.5 rtt=50 bitrate=500 level=80)",
            ]),
        Row(
            name: "an unchanged report a second later sends only the raw figures",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1"), report("bob", "b1")],
            step: report("bob", "b1", level: 90),
            expected: [
                "reply ok",
                "alice@a1 ← memberStats(bob loss=0.5 rtt=50 bitrate=500 level=90)",
                "carol@k1 ← memberStats(bob loss=0.5 rtt=50 bitrate=500 level=90)",
            ]),
        Row(
            name: "reports faster than one a second: the raw figures wait for their credit",
            setup: [
                start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1"), report("bob", "b1"),
                .wait(-600), report("bob", "b1"), .wait(-600),
            ],
            step: report("bob", "b1", level: 90),
            expected: ["reply ok"]),
        Row(
            name: "a worse network is told",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1"), report("bob", "b1")],
            step: report("bob", "b1", loss: 10, rtt: 300, level: 30),
            expected: [
                "reply ok",
                "alice@a1 ← memberStatus(bob bad medium)",
                "carol@k1 ← memberStatus(bob bad medium)",
                "alice@a1 ← memberStats(bob loss=10.0 rtt=300 bitrate=500 level=30)",
                "carol@k1 ← memberStats(bob loss=10.0 rtt=300 bitrate=500 level=30)",
            ]),
        Row(
            name: "turning the microphone off mutes the volume level",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1"), report("bob", "b1")],
            step: devices("bob", "b1", mic: false, camera: nil),
            expected: [
                "reply ok",
                "alice@a1 ← deviceChanged(bob mic=off camera=off)",
                "carol@k1 ← deviceChanged(bob mic=off camera=off)",
                "alice@a1 ← memberStatus(bob excellent mute)",
                "carol@k1 ← memberStatus(bob excellent mute)",
            ]),
        Row(
            name: "a dropped member is down for the others and unknown when back",
            setup: [
                start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1"), report("bob", "b1"),
                offline("bob", "b1"),
            ],
            step: online("bob", "b1"),
            expected: [
                "cancel reconnectGrace(c1,bob)",
                "alice@a1 ← memberStatus(bob unknown peak)",
                "carol@k1 ← memberStatus(bob unknown peak)",
                "bob@b1 ← callStarted",
                "bob@b1 ← callsSynced([c1] elsewhere [])",
            ]),
        Row(
            name: "values out of range are refused",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: report("bob", "b1", loss: 120),
            expected: ["reply error invalidParams"]),
        Row(
            name: "a ringing member does not report",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: report("carol", "k1"),
            expected: ["reply error invalidCallState"]),
    ]
}
