import Foundation
import NIOConcurrencyHelpers
import NIOCore
import SwitchboardProtocol

// MARK: - echo: the floor

struct EchoReport: Codable {
    var messages: Int
    var messageBytes: Int
    /// The pause between a reply and the next message (0: back to back, the threads never sleep).
    var intervalMicros: Int
    var roundTrip: LatencySummary
    var messagesPerSecond: Double
}

/// Sequential round trips of `payload` through a WebSocket echo server, sent and timed on the
/// event loop (no thread hop in the measured path). The first tenth warms up and is not recorded.
/// With an `interval`, each message waits that long after the previous reply, so the threads on the
/// path (the client's and the server's) can go to sleep and are woken by the message.
func measureEcho(
    host: String, port: Int, messages: Int, payload: String, source: String?, group: any EventLoopGroup,
    interval: TimeAmount = .zero
) async throws -> EchoReport {
    final class Loop: Sendable {
        let state = NIOLockedValueBox<(sentAt: UInt64, remaining: Int, warmup: Int)>((0, 0, 0))
        let socket = NIOLockedValueBox<BenchSocket?>(nil)
        let done = NIOLockedValueBox<CheckedContinuation<Void, any Error>?>(nil)
    }
    let loop = Loop()
    let recorder = LatencyRecorder()
    let warmup = max(1, messages / 10)
    let socket = try await BenchSocket.connect(
        host: host, port: port, path: "/v1/ws", localAddress: source, group: group,
        onText: { _, received in
            let next = loop.state.withLockedValue { state -> Bool in
                if state.warmup > 0 {
                    state.warmup -= 1
                } else {
                    recorder.record(nanos: received - state.sentAt)
                    state.remaining -= 1
                }
                return state.remaining > 0
            }
            if next, let socket = loop.socket.withLockedValue({ $0 }) {
                let send: @Sendable () -> Void = {
                    loop.state.withLockedValue { $0.sentAt = monotonicNanos() }
                    socket.send(payload)
                }
                if interval > .zero {
                    socket.channel.eventLoop.scheduleTask(in: interval, send)
                } else {
                    send()
                }
            } else {
                loop.done.withLockedValue { $0.take() }?.resume()
            }
        },
        onClose: { loop.done.withLockedValue { $0.take() }?.resume(throwing: BenchError("the echo server closed")) })
    loop.socket.withLockedValue { $0 = socket }
    loop.state.withLockedValue { $0 = (0, messages, warmup) }
    let started = monotonicNanos()
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        loop.done.withLockedValue { $0 = continuation }
        socket.channel.eventLoop.execute {
            loop.state.withLockedValue { $0.sentAt = monotonicNanos() }
            socket.send(payload)
        }
    }
    let seconds = Double(monotonicNanos() - started) / 1e9
    socket.close()
    return EchoReport(
        messages: messages, messageBytes: payload.utf8.count, intervalMicros: Int(interval.nanoseconds / 1000),
        roundTrip: recorder.summary,
        messagesPerSecond: (Double(messages + warmup) / seconds).rounded())
}

// MARK: - calls: invite and lifecycle

/// Pairs of logged-in users placing whole calls: the caller sends `call.start`, the callee answers
/// the moment the invitation arrives, the caller hangs up the moment the call connects (or after
/// `hold`). Each step
/// is timed across the two connections with one monotonic clock; every frame is sent and timed on
/// the event loop.
final class CallLoad: Sendable {
    struct Pair: Sendable {
        var caller: BenchClient
        var callee: BenchClient
    }

    struct PairState {
        var busy = false
        var startSent: UInt64 = 0
        var acceptSent: UInt64 = 0
        var hangupSent: UInt64 = 0
        var callId: String?
        var callerEnded: UInt64?
        var calleeEnded: UInt64?
        var serial = 0
    }

    struct Counters: Codable {
        var started = 0
        var completed = 0
        var errors = 0
        /// A call was due but every pair was still busy: the load could not keep the rate.
        var noIdlePair = 0
        /// Calls that did not finish within 5 s of the end of the step.
        var unfinished = 0
        /// Hang-ups whose two records were acknowledged (`callRecord`: committed with fsync).
        var recordsAcknowledged = 0
        var recordsMissing = 0
        var errorSamples: [String] = []
    }

