import NIOConcurrencyHelpers
import SwitchboardProtocol

/// A limit: `rate` tokens a second, at most `burst` saved up.
public struct RateLimit: Sendable, Equatable, CustomStringConvertible {
    public var rate: Double
    public var burst: Int

    public init(rate: Double, burst: Int) {
        self.rate = rate
        self.burst = burst
    }

    /// `count` per `seconds`, bursts up to `burst`.
    public static func per(_ seconds: Double, _ count: Double, burst: Int) -> RateLimit {
        RateLimit(rate: count / seconds, burst: burst)
    }

    /// Parses `N/s`, `N/min` or `N/h` with an optional burst: `20/s:40`.
    public init?(parsing text: String) {
        let parts = text.split(separator: ":")
        guard (1...2).contains(parts.count) else { return nil }
        let rateParts = parts[0].split(separator: "/")
        // Bounded so that no later arithmetic on it can overflow.
        guard rateParts.count == 2, let count = Double(rateParts[0]), count > 0, count <= 1_000_000 else { return nil }
        let seconds: Double
        switch rateParts[1] {
        case "s": seconds = 1
        case "min": seconds = 60
        case "h": seconds = 3600
        default: return nil
        }
        let burst = parts.count == 2 ? Int(parts[1]) : Int(count.rounded(.up))
        guard let burst, burst > 0, burst <= 1_000_000, count / seconds >= 1.0 / 3600 else { return nil }
        self.init(rate: count / seconds, burst: burst)
    }

    public var description: String {
        rate >= 1 ? "\(rate)/s:\(burst)" : "\(rate * 60)/min:\(burst)"
    }
}

/// The abuse limits (SPEC issue 8); each can be changed with `--rate-limit NAME=N/PERIOD:BURST`.
public struct RateLimits: Sendable, Equatable {
    /// Login attempts from one IP address.
    public var loginsPerIP = RateLimit(rate: 20, burst: 40)
    /// Successful logins of one user (an app's userID): a client stuck in a reconnect loop.
    public var loginsPerUser = RateLimit.per(60, 30, burst: 10)
    /// Refused logins from one IP address; when used up, refused logins from it answer
    /// `rateLimited` instead of their reason. A valid UserSig still logs in.
    public var failedLoginsPerIP = RateLimit.per(60, 10, burst: 10)
    /// Refused logins naming one user of an existing app, from any address; when used up, the same
    /// as for an address. A valid UserSig still logs in: the victim is never locked out.
    public var failedLoginsPerUser = RateLimit.per(60, 5, burst: 5)
    /// Requests on one connection.
    public var requestsPerConnection = RateLimit(rate: 50, burst: 100)
    /// Calls placed and invitations sent by one user (`call.start`, `call.invite`).
    public var invitationsPerUser = RateLimit.per(60, 30, burst: 10)
    /// Status reports of one user (clients send about one a second).
    public var statusReportsPerUser = RateLimit(rate: 2, burst: 5)
    /// Invitations one user receives, from anyone (`call.start`, `call.invite` that would ring
    /// them): one beyond it does not ring, and the caller sees the callee offline.
    public var invitationsPerCallee = RateLimit.per(60, 10, burst: 5)
    /// Bytes of media signals (SDP, candidates) one member relays in one call. A video call with
    /// screen sharing starts with two SDPs of 5–15 KB and a few KB of candidates, and a
    /// renegotiation or ICE restart sends one or two more; a mesh member sends that to each peer.
    public var relayBytesPerMember = RateLimit(rate: 64 * 1024, burst: 512 * 1024)
    /// No limits at all (benchmarks).
    public var disabled = false

    public init() {}

    /// The names used on the command line.
    public static let names = [
        "login-per-ip", "login-per-user", "failed-login-per-ip", "failed-login-per-user", "requests-per-connection",
        "invitations-per-user", "status-reports-per-user", "invitations-per-callee", "relay-bytes-per-member",
    ]

    /// Sets one limit by its command-line name; false for an unknown name.
    public mutating func set(_ name: String, _ limit: RateLimit) -> Bool {
        switch name {
        case "login-per-ip": loginsPerIP = limit
        case "login-per-user": loginsPerUser = limit
        case "failed-login-per-ip": failedLoginsPerIP = limit
        case "failed-login-per-user": failedLoginsPerUser = limit
        case "requests-per-connection": requestsPerConnection = limit
        case "invitations-per-user": invitationsPerUser = limit
        case "status-reports-per-user": statusReportsPerUser = limit
        case "invitations-per-callee": invitationsPerCallee = limit
        case "relay-bytes-per-member": relayBytesPerMember = limit
        default: return false
        }
        return true
    }
}

