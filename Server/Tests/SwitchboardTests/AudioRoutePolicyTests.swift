import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTestServers
import SwitchboardTools
import Testing

/// Where call audio plays: ``AudioRoutePolicy`` fed inputs in rows, the route after each compared.
struct AudioRoutePolicyTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var steps: [(AudioRoutePolicy.Input, AudioRoute)]
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "an audio call plays at the ear, a video call on the speaker", steps: [
            (.callStarted(.audio), .earpiece), (.callEnded, .earpiece), (.callStarted(.video), .speaker),
        ]),
        Row(name: "a headset present at the start is used", steps: [
            (.headsetsChanged([.bluetooth]), .bluetooth), (.callStarted(.video), .bluetooth),
        ]),
        Row(name: "of two headsets the one connected last wins; Bluetooth when they come together", steps: [
            (.headsetsChanged([.headset, .bluetooth]), .bluetooth), (.callStarted(.audio), .bluetooth),
            (.headsetsChanged([.headset]), .headset), (.headsetsChanged([.headset, .bluetooth]), .bluetooth),
        ]),
        Row(name: "a headset put on mid-call takes the audio; taken off, the default comes back", steps: [
            (.callStarted(.audio), .earpiece), (.headsetsChanged([.headset]), .headset),
            (.headsetsChanged([]), .earpiece),
        ]),
        Row(name: "the user's choice is kept for the call, over a headset already there", steps: [
            (.headsetsChanged([.bluetooth]), .bluetooth), (.callStarted(.audio), .bluetooth),
            (.userChose(.speaker), .speaker), (.headsetsChanged([.bluetooth]), .speaker),
            (.mediaTypeChanged(.video), .speaker), (.mediaTypeChanged(.audio), .speaker),
        ]),
        Row(name: "a headset connected after a choice wins over it", steps: [
            (.callStarted(.video), .speaker), (.userChose(.earpiece), .earpiece), (.headsetsChanged([.headset]), .headset),
            (.headsetsChanged([]), .speaker),
        ]),
        Row(name: "a chosen headset that goes away is no choice any more", steps: [
            (.headsetsChanged([.bluetooth, .headset]), .bluetooth), (.callStarted(.video), .bluetooth),
            (.userChose(.headset), .headset), (.headsetsChanged([.bluetooth]), .bluetooth),
            (.headsetsChanged([]), .speaker),
        ]),
        Row(name: "a route that does not exist is not taken", steps: [
            (.callStarted(.audio), .earpiece), (.userChose(.bluetooth), .earpiece), (.userChose(.headset), .earpiece),
        ]),
        Row(name: "without a choice a media-type change moves a built-in route, not a headset", steps: [
            (.callStarted(.audio), .earpiece), (.mediaTypeChanged(.video), .speaker), (.mediaTypeChanged(.audio), .earpiece),
            (.headsetsChanged([.headset]), .headset), (.mediaTypeChanged(.video), .headset),
        ]),
        Row(name: "a choice made before the call carries into it and ends with it", steps: [
            (.userChose(.speaker), .speaker), (.callStarted(.audio), .speaker), (.callEnded, .earpiece),
            (.callStarted(.audio), .earpiece),
        ]),
        Row(name: "the end of a call forgets the media type, not the headsets", steps: [
            (.callStarted(.video), .speaker), (.headsetsChanged([.bluetooth]), .bluetooth), (.callEnded, .bluetooth),
            (.headsetsChanged([]), .earpiece),
        ]),
    ]

    @Test(arguments: rows) func routes(_ row: Row) {
        var policy = AudioRoutePolicy()
        for (index, (input, expected)) in row.steps.enumerated() {
            let before = policy.route
            let changed = policy.handle(input)
            #expect(policy.route == expected, "step \(index + 1): \(input)")
            // The route is returned exactly when it changed.
            #expect(changed == (expected == before ? nil : expected), "step \(index + 1): \(input)")
        }
    }
}

/// The policy at work in a client: the calls come from the server, the route shows in
/// ``DeviceStore/State/audioRoute`` (where the media engine and the audio session take it from).
struct AudioRouteControllerTests {
    @Test func theRouteFollowsTheCallAndTheHeadsets() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let bobEvents = Recorder(bob.callStore.events)
        let routes = Recorder(alice.deviceStore.stateUpdates.map(\.audioRoute))

        _ = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .video)
        try await routes.first(from: 0) { $0 == .speaker }
        var mark = routes.values.count
        alice.audioHeadsetsChanged([.headset])
        try await routes.first(from: mark) { $0 == .headset }
        // From here on: the route before the call may have been the earpiece already.
        mark = routes.values.count
        alice.deviceStore.setAudioRoute(.earpiece)
        try await routes.first(from: mark) { $0 == .earpiece }
        // A choice of something that is not there is undone.
        alice.deviceStore.setAudioRoute(.bluetooth)
        try await Recorder(alice.deviceStore.stateUpdates).first(from: 0) { $0.chosenAudioRoute == .earpiece }
        #expect(alice.deviceStore.state.audioRoute == .earpiece)
        try await bobEvents.first(from: 0, where: isReceived)
        try await alice.callStore.hangup()
        try await bobEvents.first(from: 0, where: isEnded)
        // The call is over: the choice too, the headset is still there.
        try await Recorder(alice.deviceStore.stateUpdates).first(from: 0) { $0.audioRoute == .headset && $0.chosenAudioRoute == nil }
        alice.audioHeadsetsChanged([])
        try await Recorder(alice.deviceStore.stateUpdates).first(from: 0) { $0.audioRoute == .earpiece }
        await server.stop()
    }
}
