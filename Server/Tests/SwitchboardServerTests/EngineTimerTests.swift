import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

@testable import SwitchboardServer

/// The engine keeps one task sleeping until its earliest timer. When that timer goes away (the
/// call is answered), the sleeper stays armed: it wakes with nothing due and arms the next, instead
/// of a task and a system timer being made and cancelled for every call.
struct EngineTimerTests {
    @Test(.timeLimit(.minutes(1))) func aRingTimeoutEndsItsCallOnTimeAfterAnEarlierCallsTimerWentAway() async throws {
        let server = try await TestServer.start()
        let engine = server.node.inspection.engine
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let carol = try await server.client("carol")
        let dave = try await server.client("dave")
        let bobEvents = Recorder(bob.callStore.events)
        let carolEvents = Recorder(carol.callStore.events)
        let first = server.clock.now()
        _ = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bobEvents.first(from: 0, where: isReceived)
        try await bob.callStore.accept()
        // Bob's ring timeout is gone; the sleeper for it is not.
        #expect(await engine.wakeDeadline == first + 30_000)

        server.clock.advance(by: .seconds(10))
        let placed = server.clock.now()
        let call = try await carol.callStore.calls(participantIds: ["dave"], mediaType: .audio)
        try await Recorder(dave.callStore.events).first(from: 0, where: isReceived)
        #expect(await engine.wakeDeadline == first + 30_000)

        // The old deadline: nothing is due, and the sleeper is armed again for dave's.
        server.clock.advance(by: .seconds(20))
        while await engine.wakeDeadline != placed + 30_000 { await Task.yield() }
        #expect(!carolEvents.values.contains(where: isEnded))

        server.clock.advance(by: .seconds(10))
        #expect(
            try await carolEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .noResponse, userId: "dave"))
        let record = try #require(await carolEvents.first(from: 0, where: isRecord).record)
        #expect(record.endTime == placed + 30_000)
        await server.stop()
    }
}