    /// The pairs whose caller is on one event loop of the generator. Their calls are placed by a
    /// timer on that loop, so placing a call costs no thread hop (a pacer on Swift's global pool
    /// waking every 500 µs and handing each call to a loop was a fifth of the generator's CPU).
    private struct Lane: Sendable {
        let loop: any EventLoop
        /// This lane's pairs with no call in progress.
        let idle: NIOLockedValueBox<[Int]>
        /// This lane's share of the rate: its pairs over all pairs.
        let share: Double
    }

    let pairs: [Pair]
    private let states: [NIOLockedValueBox<PairState>]
    private let lanes: [Lane]
    /// The lane of each pair.
    private let laneOf: [Int]
    let invite = LatencyRecorder()
    let accept = LatencyRecorder()
    let hangup = LatencyRecorder()
    let records = LatencyRecorder()
    private let counters = NIOLockedValueBox(Counters())
    private let recordWaits = NIOLockedValueBox<[String: (hangupSent: UInt64, count: Int)]>([:])
    /// In ``closedLoop(calls:timeout:)``: the calls still to place; a pair whose call ended
    /// places the next at once while any are left.
    private let refill = NIOLockedValueBox(0)

    /// How long each call stays connected before the caller hangs up (0: at once).
    let hold: TimeAmount

    init(pairs: [Pair], hold: TimeAmount = .zero) {
        self.pairs = pairs
        self.hold = hold
        self.states = pairs.map { _ in NIOLockedValueBox(PairState()) }
        var loops: [ObjectIdentifier] = []
        var members: [[Int]] = []
        var loopOf: [any EventLoop] = []
        var laneOf: [Int] = []
        for (index, pair) in pairs.enumerated() {
            let loop = pair.caller.socket.channel.eventLoop
            let key = ObjectIdentifier(loop as AnyObject)
            let lane = loops.firstIndex(of: key) ?? {
                loops.append(key)
                loopOf.append(loop)
                members.append([])
                return loops.count - 1
            }()
            members[lane].append(index)
            laneOf.append(lane)
        }
        self.lanes = zip(loopOf, members).map { loop, indices in
            Lane(loop: loop, idle: NIOLockedValueBox(indices), share: Double(indices.count) / Double(max(1, pairs.count)))
        }
        self.laneOf = laneOf
        for (index, pair) in pairs.enumerated() {
            pair.caller.onFrame { [weak self] buffer, time in self?.callerFrame(index, buffer, time) }
            pair.callee.onFrame { [weak self] buffer, time in self?.calleeFrame(index, buffer, time) }
        }
    }

    var snapshot: Counters { counters.withLockedValue { $0 } }

    func reset() {
        counters.withLockedValue { $0 = Counters() }
        for recorder in [invite, accept, hangup, records] { recorder.reset() }
    }

    /// Places calls at `rate` per second for `seconds`, then waits for them and their records.
    func run(rate: Double, seconds: Double) async -> Counters {
        reset()
        let start = monotonicNanos()
        let end = start + UInt64(seconds * 1e9)
        await withTaskGroup(of: Void.self) { group in
            for lane in lanes {
                group.addTask { await self.pace(lane, rate: rate * lane.share, start: start, end: end) }
            }
        }
        // Drain: calls in flight, then their records.
        let drainEnd = monotonicNanos() + 5_000_000_000
        while lanes.map({ $0.idle.withLockedValue(\.count) }).reduce(0, +) < pairs.count, monotonicNanos() < drainEnd {
            try? await Task.sleep(for: .milliseconds(5))
        }
        while !recordWaits.withLockedValue({ $0.isEmpty }), monotonicNanos() < drainEnd {
            try? await Task.sleep(for: .milliseconds(5))
        }
        let stuck = states.indices.filter { states[$0].withLockedValue { $0.busy } }
        for index in stuck { abandon(index) }
        let missing = recordWaits.withLockedValue { waits -> Int in
            defer { waits = [:] }
            return waits.count
        }
        return counters.withLockedValue { counters in
            counters.unfinished += stuck.count
            counters.recordsMissing += missing
            return counters
        }
    }

