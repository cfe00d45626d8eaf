import Foundation
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

// A start's validation, devices and connections, call waiting and shutdown.
extension CallStateMachineTests {
    static let validation: [Row] = [
        Row(name: "no participants", step: start(to: []), expected: ["reply error noParticipants"]),
        Row(name: "invalid userID", step: start(to: ["bob smith"]), expected: ["reply error invalidUserID"]),
        Row(name: "calling oneself", step: start(to: ["alice"]), expected: ["reply error cannotCallSelf"]),
        Row(
            name: "a push title with a control character",
            step: start(params: CallParams(pushConfig: PushConfig(title: "Alice\u{7}"))),
            expected: ["reply error invalidPushConfig"]),
        Row(
            name: "a push title with a right-to-left override",
            step: start(params: CallParams(pushConfig: PushConfig(title: "Alice\u{202E}"))),
            expected: ["reply error invalidPushConfig"]),
        Row(
            name: "a push body with an invisible character",
            step: start(params: CallParams(pushConfig: PushConfig(body: "Missed\u{200B}call"))),
            expected: ["reply error invalidPushConfig"]),
        Row(
            name: "a push config above 2 KB as JSON",
            step: start(params: CallParams(pushConfig: PushConfig(extra: String(repeating: "\"", count: 1024)))),
            expected: ["reply error invalidPushConfig"]),
        Row(
            name: "a push sound that is not a file name",
            step: start(params: CallParams(pushConfig: PushConfig(sound: "../ring.caf"))),
            expected: ["reply error invalidPushConfig"]),
        Row(
            name: "too many participants",
            step: start(to: ["b", "c", "d"], maxParticipants: 3),
            expected: ["reply error tooManyParticipants"]),
        Row(
            name: "timeout out of range",
            step: start(params: CallParams(timeout: 0)),
            expected: ["reply error invalidTimeout"]),
        Row(
            name: "userData too large",
            step: start(params: CallParams(userData: String(repeating: "x", count: 1025))),
            expected: ["reply error userDataTooLarge"]),
        Row(
            name: "roomId with a space",
            step: start(params: CallParams(roomId: "my room")),
            expected: ["reply error invalidRoomID"]),
        Row(
            name: "chatGroupId too long",
            step: start(params: CallParams(chatGroupId: ChatGroupID(rawValue: String(repeating: "g", count: 65)))),
            expected: ["reply error invalidChatGroupID"]),
    ]

