import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

/// CallPlus gives each member the others' raw packet loss, bitrate and delay: the raw figures of
/// every status report reach the other members (at most about once a second each) and show in
/// ``CallStore/State``, yours from your own reports.
struct MemberStatisticsTests {
    @Test func theOthersRawFiguresShowInState() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let bobEvents = Recorder(bob.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bobEvents.first(from: 0, where: isReceived)
        try await bob.callStore.accept()
        let aliceStates = Recorder(alice.callStore.stateUpdates)
        try await aliceStates.first(from: 0) { $0.selfInfo.status == .accept }
        let seen = Recorder(
            alice.callStore.stateUpdates.map { $0.allParticipants.first { $0.userId == "bob" }?.statistics })

        try await bob.callStore.reportStatus(packetLoss: 2.5, rtt: 140, bitrate: 620, audioLevel: 30)
        let first = MemberStatistics(packetLoss: 2.5, rtt: 140, bitrate: 620, audioLevel: 30)
        try await seen.first(from: 0) { $0 == first }
        // Bob sees his own figures at once.
        #expect(bob.callStore.state.selfInfo.statistics == first)
        #expect(bob.callStore.state.activeCall?.callId == call.callId)

        // A second report in the same second is not relayed; one a second later is.
        try await bob.callStore.reportStatus(packetLoss: 9, rtt: 300, bitrate: 100, audioLevel: 5)
        #expect(bob.callStore.state.selfInfo.statistics?.rtt == 300)
        server.clock.advance(by: .seconds(1))
        try await bob.callStore.reportStatus(packetLoss: 0, rtt: 40, bitrate: 900, audioLevel: 60)
        let third = MemberStatistics(packetLoss: 0, rtt: 40, bitrate: 900, audioLevel: 60)
        try await seen.first(from: 0) { $0 == third }
        // Every state alice went through, without repeats: the second report never reached her.
        let distinct = seen.values.compactMap { $0 }.reduce(into: [MemberStatistics]()) { if $0.last != $1 { $0.append($1) } }
        #expect(distinct == [first, third])
        // The derived levels are still there.
        #expect(alice.callStore.state.allParticipants.first { $0.userId == "bob" }?.networkQuality == .excellent)

        try await alice.callStore.hangup()
        await server.stop()
    }
}
