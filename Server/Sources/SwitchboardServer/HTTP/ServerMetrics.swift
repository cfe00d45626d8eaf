import CHeap
import NIOConcurrencyHelpers
import Prometheus

/// The node's Prometheus metrics, served at `/metrics`. Each node has its own registry (no global
/// bootstrap), so several nodes in one process (tests) keep separate counts.
final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let pushCounters = NIOLockedValueBox<[String: Counter]>([:])
    private let loginCounters = NIOLockedValueBox<[String: Counter]>([:])
    private let refusedCounters = NIOLockedValueBox<[String: Counter]>([:])
    private let undeliveredCounters = NIOLockedValueBox<[String: Counter]>([:])
    let callsStarted: Counter
    let callsEnded: Counter
    let connectedDevices: Gauge
    /// The bytes malloc has handed out and not had back, read at each scrape (glibc's mallinfo2:
    /// every arena, and the blocks it mapped on their own). What a held connection costs is this
    /// figure's growth per connection (`switchboard bench cost`); the resident size also counts
    /// what malloc keeps free, which moved by 15 % from run to run.
    private let heapInUse: Gauge
    private let slowReaderCounter: Counter
    private let slowReaders = NIOLockedValueBox(0)

    init() {
        callsStarted = registry.makeCounter(descriptor: Self.name("calls_started", "total", help: "Calls placed"))
        callsEnded = registry.makeCounter(descriptor: Self.name("calls_ended", "total", help: "Calls ended"))
        connectedDevices = registry.makeGauge(descriptor: Self.name("connected_devices", "", help: "Logged-in devices"))
        heapInUse = registry.makeGauge(
            descriptor: Self.name("heap_in_use", "bytes", help: "Bytes malloc has handed out and not had back"))
        slowReaderCounter = registry.makeCounter(
            descriptor: Self.name("slow_reader_closed", "total", help: "Connections closed for not reading"))
    }

    /// `switchboard_NAME_UNIT` (no unit: `switchboard_NAME`).
    private static func name(_ name: String, _ unit: String, help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "switchboard", metricName: name, unitName: unit, helpText: help)
    }

    /// Counts how one push to one token ended, by push service (`apns`, `web`, `fcm`; `none` for a
    /// push that reached no service).
    func push(_ outcome: String, service: String) {
        let counter = pushCounters.withLockedValue { counters in
            let key = service + "/" + outcome
            if let counter = counters[key] { return counter }
            let counter = registry.makeCounter(
                descriptor: Self.name("push", "total", help: "Pushes by service and outcome"),
                labels: [("service", service), ("outcome", outcome)])
            counters[key] = counter
            return counter
        }
        counter.increment()
    }

    /// Counts a login by result (`ok` or the error name).
    func login(_ result: String) {
        counter(loginCounters, "logins", "result", result, help: "Logins by result").increment()
    }

    /// Counts a connection closed because its peer did not read what the server sent.
    func slowReaderClosed() {
        slowReaderCounter.increment()
        slowReaders.withLockedValue { $0 += 1 }
    }

    /// Connections closed for not reading, so far.
    var slowReadersClosed: Int { slowReaders.withLockedValue { $0 } }

    /// Counts a connection turned away as it was accepted (`full`, `address_full`).
    func connectionRefused(_ reason: String) {
        counter(refusedCounters, "connections_refused", "reason", reason, help: "Connections refused at accept")
            .increment()
    }

    /// Counts messages for other nodes of the cluster that could not be delivered, by why
    /// (``NodeLinks``: `full`, `node left`, `this node stopped`, `unreadable`, ...).
    func clusterMessagesUndelivered(_ count: Int, reason: String) {
        counter(
            undeliveredCounters, "cluster_messages_undelivered", "reason", reason,
            help: "Messages for other nodes of the cluster that could not be delivered"
        ).increment(by: Int64(count))
    }

    private func counter(
        _ box: NIOLockedValueBox<[String: Counter]>, _ name: String, _ label: String, _ value: String, help: String
    ) -> Counter {
        box.withLockedValue { counters in
            if let counter = counters[value] { return counter }
            let counter = registry.makeCounter(descriptor: Self.name(name, "total", help: help), labels: [(label, value)])
            counters[value] = counter
            return counter
        }
    }

    /// The text exposition format.
    func render() -> String {
        if let bytes = Self.heapBytesInUse { heapInUse.set(Double(bytes)) }
        return registry.emitToString()
    }

    /// Bytes in use on malloc's heap (nil where glibc's mallinfo2 is not there).
    static var heapBytesInUse: Int? {
        let bytes = Int(switchboard_heap_in_use())
        return bytes > 0 ? bytes : nil
    }
}
