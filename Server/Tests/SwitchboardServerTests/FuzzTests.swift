import Foundation
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

@testable import SwitchboardServer

/// A small reproducible random generator (SplitMix64).
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The fuzz budget: `SWITCHBOARD_FUZZ_SEQUENCES` sequences (default 300) of
/// `SWITCHBOARD_FUZZ_EVENTS` events (default 300); `SWITCHBOARD_FUZZ_SEED` replays one seed.
enum FuzzBudget {
    static let environment = ProcessInfo.processInfo.environment
    static let sequences = environment["SWITCHBOARD_FUZZ_SEQUENCES"].flatMap(Int.init) ?? 300
    static let events = environment["SWITCHBOARD_FUZZ_EVENTS"].flatMap(Int.init) ?? 300
    static let seed = environment["SWITCHBOARD_FUZZ_SEED"].flatMap(UInt64.init)

    /// The given seed or a random one, printed before it is used so that any run can be replayed.
    static func firstSeed(_ name: String) -> UInt64 {
        let seed = self.seed ?? UInt64.random(in: 0..<UInt64.max)
        print("\(name) fuzz: SWITCHBOARD_FUZZ_SEED=\(seed)")
        return seed
    }
}

/// Random sequences of every kind of event against the call state machine: no crash, every request
/// answered exactly once, the invariants hold after every event (no user joined in two calls, the
/// user index matches the calls, no call that should have ended), and records only for calls that
/// ended, once each.
struct StateMachineFuzzTests {
    static let users: [UserID] = ["u0", "u1", "u2", "u3", "u4", "u5", "bad user"]
    static let devices: [DeviceID] = ["d0", "d1"]

    struct Fuzzer {
        var random: SeededRandom
        var machine = CallStateMachine()
        var now: Int64 = 1_767_225_600_000
        var callCounter = 0
        var knownCalls: [CallID] = []
        var timers: [TimerKey: Int64] = [:]
        var transactions: [TransactionID] = ["t-unknown"]
        var recorded: Set<CallID> = []
        /// Recordings' takes handed over (each once).
        var takes: Set<String> = []
        var failures: [String] = []

        mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &random)] }
        mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &random) < percent }

        mutating func user() -> UserKey { UserKey(app: 1, user: pick(StateMachineFuzzTests.users)) }
        mutating func device() -> DeviceID { pick(StateMachineFuzzTests.devices) }
        mutating func callId() -> CallID { knownCalls.isEmpty || chance(5) ? "unknown-call" : pick(knownCalls) }
        mutating func someUsers() -> [UserID] {
            (0..<Int.random(in: 0...3, using: &random)).map { _ in pick(StateMachineFuzzTests.users) }
        }
        mutating func settings() -> AppSettings {
            AppSettings(
                busyPolicy: chance(50) ? .reject : .callWaiting, maxParticipants: pick([2, 3, 16]),
                blockedCallerSees: chance(50) ? .reject : .offline,
                recording: RecordingSettings(
                    policy: pick(RecordingPolicy.allCases), control: chance(50) ? .caller : .members))
        }
        mutating func command() -> CallCommand { CallCommand(user: user(), device: device(), callId: callId()) }

        /// A random event with what the engine would have looked up for it, and whether it is a
        /// request that must get exactly one reply.
        mutating func event() -> (CallEvent, CallFacts, Bool) {
            let (event, isRequest) = request()
            var facts = CallFacts()
            switch event {
            case .start, .invite:
                facts.online = Set(someUsers() + someUsers())
                facts.blockedBy = chance(10) ? Set(someUsers()) : []
            case .join:
                facts.isChatGroupMember = chance(50)
            default:
                break
            }
            return (event, facts, isRequest)
        }

        /// A random event, and whether it is a request that must get exactly one reply.
        mutating func request() -> (CallEvent, Bool) {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<14:
                callCounter += 1
                let id = CallID(rawValue: "c\(callCounter)")
                knownCalls.append(id)
                let params = CallParams(
                    roomId: chance(10) ? "bad room" : nil, timeout: chance(10) ? pick([0, 5, 601]) : nil,
                    userData: chance(5) ? String(repeating: "x", count: 2000) : nil,
                    chatGroupId: chance(30) ? "team" : nil, isEphemeralCall: chance(10), record: chance(20))
                return (
                    .start(
                        StartCallCommand(
                            caller: user(), device: device(), callId: id, generatedRoomId: RoomID(rawValue: id.rawValue),
                            request: StartCallRequest(
                                participantIds: someUsers(), mediaType: chance(50) ? .audio : .video, params: params),
                            settings: settings(), profiles: [:])), true
                )
            case 14..<28: return (.accept(command()), true)
            case 28..<36: return (.reject(command()), true)
            case 36..<48: return (.hangup(command()), true)
            case 48..<53:
                return (
                    .invite(
                        InviteCommand(
                            command: command(), invitees: someUsers(), settings: settings(), profiles: [:])), true
                )
            case 53..<58:
                return (.join(JoinCommand(command: command(), settings: settings(), profile: nil)), true)
            case 58..<61: return (.updateDevice(command(), microphoneOn: chance(50), cameraOn: nil), true)
            case 61..<65:
                let transaction = TransactionID(rawValue: "t\(callCounter)-\(Int.random(in: 0..<3, using: &random))")
                transactions.append(transaction)
                return (.changeMediaType(command(), chance(50) ? .audio : .video, transaction), true)
            case 65..<68: return (.replyMediaType(command(), pick(transactions), agree: chance(50)), true)
            case 68..<70: return (.cancelMediaType(command(), pick(transactions)), true)
            case 70..<72: return (.offerMove(command(), to: chance(50) ? nil : device()), true)
            case 72:
                if chance(50) {
                    return (.setRecording(RecordingCommand(command: command(), settings: settings(), start: chance(60))), true)
                }
                return (.take(TakeCommand(command: command(), settings: AppSettings(callPull: chance(30)))), true)
            case 73..<75:
                let report = StatusReport(
                    packetLoss: Double(Int.random(in: -5...120, using: &random)), rtt: Int.random(in: -5...900, using: &random),
                    bitrate: 100, audioLevel: Int.random(in: -5...120, using: &random))
                return (.statusReport(command(), report), true)
            case 75..<86:
                if let key = timers.keys.sorted(by: { "\($0)" < "\($1)" }).randomElement(using: &random), !chance(10) {
                    now = max(now, timers[key]!)
                    timers[key] = nil
                    return (.timerFired(key), false)
                }
                return (.timerFired(.ring(callId(), pick(StateMachineFuzzTests.users))), false)
            case 86..<88: return (.endByServer(callId()), true)
            case 88..<92: return (.deviceOffline(user(), device()), false)
            case 92..<96: return (.deviceOnline(user(), device()), false)
            case 96..<99: return (.logout(user(), device()), false)
            default: return (.deviceOffline(user(), device()), false)
            }
        }

        /// A restart: every call goes through the journal's encoding into a new machine, which
        /// restores it, as a node does after a deploy or a crash.
        mutating func restart(_ index: Int) {
            var fresh = CallStateMachine(configuration: machine.configuration)
            timers = [:]
            for call in machine.calls.values.sorted(by: { $0.id < $1.id }) {
                guard let entry = CallEngine.journalEntry(call), let read = try? CallEngine.journaledCall(entry) else {
                    failures.append("event \(index): \(call.id) does not survive the journal")
                    continue
                }
                for action in fresh.restore(read, now: now).actions {
                    if case .setTimer(let key, let deadline) = action { timers[key] = deadline }
                }
            }
            if fresh.calls.keys.sorted() != machine.calls.keys.sorted() {
                failures.append("event \(index): a restart lost calls")
            }
            machine = fresh
            let problems = machine.invariantViolations()
            if !problems.isEmpty { failures.append("event \(index) restart: \(problems)") }
        }

        mutating func step(_ index: Int) {
            now += Int64.random(in: 0...20_000, using: &random)
            if chance(1) {
                restart(index)
                return
            }
            let (event, facts, isRequest) = event()
            let output = machine.handle(event, facts: facts, now: now)
            // A request gets its answer; an event that is not a request gets none.
            if (output.reply != nil) != isRequest {
                failures.append("event \(index) \(event): \(output.reply == nil ? "no answer" : "an answer")")
            }
            for action in output.actions {
                switch action {
                case .setTimer(let key, let deadline): timers[key] = deadline
                case .cancelTimer(let key): timers[key] = nil
                case .writeRecords(let id, _):
                    if machine.calls[id] != nil { failures.append("event \(index): records for \(id), which goes on") }
                    if !recorded.insert(id).inserted { failures.append("event \(index): records for \(id) twice") }
                case .saveRecording(let take):
                    if !takes.insert(take.id).inserted { failures.append("event \(index): the take \(take.id) twice") }
                    if take.stoppedAt <= take.startedAt { failures.append("event \(index): the take \(take.id) is empty") }
                    if machine.calls[take.callId]?.recording?.take == take.take {
                        failures.append("event \(index): the take \(take.id) was handed over while it goes on")
                    }
                default: break
                }
            }
            let problems = machine.invariantViolations()
            if !problems.isEmpty { failures.append("event \(index) \(event): \(problems)") }
        }
    }

    @Test func randomEventSequencesKeepTheRules() {
        let firstSeed = FuzzBudget.firstSeed("state machine")
        let count = FuzzBudget.seed == nil ? FuzzBudget.sequences : 1
        for offset in 0..<UInt64(count) {
            let seed = firstSeed &+ offset
            var fuzzer = Fuzzer(random: SeededRandom(seed: seed))
            // Half the seeds on a server with an SFU that records (recorded calls, takes, sessions).
            if seed % 2 == 1 {
                var configuration = CallStateMachine.Configuration()
                configuration.sfu = true
                configuration.recording = true
                fuzzer.machine = CallStateMachine(configuration: configuration)
            }
            for index in 0..<FuzzBudget.events {
                fuzzer.step(index)
                if !fuzzer.failures.isEmpty { break }
            }
            #expect(fuzzer.failures.isEmpty, "seed \(seed) (SWITCHBOARD_FUZZ_SEED=\(seed)): \(fuzzer.failures.prefix(3))")
            if !fuzzer.failures.isEmpty { return }
        }
    }
}