    /// Places exactly `calls` calls, every pair busy at once: each pair places its next call as
    /// soon as its last one ended. Then waits (at most `timeout` seconds in all) for them and
    /// their records. The work is the same whatever the machine's speed: the cost scenario counts
    /// the server's instructions for it.
    func closedLoop(calls: Int, timeout: Double) async -> Counters {
        reset()
        let first = Array(pairs.indices.prefix(calls))
        for lane in lanes { lane.idle.withLockedValue { $0.removeAll { first.contains($0) } } }
        refill.withLockedValue { $0 = calls - first.count }
        for index in first { place(index) }
        let end = monotonicNanos() + UInt64(timeout * 1e9)
        while monotonicNanos() < end {
            let done = counters.withLockedValue { $0.completed + $0.errors } >= calls
            if done, recordWaits.withLockedValue({ $0.isEmpty }) { break }
            try? await Task.sleep(for: .milliseconds(5))
        }
        refill.withLockedValue { $0 = 0 }
        let stuck = states.indices.filter { states[$0].withLockedValue { $0.busy } }
        for index in stuck { abandon(index) }
        let missing = recordWaits.withLockedValue { waits -> Int in
            defer { waits = [:] }
            return waits.count
        }
        return counters.withLockedValue { counters in
            counters.unfinished += stuck.count
            counters.recordsMissing += missing
            return counters
        }
    }

    /// Places `lane`'s calls at `rate` from a timer on its loop, every 500 µs as many as are due.
    private func pace(_ lane: Lane, rate: Double, start: UInt64, end: UInt64) async {
        let done = lane.loop.makePromise(of: Void.self)
        lane.loop.execute {
            let launched = NIOLoopBoundBox(0, eventLoop: lane.loop)
            lane.loop.scheduleRepeatedTask(initialDelay: .zero, delay: .microseconds(500)) { task in
                let now = monotonicNanos()
                // The last tick tops the lane up to its whole share of the step.
                let due = Int((Double(min(now, end) - start) / 1e9 * rate).rounded(now < end ? .down : .toNearestOrAwayFromZero))
                while launched.value < due {
                    launched.value += 1
                    if let index = lane.idle.withLockedValue({ $0.isEmpty ? nil : $0.removeFirst() }) {
                        self.place(index)
                    } else {
                        self.counters.withLockedValue { $0.noIdlePair += 1 }
                    }
                }
                if now >= end {
                    task.cancel()
                    done.succeed()
                }
            }
        }
        try? await done.futureResult.get()
    }

    /// Sends a pair's `call.start`, on its caller's loop.
    private func place(_ index: Int) {
        let pair = pairs[index]
        let serial = states[index].withLockedValue { state -> Int in
            state = PairState(busy: true, startSent: monotonicNanos(), serial: state.serial + 1)
            return state.serial
        }
        let text =
            #"{"id":"s\#(index).\#(serial)","type":"call.start","data":{"participantIds":["\#(pair.callee.user)"],"mediaType":"audio"}}"#
        counters.withLockedValue { $0.started += 1 }
        pair.caller.socket.send(text)
    }

