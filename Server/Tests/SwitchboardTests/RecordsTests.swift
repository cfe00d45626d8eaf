import Foundation
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

struct RecordsTests {
    /// 12 rejected calls alice → bob, then paging both ways and deleting, each user seeing only their own.
    @Test func pagingAndDeletingOnesOwnRecords() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        var callIds: [CallID] = []
        for _ in 0..<12 {
            let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
            try await bobEvents.first(from: 0) { if case .onCallReceived(call.callId, _, _, _, _) = $0 { true } else { false } }
            try await bob.callStore.reject()
            try await aliceEvents.first(from: 0) { if case .onCallRecord(let r) = $0 { r.callId == call.callId } else { false } }
            try await bobEvents.first(from: 0) { if case .onCallRecord(let r) = $0 { r.callId == call.callId } else { false } }
            callIds.append(call.callId)
            // Six seconds apart: a user is rung by at most 10 invitations a minute after a burst
            // of 5 (`invitations-per-callee`).
            server.clock.advance(by: .seconds(6))
        }

        var newestFirst: [CallID] = []
        var syncTime: Int64 = -1
        while true {
            let page = try await alice.callStore.queryRecords(syncTime: syncTime, count: 5, order: .descending)
            #expect(page.records.count <= 5)
            newestFirst += page.records.map(\.callId)
            syncTime = page.syncTime
            if !page.hasMore { break }
        }
        #expect(newestFirst == callIds.reversed())

        let oldest = try await alice.callStore.queryRecords(syncTime: -1, count: 100, order: .ascending)
        #expect(oldest.records.map(\.callId) == callIds)
        #expect(!oldest.hasMore)
        #expect(oldest.records.allSatisfy { $0.result == .rejected && $0.direction == .outgoing })

        await expectError(.invalidRecordCount) { _ = try await alice.callStore.queryRecords(count: 0) }
        await expectError(.tooManyCallIDs) {
            try await alice.callStore.deleteRecords(callIds: (0...100).map { CallID(rawValue: "c\($0)") })
        }

        // alice deletes her records of two calls; bob's records of the same calls stay.
        #expect(try await alice.callStore.deleteRecords(callIds: Array(callIds.prefix(2))) == 2)
        #expect(try await alice.callStore.deleteRecords(callIds: Array(callIds.prefix(2))) == 0)
        #expect(try await alice.callStore.queryRecords(count: 100).records.map(\.callId) == Array(callIds.dropFirst(2).reversed()))
        #expect(try await bob.callStore.queryRecords(count: 100).records.map(\.callId) == callIds.reversed())
        // bob deletes his record of a call alice still has a record of; hers stays.
        #expect(try await bob.callStore.deleteRecords(callIds: [callIds[5]]) == 1)
        #expect(try await alice.callStore.queryRecords(count: 100).records.map(\.callId).contains(callIds[5]))
        #expect(try await alice.callStore.deleteAllRecords() == 10)
        #expect(try await alice.callStore.queryRecords().records.isEmpty)
        #expect(try await bob.callStore.queryRecords(count: 100).records.count == 11)
        await server.stop()
    }

    @Test func recordsSurviveARestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-restart-\(UUID().uuidString)")
        let clock = TestClock()
        let server = try await TestServer.start(clock: clock, directory: directory)
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .audio)
        try await bobEvents.first(from: 0, where: isReceived)
        try await bob.callStore.reject()
        try await aliceEvents.first(from: 0, where: isRecord)
        let app = server.app
        await server.stopKeepingFiles()

        // The same database: the development app and the record are still there.
        let again = try await TestServer.start(clock: clock, directory: directory)
        #expect(again.app == app)
        let aliceAgain = try await again.client("alice")
        #expect(try await aliceAgain.callStore.queryRecords().records.map(\.callId) == [call.callId])
        await again.stop()
    }
}

struct DemoTests {
    /// Plays `switchboard demo` against a server with the test clock: every pause advances time
    /// instead of sleeping. Returns whether it passed and what it printed.
    static func play(_ scenario: Demo.Scenario) async throws -> (passed: Bool, output: String) {
        let server = try await TestServer.start()
        let lines = NIOLockedValueBox<[String]>([])
        let clock = server.clock
        let demo = Demo(
            serverURL: server.url, sdkAppID: server.app.sdkAppID, clock: clock,
            userSig: { server.userSig($0) }, pause: { clock.advance(by: $0) },
            output: { line in lines.withLockedValue { $0.append(line) } })
        let passed = await demo.run(scenario)
        await server.stop()
        return (passed, lines.withLockedValue { $0 }.joined(separator: "\n"))
    }

    @Test func theBasicDemoPasses() async throws {
        let (passed, output) = try await Self.play(.basic)
        #expect(passed, "\(output)")
        #expect(output.contains("demo passed"))
        #expect(output.contains("reason=noResponse"))
        #expect(output.contains("hangs up after 2 s"))
    }

    @Test func theGroupDemoPasses() async throws {
        let (passed, output) = try await Self.play(.group)
        #expect(passed, "\(output)")
        #expect(output.contains("refused: joinNotAllowed"))
    }
}
