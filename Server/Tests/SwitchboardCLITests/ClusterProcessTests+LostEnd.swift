import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

/// A call's end told to its members but not yet stored when the node that decides calls dies
/// (`kill -9`): the next leader restores the call from the journal as it last stored it and
/// resumes it for the members' devices, which heard it end. They hang it up instead of showing it
/// again (the SDK's rule, `CallStore.State.refuseResumption`), so nobody is left in a call that
/// ended, the next call goes through, and the call gets its records.
extension ClusterProcessTests {
    @Test func anEndTheLeaderDiedBeforeStoringDoesNotComeBack() async throws {
        // Commits at least a second apart: an end that comes right after a commit waits for the
        // next one, and the kill lands in that second.
        let cluster = try await Cluster.start(count: 3, extra: ["--commit-interval", "1000"])
        let ports = cluster.ports
        let leader = try #require(try await cluster.leaderIndex())
        let alice = try await Self.client("lealice", home: (leader + 1) % 3, ports: ports)
        let bob = try await Self.client("lebob", home: (leader + 2) % 3, ports: ports)
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let call = try await ServerProcessTests.connect(alice, bob, "lebob", aliceEvents, bobEvents)
        // The answered call is in the journal (it has its start time): that commit just happened.
        _ = try await WebhookProcessTests.eventually { () async throws -> Bool? in
            try await PostgresTestDatabase.journalEntry(of: call.rawValue, in: cluster.database)?.contains("\"startTime\":") == true
                ? true : nil
        }
        try await bob.callStore.hangup(callId: call)
        try await aliceEvents.first(from: 0, timeout: .seconds(10)) { if case .onCallEnded(call, _, .hangup, _) = $0 { true } else { false } }
        cluster.kill(leader)
        _ = try await WebhookProcessTests.eventually { () async -> Int? in
            guard let index = try? await cluster.leaderIndex(), index != leader else { return nil }
            return index
        }

        // Whether or not the end was lost, the call ends with records for both, and after them
        // nobody is in it.
        for events in [aliceEvents, bobEvents] {
            let record = try #require(await events.first(from: 0, timeout: .seconds(30)) { $0.record?.callId == call }.record)
            #expect(record.result == .answered)
        }
        #expect(alice.callStore.state.activeCall == nil && bob.callStore.state.activeCall == nil)
        // The next call goes through (a resumed call would make alice alreadyInCall, bob busy).
        let next = try await WebhookProcessTests.eventually { () async throws -> CallID? in
            do {
                return try await alice.callStore.calls(participantIds: ["lebob"], mediaType: .audio).callId
            } catch let error as SwitchboardError where error.code == .storageUnavailable {
                return nil
            }
        }
        try await bobEvents.first(from: 0, timeout: .seconds(30)) { if case .onCallReceived(next, _, _, _, _) = $0 { true } else { false } }
        try await alice.callStore.hangup(callId: next)

        for client in [alice, bob] { try? await client.loginStore.logout() }
        await cluster.stop()
    }
}
