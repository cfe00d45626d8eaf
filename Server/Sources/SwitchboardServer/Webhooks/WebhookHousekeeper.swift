import Foundation
import Logging
import ServiceLifecycle
import SwitchboardProtocol

/// The outbox's bound, gauges and retention, and the records' retention, every
/// ``WebhookConfiguration/housekeepingInterval`` on the node's clock.
///
/// - The bound: an endpoint with ``WebhookConfiguration/maxBacklog`` deliveries waiting gets no new
///   events queued until fewer than nine tenths of that wait (a dead receiver costs at most its
///   bound in the database and nothing in memory). The time it spent full is kept on the endpoint
///   as a gap, for an operator to replay (the events themselves are kept for
///   ``WebhookConfiguration/eventRetention``), and `switchboard_webhook_outbox_full` says so.
/// - Sweeps are bounded and incremental: at most ``sweepBatches`` statements of ``sweepBatch`` rows
///   each per round and kind, oldest first, so a large backlog of old rows is worked off over
///   rounds without a long transaction. In a cluster only the leader sweeps.
struct WebhookHousekeeper: Sendable {
    let store: any WebhookStore
    let apps: AppDirectory
    let directory: WebhookDirectory
    let configuration: WebhookConfiguration
    let metrics: WebhookMetrics
    let clock: any SwitchboardClock
    let logger: Logger
    /// Whether this node sweeps (a single node, or the cluster's leader).
    let sweeps: @Sendable () -> Bool
    static let sweepBatch = 1000
    static let sweepBatches = 20

    /// One round.
    func round() async {
        let now = clock.now()
        await updateBacklogs(now: now)
        guard sweeps() else { return }
        let eventCutoff = now - configuration.eventRetention.milliseconds
        await sweep("webhook events") { try await store.sweepWebhookEvents(before: eventCutoff, limit: Self.sweepBatch) }
        for app in apps.all {
            guard let days = app.settings.recordRetentionDays, days > 0 else { continue }
            let cutoff = now - Int64(days) * 86_400_000
            await sweep("call records") { try await store.sweepRecords(app: app.sdkAppID, before: cutoff, limit: Self.sweepBatch) }
        }
    }

    private func updateBacklogs(now: Int64) async {
        do {
            let backlogs = try await store.webhookBacklogs()
            for endpoint in try await store.webhookEndpoints(app: nil) {
                let backlog = backlogs[endpoint.id] ?? WebhookBacklog(pending: 0, oldestEventTime: nil)
                let full: Bool
                if endpoint.fullSince == nil, backlog.pending >= configuration.maxBacklog {
                    try await store.setWebhookFull(endpoint: endpoint.id, full: true, now: now)
                    logger.warning(
                        "webhook endpoint at its bound: new events are not queued for it",
                        metadata: ["endpoint": "\(endpoint.id)", "pending": "\(backlog.pending)"])
                    full = true
                } else if endpoint.fullSince != nil, backlog.pending < configuration.maxBacklog * 9 / 10 {
                    try await store.setWebhookFull(endpoint: endpoint.id, full: false, now: now)
                    logger.notice("webhook endpoint under its bound again", metadata: ["endpoint": "\(endpoint.id)"])
                    full = false
                } else {
                    full = endpoint.fullSince != nil
                }
                let age = backlog.oldestEventTime.map { Double(max(0, now - $0)) / 1000 } ?? 0
                metrics.backlog(endpoint.id, pending: backlog.pending, oldestAge: age, full: full)
            }
        } catch {
            logger.warning("could not read the webhook backlog", metadata: ["error": "\(error)"])
        }
    }

    private func sweep(_ what: String, _ batch: () async throws -> Int) async {
        for _ in 0..<Self.sweepBatches {
            do {
                guard try await batch() == Self.sweepBatch else { return }
            } catch is CancellationError {
                return  // the node is stopping: the next start sweeps
            } catch {
                logger.warning("retention sweep failed", metadata: ["what": "\(what)", "error": "\(error)"])
                return
            }
        }
    }
}

/// Runs the housekeeper's rounds until graceful shutdown.
struct WebhookHousekeepingService: Service {
    let housekeeper: WebhookHousekeeper

    func run() async throws {
        while !Task.isCancelled {
            await housekeeper.round()
            do {
                try await cancelWhenGracefulShutdown {
                    try await housekeeper.clock.sleep(for: housekeeper.configuration.housekeepingInterval)
                }
            } catch {
                return
            }
        }
    }
}
