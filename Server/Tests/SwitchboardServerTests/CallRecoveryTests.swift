import Foundation
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

/// The journal of calls in progress and the recovery of calls a crash left open.
struct CallRecoveryTests {
    typealias T = CallStateMachineTests

    func run(_ machine: inout CallStateMachine, _ steps: [T.Step], from time: Int64 = T.t0) -> Int64 {
        var now = time
        for step in steps {
            switch step {
            case .wait(let ms): now += ms
            case .event(let event, let facts):
                now += 1000
                _ = machine.handle(event, facts: facts, now: now)
            }
        }
        return now
    }

    @Test func membershipChangesAreJournaledAndEndedCallsAreNot() {
        var machine = CallStateMachine()
        _ = run(&machine, [T.start(to: ["bob", "carol"])])
        #expect(machine.takeJournalChanges().map(\.id) == ["c1"])
        #expect(machine.takeJournalChanges().isEmpty)
        _ = run(&machine, [T.accept("bob", "b1")])
        let saved = machine.takeJournalChanges()
        #expect(saved.first.map { T.statuses($0.info) } == "alice:accept bob:accept carol:waiting")
        _ = run(&machine, [T.hangup("alice", "a1")], from: T.t0 + 5000)
        #expect(machine.takeJournalChanges().map(\.id) == ["c1"])
        _ = run(&machine, [T.hangup("bob", "b1")], from: T.t0 + 7000)
        // Ended: the end action removes it from the journal instead.
        #expect(machine.takeJournalChanges().isEmpty)
        #expect(machine.calls.isEmpty)
    }

    /// A restart within the reconnect grace: the call comes back as it was, every joined member
    /// counts as dropped, a ringing member rings until its original deadline, and a device that
    /// logs in again resumes the call with its start time; one that does not is ended after the grace.
    @Test func aRestoredCallGoesOnAndItsStartTimeWithIt() throws {
        var original = CallStateMachine()
        // alice calls bob and carol; bob answers 1 s later; 10 s on, the node stops.
        var now = run(&original, [T.start(to: ["bob", "carol"]), T.accept("bob", "b1"), .wait(10_000)])
        let journaled = try #require(original.takeJournalChanges().last)
        let startTime = try #require(journaled.startTime)
        let decoded = try CallEngine.journaledCall(try #require(CallEngine.journalEntry(journaled)))

        // 4 s later a new process restores it.
        now += 4_000
        var restarted = CallStateMachine()
        let restored = restarted.restore(decoded, now: now)
        #expect(
            T.describe(restored, now: now) == [
                "timer reconnectGrace(c1,alice) +15000",
                "timer reconnectGrace(c1,bob) +15000",
                // carol was invited at t0 + 1 s with a 30 s timeout: 16 s of ringing are left.
                "timer ring(c1,carol) +\(T.t0 + 1_000 + 30_000 - now)",
            ])
        #expect(restarted.invariantViolations() == [])
        #expect(restarted.calls["c1"]?.info.participants.map { $0.networkQuality } == [.down, .down, nil])
        #expect(restarted.restore(decoded, now: now) == CallOutput())

        // bob's phone comes back: the call resumes with its start time, and alice hears he is back.
        now += 2_000
        let back = restarted.handle(.deviceOnline(T.user("bob"), T.device("b1")), now: now)
        #expect(
            T.describe(back, now: now) == [
                "cancel reconnectGrace(c1,bob)",
                "alice@a1 ← memberStatus(bob unknown mute)",
                "bob@b1 ← callStarted",
                "bob@b1 ← callsSynced([c1] elsewhere [])",
            ])
        #expect(restarted.calls["c1"]?.startTime == startTime)

        // alice never comes back: after the grace her part ends; bob and carol... carol still rings.
        now += 13_000
        let gone = restarted.handle(.timerFired(.reconnectGrace("c1", "alice")), now: now)
        #expect(T.describe(gone, now: now).contains("bob@b1 ← callUpdated(alice:none bob:accept carol:waiting)"))
        // carol's ring ends at its original deadline.
        let timeout = restarted.handle(.timerFired(.ring("c1", "carol")), now: T.t0 + 31_000)
        let described = T.describe(timeout, now: T.t0 + 31_000)
        // alice was in the call from its start (t0 + 2 s) to the end of her grace.
        #expect(described.last?.hasPrefix("records alice:answered/endByServer/") == true, "\(described)")
        #expect(restarted.calls.isEmpty)
    }

    @Test func aRecoveredCallEndsWithEndByServerAndIsRemembered() throws {
        var original = CallStateMachine()
        let now = run(&original, [T.start(to: ["bob", "carol"]), T.accept("bob", "b1"), .wait(60_000)])
        let journaled = try #require(original.takeJournalChanges().last)
        // Through the journal's own encoding, as the engine writes and reads it.
        let data = try #require(CallEngine.journalEntry(journaled))
        let decoded = try CallEngine.journaledCall(data)
        #expect(decoded == journaled)

        // A new process: the machine starts empty and recovers the call as of the crash.
        var restarted = CallStateMachine()
        let actions = restarted.recover(decoded, endTime: now)
        #expect(
            T.describe(actions, now: now) == [
                "cancel ring(c1,carol)",
                "records alice:answered/endByServer/60s bob:answered/endByServer/60s carol:missed/endByServer/0s",
            ])
        #expect(restarted.invariantViolations() == [])
        #expect(restarted.recover(decoded, endTime: now) == CallOutput())

        // bob's phone comes back to the new process and hears how the call ended.
        let back = restarted.handle(.deviceOnline(T.user("bob"), T.device("b1")), now: now + 2000)
        #expect(
            T.describe(back, now: now) == [
                "bob@b1 ← callEnded(endByServer by server)", "bob@b1 ← callsSynced([] elsewhere [])",
            ])
    }
}