/// Token buckets, on the server's clock. A refusal says how long to wait.
///
/// Bounded: past ``capacity`` buckets, those that have refilled (they hold nothing worth keeping)
/// are dropped, then, if that is not enough, the least recently used. Forgetting a bucket can only
/// give its subject a full burst again, never refuse anyone more.
///
/// The buckets are split by key hash into shards of about 1,024 (``ShardLayout``), each with its
/// own lock and its own share of the capacity: making room sorts one shard, not 100,000 buckets
/// under the one lock every request takes (tens of milliseconds, for anyone who opens connections or
/// tries user ids fast enough).
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Int64
        /// When this bucket is full again if nothing is taken: it can be forgotten from then on.
        var fullAt: Int64
    }

    private struct Key: Hashable {
        var kind: String
        var subject: String
    }

    private let shards: [NIOLockedValueBox<[Key: Bucket]>]
    private let disabled: Bool
    /// The most buckets kept at once.
    let capacity: Int
    private let layout: ShardLayout

    init(disabled: Bool, capacity: Int = 100_000) {
        self.disabled = disabled
        self.capacity = max(1, capacity)
        layout = ShardLayout(capacity: self.capacity, entriesPerShard: 1_024, maxShards: 128)
        shards = (0..<layout.count).map { _ in NIOLockedValueBox([:]) }
    }

    private func shard(_ key: Key) -> NIOLockedValueBox<[Key: Bucket]> { shards[layout.index(of: key)] }

    /// Takes a token; when none is left, the error says after how many ms one will be.
    func take(_ limit: RateLimit, _ kind: String, _ subject: String, now: Int64) -> SwitchboardError? {
        guard !disabled else { return nil }
        let key = Key(kind: kind, subject: subject)
        return shard(key).withLockedValue { buckets in
            var bucket = refill(buckets[key], limit, now)
            defer {
                bucket.fullAt = now + Self.millisecondsToFill(bucket, limit)
                if buckets.updateValue(bucket, forKey: key) == nil, buckets.count > layout.capacityPerShard {
                    shrink(&buckets, keeping: key, now: now)
                }
            }
            guard bucket.tokens >= 1 else {
                return refusal(bucket, limit)
            }
            bucket.tokens -= 1
            return nil
        }
    }

    /// Whether a token is left, without taking it.
    func check(_ limit: RateLimit, _ kind: String, _ subject: String, now: Int64) -> SwitchboardError? {
        guard !disabled else { return nil }
        let key = Key(kind: kind, subject: subject)
        return shard(key).withLockedValue { buckets in
            let bucket = refill(buckets[key], limit, now)
            return bucket.tokens >= 1 ? nil : refusal(bucket, limit)
        }
    }

    /// Number of buckets kept.
    var count: Int { shards.reduce(0) { $0 + $1.withLockedValue { $0.count } } }

    private func refill(_ bucket: Bucket?, _ limit: RateLimit, _ now: Int64) -> Bucket {
        guard var bucket else { return Bucket(tokens: Double(limit.burst), updated: now, fullAt: now) }
        let elapsed = Double(max(0, now - bucket.updated)) / 1000
        bucket.tokens = min(Double(limit.burst), bucket.tokens + elapsed * limit.rate)
        bucket.updated = max(bucket.updated, now)
        return bucket
    }

    private static func millisecondsToFill(_ bucket: Bucket, _ limit: RateLimit) -> Int64 {
        let missing = Double(limit.burst) - bucket.tokens
        return missing <= 0 ? 0 : milliseconds(missing / limit.rate * 1000)
    }

    /// Whole milliseconds, pinned to 1e15 (30,000 years): a limit built in code may have any rate.
    private static func milliseconds(_ value: Double) -> Int64 {
        value.isNaN ? 0 : Int64(min(value.rounded(.up), 1e15))
    }

    private func refusal(_ bucket: Bucket, _ limit: RateLimit) -> SwitchboardError {
        let wait = Self.milliseconds((1 - bucket.tokens) / limit.rate * 1000)
        return SwitchboardError(.rateLimited, "too many requests; retry in \(wait) ms", retryAfter: wait)
    }

    /// Drops a shard's full buckets, then its least recently used, down to 90% of its capacity.
    private func shrink(_ buckets: inout [Key: Bucket], keeping key: Key, now: Int64) {
        buckets = buckets.filter { $0.key == key || $0.value.fullAt > now }
        let target = layout.capacityPerShard * 9 / 10
        guard buckets.count > target else { return }
        let oldest = buckets.filter { $0.key != key }.sorted { $0.value.updated < $1.value.updated }
        for (stale, _) in oldest.prefix(buckets.count - target) { buckets[stale] = nil }
    }
}
