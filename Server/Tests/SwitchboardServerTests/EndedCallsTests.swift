import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

/// The memory of ended calls (``EndedCalls``): bounded in count and in time, oldest first, and what
/// it still holds is what a device coming back hears of.
struct EndedCallsTests {
    typealias Rows = CallStateMachineTests

    private static func apply(_ step: Rows.Step, to machine: inout CallStateMachine, at now: Int64) -> CallOutput {
        guard case .event(let event, let facts) = step else { return CallOutput() }
        return machine.handle(event, facts: facts, now: now)
    }

    /// A machine configured by `configure` in which alice and bob ended calls c1 … c6 (the third of
    /// them carol's call to bob instead), c1 at t0 + 1.5 s and each of the others 1 s later.
    private static func sixEndedCalls(_ configure: (inout CallStateMachine.Configuration) -> Void) -> CallStateMachine {
        var configuration = CallStateMachine.Configuration()
        configure(&configuration)
        var machine = CallStateMachine(configuration: configuration)
        let t0 = Rows.t0
        for index in 1...6 {
            let caller = index == 3 ? "carol" : "alice"
            let device = index == 3 ? "c1" : "a1"
            let now = t0 + Int64(index) * 1_000
            _ = apply(Rows.start(caller, device, to: ["bob"], call: "c\(index)"), to: &machine, at: now)
            _ = apply(Rows.hangup(caller, device, "c\(index)"), to: &machine, at: now + 500)
        }
        return machine
    }

    /// The ends a device coming online is told of, by call id, in order.
    private static func endsHeard(by user: String, _ device: String, _ machine: inout CallStateMachine, at now: Int64)
        -> [String]
    {
        apply(Rows.online(user, device), to: &machine, at: now).actions.compactMap { action in
            guard case .send(.callEnded(let ended), .device(_, let to)) = action, to == Rows.device(device) else {
                return nil
            }
            return ended.callId.rawValue
        }
    }

    @Test func theOldestAreForgottenAtTheBoundAndTheRestAreStillKnown() {
        var machine = Self.sixEndedCalls { $0.maxEndedCalls = 3 }
        let later = Rows.t0 + 10_000
        // c1-c3 are beyond the bound of three: forgotten, so unknown; c4-c6 ended.
        #expect(Self.apply(Rows.accept("bob", "b1", "c2"), to: &machine, at: later).reply == .failure(SwitchboardError(.callNotFound)))
        #expect(Self.apply(Rows.accept("bob", "b1", "c4"), to: &machine, at: later).reply == .failure(SwitchboardError(.callAlreadyEnded)))
        #expect(Self.endsHeard(by: "bob", "b9", &machine, at: later) == ["c4", "c5", "c6"])
        #expect(Self.endsHeard(by: "alice", "a9", &machine, at: later) == ["c4", "c5", "c6"])
        // carol's only call (c3) is forgotten: nothing is left of her.
        #expect(Self.endsHeard(by: "carol", "c9", &machine, at: later) == [])
        // Nothing forgotten is still listed: three calls of two members each.
        #expect(machine.ended.listedCount == 6)
    }

    @Test func endedCallsAreForgottenAfterTheRetention() {
        var machine = Self.sixEndedCalls { $0.endedCallRetention = 60_000 }
        // c1-c3 ended at t0 + 1.5, 2.5 and 3.5 s; 63.6 s after t0 only they are past the 60 s.
        let later = Rows.t0 + 63_600
        #expect(Self.endsHeard(by: "bob", "b9", &machine, at: later) == ["c4", "c5", "c6"])
        #expect(Self.endsHeard(by: "carol", "c9", &machine, at: later) == [])
        #expect(Self.endsHeard(by: "alice", "a9", &machine, at: Rows.t0 + 70_000) == [])
        #expect(machine.ended.listedCount == 0)
    }
}
