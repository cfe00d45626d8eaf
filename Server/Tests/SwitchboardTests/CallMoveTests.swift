import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

/// Moving a call between a user's devices through the SDK and a real server (issue 51; docs/PROTOCOL.md,
/// "Moving a call to another device"): two devices taking at once, an offer lapsing, another user's
/// device. Time moves only on the test clock.
struct CallMoveTests {
    /// alice's call answered on bob's phone; bob's laptop (through `laptopURL` when given) and
    /// tablet are logged in too.
    struct Setup {
        var alice, phone, laptop, tablet: SwitchboardClient
        var aliceEvents, phoneEvents, laptopEvents, tabletEvents: Recorder<CallStoreEvent>
        var call: CallID
        var startTime: Int64
    }

    static func bobAnswersOnHisPhone(_ server: TestServer, laptopURL: URL? = nil) async throws -> Setup {
        let alice = try await server.client("alice")
        let phone = try await server.client("bob", deviceId: "bob-phone")
        let laptop = try await server.client("bob", deviceId: "bob-laptop", url: laptopURL)
        let tablet = try await server.client("bob", deviceId: "bob-tablet")
        let aliceEvents = Recorder(alice.callStore.events)
        let phoneEvents = Recorder(phone.callStore.events)
        let laptopEvents = Recorder(laptop.callStore.events)
        let tabletEvents = Recorder(tablet.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio).callId
        try await phoneEvents.first(from: 0, where: isReceived)
        try await phone.callStore.accept(callId: call)
        try await aliceEvents.first(from: 0, where: isStarted)
        return Setup(
            alice: alice, phone: phone, laptop: laptop, tablet: tablet, aliceEvents: aliceEvents, phoneEvents: phoneEvents,
            laptopEvents: laptopEvents, tabletEvents: tabletEvents, call: call,
            startTime: try #require(alice.callStore.state.activeCall?.startTime))
    }

    @Test func twoDevicesTakeAtOnceAndOneWinsThenAnOfferLapses() async throws {
        let server = try await TestServer.start()
        let s = try await Self.bobAnswersOnHisPhone(server)
        let (alice, phone, laptop, tablet, call, startTime) = (s.alice, s.phone, s.laptop, s.tablet, s.call, s.startTime)
        let (aliceEvents, phoneEvents, laptopEvents, tabletEvents) = (s.aliceEvents, s.phoneEvents, s.laptopEvents, s.tabletEvents)
        let mallory = try await server.client("mallory", deviceId: "bob-desk")

        // bob's other devices rang and were told the phone answered: from here on no end.
        for events in [laptopEvents, tabletEvents] {
            try await events.first(from: 0) { if case .onCallEnded(call, _, .otherDeviceAccepted, _) = $0 { true } else { false } }
        }
        let marks = [aliceEvents, phoneEvents, laptopEvents, tabletEvents].map { ($0, $0.values.count) }

        // Offered to all of bob's other devices: both see it; another user cannot take it, even
        // from a device with a name like bob's.
        let expiresAt = try await phone.callStore.offerMove(callId: call)
        #expect(expiresAt == server.clock.now() + 30_000)
        for events in [laptopEvents, tabletEvents] {
            try await events.first(from: 0) { if case .onCallMoveOffered(call, "bob-phone", expiresAt) = $0 { true } else { false } }
        }
        let stranger = await #expect(throws: SwitchboardError.self) { try await mallory.callStore.take(callId: call) }
        #expect(stranger?.code == .notInCall, "\(String(describing: stranger))")

        // Both take at once: one wins, the other is told (moveNotOffered: the offer is spent).
        @Sendable func take(_ device: SwitchboardClient) async -> SwitchboardError.Code? {
            do {
                try await device.callStore.take(callId: call)
                return nil
            } catch {
                return (error as? SwitchboardError)?.code ?? .internalError
            }
        }
        async let laptopTake = take(laptop)
        async let tabletTake = take(tablet)
        let results: [(device: String, error: SwitchboardError.Code?)] = await [("bob-laptop", laptopTake), ("bob-tablet", tabletTake)]
        let winners = results.filter { $0.error == nil }.map { $0.device }
        #expect(winners.count == 1, "\(results)")
        #expect(results.filter { $0.error == .moveNotOffered }.count == 1, "\(results)")
        let winner = try #require(winners.first)
        let (holder, holderEvents, other, otherEvents) =
            winner == "bob-laptop" ? (laptop, laptopEvents, tablet, tabletEvents) : (tablet, tabletEvents, laptop, laptopEvents)
        for events in [phoneEvents, laptopEvents, tabletEvents] {
            try await events.first(from: 0) {
                if case .onCallMoved(call, "bob-phone", DeviceID(rawValue: winner)) = $0 { true } else { false }
            }
        }
        try await aliceEvents.first(from: 0) { $0 == .onMemberMoved(callId: call, userId: "bob") }
        #expect(holder.callStore.state.activeCall?.callId == call && holder.callStore.state.activeCall?.startTime == startTime)
        #expect(other.callStore.state.activeCall == nil && phone.callStore.state.activeCall == nil)

        // The holder offers it to the other device, which lets it lapse: after 30 s it is told,
        // and a take then is refused; the call goes on where it is.
        let otherMark = otherEvents.values.count
        _ = try await holder.callStore.offerMove(callId: call, to: other.loginStore.state.deviceId)
        try await otherEvents.first(from: otherMark) { if case .onCallMoveOffered(call, _, _) = $0 { true } else { false } }
        server.clock.advance(by: .seconds(30))
        try await otherEvents.first(from: otherMark) {
            if case .onCallMoveOfferEnded(call, CallMoveOfferEndReason.expired) = $0 { true } else { false }
        }
        #expect(other.callStore.state.moveOffers.isEmpty)
        let lapsed = await #expect(throws: SwitchboardError.self) { try await other.callStore.take(callId: call) }
        #expect(lapsed?.code == .moveNotOffered)

        // Nobody heard an end; the holder's hang-up ends the one call, with one record each.
        for (events, mark) in marks { #expect(!events.values.dropFirst(mark).contains(where: isEnded)) }
        try await holder.callStore.hangup(callId: call)
        let ended = try await aliceEvents.first(from: 0, where: isEnded)
        #expect(ended == .onCallEnded(callId: call, mediaType: .audio, reason: .hangup, userId: "bob"))
        let record = try #require(await holderEvents.first(from: 0, where: isRecord).record)
        #expect(record.callId == call && record.result == .answered && record.startTime == startTime)
        #expect(try await alice.callStore.queryRecords(count: 10).records.filter { $0.callId == call }.count == 1)
        #expect(try await phone.callStore.queryRecords(count: 10).records.filter { $0.callId == call }.count == 1)
    }

    /// The laptop is away while the phone withdraws its offer (a new one to the tablet): the
    /// laptop never hears the withdrawal, so at its return it still lists the offer; its take is
    /// refused (moveNotOffered) and the offer goes from its state. The call stays on the phone.
    @Test func anOfferWithdrawnWhileADeviceWasAwayGoesAtItsRefusedTake() async throws {
        let server = try await TestServer.start()
        let proxy = try await TCPProxy.start(targetPort: server.port)
        let s = try await Self.bobAnswersOnHisPhone(server, laptopURL: server.url(via: proxy))
        let (phone, laptop, call, laptopEvents, tabletEvents) = (s.phone, s.laptop, s.call, s.laptopEvents, s.tabletEvents)
        let laptopLogin = Recorder(laptop.loginStore.stateUpdates)

        try await phone.callStore.offerMove(callId: call, to: "bob-laptop")
        try await laptopEvents.first(from: 0) { if case .onCallMoveOffered(call, "bob-phone", _) = $0 { true } else { false } }
        proxy.cut()
        let away = try await laptopLogin.position(after: 0) { $0.loginStatus == .reconnecting }
        // A new offer, to the tablet, withdraws the laptop's while the laptop is away.
        try await phone.callStore.offerMove(callId: call, to: "bob-tablet")
        try await tabletEvents.first(from: 0) { if case .onCallMoveOffered(call, "bob-phone", _) = $0 { true } else { false } }
        server.clock.advance(by: .seconds(1))
        try await laptopLogin.first(from: away) { $0.loginStatus == .loggedIn }
        #expect(laptop.callStore.state.moveOffers.map(\.call.callId) == [call])

        let refused = await #expect(throws: SwitchboardError.self) { try await laptop.callStore.take(callId: call) }
        #expect(refused?.code == .moveNotOffered)
        #expect(laptop.callStore.state.moveOffers.isEmpty)
        #expect(phone.callStore.state.activeCall?.callId == call && laptop.callStore.state.activeCall == nil)
        proxy.stop()
    }
}
