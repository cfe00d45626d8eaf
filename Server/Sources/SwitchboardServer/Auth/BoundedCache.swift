/// A cache of at most `capacity` entries that keeps what is used: two generations, lookups in
/// the older one move the entry to the newer, and when the newer is half the capacity the older
/// is dropped whole. Nearly least-recently-used at the cost of a dictionary swap, with no
/// per-entry bookkeeping; attacker-chosen keys (profiles of users that do not exist) can only
/// push out entries nobody used since the last swap.
///
/// A large cache is split by key hash into shards of about 4,096 entries (``ShardLayout``), each
/// with its own two generations: growing a dictionary rehashes all it holds and dropping a
/// generation frees all of it, and at 100,000 entries either stalls the calling event loop for over
/// 20 ms; a shard's take well under a millisecond.
struct BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Generations: Sendable {
        var recent: [Key: Value] = [:]
        var older: [Key: Value] = [:]
    }

    let capacity: Int
    /// A shard's newer generation is swapped at half its capacity.
    private let layout: ShardLayout
    private var shards: [Generations]

    init(capacity: Int) {
        self.capacity = max(2, capacity)
        layout = ShardLayout(capacity: self.capacity, entriesPerShard: 4_096, maxShards: 64)
        shards = Array(repeating: Generations(), count: layout.count)
    }

    var count: Int { shards.reduce(0) { $0 + $1.recent.count + $1.older.count } }

    mutating func value(for key: Key) -> Value? {
        let shard = shard(of: key)
        if let value = shards[shard].recent[key] { return value }
        guard let value = shards[shard].older.removeValue(forKey: key) else { return nil }
        insert(value, for: key, in: shard)
        return value
    }

    mutating func remove(_ key: Key) {
        let shard = shard(of: key)
        shards[shard].recent[key] = nil
        shards[shard].older[key] = nil
    }

    mutating func removeAll() {
        shards = Array(repeating: Generations(), count: layout.count)
    }

    mutating func insert(_ value: Value, for key: Key) {
        insert(value, for: key, in: shard(of: key))
    }

    private mutating func insert(_ value: Value, for key: Key, in shard: Int) {
        shards[shard].older[key] = nil
        shards[shard].recent[key] = value
        if shards[shard].recent.count >= layout.capacityPerShard / 2 {
            shards[shard].older = shards[shard].recent
            shards[shard].recent = [:]
        }
    }

    private func shard(of key: Key) -> Int { layout.index(of: key) }
}
