import Foundation
import Logging
import SwitchboardProtocol

/// Converts recordings off the signaling path: one at a time, in child processes at a lower
/// priority (``RecordingTools``), so calls never wait for it. The work queue is the recordings
/// table: takes are stored there when they end (``PersistenceBatch/recordings``), and a node
/// claims one before converting it, so in a cluster each is converted by one node; one claimed
/// by a node that died is claimed again after ``staleAfter``.
///
/// A failed attempt is tried again, at most ``maxAttempts`` times in all, each after the others
/// waiting; then the recording is `failed`, with `recording.failed` for the app's webhooks. A take
/// with nothing recorded (no member's media reached the SFU) fails at once: it cannot get better. A
/// converted one is `ready`, with `recording.ready`. The event is written in the same transaction.
final class RecordingWorker: Sendable {
    static let maxAttempts = 3
    /// A conversion claimed longer ago than this is taken to be lost with its node (ms).
    static let staleAfter: Int64 = 30 * 60_000
    /// How long a failed attempt waits before the next conversion is claimed (ms).
    static let retryPause: Int64 = 5_000
    /// Recordings waiting for conversion beyond which new recordings are refused (`recordingUnavailable`).
    static let maxBacklog = 1_000
    /// How often the retention sweep runs (ms), and the most recordings it deletes per app and run.
    static let sweepInterval: Int64 = 3_600_000
    static let sweepBatch = 500

    let store: any RecordingStore
    let files: RecordingFiles
    let converter: RecordingConverter
    private let clock: any SwitchboardClock
    private let logger: Logger
    private let wakeSignal = WakeSignal()
    private let runner = LockedCallback<Task<Void, Never>?>(nil)
    private let sweeper = LockedCallback<Task<Void, Never>?>(nil)
    /// Each app's retention (days; nil: kept), as its settings say now.
    private let retention: @Sendable () -> [(SdkAppID, Int?)]
    /// Recordings waiting for conversion or being converted, as last counted (and since stored).
    private let backlog = LockedCallback<Int>(0)

    /// Called after a webhook event was written (the dispatcher sends it then).
    let onEventsWritten = LockedCallback<(@Sendable () -> Void)?>(nil)

    /// Whether new recordings are refused: ``maxBacklog`` wait for conversion.
    var isBacklogged: Bool { backlog.function >= Self.maxBacklog }

    init(
        store: any RecordingStore, files: RecordingFiles, tools: RecordingTools,
        retention: @escaping @Sendable () -> [(SdkAppID, Int?)], clock: any SwitchboardClock, logger: Logger
    ) {
        self.retention = retention
        self.store = store
        self.files = files
        self.converter = RecordingConverter(files: files, tools: tools)
        self.clock = clock
        self.logger = logger
    }

    /// Starts converting what waits, and whatever is stored later (``wake()``), until ``stop()``.
    func start() {
        runner.function = Task { [self] in
            while !Task.isCancelled {
                switch await convertNext() {
                case .idle:
                    await wakeSignal.wait()
                case .converted:
                    break
                case .failedAttempt:
                    // The database or the conversion failed: the next claim waits a little.
                    guard (try? await clock.sleep(for: .milliseconds(Self.retryPause))) != nil else { return }
                }
            }
        }
        sweeper.function = Task { [self] in
            while !Task.isCancelled {
                await sweepExpired()
                guard (try? await clock.sleep(for: .milliseconds(Self.sweepInterval))) != nil else { return }
            }
        }
    }

    func stop() {
        runner.function?.cancel()
        sweeper.function?.cancel()
        wakeSignal.signal()
    }

    /// New takes were stored.
    func wake() {
        backlog.function += 1
        wakeSignal.signal()
    }

    /// What one turn of the worker did.
    enum Turn: Equatable, Sendable {
        /// Nothing waits.
        case idle
        /// A recording is ready, or failed for good.
        case converted
        /// An attempt failed (it will be tried again), or the database did.
        case failedAttempt
    }

