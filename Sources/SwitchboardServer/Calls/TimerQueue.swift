/// Deadlines by key, earliest first: a binary min-heap with lazy deletion.
///
/// Setting a key again moves its deadline; cancelled and moved entries stay in the heap and are
/// skipped when they reach the top, so every operation is O(log n) amortized. The heap is rebuilt
/// from the live entries when stale ones outnumber them, so it never holds more than about twice
/// the timers that are set, however often they move.
struct TimerQueue<Key: Hashable & Sendable>: Sendable {
    private struct Entry: Sendable {
        var deadline: Int64
        var sequence: UInt64
        var key: Key
        func precedes(_ other: Entry) -> Bool {
            (deadline, sequence) < (other.deadline, other.sequence)
        }
    }

    private var heap: [Entry] = []
    private var live: [Key: UInt64] = [:]
    private var nextSequence: UInt64 = 0

    /// How many timers are set.
    var count: Int { live.count }

    /// Number of entries in the heap, stale ones included (tests).
    var storedCount: Int { heap.count }

    /// Sets (or moves) the timer for `key`.
    mutating func set(_ key: Key, at deadline: Int64) {
        nextSequence += 1
        live[key] = nextSequence
        push(Entry(deadline: deadline, sequence: nextSequence, key: key))
        if heap.count > 2 * live.count + 64 { compact() }
    }

    /// Drops stale entries and restores the heap order (Floyd's heapify, O(n)).
    private mutating func compact() {
        heap.removeAll { live[$0.key] != $0.sequence }
        for parent in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(parent) }
    }

    /// Cancels the timer for `key`, if set.
    mutating func cancel(_ key: Key) {
        live[key] = nil
    }

    /// The earliest live deadline.
    mutating func earliestDeadline() -> Int64? {
        dropStaleTop()
        return heap.first?.deadline
    }

    /// Removes and returns the keys whose deadline is at or before `now`, earliest first.
    mutating func popDue(now: Int64) -> [Key] {
        var due: [Key] = []
        while true {
            dropStaleTop()
            guard let top = heap.first, top.deadline <= now else { return due }
            popTop()
            live[top.key] = nil
            due.append(top.key)
        }
    }

    private mutating func dropStaleTop() {
        while let top = heap.first, live[top.key] != top.sequence { popTop() }
    }

    private mutating func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popTop() {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        siftDown(0)
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
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
