import Foundation
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Webhooks between real processes, on the real clock: `switchboard serve` posts to a receiver in
/// another process (Python's `http.server`) that answers 500 to a fifth of the requests, answers
/// some slowly, and is down for a while; calls of every outcome run meanwhile, and the server is
/// killed with `kill -9` mid-run and started again on the same database. Every call gets every
/// event it should, each taken at least once and in order, signed; an event id always names the
/// same body; nothing is reported for a call that did not happen.
@Suite(.serialized) struct WebhookProcessTests {
    static let secret = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

    /// The receiver: prints `listening PORT`, then one JSON line per request (once its answer is
    /// decided, before it is sent). A request is answered 500 when its id hashes into the failing fifth and it is that
    /// id's first or second attempt, and slowly (0.3 s) for another tenth of first attempts.
    static let receiverScript = #"""
        import hashlib, http.server, json, sys, threading, time
        seen = {}
        lock = threading.Lock()
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                ident = self.headers.get("webhook-id", "")
                with lock:
                    attempt = seen.get(ident, 0)
                    seen[ident] = attempt + 1
                h = int(hashlib.sha256(ident.encode()).hexdigest()[:8], 16)
                status = 500 if h % 5 == 0 and attempt < 2 else 200
                # Written before the answer: a receiver killed in between has its line, and the
                # server, with no answer, sends it again (at least once).
                line = json.dumps({"id": ident, "ts": self.headers.get("webhook-timestamp"),
                                   "sig": self.headers.get("webhook-signature"), "body": body.decode(), "status": status})
                with lock:
                    sys.stdout.write(line + "\n")
                    sys.stdout.flush()
                if h % 10 == 1 and attempt == 0:
                    time.sleep(0.3)
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()
            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
        print("listening", server.server_address[1], flush=True)
        server.serve_forever()
        """#

    struct Delivery: Sendable, Decodable {
        var id: String
        var ts: String?
        var sig: String?
        var body: String
        var status: Int
        var event: WebhookEvent? { try? SwitchboardJSON.decode(WebhookEvent.self, from: Data(body.utf8)) }
    }

    /// A receiver process and what it printed, as a stream that outlives its restarts.
    final class Receiver: Sendable {
        let deliveries: Recorder<Delivery>
        private let sink: AsyncStream<Delivery>.Continuation
        private let script: URL
        private let process = NIOLockedValueBox<ChildProcess?>(nil)
        let port = NIOLockedValueBox(0)

        init(directory: URL) throws {
            script = directory.appendingPathComponent("receiver.py")
            try WebhookProcessTests.receiverScript.write(to: script, atomically: true, encoding: .utf8)
            let (stream, sink) = AsyncStream<Delivery>.makeStream()
            self.sink = sink
            deliveries = Recorder(stream)
        }

        /// Starts the process (on the port it had before, if any) and returns once it listens.
        func start() throws {
            let child = try ChildProcess(
                executable: URL(fileURLWithPath: "/usr/bin/env"),
                arguments: ["python3", script.path, String(port.withLockedValue { $0 })], output: .pipe, error: .null)
            let stdout = child.output!
            var buffer = Data()
            func line() -> String? {
                while true {
                    if let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                        let text = String(decoding: buffer[..<end], as: UTF8.self)
                        buffer.removeSubrange(...end)
                        return text
                    }
                    let chunk = stdout.availableData
                    if chunk.isEmpty { return nil }
                    buffer.append(chunk)
                }
            }
            guard let first = line(), first.hasPrefix("listening "), let listening = Int(first.dropFirst(10)) else {
                child.killAndReap()
                throw ChildProcessError(description: "the receiver did not start")
            }
            port.withLockedValue { $0 = listening }
            process.withLockedValue { $0 = child }
            let sink = self.sink
            let rest = buffer
            Thread.detachNewThread {
                var buffer = rest
                while true {
                    while let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                        if let delivery = try? JSONDecoder().decode(Delivery.self, from: buffer[..<end]) { sink.yield(delivery) }
                        buffer.removeSubrange(...end)
                    }
                    let chunk = stdout.availableData
                    if chunk.isEmpty { return }
                    buffer.append(chunk)
                }
            }
        }

        /// `kill -9`: the receiver is down (connections are refused) until ``start()``.
        func kill() { _ = process.withLockedValue { $0?.killAndReap() } }

        var url: String { "http://127.0.0.1:\(port.withLockedValue { $0 })/hooks" }
    }

    /// The reconnect grace is 30 s, as in `ServerProcessTests`: after the `kill -9` the call on
    /// the server must outlast its restart and both clients' reconnects, which a loaded run made
    /// take longer than 5 s (the grace counts from the last alive mark, up to 5 s before the kill).
    static func launch(_ directory: URL, receiver: Receiver, port: Int = 0) throws -> ServerProcess {
        try ServerProcess.launch(
            binary: CLITests.binary, port: port,
            arguments: [
                "--app", ServerProcessTests.app, "--database", "db.sqlite", "--reconnect-grace", "30",
                "--admin-secret", "process-admin", "--webhook", receiver.url, "--webhook-secret", secret,
                "--webhook-allow", "127.0.0.0/8", "--webhook-retry-initial-ms", "50", "--webhook-retry-max-ms", "400",
                "--webhook-timeout-ms", "2000", "--no-rate-limits",
            ],
            directory: directory)
    }

    /// One call of each outcome between a pair (and a third user for the group's join): answered
    /// with a media change, rejected, canceled, not answered in time, to someone offline.
    static func calls(
        _ a: SwitchboardClient, _ b: SwitchboardClient, _ bName: String, _ aEvents: Recorder<CallStoreEvent>,
        _ bEvents: Recorder<CallStoreEvent>, made: @Sendable (CallID) -> Void
    ) async throws {
        func ringing(_ call: CallID) async throws {
            try await bEvents.first(from: 0, timeout: .seconds(30)) { if case .onCallReceived(call, _, _, _, _) = $0 { true } else { false } }
        }
        // Ended, and durable: a call's `callRecord` is the server's promise that its end (records,
        // journal, webhook events) is committed. `callEnded` comes before that commit, and a node
        // killed between the two loses the end (docs/ARCHITECTURE.md, "Cluster"): the test kills
        // the leader right after a round, so a round waits for the promise.
        func ended(_ call: CallID, _ events: Recorder<CallStoreEvent>) async throws {
            try await events.first(from: 0, timeout: .seconds(30)) { if case .onCallEnded(call, _, _, _) = $0 { true } else { false } }
            try await events.first(from: 0, timeout: .seconds(30)) { $0.record?.callId == call }
        }
        // Answered, switched to video, hung up.
        let answered = try await a.callStore.calls(participantIds: [bName], mediaType: .audio).callId
        made(answered)
        try await ringing(answered)
        try await b.callStore.accept(callId: answered)
        try await aEvents.first(from: 0, timeout: .seconds(30)) { if case .onCallStarted(answered, _, _) = $0 { true } else { false } }
        let change = try await a.callStore.requestMediaTypeChange(to: .video, callId: answered)
        try await bEvents.first(from: 0, timeout: .seconds(30)) {
            if case .onMediaTypeChangeRequested(answered, change, _, _) = $0 { true } else { false }
        }
        try await b.callStore.replyMediaTypeChange(transactionId: change, agree: true)
        try await b.callStore.hangup(callId: answered)
        try await ended(answered, aEvents)
        // Rejected.
        let rejected = try await a.callStore.calls(participantIds: [bName], mediaType: .audio).callId
        made(rejected)
        try await ringing(rejected)
        try await b.callStore.reject(callId: rejected)
        try await ended(rejected, aEvents)
        // Canceled by the caller while it rang.
        let canceled = try await a.callStore.calls(participantIds: [bName], mediaType: .video).callId
        made(canceled)
        try await ringing(canceled)
        try await a.callStore.hangup(callId: canceled)
        try await ended(canceled, aEvents)
        // Not answered within its one-second timeout.
        let missed = try await a.callStore.calls(
            participantIds: [bName], mediaType: .audio, params: CallParams(timeout: 1)).callId
        made(missed)
        try await ended(missed, aEvents)
        // To someone never logged in: offline.
        let offline = try await a.callStore.calls(participantIds: ["nobody-\(bName)"], mediaType: .audio).callId
        made(offline)
        try await ended(offline, aEvents)
    }

    @Test func everyCallsEventsArriveInOrderThroughFailuresADownReceiverAndAKillNine() async throws {
        let directory = try ServerProcessTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let receiver = try Receiver(directory: directory)
        try receiver.start()
        defer { receiver.kill() }
        var server = try Self.launch(directory, receiver: receiver)
        let port = server.port
        let url = server.url

        let made = NIOLockedValueBox<Set<CallID>>([])
        let record: @Sendable (CallID) -> Void = { call in _ = made.withLockedValue { $0.insert(call) } }
        var clients: [SwitchboardClient] = []
        func pair(_ index: Int) async throws -> (SwitchboardClient, SwitchboardClient, Recorder<CallStoreEvent>, Recorder<CallStoreEvent>) {
            let a = try await ServerProcessTests.client("wa\(index)", url: url)
            let b = try await ServerProcessTests.client("wb\(index)", url: url)
            clients += [a, b]
            return (a, b, Recorder(a.callStore.events), Recorder(b.callStore.events))
        }
        // Ten pairs, four rounds of five calls each: 200 calls, and one more across the kill.
        var pairs: [(SwitchboardClient, SwitchboardClient, Recorder<CallStoreEvent>, Recorder<CallStoreEvent>)] = []
        for index in 0..<10 { pairs.append(try await pair(index)) }
        let blocker = try await ServerProcessTests.client("wblocker", url: url)
        clients.append(blocker)

        // A round of every outcome per pair, and a block list change.
        func round() async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, (a, b, aEvents, bEvents)) in pairs.enumerated() {
                    group.addTask { try await Self.calls(a, b, "wb\(index)", aEvents, bEvents, made: record) }
                }
                for try await _ in group {}
            }
        }
        try await round()
        _ = try await blocker.callStore.blockUsers(["wa0", "wa1"])

        // The receiver goes down; a round happens meanwhile; it comes back on the same port, and
        // another round follows.
        receiver.kill()
        try await round()
        try receiver.start()
        try await round()
        try await round()
        #expect(made.withLockedValue { $0.count } == 200)

        // A call is connected when the server is killed (and the last rounds' deliveries are
        // still going out): after the restart it resumes and ends.
        let (a, b, aEvents, bEvents) = pairs[0]
        let open = try await a.callStore.calls(participantIds: ["wb0"], mediaType: .audio).callId
        record(open)
        try await bEvents.first(from: 0, timeout: .seconds(30)) { if case .onCallReceived(open, _, _, _, _) = $0 { true } else { false } }
        try await b.callStore.accept(callId: open)
        try await aEvents.first(from: 0, timeout: .seconds(30)) { if case .onCallStarted(open, _, _) = $0 { true } else { false } }
        // The answer is stored (its event went out: they commit together). A change the server had
        // not stored yet when it died is gone with its events (docs/WEBHOOKS.md).
        try await receiver.deliveries.first(from: 0, timeout: .seconds(30)) {
            $0.status == 200 && $0.event?.type == .memberAnswered && $0.event?.data.callId == open
        }
        let login = Recorder(a.loginStore.stateUpdates)
        server.kill()
        server = try Self.launch(directory, receiver: receiver, port: port)
        try await login.first(from: 0, timeout: .seconds(30)) { $0.loginStatus == .reconnecting }
        try await login.first(from: login.values.count - 1, timeout: .seconds(30)) { $0.loginStatus == .loggedIn }
        try await a.callStore.hangup(callId: open)
        try await aEvents.first(from: 0, timeout: .seconds(30)) { if case .onCallEnded(open, _, _, _) = $0 { true } else { false } }
        _ = try await blocker.callStore.unblockUsers(["wa1"])

        // Every call's end and records reach the receiver.
        let calls = made.withLockedValue { $0 }
        for call in calls {
            try await receiver.deliveries.first(from: 0, timeout: .seconds(60)) {
                $0.status == 200 && $0.event?.type == .callEnded && $0.event?.data.callId == call
            }
        }
        try await receiver.deliveries.first(from: 0, timeout: .seconds(60)) { $0.status == 200 && $0.event?.type == .userUnblocked }

        try Self.check(receiver.deliveries.values, calls: calls)

        for client in clients { try? await client.loginStore.logout() }
        server.terminate()
        #expect(await server.waitForExit() == 0)
    }

    /// What every run must show: each request signed, an id always naming the same body, some
    /// failures, only the calls that were made, each call's events taken in order from its
    /// `call.created` with one `call.ended`, and every event type.
    static func check(_ all: [Delivery], calls: Set<CallID>) throws {
        var bodies: [String: String] = [:]
        for delivery in all {
            try WebhookSignature.verify(
                id: delivery.id, timestamp: delivery.ts, signature: delivery.sig, body: Data(delivery.body.utf8),
                secrets: [Self.secret], now: Int64(Date().timeIntervalSince1970))
            if let body = bodies[delivery.id] { #expect(body == delivery.body, "\(delivery.id) changed") }
            bodies[delivery.id] = delivery.body
        }
        #expect(all.contains { $0.status == 500 }, "the receiver failed some")
        let taken = all.filter { $0.status == 200 }.compactMap(\.event)
        var byCall: [CallID: [WebhookEvent]] = [:]
        for event in taken { if let call = event.data.callId { byCall[call, default: []].append(event) } }
        // Nothing invented: only the calls the clients made.
        #expect(Set(byCall.keys) == calls)
        for (call, events) in byCall {
            // In order: the first time each sequence was taken, they come 1, 2, 3, … with no gap.
            var firsts: [Int] = []
            for event in events where !firsts.contains(event.data.sequence ?? -1) { firsts.append(event.data.sequence ?? -1) }
            #expect(firsts == Array(1...firsts.count), "\(call): \(firsts)")
            let types = events.compactMap(\.type)
            #expect(types.first == .callCreated && types.contains(.callEnded))
            #expect(Set(events.filter { $0.type == .callEnded }.map(\.id)).count == 1)
        }
        let expected: Set<WebhookEventType> = [
            .callCreated, .memberInvited, .memberRinging, .memberAnswered, .memberRejected, .memberMissed, .memberLeft,
            .mediaTypeChanged, .callEnded, .recordWritten, .userBlocked, .userUnblocked,
        ]
        let seen = Set(taken.compactMap(\.type))
        #expect(expected.isSubset(of: seen), "missing \(expected.subtracting(seen))")
    }

    /// Three nodes on one PostgreSQL database, every one sending: the leader is killed with
    /// `kill -9` while deliveries are pending; the others take over its claims once they lapse
    /// and its calls' engine; every call's events still arrive in order, none invented, and an
    /// event taken twice (at least once) only around the kill.
    @Test(.enabled(if: PostgresTestDatabase.isAvailable)) func aClusterSendsEveryEventOnceThroughTheLeadersKill() async throws {
        let directory = try ServerProcessTests.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let receiver = try Receiver(directory: directory)
        try receiver.start()
        defer { receiver.kill() }
        let database = try await PostgresTestDatabase.create()
        var nodes: [ServerProcess] = []
        for index in 0..<3 {
            nodes.append(
                try ServerProcess.launch(
                    binary: CLITests.binary,
                    arguments: [
                        "--app", ServerProcessTests.app, "--database", database, "--node-id", "node\(index)",
                        "--reconnect-grace", "5", "--webhook", receiver.url, "--webhook-secret", Self.secret,
                        "--webhook-allow", "127.0.0.0/8", "--webhook-retry-initial-ms", "50", "--webhook-retry-max-ms",
                        "400", "--webhook-timeout-ms", "2000", "--no-rate-limits",
                    ], directory: directory))
        }
        // Which node leads (it runs the calls); the clients use the two others.
        let health = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(nodes[1].port)/health")!).0
        let leaderName = try #require((try JSONSerialization.jsonObject(with: health) as? [String: Any])?["leader"] as? String)
        let leader = try #require((0..<3).first { leaderName.hasPrefix("node\($0)") })
        let others = (0..<3).filter { $0 != leader }.map { nodes[$0].url }

        let made = NIOLockedValueBox<Set<CallID>>([])
        let record: @Sendable (CallID) -> Void = { call in _ = made.withLockedValue { $0.insert(call) } }
        var clients: [SwitchboardClient] = []
        var pairs: [(SwitchboardClient, SwitchboardClient, Recorder<CallStoreEvent>, Recorder<CallStoreEvent>)] = []
        // Ten pairs, two rounds of five calls each before the kill and two after: 200 calls.
        for index in 0..<10 {
            let a = try await ServerProcessTests.client("ca\(index)", url: others[index % 2])
            let b = try await ServerProcessTests.client("cb\(index)", url: others[(index + 1) % 2])
            clients += [a, b]
            pairs.append((a, b, Recorder(a.callStore.events), Recorder(b.callStore.events)))
        }
        let blocker = try await ServerProcessTests.client("cblocker", url: others[0])
        clients.append(blocker)
        func round() async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, (a, b, aEvents, bEvents)) in pairs.enumerated() {
                    group.addTask { try await Self.calls(a, b, "cb\(index)", aEvents, bEvents, made: record) }
                }
                for try await _ in group {}
            }
        }
        try await round()
        try await round()
        _ = try await blocker.callStore.blockUsers(["ca0"])
        // The receiver is down, so deliveries wait on every node; the leader dies meanwhile.
        receiver.kill()
        nodes[leader].kill()
        try receiver.start()
        // A new leader, known to both nodes the clients use (a command forwarded to the dead one
        // meanwhile is refused with storageUnavailable, "try again"): calls go on.
        let newLeader = try await Self.eventually { () async -> String? in
            var names: Set<String> = []
            for index in 0..<3 where index != leader {
                let data = try? await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(nodes[index].port)/health")!).0
                let name = data.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }?["leader"] as? String
                names.insert(name ?? "none")
            }
            guard names.count == 1, let name = names.first, name != leaderName, name != "none" else { return nil }
            return name
        }
        #expect(newLeader != leaderName)
        try await round()
        try await round()
        #expect(made.withLockedValue { $0.count } == 200)
        _ = try await blocker.callStore.unblockUsers(["ca0"])

        let calls = made.withLockedValue { $0 }
        for call in calls {
            try await receiver.deliveries.first(from: 0, timeout: .seconds(60)) {
                $0.status == 200 && $0.event?.type == .callEnded && $0.event?.data.callId == call
            }
        }
        try await receiver.deliveries.first(from: 0, timeout: .seconds(60)) { $0.status == 200 && $0.event?.type == .userUnblocked }
        let all = receiver.deliveries.values
        try Self.check(all, calls: calls)
        // Taken twice only when a node died between the receiver's answer and recording it: at
        // most the attempts the killed node had in flight (8), plus the outcomes it gathered for
        // its next round (at most a round's worth, 8) and those it was committing (8).
        var takenCount: [String: Int] = [:]
        for delivery in all where delivery.status == 200 { takenCount[delivery.id, default: 0] += 1 }
        #expect(takenCount.values.filter { $0 > 1 }.count <= 24)

        for client in clients { try? await client.loginStore.logout() }
        for (index, node) in nodes.enumerated() where index != leader { node.terminate() }
    }

    static func eventually<T>(_ probe: () async throws -> T?) async throws -> T {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let value = try await probe() { return value }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ChildProcessError(description: "not within 30 s")
    }
}
