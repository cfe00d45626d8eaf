import Foundation
import SwitchboardProtocol
import SwitchboardTestServers
import Testing

@testable import SwitchboardServer

/// The bytes of media signals a member relays in a call are bounded per second (issue 28): a
/// token bucket per member on the machine's time, generous enough for a mesh video call with
/// screen sharing, and a refusal with the wait beyond it.
struct RelayBudgetTests {
    typealias T = CallStateMachineTests

    /// Applies a table step (an event with its facts) at `now`.
    static func apply(_ step: T.Step, to machine: inout CallStateMachine, at now: Int64) {
        guard case .event(let event, let facts) = step else { fatalError("an event step") }
        _ = machine.handle(event, facts: facts, now: now)
    }

    static func offer(_ user: String, _ device: String, to peer: String, bytes: Int) -> CallEvent {
        .mediaSignal(
            T.command(user, device, "c1"),
            SendMediaSignalRequest(
                callId: "c1", to: UserID(rawValue: peer), kind: .offer, sdp: String(repeating: "a", count: bytes)))
    }

    static func candidate(_ user: String, _ device: String, to peer: String) -> CallEvent {
        .mediaSignal(
            T.command(user, device, "c1"),
            SendMediaSignalRequest(
                callId: "c1", to: UserID(rawValue: peer), kind: .candidate,
                candidate: IceCandidate(
                    candidate: "candidate:842163049 1 udp 1677729535 203.0.113.7 51234 typ srflx raddr 192.168.1.20 rport 51234 generation 0 ufrag Xq3e network-id 1",
                    sdpMid: "0", sdpMLineIndex: 0, usernameFragment: "Xq3e")))
    }

    /// The `retryAfter` of a `rateLimited` answer.
    static func wait(_ output: CallOutput) -> Int64? {
        guard case .failure(let error) = output.reply, error.code == .rateLimited else { return nil }
        return error.retryAfter
    }

    /// A connected one-to-one call at `T.t0 + 2000`.
    static func connected() -> (CallStateMachine, Int64) {
        var machine = CallStateMachine()
        Self.apply(T.start(), to: &machine, at: T.t0 + 1000)
        Self.apply(T.accept("bob", "b1"), to: &machine, at: T.t0 + 2000)
        return (machine, T.t0 + 2000)
    }

