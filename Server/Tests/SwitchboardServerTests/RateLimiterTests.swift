import Testing

@testable import SwitchboardServer

/// The token buckets' bound: however many subjects come, the limiter keeps at most its capacity,
/// and forgetting buckets never lets a subject that is using its limit off it.
struct RateLimiterTests {
    static let limit = RateLimit(rate: 1, burst: 3)

    @Test func aFloodOfSubjectsStaysWithinTheCapacityAndTheBusySubjectStaysLimited() {
        let limiter = RateLimiter(disabled: false, capacity: 20_000)
        let start: Int64 = 1_000_000
        for _ in 0..<3 { #expect(limiter.take(Self.limit, "connection", "abuser", now: start) == nil) }
        #expect(limiter.take(Self.limit, "connection", "abuser", now: start)?.code == .rateLimited)
        var most = 0
        // 100,000 subjects in 100 ms, each taking a token: no bucket is full again within the
        // second, so none is dropped as refilled and room is made by forgetting the least recently
        // used. The abuser, trying every millisecond, earns a tenth of a token meanwhile.
        var now = start
        for subject in 0..<100_000 {
            now = start + Int64(subject / 1_000)
            #expect(limiter.take(Self.limit, "connection", "s\(subject)", now: now) == nil)
            if subject % 1_000 == 0 {
                #expect(limiter.take(Self.limit, "connection", "abuser", now: now)?.code == .rateLimited)
                most = max(most, limiter.count)
            }
        }
        #expect(most <= 20_000)
        #expect(limiter.count <= 20_000)
        #expect(limiter.count > 10_000)
        #expect(limiter.take(Self.limit, "connection", "abuser", now: now)?.code == .rateLimited)
    }

    @Test func refilledBucketsAreDroppedFirst() {
        let limiter = RateLimiter(disabled: false, capacity: 4_096)
        for subject in 0..<4_096 { _ = limiter.take(Self.limit, "connection", "old\(subject)", now: 0) }
        // Ten seconds later every old bucket is full again: the next ones push them all out.
        for subject in 0..<2_000 { _ = limiter.take(Self.limit, "connection", "new\(subject)", now: 10_000) }
        #expect(limiter.count < 4_096)
        #expect(limiter.count >= 2_000)
    }
}
