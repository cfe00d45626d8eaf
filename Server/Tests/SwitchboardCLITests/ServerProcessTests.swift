import Foundation
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

/// A real `switchboard serve` process and SDK clients on the real clock: what a server promises on a
/// network drop, on `kill -9` and on SIGTERM. The tests wait for events, never for time.
@Suite(.serialized) struct ServerProcessTests {
    static let app = "1400000001:process-test-secret"
    static let sdkAppID: SdkAppID = 1_400_000_001

    /// The wall clock in Unix ms, the clock a server process stamps records with.
    static func nowMillis() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    static func directory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-process-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    static func launch(_ directory: URL) throws -> ServerProcess {
        try ServerProcess.launch(
            binary: CLITests.binary, arguments: ["--app", app, "--database", "db.sqlite", "--reconnect-grace", "30"],
            directory: directory)
    }

    static func client(_ user: String, url: URL, device: String = "device") async throws -> SwitchboardClient {
        let client = SwitchboardClient(
            configuration: SwitchboardConfiguration(
                serverURL: url, deviceId: DeviceID(rawValue: "\(user)-\(device)"), platform: "test",
                reconnectPolicy: ReconnectPolicy(initialDelay: .milliseconds(50), maxDelay: .milliseconds(500))))
        let sig = UserSig.generate(sdkAppID: sdkAppID, secretKey: "process-test-secret", userID: user, expire: 3600)
        try await client.loginStore.login(sdkAppID: sdkAppID, userID: user, userSig: sig)
        return client
    }

    /// caller calls callee, the callee answers; returns the call id.
    static func connect(
        _ caller: SwitchboardClient, _ callee: SwitchboardClient, _ calleeName: String,
        _ callerEvents: Recorder<CallStoreEvent>, _ calleeEvents: Recorder<CallStoreEvent>
    ) async throws -> CallID {
        let call = try await caller.callStore.calls(participantIds: [calleeName], mediaType: .audio).callId
        try await calleeEvents.first(from: 0) { if case .onCallReceived(call, _, _, _, _) = $0 { true } else { false } }
        try await callee.callStore.accept(callId: call)
        try await callerEvents.first(from: 0) { if case .onCallStarted(call, _, _) = $0 { true } else { false } }
        return call
    }

    @Test func aCallSurvivesACutConnection() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try Self.launch(directory)
        let proxy = try await TCPProxy.start(targetPort: server.port)
        let alice = try await Self.client("alice", url: URL(string: "ws://127.0.0.1:\(proxy.port)/v1/ws")!)
        let bob = try await Self.client("bob", url: server.url)
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let aliceLogin = Recorder(alice.loginStore.stateUpdates)
        let call = try await Self.connect(alice, bob, "bob", aliceEvents, bobEvents)
        let startTime = try #require(alice.callStore.state.activeCall?.startTime)

