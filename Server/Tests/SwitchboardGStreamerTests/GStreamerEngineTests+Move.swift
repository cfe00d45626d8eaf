#if GStreamer
import Foundation
import NIOConcurrencyHelpers
import SwitchboardProtocol
import SwitchboardTestServers
import Testing

@testable import Switchboard
@testable import SwitchboardGStreamer

extension GStreamerEngineTests {
    /// bob answers alice's call on his phone, offers it to his laptop, and the laptop takes it:
    /// alice hears bob throughout in the same call (never an end, never a new call), from the
    /// laptop once the phone's media ended; the phone forgets the call without an end and shows it
    /// on the laptop; the laptop has it connected with the call's own start time. The longest gap
    /// in bob's audio at alice across the move is printed (measured, not asserted).
    @Test func aCallMovesToAnotherDeviceOfTheSameUser() async throws {
        let server = try await TestServer.start()
        let alice = try await Self.member(server, "alice", tone: 440)
        let phone = try await Self.member(server, "bob", deviceId: "bob-phone", tone: 660)
        let laptop = try await Self.member(server, "bob", deviceId: "bob-laptop", tone: 880)
        let heard = NIOLockedValueBox<[ContinuousClock.Instant]>([])
        let listening = Task {
            for await event in alice.engine.events {
                if case .audioLevel("bob", let level, _) = event, level > 10 { heard.withLockedValue { $0.append(.now) } }
            }
        }
        defer { listening.cancel() }

        let call = try await Self.connect(alice, [phone], mediaType: .audio)
        try await Self.expect(alice, "bob's tone from the phone") {
            if case .audioLevel("bob", let level, _) = $0 { level > 10 } else { false }
        }
        try await Self.barrier(alice, from: "bob", count: 10)
        let startTime = try #require(alice.client.callStore.state.activeCall?.startTime)
        let moveStarted = ContinuousClock.now

        let laptopEvents = laptop.calls.values.count
        let expiresAt = try await phone.client.callStore.offerMove(callId: call, to: "bob-laptop")
        try await laptop.calls.first(from: laptopEvents, timeout: Self.wait) {
            if case .onCallMoveOffered(call, "bob-phone", expiresAt) = $0 { true } else { false }
        }
        #expect(laptop.client.callStore.state.moveOffers.map(\.call.callId) == [call])
        try await laptop.client.callStore.take(callId: call)

        try await phone.calls.first(from: 0, timeout: Self.wait) {
            if case .onCallMoved(call, "bob-phone", "bob-laptop") = $0 { true } else { false }
        }
        try await alice.calls.first(from: 0, timeout: Self.wait) {
            if case .onMemberMoved(call, "bob") = $0 { true } else { false }
        }
        // The phone's media ends; what alice hears of bob after that comes from the laptop.
        try await Self.expect(phone, .trackEnded("alice", .audio))
        let afterPhone = alice.media.values.count
        try await alice.media.first(from: afterPhone, timeout: Self.wait) {
            if case .audioLevel("bob", let level, _) = $0 { level > 10 } else { false }
        }
        try await Self.expect(laptop, "alice's tone on the laptop") {
            if case .audioLevel("alice", let level, _) = $0 { level > 10 } else { false }
        }
        try await Self.barrier(alice, from: "bob", count: 10)

        // One call, the same on every side: no end anywhere, the laptop has it connected as it was.
        let ends = { (member: Member) in member.calls.values.filter { if case .onCallEnded = $0 { true } else { false } } }
        #expect(ends(alice).isEmpty)
        #expect(ends(phone).isEmpty)
        #expect(alice.client.callStore.state.activeCall?.callId == call)
        let onLaptop = laptop.client.callStore.state
        #expect(onLaptop.activeCall?.callId == call)
        #expect(onLaptop.activeCall?.startTime == startTime)
        #expect(onLaptop.selfInfo.status == .accept)
        #expect(onLaptop.moveOffers.isEmpty)
        #expect(phone.client.callStore.state.activeCall == nil)
        #expect(phone.client.callStore.state.callsOnOtherDevices.map(\.callId) == [call])

        // From the last level heard before the move began.
        let all = heard.withLockedValue { $0 }
        let times = all.suffix(from: max(0, (all.lastIndex { $0 < moveStarted } ?? 0)))
        let gap = zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? .zero
        print("call move: the longest gap in bob's audio at alice across the move was \(gap)")

        // The laptop hangs up for bob: the call ends for alice, with bob as the one who ended it.
        try await laptop.client.callStore.hangup()
        try await alice.calls.first(from: 0, timeout: Self.wait) {
            if case .onCallEnded(call, _, .hangup, "bob") = $0 { true } else { false }
        }
        await server.stop()
    }
}
#endif