/// Mutated frames at a live server: every frame is answered exactly once, the connection stays
/// open, and a call in progress on another connection is not disturbed.
struct FrameFuzzTests {
    static func goldenRequests() throws -> [String] {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("SwitchboardProtocolTests/Golden")
        return try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasPrefix("request.") && $0 != "request.logout.json" }
            .sorted()
            .map { try String(contentsOf: directory.appendingPathComponent($0), encoding: .utf8) }
    }

    static func mutate(_ frame: String, _ random: inout SeededRandom) -> String {
        var bytes = Array(frame.utf8)
        switch Int.random(in: 0..<7, using: &random) {
        case 0:  // flip bytes
            for _ in 0..<Int.random(in: 1...4, using: &random) where !bytes.isEmpty {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
        case 1:  // truncate
            bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random)))
        case 2:  // swap a value for another JSON value
            let values = ["null", "true", "-1", "1e400", "\"\"", "[]", "{}", "\"\\u0000\"", "99999999999999999999"]
            if let colon = bytes.indices.filter({ bytes[$0] == UInt8(ascii: ":") }).randomElement(using: &random) {
                let end = bytes[(colon + 1)...].firstIndex { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "}") } ?? bytes.count
                bytes.replaceSubrange((colon + 1)..<end, with: Array(values.randomElement(using: &random)!.utf8))
            }
        case 3:  // deep nesting
            let depth = Int.random(in: 100...3000, using: &random)
            bytes = Array(#"{"id":"deep","type":"ping","data":"#.utf8) + Array(repeating: UInt8(ascii: "["), count: depth)
                + Array(repeating: UInt8(ascii: "]"), count: depth) + [UInt8(ascii: "}")]
        case 4:  // duplicate keys and unknown fields
            bytes = Array(frame.replacingOccurrences(of: "\"data\":", with: "\"data\":{},\"x\":1,\"data\":").utf8)
        case 5:  // random bytes
            bytes = (0..<Int.random(in: 0...200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        default:  // another type
            let types = ["call.start", "call.join", "records.query", "ping", "login", "nope", ""]
            bytes = Array(
                frame.replacingOccurrences(
                    of: #""type":"[^"]*""#, with: "\"type\":\"\(types.randomElement(using: &random)!)\"",
                    options: .regularExpression
                ).utf8)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func everyMutatedFrameIsAnsweredOnce() async throws {
        let server = try await TestServer.start { $0.rateLimits.disabled = true }
        let seed = FuzzBudget.firstSeed("frame")
        var random = SeededRandom(seed: seed)
        let golden = try Self.goldenRequests()

        let bob = try await server.client("bob")
        let carol = try await server.client("carol")
        let carolEvents = Recorder(carol.callStore.events)
        let call = try await bob.callStore.calls(participantIds: ["carol"], mediaType: .audio)
        try await carolEvents.first(from: 0) { if case .onCallReceived = $0 { true } else { false } }
        try await carol.callStore.accept()

        let raw = try await RawClient(url: server.url)
        _ = try await raw.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: "fuzzer", userSig: server.userSig("fuzzer")), id: "login")
        let frames = max(200, FuzzBudget.sequences * 3)
        let before = raw.frames.values.count
        for _ in 0..<frames {
            raw.send(Self.mutate(golden.randomElement(using: &random)!, &random))
        }
        // A ping after the storm: once it is answered, everything before it was too (answers are in order).
        let sent = raw.frames.values.count
        raw.send(try SwitchboardJSON.encodeString(RequestEnvelope(id: "after-the-storm", data: PingRequest())))
        // The wait only guards against a hang (a minute per 100,000 frames); the budget is the
        // number of frames.
        let pong = try await raw.frames.first(from: sent, timeout: .seconds(60 + frames / 1000)) {
            $0.contains("after-the-storm")
        }
        let ping = RawClient.object(pong) ?? [:]
        #expect(ping["result"] != nil, "seed \(seed)")
        let answers = raw.frames.values.dropFirst(before).filter { RawClient.object($0)?["event"] == nil }
        // Every frame and the final ping: one answer each (frames that were not text JSON included).
        #expect(answers.count == frames + 1, "seed \(seed) (SWITCHBOARD_FUZZ_SEED=\(seed))")
        #expect(!raw.frames.isFinished)

        #expect(bob.callStore.state.activeCall?.callId == call.callId)
        try await bob.callStore.hangup()
        try await carolEvents.first(from: 0) { if case .onCallEnded = $0 { true } else { false } }
        raw.close()
        await server.stop()
    }
}