    /// Claims one recording and converts it.
    func convertNext() async -> Turn {
        let now = clock.now()
        let claimed: [StoredRecording]
        if let count = try? await store.unconvertedRecordings() { backlog.function = count }
        do {
            claimed = try await store.claimRecordings(now: now, staleBefore: now - Self.staleAfter, limit: 1)
        } catch {
            logger.error("could not claim a recording to convert", metadata: ["error": "\(error)"])
            return .failedAttempt
        }
        guard let recording = claimed.first else { return .idle }
        let take = recording.take
        let outcome: RecordingOutcome
        do {
            outcome = .ready(try await converter.convert(take))
            logger.info("a recording is ready", metadata: ["recording": "\(take.id)"])
        } catch {
            let reason = "\(error)"
            logger.error("a recording's conversion failed", metadata: ["recording": "\(take.id)", "error": "\(reason)"])
            let final = error is RecordingConverter.NothingRecorded || recording.attempts >= Self.maxAttempts
            outcome = final ? .failed(reason) : .retry(reason)
        }
        let event = Self.event(outcome, of: recording, now: clock.now())
        do {
            try await store.finishRecording(id: take.id, outcome, now: clock.now(), event: event)
            if event != nil { onEventsWritten.function?() }
        } catch {
            logger.error("could not store a recording's conversion", metadata: ["recording": "\(take.id)", "error": "\(error)"])
        }
        if case .retry = outcome { return .failedAttempt }
        return .converted
    }

    /// The webhook event of an outcome (none for a retry).
    static func event(_ outcome: RecordingOutcome, of recording: StoredRecording, now: Int64) -> OutboxEvent? {
        switch outcome {
        case .ready(let files): event(.recordingReady, recording, files: files, reason: nil, now: now)
        case .failed(let reason): event(.recordingFailed, recording, files: nil, reason: reason, now: now)
        case .retry: nil
        }
    }

    /// A recording's webhook event: `recording.ready`, `recording.failed` or `recording.deleted`.
    static func event(
        _ type: WebhookEventType, _ recording: StoredRecording, files: [RecordedFile]?, reason: String?, now: Int64
    ) -> OutboxEvent? {
        let take = recording.take
        let body = WebhookRecording(
            recordingId: take.id, callId: take.callId, take: take.take, startedBy: take.startedBy,
            startedAt: take.startedAt, stoppedAt: take.stoppedAt, members: take.members, files: files, reason: reason,
            attempts: type == .recordingFailed ? recording.attempts : nil)
        let data: WebhookEventData =
            switch type {
            case .recordingReady: .recordingReady(body)
            case .recordingFailed: .recordingFailed(body)
            default: .recordingDeleted(body)
            }
        let id = "evt_rec_\(take.id)_\(type.rawValue.split(separator: ".").last ?? "")"
        guard let payload = try? SwitchboardJSON.encode(WebhookEvent(id: id, time: now, sdkAppID: take.app, data: data))
        else { return nil }
        return OutboxEvent(id: id, app: take.app, type: type, orderingKey: take.callId.rawValue, time: now, payload: payload)
    }

    /// Deletes the recordings each app's retention has run out for (with `recording.deleted`,
    /// reason `retention`); returns how many. Any node may sweep: a recording is deleted once.
    @discardableResult
    func sweepExpired() async -> Int {
        var deleted = 0
        for case let (app, days?) in retention() {
            let before = clock.now() - Int64(days) * 86_400_000
            do {
                for recording in try await store.expiredRecordings(app: app, before: before, limit: Self.sweepBatch) {
                    if try await delete(app: app, id: recording.take.id, reason: "retention") != nil { deleted += 1 }
                }
            } catch {
                logger.error("the recordings' retention sweep failed", metadata: ["app": "\(app)", "error": "\(error)"])
            }
        }
        if deleted > 0 { logger.info("recordings past their retention deleted", metadata: ["count": "\(deleted)"]) }
        return deleted
    }

    /// Deletes a recording: its files, then its row, with `recording.deleted` (`reason`:
    /// `retention` or `deleted`). Nil when there was none.
    func delete(app: SdkAppID, id: String, reason: String) async throws -> StoredRecording? {
        guard let recording = try await store.recording(app: app, id: id) else { return nil }
        guard recording.state != .converting || clock.now() - recording.updatedAt > Self.staleAfter else {
            throw SwitchboardError(.invalidCallState, "the recording is being converted; delete it when it is ready")
        }
        let folder = files.outputFolder(callId: recording.take.callId, take: recording.take.take)
        try? FileManager.default.removeItem(atPath: folder)
        for track in files.tracks(callId: recording.take.callId, take: recording.take.take) {
            try? FileManager.default.removeItem(atPath: track.path)
        }
        let now = clock.now()
        let deleted = try await store.deleteRecording(app: app, id: id) { stored in
            Self.event(.recordingDeleted, stored, files: nil, reason: reason, now: now)
        }
        onEventsWritten.function?()
        return deleted
    }
}
