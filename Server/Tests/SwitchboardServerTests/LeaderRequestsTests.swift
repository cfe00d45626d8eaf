import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

/// The messages a node waits for the leader to answer (``LeaderRequests``): answered once, moved
/// to a new leader or refused, and never kept past the command timeout.
struct LeaderRequestsTests {
    static let alice = UserKey(app: 1_400_000_001, user: "alice")

    @Test func anAnswerReachesItsWaiterOnce() {
        var requests = LeaderRequests<String>()
        let first = requests.add("call.start", to: "node0", now: 0)
        let second = requests.add("call.accept", to: "node0", now: 0)
        #expect(first != second)
        #expect(requests.answer(second) == "call.accept")
        #expect(requests.answer(second) == nil)
        #expect(requests.answer(999) == nil)
        #expect(requests.removeAll { _ in true } == ["call.start"])
    }

    /// A new leader gets what it must know again (its time starts again); requests sent to the old
    /// one are refused, as it may have carried them out; what was sent to the new one waits on.
    @Test func aNewLeaderIsToldAgainAndTheRequestsAreRefused() {
        var requests = LeaderRequests<String>()
        let login = requests.add("login", follows: .deviceOnline(Self.alice, "phone"), to: "node0", now: 0)
        _ = requests.add("call.start", to: "node0", now: 0)
        let blocks = requests.add("blocks", follows: .blocks(Self.alice), to: "node0", now: 100)
        _ = requests.add("call.hangup", to: "node1", now: 200)

        let (resend, refused) = requests.leaderChanged(to: "node1", now: 5_000)
        #expect(resend.map(\.0) == [login, blocks])
        #expect(resend.map(\.1) == [.deviceOnline(Self.alice, "phone"), .blocks(Self.alice)])
        #expect(refused == ["call.start"])

        // Their time started again at the change: not stale 10 s after they were first sent.
        #expect(requests.removeStale(now: 10_201, timeout: 10_000) == ["call.hangup"])
        #expect(requests.removeStale(now: 15_001, timeout: 10_000) == ["login", "blocks"])
        #expect(requests.removeAll { _ in true }.isEmpty)
    }

    @Test func aMessageUnansweredPastTheTimeoutIsRefused() {
        var requests = LeaderRequests<String>()
        _ = requests.add("a", to: "node0", now: 0)
        let b = requests.add("b", to: "node0", now: 5_000)
        #expect(requests.removeStale(now: 10_000, timeout: 10_000).isEmpty)
        #expect(requests.removeStale(now: 10_001, timeout: 10_000) == ["a"])
        #expect(requests.answer(b) == "b")
    }

    @Test func aNodeCutOffRefusesEverything() {
        var requests = LeaderRequests<String>()
        _ = requests.add("a", to: "node0", now: 0)
        _ = requests.add("b", follows: .blocks(Self.alice), to: "node0", now: 1)
        #expect(requests.removeAll { _ in true } == ["a", "b"])
        #expect(requests.removeAll { _ in true }.isEmpty)
    }
}
