/// The persistence writer's queue and phase, as a value (``PersistenceWriter`` runs its actions):
/// writes wait here, fenced by the term in force when they came; one batch at a time is taken and
/// committed; commits start at least `interval` apart.
///
/// ```
/// idle ──submit──▶ scheduled ──take: empty──▶ idle
///                      │  ▲ └──take: within the interval──▶ holding ──(its time)──▶ scheduled
///                take: │  │
///              a batch ▼  └──committed / refused──┐
///                 committing ─────────────────────┘  (a failed commit is retried: committing)
/// ```
struct WriteQueue<Write: Sendable>: Sendable {
    enum Phase: Sendable, Equatable {
        /// Nothing queued, nothing under way.
        case idle
        /// A take is on its way to the store's thread.
        case scheduled
        /// The last commit began less than the interval ago: the next take comes at `until`;
        /// everything submitted meanwhile joins its batch.
        case holding(until: Int64)
        /// A batch of `writes` writes is being committed (or retried).
        case committing(writes: Int)
    }

    /// What a take calls for.
    enum Take: Sendable {
        case batch([Write], fence: Int64?)
        /// Take again at this time.
        case wait(until: Int64)
        /// The queue is empty: the writer is idle.
        case idle
    }

    private struct Queued: Sendable {
        var write: Write
        var fence: Int64?
    }

    private var queue: [Queued] = []
    private(set) var phase = Phase.idle
    /// When the last batch was taken (ms).
    private var lastCommit: Int64?
    /// The term in force for writes submitted from now on.
    var fence: Int64?
    /// Least time between the starts of two commits, ms (0: none).
    let interval: Int64
    /// Most writes per batch.
    let maxBatch: Int

    init(interval: Int64, maxBatch: Int) {
        self.interval = interval
        self.maxBatch = maxBatch
    }

    /// Writes queued and being committed.
    var backlog: Int {
        if case .committing(let writes) = phase { queue.count + writes } else { queue.count }
    }

    /// Nothing queued and nothing under way.
    var isIdle: Bool { phase == .idle }

    /// Queues a write under the current fence; true when a take must be scheduled (the writer was idle).
    mutating func submit(_ write: Write) -> Bool {
        queue.append(Queued(write: write, fence: fence))
        guard phase == .idle else { return false }
        phase = .scheduled
        return true
    }

    /// Takes the next batch at `now`: the writes up to the first of another fence, at most
    /// ``maxBatch``. Only a commit that began within the interval before `now` holds it back: when
    /// the wall clock steps back, waiting for the old time to come round would hold every write
    /// back for as long as the step.
    mutating func take(now: Int64) -> Take {
        guard !queue.isEmpty else {
            phase = .idle
            return .idle
        }
        if let last = lastCommit, interval > 0, (last..<last + interval).contains(now) {
            phase = .holding(until: last + interval)
            return .wait(until: last + interval)
        }
        lastCommit = now
        let fence = queue[0].fence
        let taken = queue.prefix(maxBatch).prefix { $0.fence == fence }
        queue.removeFirst(taken.count)
        phase = .committing(writes: taken.count)
        return .batch(taken.map(\.write), fence: fence)
    }

    /// The batch committed, or was refused for its term (dropped): the next take follows at once.
    mutating func batchDone() {
        phase = .scheduled
    }
}
