import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import SwitchboardProtocol

/// Sends the outbox's deliveries, on every node: each round, for each endpoint not paused, it
/// claims as many due deliveries as the endpoint has free slots (``WebhookConfiguration/concurrency``)
/// and posts them, each signed, each in a task of its own; the outcomes (delivered, retry at a
/// time drawn from the schedule, or failed for good) go back to the store together, in one
/// transaction at the start of the next round, which an attempt's end asks for.
///
/// Order per call: the store gives out only the first pending delivery of a call, so the next one
/// goes out once the receiver took this one (or it failed for good). A dead endpoint holds only
/// its own slots, waits out its backoff in the database (never in memory), and keeps at most its
/// bound of deliveries queued. Rounds run when woken (a commit with events, an attempt's end), at
/// the earliest time a known delivery falls due, and every ``WebhookConfiguration/pollInterval``
/// (for other nodes' events and claims that lapsed), all on the node's clock.
actor WebhookDispatcher {
    private let store: any WebhookStore
    private let directory: WebhookDirectory
    private let sender: any WebhookSender
    private let configuration: WebhookConfiguration
    private let node: String
    private let clock: any SwitchboardClock
    private let metrics: WebhookMetrics
    private let logger: Logger
    /// Called when a receiver's 410 Gone paused an endpoint (the cluster hears of it).
    let onEndpointsChanged = LockedCallback<(@Sendable () -> Void)?>(nil)

    private var inFlight: [String: Int] = [:]
    /// When each endpoint's next delivery is due, as last asked (nil: nothing known).
    private var nextDue: [String: Int64] = [:]
    private var lastRefresh: Int64?
    private var attempts: [UInt64: Task<Void, Never>] = [:]
    /// Outcomes of finished attempts not yet recorded: the next round records them all in one
    /// transaction before it claims (a delivery's claim holds meanwhile, so nothing goes twice
    /// and a call's next event waits). At most one per slot of every endpoint.
    private var outcomes: [DeliveryResult] = []
    private var nextAttempt: UInt64 = 0
    private let wakeups = WakeSignal()

    init(
        store: any WebhookStore, directory: WebhookDirectory, sender: any WebhookSender,
        configuration: WebhookConfiguration, node: String, clock: any SwitchboardClock, metrics: WebhookMetrics,
        logger: Logger
    ) {
        self.store = store
        self.directory = directory
        self.sender = sender
        self.configuration = configuration
        self.node = node
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
    }

    /// Asks for a round now (new events were committed, an endpoint changed).
    nonisolated func wake() { wakeups.signal() }

    /// Runs rounds until the task is cancelled; then waits for the attempts in flight.
    func run() async {
        while !Task.isCancelled {
            await round()
            let now = clock.now()
            let soonest = ([now + configuration.pollInterval.milliseconds] + nextDue.values).min() ?? now
            guard soonest > now else { continue }
            // Whichever comes first: the deadline on the clock, or a wake-up.
            let deadline = soonest
            let clock = self.clock
            let wakeups = self.wakeups
            await withTaskGroup(of: Void.self) { group in
                group.addTask { try? await clock.sleep(until: deadline) }
                group.addTask { await wakeups.wait() }
                await group.next()
                group.cancelAll()
            }
        }
        for task in attempts.values { task.cancel() }
        for task in attempts.values { await task.value }
        await recordOutcomes()
        await sender.shutdown()
    }

    /// One pass over the endpoints.
    func round() async {
        await recordOutcomes()
        let now = clock.now()
        if lastRefresh.map({ now - $0 >= configuration.pollInterval.milliseconds }) ?? true {
            lastRefresh = now
            do {
                directory.replace(with: try await store.webhookEndpoints(app: nil))
            } catch {
                logger.warning("could not read the webhook endpoints", metadata: ["error": "\(error)"])
            }
        }
        let endpoints = directory.endpoints
        let known = Set(endpoints.map(\.id))
        nextDue = nextDue.filter { known.contains($0.key) }
        for endpoint in endpoints where !endpoint.paused {
            if let due = nextDue[endpoint.id], due > now { continue }
            await dispatch(endpoint, now: now)
        }
        for endpoint in endpoints where endpoint.paused { nextDue[endpoint.id] = nil }
    }

    private func dispatch(_ endpoint: WebhookEndpoint, now: Int64) async {
        let free = configuration.concurrency - (inFlight[endpoint.id] ?? 0)
        guard free > 0 else {
            nextDue[endpoint.id] = nil
            return
        }
        let claimed: [ClaimedDelivery]
        do {
            claimed = try await store.claimWebhookDeliveries(
                endpoint: endpoint.id, node: node, now: now, leaseUntil: now + configuration.lease, limit: free)
            // Nothing claimable now: sleep until the next one falls due (or a wake-up).
            nextDue[endpoint.id] =
                claimed.count < free ? try await store.nextWebhookDue(endpoint: endpoint.id, after: now) : nil
        } catch {
            logger.warning("could not claim webhook deliveries", metadata: ["endpoint": "\(endpoint.id)", "error": "\(error)"])
            nextDue[endpoint.id] = now + configuration.pollInterval.milliseconds
            return
        }
        for delivery in claimed {
            inFlight[endpoint.id, default: 0] += 1
            nextAttempt += 1
            let id = nextAttempt
            attempts[id] = Task {
                let outcome = await self.attempt(delivery, to: endpoint)
                await self.finished(delivery, endpoint: endpoint, outcome: outcome, id: id)
            }
        }
    }

    /// Posts one delivery, signed with the endpoint's secrets as they are now.
    private nonisolated func attempt(_ delivery: ClaimedDelivery, to endpoint: WebhookEndpoint) async -> WebhookAttempt {
        let timestamp = clock.now() / 1000
        let keys = endpoint.signingSecrets(now: clock.now()).compactMap(WebhookSignature.key)
        let headers = [
            (WebhookSignature.idHeader, delivery.eventId),
            (WebhookSignature.timestampHeader, String(timestamp)),
            (WebhookSignature.signatureHeader,
             WebhookSignature.header(id: delivery.eventId, timestamp: timestamp, body: delivery.payload, keys: keys)),
        ]
        return await sender.send(url: endpoint.url, headers: headers, body: delivery.payload, timeout: configuration.timeout)
    }

    private func finished(_ delivery: ClaimedDelivery, endpoint: WebhookEndpoint, outcome: WebhookAttempt, id: UInt64) async {
        attempts[id] = nil
        inFlight[endpoint.id, default: 1] -= 1
        let now = clock.now()
        let firstAttempt = delivery.firstAttemptAt ?? now
        let failures = delivery.attempts + 1
        let (status, error, retryAfter): (Int?, String?, Int64?) =
            switch outcome {
            case .delivered(let status): (status, nil, nil)
            case .refused(let status, let retryAfter): (status, "HTTP \(status)", retryAfter)
            case .gone: (410, "HTTP 410: the receiver wants no more", nil)
            case .failed(let reason): (nil, reason, nil)
            }
        let next: DeliveryResult.Next
        if case .delivered = outcome {
            next = .delivered
            metrics.sent(endpoint.id)
        } else if let at = configuration.retry.next(
            afterAttempts: failures, firstAttempt: firstAttempt, now: now, retryAfter: retryAfter)
        {
            next = .retry(at: at)
            metrics.retried(endpoint.id)
        } else {
            next = .failed
            metrics.failed(endpoint.id)
            logger.warning(
                "webhook delivery given up after its retry bound",
                metadata: ["endpoint": "\(endpoint.id)", "event": "\(delivery.eventId)", "attempts": "\(failures)"])
        }
        outcomes.append(
            DeliveryResult(
                endpointId: endpoint.id, eventSeq: delivery.eventSeq, orderingKey: delivery.orderingKey, node: node,
                at: now, status: status, error: error, next: next))
        if case .gone = outcome { await pauseGone(endpoint.id, now: now) }
        nextDue[endpoint.id] = nil
        wake()
    }

    /// Records the outcomes gathered since the last round, in one transaction.
    private func recordOutcomes() async {
        guard !outcomes.isEmpty else { return }
        let batch = outcomes
        outcomes = []
        do {
            try await store.finishWebhookDeliveries(batch)
        } catch {
            // Their claims lapse and the deliveries are tried again: at least once.
            logger.warning("could not record webhook attempts", metadata: ["attempts": "\(batch.count)", "error": "\(error)"])
        }
    }

    /// A receiver that answers 410 Gone wants no more: its endpoint is paused (Standard Webhooks),
    /// until an operator resumes it.
    private func pauseGone(_ id: String, now: Int64) async {
        do {
            guard var endpoint = try await store.webhookEndpoints(app: nil).first(where: { $0.id == id }), !endpoint.paused
            else { return }
            endpoint.paused = true
            endpoint.pausedReason = "gone"
            endpoint.updatedAt = now
            try await store.saveWebhookEndpoint(endpoint)
            directory.replace(with: try await store.webhookEndpoints(app: nil))
            logger.warning("webhook endpoint paused: the receiver answered 410 Gone", metadata: ["endpoint": "\(id)"])
            onEndpointsChanged.function?()
        } catch {
            logger.warning("could not pause a webhook endpoint", metadata: ["endpoint": "\(id)", "error": "\(error)"])
        }
    }
}

/// Runs the node's ``WebhookDispatcher`` until graceful shutdown, or until the service group is
/// cancelled: the dispatcher runs in a child task, which the group's cancellation reaches. (It ran
/// in a task of its own, which only a graceful shutdown cancelled: when another service failed,
/// such as the HTTP server that could not bind its port, the group waited for it for ever and
/// the process ignored SIGINT and SIGTERM; issue 48.)
struct WebhookService: Service {
    let dispatcher: WebhookDispatcher

    func run() async throws {
        let dispatcher = self.dispatcher
        await cancelWhenGracefulShutdown { await dispatcher.run() }
    }
}
