/// A cache of at most `capacity` entries that keeps what is used: two generations, lookups in
/// the older one move the entry to the newer, and when the newer is half the capacity the older
/// is dropped whole. Nearly least-recently-used at the cost of a dictionary swap, with no
/// per-entry bookkeeping; attacker-chosen keys (profiles of users that do not exist) can only
/// push out entries nobody used since the last swap.
///
/// The newer generation is made at its full size, so it never grows: growing a dictionary
/// rehashes all it holds, which at 100,000 entries stalls the calling event loop for over 20 ms.
struct BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    let capacity: Int
    private var recent: [Key: Value] = [:]
    private var older: [Key: Value] = [:]

    init(capacity: Int) {
        self.capacity = max(2, capacity)
        recent.reserveCapacity(self.capacity / 2)
    }

    var count: Int { recent.count + older.count }

    mutating func value(for key: Key) -> Value? {
        if let value = recent[key] { return value }
        guard let value = older.removeValue(forKey: key) else { return nil }
        insert(value, for: key)
        return value
    }

    mutating func remove(_ key: Key) {
        recent[key] = nil
        older[key] = nil
    }

    mutating func insert(_ value: Value, for key: Key) {
        older[key] = nil
        recent[key] = value
        if recent.count >= capacity / 2 {
            older = recent
            recent = Dictionary(minimumCapacity: capacity / 2)
        }
    }
}
