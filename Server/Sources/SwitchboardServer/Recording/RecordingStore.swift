import Foundation
import SwitchboardProtocol

/// Where a recording stands: stored at the end of its take (`pending`), claimed by a node that
/// converts it (`converting`), then `ready` with its files or `failed` after its attempts.
enum RecordingState: String, Codable, Sendable, CaseIterable {
    case pending
    case converting
    case ready
    case failed
}

/// A recording as stored: its take, where its conversion stands and what it made.
struct StoredRecording: Equatable, Sendable {
    var take: RecordingTake
    var state: RecordingState
    var attempts: Int
    var files: [RecordedFile]
    /// Why the last attempt failed.
    var failure: String?
    var updatedAt: Int64

    /// What the `detail` column keeps, as JSON.
    struct Detail: Codable, Equatable, Sendable {
        var take: RecordingTake
        var files: [RecordedFile]
        var failure: String?
    }

    var detail: Detail { Detail(take: take, files: files, failure: failure) }

    /// Takes in how a conversion attempt ended; returns the state the recording goes to.
    mutating func record(_ outcome: RecordingOutcome) -> RecordingState {
        switch outcome {
        case .ready(let made):
            files = made
            failure = nil
            return .ready
        case .retry(let reason):
            failure = reason
            return .pending
        case .failed(let reason):
            failure = reason
            return .failed
        }
    }

    init(take: RecordingTake, state: RecordingState, attempts: Int, files: [RecordedFile], failure: String?, updatedAt: Int64) {
        self.take = take
        self.state = state
        self.attempts = attempts
        self.files = files
        self.failure = failure
        self.updatedAt = updatedAt
    }

    init(detailText: String, state: String, attempts: Int, updatedAt: Int64) throws {
        let detail = try SwitchboardJSON.decode(Detail.self, from: Data(detailText.utf8))
        self.init(
            take: detail.take, state: RecordingState(rawValue: state) ?? .failed, attempts: attempts, files: detail.files,
            failure: detail.failure, updatedAt: updatedAt)
    }

    static func detailText(_ detail: Detail) throws -> String {
        String(decoding: try SwitchboardJSON.encode(detail), as: UTF8.self)
    }
}

/// How a conversion attempt ended.
enum RecordingOutcome: Equatable, Sendable {
    case ready([RecordedFile])
    /// It failed and is tried again later (it goes back to `pending`).
    case retry(String)
    case failed(String)
}

/// The recordings (one row per take; docs/RECORDING.md). Takes are stored through the
/// persistence writer, in the commit before the change that ended them (``PersistenceBatch/recordings``).
protocol RecordingStore: Sendable {
    /// Claims up to `limit` recordings to convert: pending ones, and those a node claimed before
    /// `staleBefore` and never finished (it died). Each is claimed by one caller only.
    func claimRecordings(now: Int64, staleBefore: Int64, limit: Int) async throws -> [StoredRecording]
    /// Records how a claimed conversion ended, with its webhook event in the same transaction.
    func finishRecording(id: String, _ outcome: RecordingOutcome, now: Int64, event: OutboxEvent?) async throws
    /// An app's recordings, newest first (only those of `callId` when given).
    func recordings(app: SdkAppID, callId: CallID?, limit: Int) async throws -> [StoredRecording]
    func recording(app: SdkAppID, id: String) async throws -> StoredRecording?
    /// Deletes a recording's row, with its webhook event; returns it (nil: there was none).
    func deleteRecording(app: SdkAppID, id: String, event: @Sendable (StoredRecording) -> OutboxEvent?) async throws
        -> StoredRecording?
    /// Recordings of `app` that are ready or failed and older than `before` (for the retention sweep).
    func expiredRecordings(app: SdkAppID, before: Int64, limit: Int) async throws -> [StoredRecording]
    /// How many recordings wait for conversion or are being converted (the backlog's bound).
    func unconvertedRecordings() async throws -> Int
}
