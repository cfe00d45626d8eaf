import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

/// A call moving between two devices of one user on different nodes, with the node that runs the
/// calls killed (`kill -9`) between the offer and the take (issue 51; docs/PROTOCOL.md, "Moving a
/// call to another device").
extension ClusterProcessTests {
    @Test func aMoveOfferOutlivesTheLeadersKillAndTheTakeCrossesNodes() async throws {
        let cluster = try await Cluster.start(count: 3)
        let ports = cluster.ports
        let leader = try #require(try await cluster.leaderIndex())
        // bob's phone on the leader, his laptop and alice each on one of the other nodes. When the
        // leader dies the phone comes back on another node only after 5 s, after the take: it
        // learns of the move at its return (it missed `callMoved`).
        let alice = try await Self.client("mvalice", home: (leader + 1) % 3, ports: ports)
        let phone = try await Self.client(
            "mvbob", home: leader, ports: ports,
            reconnectPolicy: ReconnectPolicy(initialDelay: .seconds(5), maxDelay: .seconds(5), jitter: 0))
        let phoneLogin = Recorder(phone.loginStore.stateUpdates)
        let laptop = try await Self.client("mvbob", device: "mvbob-laptop", home: (leader + 2) % 3, ports: ports)
        let aliceEvents = Recorder(alice.callStore.events)
        let phoneEvents = Recorder(phone.callStore.events)
        let laptopEvents = Recorder(laptop.callStore.events)
        let call = try await ServerProcessTests.connect(alice, phone, "mvbob", aliceEvents, phoneEvents)
        let startTime = try #require(alice.callStore.state.activeCall?.startTime)
        // The laptop rang too, and was told the phone answered.
        try await laptopEvents.first(from: 0, timeout: .seconds(30)) { if case .onCallEnded(call, _, _, _) = $0 { true } else { false } }

        let laptopMark = laptopEvents.values.count
        try await phone.callStore.offerMove(callId: call, to: DeviceID(rawValue: "mvbob-laptop"))
        try await laptopEvents.first(from: laptopMark, timeout: .seconds(30)) {
            if case .onCallMoveOffered(call, DeviceID(rawValue: "mvbob-phone"), _) = $0 { true } else { false }
        }

        // The node that decides calls dies with the offer standing; another takes over from the
        // journal, the offer with it (30 s, re-armed at the same time). The offer's answer comes
        // before its journal entry commits (as every change's does: PROTOCOL.md, "Moving a call
        // to another device"), so the kill waits for the entry, or a loaded run kills the leader
        // with the offer uncommitted and the take is refused (moveNotOffered).
        _ = try await WebhookProcessTests.eventually { () async throws -> Bool? in
            try await PostgresTestDatabase.journalEntry(of: call.rawValue, in: cluster.database)?.contains("\"moveOffer\":{") == true ? true : nil
        }
        cluster.kill(leader)
        _ = try await WebhookProcessTests.eventually { () async -> Int? in
            guard let index = try? await cluster.leaderIndex(), index != leader else { return nil }
            return index
        }
        // A take that reaches a node before it knows the new leader is refused with "try again"
        // (or times out, and may have been carried out: the laptop then has the call).
        let retried: Set<SwitchboardError.Code> = [.storageUnavailable, .shuttingDown, .notConnected, .requestTimedOut, .connectionLost]
        _ = try await WebhookProcessTests.eventually { () async throws -> Bool? in
            if laptop.callStore.state.activeCall?.callId == call { return true }
            do {
                try await laptop.callStore.take(callId: call)
                return true
            } catch let error as SwitchboardError where retried.contains(error.code) {
                return nil
            }
        }

        // The take came while the phone was away.
        #expect(phone.loginStore.state.loginStatus != .loggedIn)
        let away = try #require(phoneLogin.values.lastIndex { $0.loginStatus == .reconnecting })
        try await phoneLogin.first(from: away, timeout: .seconds(30)) { $0.loginStatus == .loggedIn }
        // Every device of bob hears where the call went (the phone at its return); alice sees bob
        // move, never an end.
        for events in [laptopEvents, phoneEvents] {
            try await events.first(from: 0, timeout: .seconds(30)) {
                if case .onCallMoved(call, DeviceID(rawValue: "mvbob-phone"), DeviceID(rawValue: "mvbob-laptop")) = $0 {
                    true
                } else {
                    false
                }
            }
        }
        try await aliceEvents.first(from: 0, timeout: .seconds(30)) {
            if case .onMemberMoved(call, UserID(rawValue: "mvbob")) = $0 { true } else { false }
        }
        #expect(laptop.callStore.state.activeCall?.callId == call)
        #expect(laptop.callStore.state.activeCall?.startTime == startTime)
        #expect(phone.callStore.state.activeCall == nil)

        // The call goes on from the laptop: its hang-up ends it for alice, one record each.
        try await laptop.callStore.hangup(callId: call)
        let ended = try await aliceEvents.first(from: 0, timeout: .seconds(30), where: isEnded)
        #expect(ended == .onCallEnded(callId: call, mediaType: .audio, reason: .hangup, userId: UserID(rawValue: "mvbob")))
        #expect(!phoneEvents.values.contains(where: isEnded))
        for events in [aliceEvents, laptopEvents] {
            let record = try #require(await events.first(from: 0, timeout: .seconds(30), where: isRecord).record)
            #expect(record.callId == call && record.result == .answered && record.startTime == startTime)
        }
        let stored = try await laptop.callStore.queryRecords(count: 10).records.filter { $0.callId == call }
        #expect(stored.count == 1)

        for client in [alice, phone, laptop] { try? await client.loginStore.logout() }
        await cluster.stop()
    }
}
