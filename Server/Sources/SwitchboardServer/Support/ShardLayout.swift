/// How a bounded table is split by key hash into shards, so that work over one shard (growing,
/// dropping, sorting to make room) never covers the whole table at once. The hash is seeded per
/// process, so keys cannot be aimed at one shard.
struct ShardLayout: Sendable {
    /// Number of shards: one per `entriesPerShard` of the capacity, between 1 and `maxShards`.
    let count: Int
    /// Entries one shard holds at most (the shards' together are at most the capacity).
    let capacityPerShard: Int

    init(capacity: Int, entriesPerShard: Int, maxShards: Int) {
        count = min(maxShards, max(1, capacity / entriesPerShard))
        capacityPerShard = capacity / count
    }

    /// The shard `key` belongs to.
    func index(of key: some Hashable) -> Int {
        count == 1 ? 0 : Int(UInt(bitPattern: key.hashValue) % UInt(count))
    }
}