    @Test func aMemberRelaysItsBurstAtOnceThenWaitsForTheRate() throws {
        var (machine, now) = Self.connected()
        let limit = try #require(machine.configuration.relayBytes)
        #expect(limit == RateLimit(rate: 65_536, burst: 524_288))
        // Sixteen SDPs of 32 KiB (the largest allowed) at once: the whole burst.
        for _ in 0..<16 {
            let output = machine.handle(Self.offer("alice", "a1", to: "bob", bytes: 32 * 1024), now: now)
            #expect(T.describe(output, now: now) == ["reply ok", "bob@b1 ← mediaSignal(offer from alice)"])
        }
        // The next is refused with the wait for its bytes (32 KiB at 64 KiB/s), and goes nowhere.
        let refused = machine.handle(Self.offer("alice", "a1", to: "bob", bytes: 32 * 1024), now: now)
        #expect(Self.wait(refused) == 500)
        // As documented (PROTOCOL.md; golden response.error.mediaRelay).
        #expect(
            refused.reply
                == .failure(
                    SwitchboardError(
                        .rateLimited, "media signals are limited to 65536 bytes a second (bursts of 524288); retry in 500 ms",
                        retryAfter: 500)))
        #expect(refused.actions.isEmpty)
        // The budget is the member's: bob still relays to alice.
        let back = machine.handle(Self.offer("bob", "b1", to: "alice", bytes: 32 * 1024), now: now)
        #expect(back.reply == .ok)
        // Just before the wait is over it is still refused; then it passes.
        now += 499
        let early = machine.handle(Self.offer("alice", "a1", to: "bob", bytes: 32 * 1024), now: now)
        #expect(Self.wait(early) == 1)
        now += 1
        #expect(machine.handle(Self.offer("alice", "a1", to: "bob", bytes: 32 * 1024), now: now).reply == .ok)
        #expect(machine.invariantViolations() == [])
    }

    /// What the probe did: SDPs as fast as the connection's request limit lets through (50 a
    /// second, a burst of 100), 3.8 MB in 1.4 s. Now at most the burst and 1.4 s of the rate
    /// reach the peer.
    @Test func aFloodReachesThePeerOnlyAtTheRate() {
        let (connected, start) = Self.connected()
        var machine = connected
        var relayed = 0
        var refused = 0
        for index in 0..<140 {
            let now = start + Int64(index) * 10
            if machine.handle(Self.offer("alice", "a1", to: "bob", bytes: 28_000), now: now).reply == .ok {
                relayed += 28_000
            } else {
                refused += 1
            }
        }
        #expect(relayed <= 524_288 + 65_536 * 14 / 10)
        #expect(relayed >= 524_288)
        #expect(refused > 100)
    }

    /// A member of a mesh group call of 16 (no SFU) with video and screen sharing, all in one
    /// second: an offer of 12 KB and 20 candidates to each of the 15 others, then a renegotiation
    /// offer of 14 KB to each when the screen share starts. Everything is relayed.
    @Test func aMeshVideoCallWithScreenSharingFitsTheBudget() {
        var machine = CallStateMachine()
        let others = (1...15).map { "m\($0)" }
        Self.apply(T.start(to: others), to: &machine, at: T.t0)
        for (index, other) in others.enumerated() {
            Self.apply(T.accept(other, "\(other)d"), to: &machine, at: T.t0 + Int64(index))
        }
        let now = T.t0 + 100
        var refusals: [CallReply] = []
        for other in others {
            let reply = machine.handle(Self.offer("alice", "a1", to: other, bytes: 12_000), now: now).reply
            if reply != .ok { refusals.append(reply ?? .ok) }
            for _ in 0..<20 {
                let reply = machine.handle(Self.candidate("alice", "a1", to: other), now: now).reply
                if reply != .ok { refusals.append(reply ?? .ok) }
            }
        }
        for other in others {
            let reply = machine.handle(Self.offer("alice", "a1", to: other, bytes: 14_000), now: now + 900).reply
            if reply != .ok { refusals.append(reply ?? .ok) }
        }
        #expect(refusals.isEmpty)
    }

    @Test func aBucketRefillsAtItsRateUpToItsBurst() {
        let limit = RateLimit(rate: 1000, burst: 5000)
        var bucket = TokenBucket(limit, now: 0)
        #expect(bucket.take(5000, limit, now: 0) == nil)
        #expect(bucket.take(1, limit, now: 0) == 1)
        #expect(bucket.take(500, limit, now: 250) == 250)
        #expect(bucket.take(500, limit, now: 500) == nil)
        // A long pause fills it to the burst, no further.
        #expect(bucket.take(5000, limit, now: 1_000_000) == nil)
        #expect(bucket.take(1, limit, now: 1_000_000) == 1)
        // A cost above the burst waits for a full bucket, then passes.
        #expect(bucket.take(9000, limit, now: 1_000_000) == 5000)
        #expect(bucket.take(9000, limit, now: 1_005_000) == nil)
    }

    /// Over a real connection: the refusal is `rateLimited` with `retryAfter`, the peer gets only
    /// what was relayed, and the limit can be changed (`--rate-limit relay-bytes-per-member=…`).
    @Test func theRefusalOnTheWireSaysHowLongToWait() async throws {
        let s = try await MediaSignalingTests().connected { configuration in
            configuration.rateLimits.relayBytesPerMember = RateLimit(rate: 20_000, burst: 60_000)
        }
        let sdp = String(repeating: "a", count: 30_000)
        for index in 0..<2 {
            let sent = try await s.alice.request(SendMediaSignalRequest(callId: s.callId, to: "bob", kind: .offer, sdp: sdp), id: "o\(index)")
            #expect(sent["result"] != nil)
        }
        let refused = try await s.alice.request(SendMediaSignalRequest(callId: s.callId, to: "bob", kind: .offer, sdp: sdp), id: "o2")
        #expect(RawClient.errorCode(refused) == SwitchboardError.Code.rateLimited.rawValue)
        #expect((refused["error"] as? [String: Any])?["retryAfter"] as? Int == 1500)
        s.server.clock.advance(by: .milliseconds(1500))
        let later = try await s.alice.request(
            SendMediaSignalRequest(callId: s.callId, to: "bob", kind: .offer, sdp: "v=0 after the wait"), id: "o3")
        #expect(later["result"] != nil)
        _ = try await s.bob.frames.first(from: 0) { $0.contains("v=0 after the wait") }
        #expect(s.bob.frames.values.filter { $0.contains("\"mediaSignal\"") }.count == 3)
        await s.server.stop()
    }
}
