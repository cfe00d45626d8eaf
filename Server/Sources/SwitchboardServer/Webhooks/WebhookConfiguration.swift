import Foundation
import SwitchboardProtocol

/// How webhooks are delivered (`switchboard serve --webhook-…`); docs/WEBHOOKS.md explains each.
public struct WebhookConfiguration: Sendable {
    /// Networks endpoints may be on besides public addresses: loopback, private, link-local and the
    /// other special ranges are refused unless listed here (SSRF). Tests allow `127.0.0.0/8`.
    public var allowedNetworks: [IPNetwork] = []
    /// How long a receiver has to answer an attempt (on the server's clock).
    public var timeout: Duration = .seconds(15)
    /// The schedule of retries (exponential, with jitter, until the bound).
    public var retry = WebhookRetrySchedule()
    /// Deliveries waiting for one endpoint beyond which new events are not queued for it (until it
    /// is under nine tenths again): what a dead endpoint can cost.
    public var maxBacklog = 100_000
    /// How long events are kept for replays (their deliveries with them).
    public var eventRetention: Duration = .seconds(7 * 86_400)
    /// Attempts in flight at once to one endpoint, per node.
    public var concurrency = 8
    /// How often a node looks for work it was not woken for (other nodes' events, retries).
    public var pollInterval: Duration = .seconds(1)
    /// How often the backlog gauges, the bound and the retention sweeps are updated.
    public var housekeepingInterval: Duration = .seconds(10)
    /// Endpoints for every app this server serves, made (or kept) at start: the `serve --webhook`
    /// flag, for the development app above all.
    public var startupEndpoints: [String] = []
    /// Their signing secret (`whsec_…`); nil: a new one, printed at start.
    public var startupSecret: String?

    public init() {}

    /// How long a claim lasts: the attempt's timeout and room for the node to record its outcome.
    /// A node never starts an attempt on a claim that runs out before the attempt would end.
    var lease: Int64 { 2 * timeout.milliseconds + 5_000 }
}

/// Retries after a failed attempt: the first after ``initial``, each next one twice as long, at
/// most ``maxInterval``, each drawn between half and all of that (jitter, so that receivers that
/// fail together are not retried together); after ``giveUpAfter`` from the first attempt the
/// delivery fails for good (and can be replayed). A receiver's `Retry-After` is followed within
/// the same bounds.
public struct WebhookRetrySchedule: Sendable, Equatable {
    public var initial: Duration = .seconds(5)
    public var maxInterval: Duration = .seconds(3600)
    public var giveUpAfter: Duration = .seconds(24 * 3600)

    public init() {}

    public init(initial: Duration, maxInterval: Duration, giveUpAfter: Duration) {
        self.initial = initial
        self.maxInterval = maxInterval
        self.giveUpAfter = giveUpAfter
    }

    /// The longest wait before attempt `attempt + 1`, after `attempt` failed ones (1, 2, …).
    func ceiling(afterAttempts attempt: Int) -> Int64 {
        let initial = max(1, self.initial.milliseconds)
        let cap = max(initial, maxInterval.milliseconds)
        let doublings = min(max(0, attempt - 1), 40)
        let (value, overflow) = initial.multipliedReportingOverflow(by: Int64(1) << doublings)
        return overflow ? cap : min(cap, value)
    }

    /// When to try again after `attempts` failed attempts, the first at `firstAttempt`; nil: give
    /// up. `retryAfter` (ms) is the receiver's wish, `random` draws the jitter in 0...1.
    func next(
        afterAttempts attempts: Int, firstAttempt: Int64, now: Int64, retryAfter: Int64? = nil,
        random: (ClosedRange<Double>) -> Double = { Double.random(in: $0) }
    ) -> Int64? {
        let ceiling = ceiling(afterAttempts: attempts)
        var wait = Int64(Double(ceiling) * random(0.5...1.0))
        if let retryAfter { wait = min(max(wait, retryAfter), max(ceiling, maxInterval.milliseconds)) }
        let at = now + max(1, wait)
        return at - firstAttempt > giveUpAfter.milliseconds ? nil : at
    }
}
