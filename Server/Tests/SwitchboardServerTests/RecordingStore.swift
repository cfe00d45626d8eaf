import NIOConcurrencyHelpers
import SwitchboardProtocol

@testable import SwitchboardServer

/// A store in front of a real one that keeps every batch it is given, and refuses those
/// ``refusal`` names, for tests of ``PersistenceWriter``.
final class RecordingStore: CallRecordStore {
    let inner: any SwitchboardStorage
    /// Asked before each commit: an error refuses the batch.
    let refusal = LockedCallback<@Sendable (PersistenceBatch) -> (any Error)?>({ _ in nil })
    private let given = NIOLockedValueBox<[PersistenceBatch]>([])

    init(_ inner: any SwitchboardStorage) { self.inner = inner }

    /// Every batch offered, refused ones included, in order.
    var batches: [PersistenceBatch] { given.withLockedValue { $0 } }
    /// The ended calls of each batch offered.
    var endedPerBatch: [Int] { batches.map(\.ended.count) }

    func commit(_ batch: PersistenceBatch) async throws -> [StoredRecord] {
        given.withLockedValue { $0.append(batch) }
        if let error = refusal.function(batch) { throw error }
        return try await inner.commit(batch)
    }
    func loadJournal() async throws -> [JournalEntry] { try await inner.loadJournal() }
    func markAlive(at time: Int64) async throws { try await inner.markAlive(at: time) }
    func lastAlive() async throws -> Int64? { try await inner.lastAlive() }
    func queryRecords(owner: UserKey, syncTime: Int64, count: Int, order: RecordOrder) async throws -> QueryRecordsResponse {
        try await inner.queryRecords(owner: owner, syncTime: syncTime, count: count, order: order)
    }
    func deleteRecords(owner: UserKey, callIds: [CallID]) async throws -> Int { 0 }
    func deleteAllRecords(owner: UserKey) async throws -> Int { 0 }
}
