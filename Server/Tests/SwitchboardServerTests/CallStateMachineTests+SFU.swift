import Foundation
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

// Group calls through the SFU: sessions, signals, layers, restarts.
extension CallStateMachineTests {
    static func sfuSignal(
        _ user: String, _ device: String, session: Int, _ connection: SFUConnection = .publish,
        _ kind: MediaSignalKind = .offer
    ) -> Step {
        .event(
            .sfuSignal(
                command(user, device, "c1"),
                SendSFUSignalRequest(
                    callId: "c1", session: session, connection: connection, kind: kind,
                    sdp: kind == .offer || kind == .answer ? "v=0" : nil,
                    candidate: kind == .candidate ? IceCandidate(candidate: "candidate:1 1 udp 1 127.0.0.1 9 typ host") : nil)))
    }

    static func videoLayer(_ user: String, _ device: String, of target: String, _ layer: VideoLayer) -> Step {
        .event(.videoLayer(command(user, device, "c1"), SetVideoLayerRequest(callId: "c1", userId: UserID(rawValue: target), layer: layer)))
    }

    static func sfuLost(_ user: String? = nil) -> Step {
        .event(.sfuRestart("c1", user.map(UserID.init(rawValue:))))
    }

    /// Group calls through the SFU: sessions, signals, layers, restarts.
    static let sfu: [Row] = [
        Row(
            name: "a group call through the SFU starts a session for each member in it when it connects",
            sfu: true, setup: [start(to: ["bob", "carol"])],
            step: accept("bob", "b1"),
            expected: [
                "reply call alice:accept bob:accept carol:waiting",
                "cancel ring(c1,bob)",
                "bob@*-b1 ← callEnded(otherDeviceAccepted by bob)",
                "bob@*-b1 ← callElsewhere(on b1 active)",
                "alice@a1 ← callStarted",
                "bob@b1 ← callStarted",
                "carol@* ← callUpdated(alice:accept bob:accept carol:waiting)",
                "alice@a1 ← sfuSession(#1)",
                "sfu join alice@a1 #1",
                "bob@b1 ← sfuSession(#2)",
                "sfu join bob@b1 #2",
            ]),
        Row(
            name: "a member who answers later gets the next session",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: accept("carol", "k1"),
            expected: [
                "reply call alice:accept bob:accept carol:accept",
                "cancel ring(c1,carol)",
                "carol@*-k1 ← callEnded(otherDeviceAccepted by carol)",
                "carol@*-k1 ← callElsewhere(on k1 active)",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:accept)",
                "carol@k1 ← callStarted",
                "carol@k1 ← sfuSession(#3)",
                "sfu join carol@k1 #3",
            ]),
        Row(
            name: "a one-to-one call stays peer to peer on a server with an SFU",
            sfu: true, setup: [start()],
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
            name: "a group call on a server without an SFU is a mesh: no sessions",
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
            name: "an invitation into a one-to-one call moves its media to the SFU at once",
            sfu: true, setup: [start(), accept("bob", "b1")],
            step: invite("alice", "a1", ["carol"]),
            expected: [
                "reply invited busy=[] alice:accept bob:accept carol:waiting",
                "carol@* ← callReceived(from alice)",
                "timer ring(c1,carol) +30000",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:waiting)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:waiting)",
                "alice@a1 ← sfuSession(#1)",
                "sfu join alice@a1 #1",
                "bob@b1 ← sfuSession(#2)",
                "sfu join bob@b1 #2",
            ]),
        Row(
            name: "a member's signal goes to the rooms with the member's current session",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: sfuSignal("bob", "b1", session: 2),
            expected: ["reply ok", "sfu signal bob #2 publish offer"]),
        Row(
            name: "a signal of another session is refused",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: sfuSignal("bob", "b1", session: 1, .subscribe, .answer),
            expected: ["reply error sfuSessionMismatch"]),
        Row(
            name: "SFU signals in a peer-to-peer call are refused",
            sfu: true, setup: [start(), accept("bob", "b1")],
            step: sfuSignal("bob", "b1", session: 1),
            expected: ["reply error sfuNotInUse"]),
        Row(
            name: "not from a member who has not answered",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: sfuSignal("carol", "k1", session: 1),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "not from another device of a member",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: sfuSignal("bob", "b2", session: 2),
            expected: ["reply error notInCall"]),
        Row(
            name: "not from someone outside the call",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: sfuSignal("mallory", "m1", session: 1),
            expected: ["reply error notInCall"]),
        Row(
            name: "a restart starts a new session for that member only",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: sfuSignal("alice", "a1", session: 1, .subscribe, .restart),
            expected: ["reply ok", "alice@a1 ← sfuSession(#3)", "sfu join alice@a1 #3"]),
        Row(
            name: "a layer choice is kept and handed to the rooms",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: videoLayer("alice", "a1", of: "bob", .big),
            expected: ["reply ok", "sfu layer alice sees bob big"]),
        Row(
            name: "the choice holds for the member's next session",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), videoLayer("alice", "a1", of: "bob", .big)],
            step: sfuLost("alice"),
            expected: ["alice@a1 ← sfuSession(#3)", "sfu join alice@a1 #3 [bob=big]"]),
        Row(
            name: "no layer of someone who is not in the call",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: videoLayer("alice", "a1", of: "carol", .big),
            expected: ["reply error peerNotInCall"]),
        Row(
            name: "no layer of oneself",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1")],
            step: videoLayer("alice", "a1", of: "alice", .big),
            expected: ["reply error peerNotInCall"]),
        Row(
            name: "no layers in a peer-to-peer call",
            sfu: true, setup: [start(), accept("bob", "b1")],
            step: videoLayer("alice", "a1", of: "bob", .small),
            expected: ["reply error sfuNotInUse"]),
        Row(
            name: "the rooms losing the call start new sessions for everyone in it",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1")],
            step: sfuLost(),
            expected: [
                "alice@a1 ← sfuSession(#4)", "sfu join alice@a1 #4", "bob@b1 ← sfuSession(#5)", "sfu join bob@b1 #5",
                "carol@k1 ← sfuSession(#6)", "sfu join carol@k1 #6",
            ]),
        Row(
            name: "the device in the call logging in again starts its media over",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), offline("alice", "a1")],
            step: online("alice", "a1"),
            expected: [
                "cancel reconnectGrace(c1,alice)",
                "bob@b1 ← memberStatus(alice unknown mute)",
                "alice@a1 ← callStarted",
                "alice@a1 ← sfuSession(#3)",
                "sfu join alice@a1 #3",
                "alice@a1 ← callsSynced([c1] elsewhere [])",
            ]),
        Row(
            name: "a member who leaves leaves the room",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1")],
            step: hangup("carol", "k1"),
            expected: [
                "reply ok",
                "carol@k1 ← callEnded(hangup by carol)",
                "carol@*-k1 ← callElsewhere(on k1 ended)",
                "alice@a1 ← callUpdated(alice:accept bob:accept carol:none)",
                "bob@b1 ← callUpdated(alice:accept bob:accept carol:none)",
                "sfu leave carol",
            ]),
        Row(
            name: "the call's end ends its room",
            sfu: true, setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), reject("carol", "k1")],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callEnded(hangup by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "sfu end",
                "records alice:answered/hangup/2s bob:answered/hangup/2s carol:rejected/reject/0s",
            ]),
    ]
}
