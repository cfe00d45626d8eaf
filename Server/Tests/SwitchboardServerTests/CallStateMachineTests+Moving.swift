import Foundation
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

// Moving a member's part in a call to another of the user's devices: offers, takes, lapses, and
// what the other members and the user's other devices hear.
extension CallStateMachineTests {
    static let moving: [Row] = [
        Row(
            name: "the device in the call offers it to another device of the user",
            setup: [start(), accept("bob", "b1")],
            step: offerMove("bob", "b1", to: "b2"),
            expected: [
                "reply offered until +30000",
                "timer moveOffer(c1,bob) +30000",
                "bob@b2 ← callMoveOffered(from b1 to b2)",
            ]),
        Row(
            name: "an offer to no device in particular goes to all the user's other devices",
            setup: [start(), accept("bob", "b1")],
            step: offerMove("bob", "b1"),
            expected: [
                "reply offered until +30000",
                "timer moveOffer(c1,bob) +30000",
                "bob@*-b1 ← callMoveOffered(from b1 to *)",
            ]),
        Row(
            name: "only the device in the call offers it",
            setup: [start(), accept("bob", "b1")],
            step: offerMove("bob", "b2", to: "b3"),
            expected: ["reply error notInCall"]),
        Row(
            name: "another user cannot offer the call",
            setup: [start(), accept("bob", "b1")],
            step: offerMove("carol", "k1", to: "k2"),
            expected: ["reply error notInCall"]),
        Row(
            name: "a ringing invitee has nothing to offer",
            setup: [start()],
            step: offerMove("bob", "b1", to: "b2"),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "an offer to the device in the call itself is refused",
            setup: [start(), accept("bob", "b1")],
            step: offerMove("bob", "b1", to: "b1"),
            expected: ["reply error invalidParams"]),
        Row(
            name: "an offer to a device id no device could have is refused",
            setup: [start(), accept("bob", "b1")],
            step: offerMove("bob", "b1", to: "b 2"),
            expected: ["reply error invalidDeviceID"]),
        Row(
            name: "a new offer withdraws the last one from the devices it went to",
            setup: [start(), accept("bob", "b1"), offerMove("bob", "b1", to: "b2")],
            step: offerMove("bob", "b1", to: "b3"),
            expected: [
                "reply offered until +30000",
                "bob@b2 ← callMoveOfferEnded(withdrawn)",
                "timer moveOffer(c1,bob) +30000",
                "bob@b3 ← callMoveOffered(from b1 to b3)",
            ]),
        Row(
            name: "the offered device takes the call: the other member hears the member moved, not an end",
            setup: [start(), accept("bob", "b1"), offerMove("bob", "b1", to: "b2")],
            step: take("bob", "b2"),
            expected: [
                "reply call alice:accept bob:accept",
                "cancel moveOffer(c1,bob)",
                "bob@* ← callMoved(b1 → b2 alice:accept bob:accept)",
                "alice@a1 ← memberMoved(bob)",
            ]),
        Row(
            name: "after the move the old device no longer acts for the member",
            setup: [start(), accept("bob", "b1"), offerMove("bob", "b1", to: "b2"), take("bob", "b2")],
            step: hangup("bob", "b1"),
            expected: ["reply error notInCall"]),
        Row(
            name: "after the move the new device hangs up for the member",
            setup: [start(), accept("bob", "b1"), offerMove("bob", "b1", to: "b2"), take("bob", "b2")],
            step: hangup("bob", "b2"),
            expected: [
                "reply ok",
                "bob@b2 ← callEnded(hangup by bob)",
                "bob@*-b2 ← callElsewhere(on b2 ended)",
                "alice@a1 ← callEnded(hangup by bob)",
                "alice@*-a1 ← callElsewhere(on a1 ended)",
                "records alice:answered/hangup/3s bob:answered/hangup/3s",
            ]),
        Row(
            name: "the old device dropping after the move changes nothing",
            setup: [start(), accept("bob", "b1"), offerMove("bob", "b1", to: "b2"), take("bob", "b2")],
            step: offline("bob", "b1"),
            expected: []),
        Row(
            name: "the old device logging out after the move leaves the call as it is",
            setup: [start(), accept("bob", "b1"), offerMove("bob", "b1", to: "b2"), take("bob", "b2")],
            step: logout("bob", "b1"),
            expected: []),
        Row(
            name: "a device the offer does not name cannot take the call",
            setup: [start(), accept("bob", "b1"), offerMove("bob", "b1", to: "b2")],
            step: take("bob", "b3"),
            expected: ["reply error moveNotOffered"]),
        Row(
            name: "of two devices taking one offer, the second is told it was not offered any more",
            setup: [start(), accept("bob", "b1"), offerMove("bob", "b1"), take("bob", "b2")],
            step: take("bob", "b3"),
            expected: ["reply error moveNotOffered"]),
        Row(
            name: "another user's device cannot take the call",
            setup: [start(), accept("bob", "b1"), offerMove("bob", "b1")],
            step: take("carol", "k1"),
            expected: ["reply error notInCall"]),
        Row(
            name: "the other member's device cannot take the member's call",
            setup: [start(), accept("bob", "b1"), offerMove("bob", "b1")],
            step: take("alice", "a2"),
            expected: ["reply error moveNotOffered"]),
        Row(
            name: "without an offer a device cannot take the call",
            setup: [start(), accept("bob", "b1")],
            step: take("bob", "b2"),
            expected: ["reply error moveNotOffered"]),
        Row(
            name: "without an offer a device takes the call where the app allows it",
            setup: [start(), accept("bob", "b1")],
            step: take("bob", "b2", pull: true),
            expected: [
                "reply call alice:accept bob:accept",
                "bob@* ← callMoved(b1 → b2 alice:accept bob:accept)",
                "alice@a1 ← memberMoved(bob)",
            ]),
        Row(
            name: "the device in the call cannot take it again",
            setup: [start(), accept("bob", "b1")],
            step: take("bob", "b1", pull: true),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "a ringing call is answered, not taken",
            setup: [start()],
            step: take("bob", "b2", pull: true),
            expected: ["reply error invalidCallState"]),
        Row(
            name: "an offer lapses: the devices it went to hear it ended",
            setup: [start(), accept("bob", "b1"), offerMove("bob", "b1", to: "b2"), .wait(30_000)],
            step: moveOfferLapses("bob"),
            expected: ["bob@b2 ← callMoveOfferEnded(expired)"]),
        Row(
            name: "a lapsed offer is not taken",
            setup: [start(), accept("bob", "b1"), offerMove("bob", "b1", to: "b2"), .wait(30_000)],
            step: take("bob", "b2"),
            expected: ["reply error moveNotOffered"]),
        Row(
            name: "a device that logs in during an offer to it sees the offer",
            setup: [start(), accept("bob", "b1"), offerMove("bob", "b1", to: "b2")],
            step: online("bob", "b2"),
            expected: [
                "bob@b2 ← callElsewhere(on b1 active)",
                "bob@b2 ← callMoveOffered(from b1 to b2)",
                "bob@b2 ← callsSynced([] elsewhere [c1])",
            ]),
        Row(
            name: "a member who hangs up with an offer open ends the offer with their part",
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), accept("carol", "k1"), offerMove("bob", "b1")],
            step: hangup("bob", "b1"),
            expected: [
                "reply ok",
                "cancel moveOffer(c1,bob)",
                "bob@b1 ← callEnded(hangup by bob)",
                "bob@*-b1 ← callElsewhere(on b1 ended)",
                "alice@a1 ← callUpdated(alice:accept bob:none carol:accept)",
                "carol@k1 ← callUpdated(alice:accept bob:none carol:accept)",
            ]),
        Row(
            name: "a dropped device's call is taken on another device: the grace ends and the member is back",
            setup: [start(), accept("bob", "b1"), offerMove("bob", "b1", to: "b2"), offline("bob", "b1")],
            step: take("bob", "b2"),
            expected: [
                "reply call alice:accept bob:accept",
                "cancel reconnectGrace(c1,bob)",
                "cancel moveOffer(c1,bob)",
                "bob@* ← callMoved(b1 → b2 alice:accept bob:accept)",
                "alice@a1 ← memberMoved(bob)",
                "alice@a1 ← memberStatus(bob unknown mute)",
            ]),
        Row(
            name: "a move during a media-type change cancels the change",
            setup: [
                start(), accept("bob", "b1"), changeMedia("alice", "a1", to: .video), offerMove("bob", "b1", to: "b2"),
            ],
            step: take("bob", "b2"),
            expected: [
                "reply call alice:accept bob:accept",
                "cancel mediaChange(c1,t1)",
                "alice@a1 ← mediaTypeChangeResult(video canceled)",
                "bob@b1 ← mediaTypeChangeResult(video canceled)",
                "cancel moveOffer(c1,bob)",
                "bob@* ← callMoved(b1 → b2 alice:accept bob:accept)",
                "alice@a1 ← memberMoved(bob)",
            ]),
        Row(
            name: "a member sharing a screen moves: the others hear the share ended",
            setup: [
                start(), accept("bob", "b1"),
                .event(.updateDevice(command("bob", "b1", "c1"), microphoneOn: nil, cameraOn: nil, screenSharing: true)),
                offerMove("bob", "b1", to: "b2"),
            ],
            step: take("bob", "b2"),
            expected: [
                "reply call alice:accept bob:accept",
                "cancel moveOffer(c1,bob)",
                "bob@* ← callMoved(b1 → b2 alice:accept bob:accept)",
                "alice@a1 ← memberMoved(bob)",
                "alice@a1 ← deviceChanged(bob mic=on camera=off)",
            ]),
        Row(
            name: "through the SFU the new device gets a session of its own",
            sfu: true,
            setup: [start(to: ["bob", "carol"]), accept("bob", "b1"), offerMove("bob", "b1", to: "b2")],
            step: take("bob", "b2"),
            expected: [
                "reply call alice:accept bob:accept carol:waiting",
                "cancel moveOffer(c1,bob)",
                "bob@* ← callMoved(b1 → b2 alice:accept bob:accept carol:waiting)",
                "alice@a1 ← memberMoved(bob)",
                "bob@b2 ← sfuSession(#3)",
                "sfu join bob@b2 #3",
            ]),
        Row(
            name: "after a move the member's media signals go to the new device",
            setup: [start(), accept("bob", "b1"), offerMove("bob", "b1", to: "b2"), take("bob", "b2")],
            step: .event(
                .mediaSignal(
                    command("alice", "a1", "c1"),
                    SendMediaSignalRequest(callId: "c1", to: "bob", kind: .offer, sdp: "v=0"))),
            expected: ["reply ok", "bob@b2 ← mediaSignal(offer from alice)"]),
    ]

    /// An open offer is journaled with the call: after a restart its lapse is set again for the
    /// time it had, and the offered device can still take the call.
    @Test func anOfferOutlivesARestart() throws {
        var machine = CallStateMachine()
        var now = Self.t0
        func apply(_ step: Step) -> CallOutput {
            guard case .event(let event, let facts) = step else { Issue.record("not an event"); return CallOutput() }
            now += 1000
            return machine.handle(event, facts: facts, now: now)
        }
        for step in [Self.start(), Self.accept("bob", "b1"), Self.offerMove("bob", "b1", to: "b2")] { _ = apply(step) }
        let expiresAt = now + 30_000
        let journaled = try #require(machine.takeJournalChanges().first)
        var restarted = CallStateMachine()
        now += 2_000
        let restored = restarted.restore(journaled, now: now)
        #expect(restored.actions.contains(.setTimer(.moveOffer("c1", "bob"), at: expiresAt)))
        machine = restarted
        let taken = apply(Self.take("bob", "b2"))
        #expect(Self.describe(taken, now: now).first == "reply call alice:accept bob:accept")
    }
}
