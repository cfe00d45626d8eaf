/// Deadlines by key, earliest first: a binary min-heap that knows where each key sits.
///
/// Setting a key again moves its entry, cancelling removes it, and popping takes the top: each is
/// O(log n), none ever passes over the whole heap, and the heap holds exactly the timers that are
/// set (no cancelled or moved entry stays behind). It runs on the call engine's loop and under the
/// lock every connection's deadline takes, so no operation may cost more than that. Equal
/// deadlines come out in the order they were set.
///
/// Each key gets a slot, a small integer, for as long as its timer is set: the heap's entries carry
/// the slot, and where a slot's entry sits is an array, so the entries moving in the heap cost no
/// hashing; a key is hashed once per operation. Freed slots are reused.
struct TimerQueue<Key: Hashable & Sendable>: Sendable {
    private struct Entry: Sendable {
        var deadline: Int64
        var sequence: UInt64
        var slot: Int
        func precedes(_ other: Entry) -> Bool {
            (deadline, sequence) < (other.deadline, other.sequence)
        }
    }

    private var heap: [Entry] = []
    private var slots: [Key: Int] = [:]
    /// By slot: its key (nil when free) and where its entry is in `heap`.
    private var keys: [Key?] = []
    private var positions: [Int] = []
    private var freeSlots: [Int] = []
    private var nextSequence: UInt64 = 0

    /// How many timers are set.
    var count: Int { heap.count }

    /// Number of slots, free ones included (tests): the most timers that were ever set at once.
    var slotCount: Int { keys.count }

    /// Sets (or moves) the timer for `key`.
    mutating func set(_ key: Key, at deadline: Int64) {
        nextSequence += 1
        if let slot = slots[key] {
            let index = positions[slot]
            heap[index] = Entry(deadline: deadline, sequence: nextSequence, slot: slot)
            restore(index)
            return
        }
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            keys[slot] = key
        } else {
            slot = keys.count
            keys.append(key)
            positions.append(0)
        }
        slots[key] = slot
        heap.append(Entry(deadline: deadline, sequence: nextSequence, slot: slot))
        positions[slot] = heap.count - 1
        siftUp(heap.count - 1)
    }

    /// Cancels the timer for `key`, if set.
    mutating func cancel(_ key: Key) {
        guard let slot = slots.removeValue(forKey: key) else { return }
        remove(at: positions[slot])
    }

    /// The earliest deadline.
    func earliestDeadline() -> Int64? {
        heap.first?.deadline
    }

    /// Removes and returns the keys whose deadline is at or before `now`, earliest first.
    mutating func popDue(now: Int64) -> [Key] {
        var due: [Key] = []
        while let top = heap.first, top.deadline <= now, let key = keys[top.slot] {
            slots[key] = nil
            remove(at: 0)
            due.append(key)
        }
        return due
    }

    /// Removes the entry at `index` and frees its slot (its key has left `slots` already).
    private mutating func remove(at index: Int) {
        let slot = heap[index].slot
        keys[slot] = nil
        freeSlots.append(slot)
        let last = heap.count - 1
        if index != last {
            heap[index] = heap[last]
            positions[heap[index].slot] = index
        }
        heap.removeLast()
        if index < heap.count { restore(index) }
    }

    /// Puts the entry at `index` where it belongs after its deadline changed.
    private mutating func restore(_ index: Int) {
        if index > 0 && heap[index].precedes(heap[(index - 1) / 2]) {
            siftUp(index)
        } else {
            siftDown(index)
        }
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            swap(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].precedes(heap[smallest]) { smallest = left }
            if right < heap.count && heap[right].precedes(heap[smallest]) { smallest = right }
            if smallest == parent { return }
            swap(parent, smallest)
            parent = smallest
        }
    }

    private mutating func swap(_ a: Int, _ b: Int) {
        heap.swapAt(a, b)
        positions[heap[a].slot] = a
        positions[heap[b].slot] = b
    }
}