    static let devices: [Row] = [
        Row(
            name: "a dropped device gets the reconnect grace period",
            setup: [start(), accept("bob", "b1")],
            step: offline("bob", "b1"),
            expected: [
                "timer reconnectGrace(c1,bob) +15000",
                "alice@a1 ← memberStatus(bob down mute)",
            ]),
        Row(
            name: "a device lost with its node gets the grace its client needs to notice",
            setup: [start(), accept("bob", "b1")],
            step: .event(.deviceLost(Self.user("bob"), Self.device("b1"), grace: 40_000)),
            expected: [
                "timer reconnectGrace(c1,bob) +40000",
                "alice@a1 ← memberStatus(bob down mute)",
            ]),
        Row(
            name: "a dropped ringing device changes nothing (other devices may answer)",
            setup: [start()],
            step: offline("bob", "b1"),
            expected: []),
        Row(
            name: "the device coming back in time resumes the call",
            setup: [start(), accept("bob", "b1"), offline("bob", "b1")],
            step: online("bob", "b1"),
            expected: [
                "cancel reconnectGrace(c1,bob)",
                "alice@a1 ← memberStatus(bob unknown mute)",
                "bob@b1 ← callStarted",
                "bob@b1 ← callsSynced([c1] elsewhere [])",
            ]),
        Row(
            name: "the grace period running out ends the member's part",
            setup: [start(), accept("bob", "b1"), offline("bob", "b1")],
            step: graceTimeout("bob"),
            expected: [
                "bob@b1 ← callEnded(endByServer by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callEnded(endByServer by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:answered/endByServer/2s bob:answered/endByServer/2s",
            ]),
        Row(
            name: "a caller who drops while dialing and does not return cancels the call",
            setup: [start(), offline("alice", "a1")],
            step: graceTimeout("alice"),
            expected: [
                "alice@a1 ← callEnded(endByServer by alice)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "cancel ring(c1,bob)",
                "bob@* ← callEnded(endByServer by alice)",
                "records alice:canceled/endByServer/0s bob:missed/endByServer/0s",
            ]),
        Row(
            name: "a device logging in while the call rings gets the invitation",
            setup: [start()],
            step: online("bob", "b3"),
            expected: [
                "bob@b3 ← callReceived(from alice)",
                "bob@b3 ← callsSynced([c1] elsewhere [])",
            ]),
        Row(
            name: "another device of a member in a connected call learns the call is elsewhere",
            setup: [start(), accept("bob", "b1")],
            step: online("bob", "b2"),
            expected: [
                "bob@b2 ← callElsewhere(on b1 active)",
                "bob@b2 ← callsSynced([] elsewhere [c1])",
            ]),
        Row(
            name: "a device that comes back after its call ended hears how it ended",
            setup: [start(), accept("bob", "b1"), offline("bob", "b1"), graceTimeout("bob")],
            step: online("bob", "b1"),
            expected: [
                "bob@b1 ← callEnded(endByServer by bob)",
                "bob@b1 ← callsSynced([] elsewhere [])",
            ]),
        Row(
            name: "a device that missed a canceled invitation hears it was canceled",
            setup: [start(), hangup("alice", "a1")],
            step: online("bob", "b5"),
            expected: [
                "bob@b5 ← callEnded(canceled by alice)",
                "bob@b5 ← callsSynced([] elsewhere [])",
            ]),
        Row(
            name: "another device hears that the call was answered elsewhere",
            setup: [start(), accept("bob", "b1"), hangup("alice", "a1")],
            step: online("bob", "b5"),
            expected: [
                "bob@b5 ← callEnded(otherDeviceAccepted by bob)",
                "bob@b5 ← callsSynced([] elsewhere [])",
            ]),
        Row(
            name: "another device hears that the call was rejected elsewhere",
            setup: [start(), reject("bob", "b1")],
            step: online("bob", "b5"),
            expected: [
                "bob@b5 ← callEnded(otherDeviceReject by bob)",
                "bob@b5 ← callsSynced([] elsewhere [])",
            ]),
        Row(
            name: "ended calls are forgotten after ten minutes",
            setup: [start(), hangup("alice", "a1"), .wait(10 * 60_000)],
            step: online("bob", "b5"),
            expected: ["bob@b5 ← callsSynced([] elsewhere [])"]),
        Row(
            name: "logout hangs up the device's connected calls",
            setup: [start(), accept("bob", "b1")],
            step: logout("bob", "b1"),
            expected: [
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callEnded(hangup by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:answered/hangup/1s bob:answered/hangup/1s",
            ]),
        Row(
            name: "logout of a ringing device leaves the call ringing",
            setup: [start()],
            step: logout("bob", "b1"),
            expected: []),
        Row(
            name: "microphone and camera changes reach the other member",
            setup: [start(), accept("bob", "b1")],
            step: devices("bob", "b1", mic: false, camera: nil),
            expected: ["reply ok", "alice@a1 ← deviceChanged(bob mic=off camera=off)"]),
        Row(
            name: "a ringing callee cannot report devices yet",
            setup: [start()],
            step: devices("bob", "b1", mic: false, camera: nil),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "a stranger cannot report devices into a call",
            setup: [start()],
            step: devices("mallory", "m1", mic: true, camera: true),
            expected: ["reply error notInCall"]),
    ]

    static let callWaiting: [Row] = [
        Row(
            name: "answering a waiting call hangs up the current one",
            setup: [
                start("carol", "c9", to: ["bob"], call: "c0"), accept("bob", "b1", "c0"),
                start(policy: .callWaiting),
            ],
            step: accept("bob", "b2"),
            expected: [
                "reply call alice:accept bob:accept",
                "cancel ring(c1,bob)",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "carol@c9 ← callEnded(hangup by bob)",
                "carol@*-c9 ← callElsewhere(on c9 ended)",
                "records carol:answered/hangup/2s bob:answered/hangup/2s",
                "bob@*-b2 ← callEnded(otherDeviceAccepted by bob)",
                "bob@*-b2 ← callElsewhere(on b2 active)",
                "alice@a1 ← callStarted",
                "bob@b2 ← callStarted",
            ]),
    ]
}
