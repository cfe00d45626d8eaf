/// A token bucket kept inside the call state (a member's relay budget): it fills at a
/// ``RateLimit``'s rate up to its burst, on the time the state machine is given, and is journaled
/// with the call.
struct TokenBucket: Codable, Equatable, Sendable {
    /// What is left, as of `updatedAt`.
    private(set) var tokens: Double
    /// When `tokens` was last brought up to date (Unix ms).
    private(set) var updatedAt: Int64

    /// A full bucket.
    init(_ limit: RateLimit, now: Int64) {
        tokens = Double(limit.burst)
        updatedAt = now
    }

    /// Takes `cost` tokens if there are that many; otherwise takes nothing and returns how many
    /// ms until there will be (never more than the time to fill the whole bucket, so a cost above
    /// the burst waits for a full bucket and then passes: nothing is refused for ever).
    mutating func take(_ cost: Int, _ limit: RateLimit, now: Int64) -> Int64? {
        let elapsed = Double(max(0, now - updatedAt)) / 1000
        let burst = Double(limit.burst)
        tokens = min(burst, tokens + elapsed * limit.rate)
        updatedAt = max(updatedAt, now)
        let needed = min(Double(cost), burst)
        guard tokens >= needed else {
            // Less a hair for floating point, so that a wait of exactly 1 ms is not 2.
            return max(1, Int64(((needed - tokens) / limit.rate * 1000 - 1e-6).rounded(.up)))
        }
        tokens = max(0, tokens - Double(cost))
        return nil
    }
}