        proxy.cut()
        let away = try await aliceLogin.position(after: 0) { $0.loginStatus == .reconnecting }
        try await bobEvents.first(from: 0) {
            $0 == .onMemberStatusChanged(callId: call, userId: "alice", networkQuality: .down, volumeLevel: .mute)
        }
        try await aliceLogin.first(from: away) { $0.loginStatus == .loggedIn }
        try await bobEvents.first(from: 0) {
            if case .onMemberStatusChanged(call, "alice", .unknown, _) = $0 { true } else { false }
        }
        #expect(alice.callStore.state.activeCall?.callId == call)
        #expect(alice.callStore.state.activeCall?.startTime == startTime)
        try await bob.callStore.hangup()
        #expect(
            try await aliceEvents.first(from: 0, where: isEnded)
                == .onCallEnded(callId: call, mediaType: .audio, reason: .hangup, userId: "bob"))
        proxy.stop()
        server.terminate()
        #expect(await server.waitForExit() == 0)
    }

    /// Pairs make calls in a loop while the server is killed; after a restart on the same database
    /// no acknowledged record is missing, and the calls that were open at the crash go on: the
    /// clients come back by themselves, the connected call keeps its id and start time and ends
    /// normally, the ringing call can still be answered, and each member gets one true record.
    ///
    /// The kill leaves the operating system's page cache: this proves each record was handed to
    /// the OS before its `callRecord` went out, not that it was on the disk (SQLiteDurabilityTests
    /// covers the fsync setting that a power cut relies on).
    @Test func killNineUnderLoadLosesNoAcknowledgedRecordAndNoCall() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try Self.launch(directory)
        let proxy = try await TCPProxy.start(targetPort: server.port)
        let url = URL(string: "ws://127.0.0.1:\(proxy.port)/v1/ws")!

        // A connected call and a ringing call that will be open at the crash.
        let carol = try await Self.client("carol", url: url)
        let dave = try await Self.client("dave", url: url)
        let erin = try await Self.client("erin", url: url)
        let frank = try await Self.client("frank", url: url)
        let carolEvents = Recorder(carol.callStore.events)
        let daveEvents = Recorder(dave.callStore.events)
        let erinEvents = Recorder(erin.callStore.events)
        let frankEvents = Recorder(frank.callStore.events)
        let connected = try await Self.connect(carol, dave, "dave", carolEvents, daveEvents)
        let startTime = try #require(carol.callStore.state.activeCall?.startTime)
        let ringing = try await erin.callStore.calls(participantIds: ["frank"], mediaType: .video).callId
        try await frankEvents.first(from: 0, where: isReceived)

        // Load: pairs call, answer and hang up in a loop; each acknowledged record is noted, and the
        // kill comes once at least 20 are.
        let acknowledged = NIOLockedValueBox<[UserID: Set<CallID>]>([:])
        let running = NIOLockedValueBox(true)
        let (progressStream, progress) = AsyncStream<Int>.makeStream()
        let loadProgress = Recorder(progressStream)
        var loops: [Task<Void, Never>] = []
        for pair in 0..<4 {
            let caller = try await Self.client("caller\(pair)", url: url)
            let callee = try await Self.client("callee\(pair)", url: url)
            for (user, client) in [("caller\(pair)", caller), ("callee\(pair)", callee)] {
                let events = client.callStore.events
                loops.append(
                    Task {
                        for await event in events {
                            if case .onCallRecord(let record) = event {
                                let count = acknowledged.withLockedValue { acknowledged in
                                    acknowledged[UserID(rawValue: user), default: []].insert(record.callId)
                                    return acknowledged.values.reduce(0) { $0 + $1.count }
                                }
                                progress.yield(count)
                            }
                        }
                    })
            }
            let callerEvents = Recorder(caller.callStore.events)
            let calleeEvents = Recorder(callee.callStore.events)
            loops.append(
                Task {
                    while running.withLockedValue({ $0 }) {
                        do {
                            let call = try await Self.connect(caller, callee, "callee\(pair)", callerEvents, calleeEvents)
                            try await caller.callStore.hangup(callId: call)
                            try await calleeEvents.first(from: 0) { if case .onCallEnded(call, _, _, _) = $0 { true } else { false } }
                        } catch {
                            return
                        }
                    }
                })
        }
        try await loadProgress.first(from: 0, timeout: .seconds(60)) { $0 >= 20 }

        let logins = [carol, dave].map { Recorder($0.loginStore.stateUpdates) }
        server.kill()
        running.withLockedValue { $0 = false }
        let before = acknowledged.withLockedValue { $0 }
        #expect(before.values.reduce(0) { $0 + $1.count } >= 20)

        let restarted = try Self.launch(directory)
        proxy.retarget(port: restarted.port)
        proxy.cut()

        // The clients come back by themselves and the calls go on...
        try await Self.expectBack([carol, dave], logins, in: connected)
        #expect(carol.callStore.state.activeCall?.callId == connected)
        #expect(carol.callStore.state.activeCall?.startTime == startTime)
        // ...the ringing call is answered after the restart...
        try await Self.waitUntilLoggedIn(frank)
        try await frank.callStore.accept(callId: ringing)
        try await erinEvents.first(from: 0) { if case .onCallStarted(ringing, _, _) = $0 { true } else { false } }
        // ...and both end normally, with one true record per member; the record's end lies
        // between the hang-up and the end event (server and test read the same clock).
        let hangingUp = Self.nowMillis()
        try await dave.callStore.hangup(callId: connected)
        try await erin.callStore.hangup(callId: ringing)
        for (client, events, call, by) in [
            (carol, carolEvents, connected, "dave"), (dave, daveEvents, connected, "dave"),
            (erin, erinEvents, ringing, "erin"), (frank, frankEvents, ringing, "erin"),
        ] {
            let ended = try await events.first(from: 0, timeout: .seconds(30)) {
                if case .onCallEnded(call, _, _, _) = $0 { true } else { false }
            }
            #expect(ended == .onCallEnded(callId: call, mediaType: call == connected ? .audio : .video, reason: .hangup, userId: UserID(rawValue: by)))
            let record = try #require(await events.first(from: 0) { if case .onCallRecord(let r) = $0 { r.callId == call } else { false } }.record)
            #expect(record.result == .answered && record.endReason == .hangup)
            let records = try await client.callStore.queryRecords(count: 100).records.filter { $0.callId == call }
            #expect(records.count == 1)
        }
        let carolRecord = try #require(try await carol.callStore.queryRecords(count: 100).records.first { $0.callId == connected })
        #expect(carolRecord.startTime == startTime)
        #expect(carolRecord.duration == Int((carolRecord.endTime - startTime) / 1000))
        #expect((hangingUp...Self.nowMillis()).contains(carolRecord.endTime))

        // No acknowledged record is missing.
        for (user, callIds) in before {
            // Another device of the user: the load client may be reconnecting with its own.
            let client = try await Self.client(
                user.rawValue, url: URL(string: "ws://127.0.0.1:\(restarted.port)/v1/ws")!, device: "verifier")
            var stored = Set<CallID>()
            var syncTime: Int64 = -1
            while true {
                let page = try await client.callStore.queryRecords(syncTime: syncTime, count: 100)
                stored.formUnion(page.records.map(\.callId))
                syncTime = page.syncTime
                if !page.hasMore { break }
            }
            #expect(callIds.isSubset(of: stored), "\(user) lost \(callIds.subtracting(stored).count) acknowledged records")
            try await client.loginStore.logout()
        }
        loops.forEach { $0.cancel() }
        proxy.stop()
        restarted.terminate()
        #expect(await restarted.waitForExit() == 0)
    }

    /// SIGTERM (a deploy): no call ends. Sessions get `sessionEnded` (`shuttingDown`: come back)
    /// and close 1012, a WebSocket that never logged in is closed at once with 1001 (going away);
    /// the process exits 0; started again on the same database, it restores the
    /// calls: the connected one resumes with its id and start time and ends normally with true
    /// records, the ringing one rings on and times out at its original deadline.
    @Test func sigtermKeepsEveryCallForTheNextStart() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try Self.launch(directory)
        let proxy = try await TCPProxy.start(targetPort: server.port)
        let url = URL(string: "ws://127.0.0.1:\(proxy.port)/v1/ws")!
        let alice = try await Self.client("alice", url: url)
        let bob = try await Self.client("bob", url: url)
        let erin = try await Self.client("erin", url: url)
        let frank = try await Self.client("frank", url: url)
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let erinEvents = Recorder(erin.callStore.events)
        let frankEvents = Recorder(frank.callStore.events)
        let call = try await Self.connect(alice, bob, "bob", aliceEvents, bobEvents)
        let startTime = try #require(alice.callStore.state.activeCall?.startTime)
        let ringing = try await erin.callStore.calls(
            participantIds: ["frank"], mediaType: .audio, params: CallParams(timeout: 8)
        ).callId
        try await frankEvents.first(from: 0, where: isReceived)
        let createdAt = try #require(erin.callStore.state.activeCall?.info.createdAt)
        let raw = try await RawClient(url: server.url)
        let sig = UserSig.generate(sdkAppID: Self.sdkAppID, secretKey: "process-test-secret", userID: "carol", expire: 600)
        _ = try await raw.request(LoginRequest(sdkAppID: Self.sdkAppID, userID: "carol", userSig: sig), id: "login")
        // Upgraded, answered (a ping needs no login), never logged in.
        let stranger = try await RawClient(url: server.url)
        _ = try await stranger.request(PingRequest(), id: "ping")

        let logins = [alice, bob].map { Recorder($0.loginStore.stateUpdates) }
        server.terminate()
        let ended = try await raw.frames.first(from: 0) { $0.contains("sessionEnded") }
        #expect(ended.contains("\(SwitchboardError.Code.shuttingDown.rawValue)"))
        #expect(await raw.frames.waitForEnd())
        #expect(raw.closeCode == .unknown(1012))
        #expect(await stranger.frames.waitForEnd())
        #expect(stranger.closeCode == .goingAway)
        #expect(!stranger.frames.values.contains { $0.contains("sessionEnded") })
        #expect(await server.waitForExit() == 0)

        let restarted = try Self.launch(directory)
        proxy.retarget(port: restarted.port)
        try await Self.expectBack([alice, bob], logins, in: call)
        // Nothing ended across the restart (checked after the members came back).
        for events in [aliceEvents, bobEvents] { #expect(!events.values.contains(where: isEnded)) }
        #expect(alice.callStore.state.activeCall?.callId == call)
        #expect(alice.callStore.state.activeCall?.startTime == startTime)
        let hangingUp = Self.nowMillis()
        try await alice.callStore.hangup(callId: call)
        for events in [aliceEvents, bobEvents] {
            #expect(
                try await events.first(from: 0, where: isEnded)
                    == .onCallEnded(callId: call, mediaType: .audio, reason: .hangup, userId: "alice"))
            let record = try #require(await events.first(from: 0, where: isRecord).record)
            #expect(record.result == .answered && record.endReason == .hangup && record.startTime == startTime)
            #expect(record.duration == Int((record.endTime - startTime) / 1000))
            #expect((hangingUp...Self.nowMillis()).contains(record.endTime))
        }

        // The ringing call rang on and timed out at its original deadline (8 s after it was placed).
        #expect(
            try await erinEvents.first(from: 0, timeout: .seconds(30), where: isEnded)
                == .onCallEnded(callId: ringing, mediaType: .audio, reason: .noResponse, userId: "frank"))
        let missed = try #require(await erinEvents.first(from: 0, where: isRecord).record)
        #expect(missed.endTime >= createdAt + 8_000 && missed.endTime < createdAt + 8_000 + 3_000)
        _ = try await frankEvents.first(from: 0, timeout: .seconds(30), where: isEnded)
        proxy.stop()
        restarted.terminate()
        #expect(await restarted.waitForExit() == 0)
    }

    /// A node that stays down longer than the reconnect grace ends the calls it kept, as of when it
    /// stopped, with `endByServer` and records; devices that come back hear how they ended.
    @Test func aRestartLongerThanTheGraceEndsTheCalls() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A grace of 0: any restart takes longer.
        let arguments = ["--app", Self.app, "--database", "db.sqlite", "--reconnect-grace", "0"]
        let server = try ServerProcess.launch(binary: CLITests.binary, arguments: arguments, directory: directory)
        let proxy = try await TCPProxy.start(targetPort: server.port)
        let url = URL(string: "ws://127.0.0.1:\(proxy.port)/v1/ws")!
        let alice = try await Self.client("alice", url: url)
        let bob = try await Self.client("bob", url: url)
        let aliceEvents = Recorder(alice.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let call = try await Self.connect(alice, bob, "bob", aliceEvents, bobEvents)

        server.terminate()
        #expect(await server.waitForExit() == 0)
        let restarted = try ServerProcess.launch(binary: CLITests.binary, arguments: arguments, directory: directory)
        proxy.retarget(port: restarted.port)
        for events in [aliceEvents, bobEvents] {
            #expect(
                try await events.first(from: 0, timeout: .seconds(30), where: isEnded)
                    == .onCallEnded(callId: call, mediaType: .audio, reason: .endByServer, userId: nil))
        }
        let record = try #require(try await alice.callStore.queryRecords(count: 10).records.first { $0.callId == call })
        #expect(record.result == .answered && record.endReason == .endByServer)
        proxy.stop()
        restarted.terminate()
        #expect(await restarted.waitForExit() == 0)
    }

    /// Waits until each client has dropped, logged in again and been resumed in `call` by the
    /// server: a status report, a request only a member in the call may make, goes through.
    /// (Its local state alone proves nothing: it still shows the call as it was before the drop.)
    static func expectBack(
        _ clients: [SwitchboardClient], _ logins: [Recorder<LoginStore.State>], in call: CallID
    ) async throws {
        for (client, login) in zip(clients, logins) {
            let dropped = try await login.first(from: 0, timeout: .seconds(30)) { $0.loginStatus == .reconnecting }
            _ = dropped
            let index = login.values.count
            try await login.first(from: index - 1, timeout: .seconds(30)) { $0.loginStatus == .loggedIn }
            try await client.callStore.reportStatus(packetLoss: 0, rtt: 10, bitrate: 100, audioLevel: 10)
            #expect(client.callStore.state.activeCall?.callId == call)
        }
    }

    static func waitUntilLoggedIn(_ client: SwitchboardClient) async throws {
        try await Recorder(client.loginStore.stateUpdates).first(from: 0, timeout: .seconds(30)) { $0.loginStatus == .loggedIn }
    }
}

func isEnded(_ event: CallStoreEvent) -> Bool { if case .onCallEnded = event { true } else { false } }
func isRecord(_ event: CallStoreEvent) -> Bool { if case .onCallRecord = event { true } else { false } }
func isReceived(_ event: CallStoreEvent) -> Bool { if case .onCallReceived = event { true } else { false } }
