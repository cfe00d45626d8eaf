import NIOConcurrencyHelpers
import NIOCore
import Prometheus

/// Measures how late each event loop runs a small task it is given every 10 ms. A loop held by
/// long work (a broadcast to many members, a sweep, a shutdown over every call) delays every
/// socket it owns by as much; this is that delay, in `/metrics`:
/// `switchboard_event_loop_lag_seconds` (a histogram) and `switchboard_event_loop_lag_max_seconds`
/// (the longest since the node started).
///
/// On the real clock on purpose: it is about threads, not about calls.
final class EventLoopLagProbe: Sendable {
    static let interval = TimeAmount.milliseconds(10)

    private let histogram: DurationHistogram
    private let maximum: Gauge
    private let longest = NIOLockedValueBox<Int64>(0)
    private let tasks = NIOLockedValueBox<[RepeatedTask]>([])

    init(registry: PrometheusCollectorRegistry) {
        histogram = registry.makeDurationHistogram(
            descriptor: MetricNameDescriptor(
                namespace: "switchboard", metricName: "event_loop_lag", unitName: "seconds",
                helpText: "How late an event loop ran a task due every 10 ms"),
            buckets: [.microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
                .milliseconds(50), .milliseconds(100), .milliseconds(500), .seconds(1)])
        maximum = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "switchboard", metricName: "event_loop_lag_max", unitName: "seconds",
                helpText: "The longest an event loop was late since the node started"))
    }

    /// The longest delay seen so far, in nanoseconds.
    var longestNanoseconds: Int64 { longest.withLockedValue { $0 } }

    /// Starts probing every loop of `group`.
    func start(on group: any EventLoopGroup) {
        var started: [RepeatedTask] = []
        for loop in group.makeIterator() {
            // Each loop's own probe: the time its last run ended, touched only on that loop.
            let lastEnd = NIOLockedValueBox(NIODeadline.now())
            started.append(
                loop.scheduleRepeatedTask(initialDelay: Self.interval, delay: Self.interval) { [self] _ in
                    let now = NIODeadline.now()
                    let late = max(0, (now - lastEnd.withLockedValue { $0 } - Self.interval).nanoseconds)
                    record(late)
                    lastEnd.withLockedValue { $0 = NIODeadline.now() }
                })
        }
        tasks.withLockedValue { $0 += started }
    }

    func stop() {
        for task in tasks.withLockedValue({ $0 }) { task.cancel() }
    }

    private func record(_ nanoseconds: Int64) {
        histogram.recordNanoseconds(nanoseconds)
        let (grew, value) = longest.withLockedValue { longest -> (Bool, Int64) in
            guard nanoseconds > longest else { return (false, longest) }
            longest = nanoseconds
            return (true, longest)
        }
        if grew { maximum.set(Double(value) / 1e9) }
    }
}
