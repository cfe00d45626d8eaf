import NIOConcurrencyHelpers
import Prometheus

/// The webhooks' Prometheus metrics, per endpoint (label `endpoint`, the endpoint's id):
/// counters of this node's attempts, and gauges of the outbox as the database has it (the same on
/// every node of a cluster).
final class WebhookMetrics: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let counters = NIOLockedValueBox<[String: Counter]>([:])
    private let gauges = NIOLockedValueBox<[String: Gauge]>([:])

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    /// A delivery the receiver took (2xx).
    func sent(_ endpoint: String) { counter("webhook_sent", endpoint, "Webhook deliveries the receiver took (2xx)").increment() }
    /// A failed attempt that will be tried again.
    func retried(_ endpoint: String) {
        counter("webhook_retried", endpoint, "Failed webhook attempts that will be tried again").increment()
    }
    /// A delivery given up on (the retry bound passed).
    func failed(_ endpoint: String) {
        counter("webhook_failed", endpoint, "Webhook deliveries given up on after the retry bound").increment()
    }

    /// What waits for an endpoint: deliveries pending, seconds since the oldest one's event, and
    /// whether it is at its bound.
    func backlog(_ endpoint: String, pending: Int, oldestAge: Double, full: Bool) {
        gauge("webhook_outbox_depth", "", endpoint, "Webhook deliveries waiting").set(Double(pending))
        gauge("webhook_outbox_oldest_age", "seconds", endpoint, "Age of the oldest waiting webhook event").set(oldestAge)
        gauge("webhook_outbox_full", "", endpoint, "1 while new events are not queued for the endpoint (its bound)")
            .set(full ? 1.0 : 0.0)
    }

    private func counter(_ name: String, _ endpoint: String, _ help: String) -> Counter {
        counters.withLockedValue { counters in
            let key = name + "|" + endpoint
            if let counter = counters[key] { return counter }
            let counter = registry.makeCounter(
                descriptor: MetricNameDescriptor(namespace: "switchboard", metricName: name, unitName: "total", helpText: help),
                labels: [("endpoint", endpoint)])
            counters[key] = counter
            return counter
        }
    }

    private func gauge(_ name: String, _ unit: String, _ endpoint: String, _ help: String) -> Gauge {
        gauges.withLockedValue { gauges in
            let key = name + "|" + endpoint
            if let gauge = gauges[key] { return gauge }
            let gauge = registry.makeGauge(
                descriptor: MetricNameDescriptor(namespace: "switchboard", metricName: name, unitName: unit, helpText: help),
                labels: [("endpoint", endpoint)])
            gauges[key] = gauge
            return gauge
        }
    }
}
