import Foundation
import Logging
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Writes the journal of calls in progress and the records of ended calls, with group commit:
/// while one transaction commits, new writes queue up and go into the next one together. Commits
/// also start at least the commit interval apart: a write that arrives sooner after the last commit
/// began waits for the rest of the interval, with every other write that arrives meanwhile. Under
/// light load (writes further apart than the interval) a write is committed at once; under load
/// there are at most 1 / interval transactions a second, each with its fsync, whatever the rate of
/// calls. The cost is that wait: a record's `callRecord` event and a journal save come up to one
/// interval later.
///
/// Within a batch, several saves of one call keep only the last, and a call that ended drops its
/// pending saves: its records and the removal of its journal entry commit together. A write
/// carries the webhook events of the change it stores: they are never coalesced, go into the
/// batch in the order written, and commit in the same transaction as their change. `submit…`
/// never blocks the call engine. Once a batch is committed, ``onCommitted`` runs with the stored
/// records (the server sends each owner its `callRecord` event from there, so that event is the
/// promise that the record is durable).
///
/// A failing database is retried until it is back (backoff from 50 ms to 5 s, on the node's clock),
/// so no record is given up; meanwhile writes wait in memory. Past ``maxBacklog`` waiting writes
/// the writer reports ``isBacklogged`` and the node refuses new calls (`storageUnavailable`), so
/// that only the calls already in progress can add to it.
final class PersistenceWriter: Sendable {
    enum Write: Sendable {
        case save(JournalSave, events: [WebhookNotice] = [])
        case end(EndedCallWrite, events: [WebhookNotice] = [])
        /// Events whose change needs no save of its own.
        case events([WebhookNotice])
        /// A recording's take, for conversion.
        case recording(RecordingTake)
    }

    /// A save of a call in progress. Its state is encoded only if the save survives coalescing:
    /// most calls end within the batch that would have journaled them.
    struct JournalSave: Sendable {
        var callId: CallID
        var app: SdkAppID
        var updatedAt: Int64
        var state: @Sendable () -> Data?
    }

    private struct State {
        /// Each write with the fence in force when it was submitted: the term of the leadership
        /// that made it, which its batch carries whatever the fence is by the time it is taken.
        var queue: WriteQueue<Write>
        /// ``drain()``s waiting for the queue to empty, by number (a cancelled one leaves).
        var idleWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let store: any CallRecordStore
    private let onCommitted: @Sendable ([StoredRecord]) -> Void
    /// Called after a batch with webhook events committed (the dispatcher sends them then).
    let onEventsCommitted = LockedCallback<(@Sendable () -> Void)?>(nil)
    /// Called after a batch with recordings' takes committed (the recorder converts them then).
    let onRecordingsCommitted = LockedCallback<(@Sendable () -> Void)?>(nil)
    private let clock: any SwitchboardClock
    private let logger: Logger
    private let state: NIOLockedValueBox<State>
    /// Writes waiting (or being retried) beyond which new calls are refused.
    let maxBacklog: Int

    init(
        store: any CallRecordStore, clock: any SwitchboardClock, commitInterval: Duration = .zero,
        maxBacklog: Int = 20_000, logger: Logger, onCommitted: @escaping @Sendable ([StoredRecord]) -> Void
    ) {
        self.store = store
        self.clock = clock
        // The least time between the starts of two commits, at most a minute: `serve` takes
        // 0-1000 ms; a configuration made in code is held to a bound too. At most 4,000 writes
        // per transaction.
        let interval = min(max(0, commitInterval.milliseconds), 60_000)
        state = NIOLockedValueBox(State(queue: WriteQueue(interval: interval, maxBatch: 4000)))
        self.maxBacklog = maxBacklog
        self.logger = logger
        self.onCommitted = onCommitted
    }

    /// In a cluster, the term of this node's leadership, set while it leads. Each write is fenced
    /// by the term in force when it was submitted (``PersistenceBatch/fence``): writes a former
    /// leadership queued are refused once another term began, even if this node leads again.
    var fence: Int64? {
        get { state.withLockedValue { $0.queue.fence } }
        set { state.withLockedValue { $0.queue.fence = newValue } }
    }

    /// Called when a batch of the current term was refused because another node leads now: the
    /// writes are dropped (the calls are the new leader's), and the node steps down. A refused
    /// batch of a former term is only dropped.
    let onFenced = LockedCallback<(@Sendable () -> Void)?>(nil)

    /// Writes queued and being written.
    var backlog: Int { state.withLockedValue { $0.queue.backlog } }

    /// Whether so many writes wait that new calls should be refused.
    var isBacklogged: Bool { backlog > maxBacklog }

    /// Queues a save of a call in progress; `state` is its JSON, made when the batch is written
    /// (nil when it cannot be encoded: the save is dropped and logged).
    func submit(
        journal callId: CallID, app: SdkAppID, updatedAt: Int64, events: [WebhookNotice] = [],
        state: @escaping @Sendable () -> Data?
    ) {
        enqueue(.save(JournalSave(callId: callId, app: app, updatedAt: updatedAt, state: state), events: events))
    }

    /// Queues the end of a call: its records, and the removal of its journal entry.
    func submit(ended callId: CallID, records: [RecordDraft], events: [WebhookNotice] = []) {
        enqueue(.end(EndedCallWrite(callId: callId, records: records), events: events))
    }

    /// Queues records of calls that were never journaled.
    func submit(_ drafts: [RecordDraft]) {
        guard !drafts.isEmpty else { return }
        enqueue(.end(EndedCallWrite(callId: nil, records: drafts), events: []))
    }

    /// Queues a recording's take (before the write of the change that ended it).
    func submit(recording take: RecordingTake) {
        enqueue(.recording(take))
    }

