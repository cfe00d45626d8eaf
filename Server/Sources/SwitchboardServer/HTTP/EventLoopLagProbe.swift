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
    private let probes = NIOLockedValueBox<[LoopProbe]>([])

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
        let started = group.makeIterator().map { LoopProbe(owner: self, loop: $0) }
        probes.withLockedValue { $0 += started }
        for probe in started { probe.loop.execute { probe.scheduleNext() } }
    }

    func stop() {
        for probe in probes.withLockedValue({ $0 }) { probe.stop() }
    }

    fileprivate func record(_ nanoseconds: Int64) {
        histogram.recordNanoseconds(nanoseconds)
        let (grew, value) = longest.withLockedValue { longest -> (Bool, Int64) in
            guard nanoseconds > longest else { return (false, longest) }
            longest = nanoseconds
            return (true, longest)
        }
        if grew { maximum.set(Double(value) / 1e9) }
    }

    /// One loop's probe: a callback due ``interval`` after the last one ended, scheduled with no
    /// promise or future (a `RepeatedTask` made and completed both at every run: in a debug build
    /// that was most of what an idle server did, docs/BENCHMARKS.md "The cost guard").
    fileprivate final class LoopProbe: NIOScheduledCallbackHandler, Sendable {
        let owner: EventLoopLagProbe
        let loop: any EventLoop
        /// When the next run is due, and the run scheduled; touched on the loop only.
        private let state: NIOLoopBoundBox<(due: NIODeadline, scheduled: NIOScheduledCallback?, stopped: Bool)>

        init(owner: EventLoopLagProbe, loop: any EventLoop) {
            self.owner = owner
            self.loop = loop
            self.state = .makeBoxSendingValue((.now(), nil, false), eventLoop: loop)
        }

        func scheduleNext() {
            guard !state.value.stopped else { return }
            let due = NIODeadline.now() + EventLoopLagProbe.interval
            state.value.due = due
            state.value.scheduled = try? loop.scheduleCallback(at: due, handler: self)
        }

        func handleScheduledCallback(eventLoop: some EventLoop) {
            owner.record(max(0, (NIODeadline.now() - state.value.due).nanoseconds))
            scheduleNext()
        }

        func stop() {
            loop.execute {
                self.state.value.stopped = true
                self.state.value.scheduled?.cancel()
                self.state.value.scheduled = nil
            }
        }
    }
}
