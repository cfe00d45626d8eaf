import NIOConcurrencyHelpers
import Prometheus

/// The node's Prometheus metrics, served at `/metrics`. Each node has its own registry (no global
/// bootstrap), so several nodes in one process (tests) keep separate counts.
final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let pushCounters = NIOLockedValueBox<[String: Counter]>([:])
    private let loginCounters = NIOLockedValueBox<[String: Counter]>([:])
    let callsStarted: Counter
    let callsEnded: Counter
    let connectedDevices: Gauge

    init() {
        callsStarted = registry.makeCounter(name: "switchboard_calls_started_total", help: "Calls placed")
        callsEnded = registry.makeCounter(name: "switchboard_calls_ended_total", help: "Calls ended")
        connectedDevices = registry.makeGauge(name: "switchboard_connected_devices", help: "Logged-in devices")
    }

    /// Counts a VoIP push delivery attempt's outcome.
    func push(_ outcome: String) {
        counter(pushCounters, "switchboard_push_total", "outcome", outcome, help: "VoIP pushes by outcome").increment()
    }

    /// Counts a login by result (`ok` or the error name).
    func login(_ result: String) {
        counter(loginCounters, "switchboard_logins_total", "result", result, help: "Logins by result").increment()
    }

    private func counter(
        _ box: NIOLockedValueBox<[String: Counter]>, _ name: String, _ label: String, _ value: String, help: String
    ) -> Counter {
        box.withLockedValue { counters in
            if let counter = counters[value] { return counter }
            let counter = registry.makeCounter(name: name, labels: [(label, value)], help: help)
            counters[value] = counter
            return counter
        }
    }

    /// The text exposition format.
    func render() -> String { registry.emitToString() }
}
