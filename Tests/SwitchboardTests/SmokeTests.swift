import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import Testing

@Test func smokeConnectedCall() async throws {
    let server = try await TestServer.start()
    let alice = try await server.client("alice")
    let bob = try await server.client("bob")
    let aliceEvents = Recorder(alice.callStore.events)
    let bobEvents = Recorder(bob.callStore.events)
    let started = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .video)
    try await bobEvents.first { if case .onCallReceived = $0 { true } else { false } }
    try await bob.callStore.accept()
    try await aliceEvents.first { if case .onCallStarted = $0 { true } else { false } }
    server.clock.advance(by: .seconds(2))
    try await alice.callStore.hangup()
    let ended = try await bobEvents.first { if case .onCallEnded = $0 { true } else { false } }
    #expect(ended == .onCallEnded(callId: started.callId, mediaType: .video, reason: .hangup, userId: "alice"))
    let record = try await bobEvents.first { if case .onCallRecord = $0 { true } else { false } }
    guard case .onCallRecord(let r) = record else { return }
    #expect(r.duration == 2)
    #expect(r.result == .answered)
    await server.stop()
}