    /// Queues webhook events whose change has nothing else to store.
    func submit(events: [WebhookNotice]) {
        guard !events.isEmpty else { return }
        enqueue(.events(events))
    }

    private func enqueue(_ write: Write) {
        let startFlush = state.withLockedValue { $0.queue.submit(write) }
        // The batch (and the journal's JSON in it) is made on the store's thread, not the engine's.
        if startFlush { store.onWriter { self.flushNext() } }
    }

    /// Returns once everything submitted so far is committed (or given up on), or when the task
    /// is cancelled: a database that does not come back keeps its writes retrying, and a shutdown
    /// that ran out of time must still end (what is not committed then stays uncommitted: the
    /// journal has each call as it last reached the database).
    func drain() async {
        let id = state.withLockedValue { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let idle = state.withLockedValue { state -> Bool in
                    guard !Task.isCancelled, !state.queue.isIdle else { return true }
                    state.idleWaiters[id] = continuation
                    return false
                }
                if idle { continuation.resume() }
            }
        } onCancel: {
            state.withLockedValue { $0.idleWaiters.removeValue(forKey: id) }?.resume()
        }
    }

    private enum Next {
        case batch([Write], fence: Int64?)
        /// The last commit began less than the commit interval ago: wait until this time.
        case wait(until: Int64)
        case idle([CheckedContinuation<Void, Never>])
    }

    /// Takes the next batch and commits it; the commit's completion takes the one after, on the
    /// store's thread, until the queue is empty (no task or thread waits while there is nothing).
    private func flushNext() {
        let now = clock.now()
        let next = state.withLockedValue { state -> Next in
            switch state.queue.take(now: now) {
            case .batch(let writes, let fence):
                return .batch(writes, fence: fence)
            case .wait(let until):
                return .wait(until: until)
            case .idle:
                defer { state.idleWaiters = [:] }
                return .idle(Array(state.idleWaiters.values))
            }
        }
        switch next {
        case .batch(let writes, let fence):
            var batch = Self.batch(writes)
            batch.fence = fence
            if batch.unencodable > 0 {
                logger.error("could not encode calls for the journal", metadata: ["calls": "\(batch.unencodable)"])
            }
            if batch.unencodableEvents > 0 {
                logger.error("could not encode webhook events", metadata: ["events": "\(batch.unencodableEvents)"])
            }
            commit(batch, attempt: 1, delay: 50)
        case .wait(let deadline):
            // Everything that arrives meanwhile joins this batch (the queue is `holding`).
            Task {
                try? await self.clock.sleep(until: deadline)
                self.store.onWriter { self.flushNext() }
            }
        case .idle(let waiters):
            waiters.forEach { $0.resume() }
        }
    }

    /// Commits one batch, retrying a failing database until it is back (backoff on the node's clock).
    private func commit(_ batch: PersistenceBatch, attempt: Int, delay: Int64) {
        store.commit(batch) { result in
            switch result {
            case .success(let stored):
                self.state.withLockedValue { $0.queue.batchDone() }
                self.onCommitted(stored)
                if !batch.events.isEmpty { self.onEventsCommitted.function?() }
                if !batch.recordings.isEmpty { self.onRecordingsCommitted.function?() }
                self.flushNext()
            case .failure(let error as ClusterError) where error == .fenced:
                // Refused under the current term: another node leads now, and this one steps
                // down. Under a former term: only those writes are stale.
                let current = self.state.withLockedValue { state -> Bool in
                    state.queue.batchDone()
                    return state.queue.fence == batch.fence
                }
                self.logger.warning(
                    "writes refused: another node's term began after they were made",
                    metadata: ["ended": "\(batch.ended.count)", "term": "\(batch.fence ?? 0)"])
                if current { self.onFenced.function?() }
                self.flushNext()
            case .failure(let error):
                self.logger.error(
                    "database write failed; retrying",
                    metadata: [
                        "attempt": "\(attempt)", "ended": "\(batch.ended.count)", "waiting": "\(self.backlog)",
                        "error": "\(error)",
                    ])
                Task {
                    do {
                        try await self.clock.sleep(for: .milliseconds(delay))
                    } catch {
                        self.logger.critical("writes abandoned: the writer was cancelled", metadata: ["ended": "\(batch.ended.count)"])
                        return
                    }
                    self.commit(batch, attempt: attempt + 1, delay: min(delay * 2, 5_000))
                }
            }
        }
    }

    /// Coalesces writes: the last save of each call, none for calls that end in the same batch;
    /// every webhook event, in the order written.
    static func batch(_ writes: [Write]) -> PersistenceBatch {
        var batch = PersistenceBatch()
        var saves: [CallID: JournalSave] = [:]
        var order: [CallID] = []
        func add(_ events: [WebhookNotice]) {
            for notice in events {
                if let event = OutboxEvent(notice) {
                    batch.events.append(event)
                } else {
                    batch.unencodableEvents += 1
                }
            }
        }
        for write in writes {
            switch write {
            case .save(let entry, let events):
                if saves.updateValue(entry, forKey: entry.callId) == nil { order.append(entry.callId) }
                add(events)
            case .end(let ended, let events):
                if let callId = ended.callId { saves[callId] = nil }
                batch.ended.append(ended)
                add(events)
            case .events(let events):
                add(events)
            case .recording(let take):
                batch.recordings.append(take)
            }
        }
        for save in order.compactMap({ saves[$0] }) {
            if let state = save.state() {
                batch.journal.append(JournalEntry(callId: save.callId, app: save.app, state: state, updatedAt: save.updatedAt))
            } else {
                batch.unencodable += 1
            }
        }
        return batch
    }
}
