import Logging
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Writes call records with group commit: while one transaction commits, new records queue up and
/// go into the next one together. Under light load a record is committed at once; under heavy
/// load one fsync covers many calls.
///
/// `submit` never blocks the call engine. Once a batch is committed, ``onCommitted`` runs with the
/// stored records (the server sends each owner its `callRecord` event from there, so that event
/// is the promise that the record is durable).
final class RecordWriter: Sendable {
    private struct State {
        var queue: [RecordDraft] = []
        var flushing = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let store: any CallRecordStore
    private let onCommitted: @Sendable ([StoredRecord]) -> Void
    private let logger: Logger
    private let state = NIOLockedValueBox(State())
    /// Most records per transaction.
    private let maxBatch = 2000

    init(store: any CallRecordStore, logger: Logger, onCommitted: @escaping @Sendable ([StoredRecord]) -> Void) {
        self.store = store
        self.logger = logger
        self.onCommitted = onCommitted
    }

    /// Queues records for the next commit.
    func submit(_ drafts: [RecordDraft]) {
        guard !drafts.isEmpty else { return }
        let startFlush = state.withLockedValue { state -> Bool in
            state.queue.append(contentsOf: drafts)
            guard !state.flushing else { return false }
            state.flushing = true
            return true
        }
        if startFlush {
            Task { await self.flushLoop() }
        }
    }

    /// Returns once every record submitted so far is committed (or given up on).
    func drain() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLockedValue { state -> Bool in
                guard state.flushing || !state.queue.isEmpty else { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    private func flushLoop() async {
        while true {
            let batch = state.withLockedValue { state -> [RecordDraft] in
                let batch = Array(state.queue.prefix(maxBatch))
                state.queue.removeFirst(batch.count)
                return batch
            }
            if batch.isEmpty {
                let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>]? in
                    // Records may have arrived since the batch was taken.
                    guard state.queue.isEmpty else { return nil }
                    state.flushing = false
                    defer { state.idleWaiters = [] }
                    return state.idleWaiters
                }
                guard let waiters else { continue }
                waiters.forEach { $0.resume() }
                return
            }
            await write(batch)
        }
    }

    /// Writes one batch, retrying a failing database a few times before giving the records up.
    private func write(_ batch: [RecordDraft]) async {
        var delay: Duration = .milliseconds(50)
        for attempt in 1...5 {
            do {
                let stored = try await store.insertRecords(batch)
                onCommitted(stored)
                return
            } catch {
                logger.error(
                    "record write failed",
                    metadata: ["attempt": "\(attempt)", "records": "\(batch.count)", "error": "\(error)"])
                try? await Task.sleep(for: delay)
                delay *= 4
            }
        }
        logger.critical("records lost after retries", metadata: ["records": "\(batch.count)"])
    }
}