    private func calleeFrame(_ index: Int, _ buffer: ByteBuffer, _ time: UInt64) {
        if buffer.contains(#""event":"callReceived""#) {
            guard let callId = buffer.stringValue(of: #""callId":""#) else { return }
            let (sent, serial) = states[index].withLockedValue { state -> (UInt64, Int) in
                state.callId = callId
                state.acceptSent = monotonicNanos()
                return (state.startSent, state.serial)
            }
            invite.record(nanos: time &- sent)
            // Every request id is new: the server answers a repeated id from its memory (idempotency).
            pairs[index].callee.socket.send(
                #"{"id":"a\#(index).\#(serial)","type":"call.accept","data":{"callId":"\#(callId)"}}"#)
        } else if buffer.contains(#""event":"callEnded""#) {
            ended(index, caller: false, time)
        } else {
            common(buffer, time)
        }
    }

    private func callerFrame(_ index: Int, _ buffer: ByteBuffer, _ time: UInt64) {
        if buffer.contains(#""event":"callStarted""#) {
            let (callId, acceptSent, serial) = states[index].withLockedValue { state -> (String?, UInt64, Int) in
                (state.callId ?? buffer.stringValue(of: #""callId":""#), state.acceptSent, state.serial)
            }
            guard let callId else { return }
            accept.record(nanos: time &- acceptSent)
            if hold == .zero {
                hangUp(index, callId: callId, serial: serial)
            } else {
                pairs[index].caller.socket.channel.eventLoop.scheduleTask(in: hold) {
                    self.hangUp(index, callId: callId, serial: serial)
                }
            }
        } else if buffer.contains(#""event":"callEnded""#) {
            ended(index, caller: true, time)
        } else {
            common(buffer, time)
        }
    }

    private func hangUp(_ index: Int, callId: String, serial: Int) {
        let hangupSent = states[index].withLockedValue { state -> UInt64 in
            state.hangupSent = monotonicNanos()
            return state.hangupSent
        }
        recordWaits.withLockedValue { waits in
            waits[callId, default: (hangupSent, 0)].hangupSent = hangupSent
        }
        pairs[index].caller.socket.send(
            #"{"id":"h\#(index).\#(serial)","type":"call.hangup","data":{"callId":"\#(callId)"}}"#)
    }

    private func common(_ buffer: ByteBuffer, _ time: UInt64) {
        if buffer.contains(#""event":"callRecord""#) {
            guard let callId = buffer.stringValue(of: #""callId":""#) else { return }
            let done = recordWaits.withLockedValue { waits -> UInt64? in
                var wait = waits[callId, default: (0, 0)]
                wait.count += 1
                if wait.count >= 2, wait.hangupSent > 0 {
                    waits[callId] = nil
                    return wait.hangupSent
                }
                waits[callId] = wait
                return nil
            }
            if let done {
                records.record(nanos: time &- done)
                counters.withLockedValue { $0.recordsAcknowledged += 1 }
            }
        } else if buffer.contains(#""error":{"#) {
            counters.withLockedValue { counters in
                counters.errors += 1
                if counters.errorSamples.count < 5 { counters.errorSamples.append(String(buffer: buffer)) }
            }
        }
    }

    private func ended(_ index: Int, caller: Bool, _ time: UInt64) {
        let finished = states[index].withLockedValue { state -> UInt64? in
            guard state.busy else { return nil }
            if caller { state.callerEnded = time } else { state.calleeEnded = time }
            guard let a = state.callerEnded, let b = state.calleeEnded else { return nil }
            state.busy = false
            return max(a, b) &- state.hangupSent
        }
        guard let finished else { return }
        hangup.record(nanos: finished)
        counters.withLockedValue { $0.completed += 1 }
        let again = refill.withLockedValue { remaining -> Bool in
            guard remaining > 0 else { return false }
            remaining -= 1
            return true
        }
        if again {
            place(index)
        } else {
            lanes[laneOf[index]].idle.withLockedValue { $0.append(index) }
        }
    }

    /// A call that never finished: hang it up and free the pair.
    private func abandon(_ index: Int) {
        let (callId, serial) = states[index].withLockedValue { state -> (String?, Int) in
            state.busy = false
            return (state.callId, state.serial)
        }
        if let callId {
            pairs[index].caller.socket.send(
                #"{"id":"x\#(index).\#(serial)","type":"call.hangup","data":{"callId":"\#(callId)"}}"#)
        }
        lanes[laneOf[index]].idle.withLockedValue { $0.append(index) }
    }
}

/// CPU seconds used by the server and by this process during a step.
struct CPUUse {
    /// The server nodes together, and each.
    var server: Double?
    /// Of `server`, the part spent in the kernel (system time).
    var serverKernel: Double?
    var nodes: [Double]
    /// Every postgres process on this machine, when asked.
    var database: Double?
    var generator: Double

    /// Measures `body`.
    static func measure<T>(serverPids: [Int32], database: Bool = false, _ body: () async throws -> T) async rethrows -> (T, CPUUse) {
        let before = serverPids.map(CPUTimes.of)
        let databaseBefore = database ? postgresCPUSeconds() : nil
        let generator = cpuSeconds(of: getpid()) ?? 0
        let result = try await body()
        let used = zip(before, serverPids.map(CPUTimes.of)).compactMap { before, after in
            before.flatMap { before in after.map { $0 - before } }
        }
        let nodes = used.map(\.total)
        return (
            result,
            CPUUse(
                server: nodes.isEmpty ? nil : nodes.reduce(0, +),
                serverKernel: used.isEmpty ? nil : used.map(\.system).reduce(0, +), nodes: nodes,
                database: databaseBefore.flatMap { before in postgresCPUSeconds().map { $0 - before } },
                generator: (cpuSeconds(of: getpid()) ?? 0) - generator)
        )
    }
}

struct StepReport: Codable {
    var rate: Double
    var seconds: Double
    var counters: CallLoad.Counters
    var callsPerSecond: Double
    var invite: LatencySummary
    var acceptToConnected: LatencySummary
    var hangupToEnded: LatencySummary
    var hangupToRecordsDurable: LatencySummary
    /// CPU time per completed call (user + system, µs): the server's (when its pid is known) and
    /// the load generator's own.
    var serverCPUPerCallMicros: Double?
    /// Of it, the kernel's part (system time: the socket and file system calls, waking threads).
    var serverKernelCPUPerCallMicros: Double?
    var generatorCPUPerCallMicros: Double?
    /// In a cluster: each node's, and PostgreSQL's (every postgres process on the machine).
    var nodeCPUPerCallMicros: [Double]?
    var databaseCPUPerCallMicros: Double?

    init(rate: Double, seconds: Double, load: CallLoad, counters: CallLoad.Counters, cpu: CPUUse) {
        self.rate = rate
        self.seconds = seconds
        self.counters = counters
        self.callsPerSecond = (Double(counters.completed) / seconds * 10).rounded() / 10
        self.invite = load.invite.summary
        self.acceptToConnected = load.accept.summary
        self.hangupToEnded = load.hangup.summary
        self.hangupToRecordsDurable = load.records.summary
        let calls = Double(max(1, counters.completed))
        serverCPUPerCallMicros = cpu.server.map { ($0 / calls * 1e6).rounded() }
        serverKernelCPUPerCallMicros = cpu.serverKernel.map { ($0 / calls * 1e6).rounded() }
        generatorCPUPerCallMicros = (cpu.generator / calls * 1e6).rounded()
        nodeCPUPerCallMicros = cpu.nodes.count > 1 ? cpu.nodes.map { ($0 / calls * 1e6).rounded() } : nil
        databaseCPUPerCallMicros = cpu.database.map { ($0 / calls * 1e6).rounded() }
    }

    /// The lifecycle criterion: p99 invite under 10 ms, the rate kept (every call due was placed
    /// and finished), every record durable, no errors.
    var passes: Bool {
        invite.p99 <= 10_000 && counters.errors == 0 && counters.unfinished == 0 && counters.recordsMissing == 0
            && counters.noIdlePair == 0 && counters.completed == counters.started
            && Double(counters.started) >= (rate * seconds).rounded(.down) - 1
    }
}

// MARK: - connections

struct ConnectionsReport: Codable {
    var connections: Int
    var sources: Int
    var connectSeconds: Double
    var holdSeconds: Double
    var pingsSent: Int
    var pingsAnswered: Int
    var closedByServer: Int
    var serverRSSBeforeKiB: Int?
    var serverRSSConnectedKiB: Int?
    var serverRSSAfterHoldKiB: Int?
    var bytesPerConnection: Int?
    var loadGeneratorRSSKiB: Int?
}

// MARK: - login storm

struct LoginReport: Codable {
    var logins: Int
    var sources: Int
    var seconds: Double
    var loginsPerSecond: Double
    var failures: Int
    var latency: LatencySummary
    var failureSamples: [String]
}
