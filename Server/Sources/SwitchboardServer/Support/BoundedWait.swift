import SwitchboardProtocol

/// Waits for `work`, but no longer than `limit` on `clock` (nil: no limit) and only until the
/// calling task is cancelled; `work` goes on unawaited then. For the steps of a node's shutdown
/// and of a connection's end that wait on PostgreSQL: a database that does not answer leaves
/// PostgresNIO's queries waiting, and cancelling them does not end them, so without a bound a
/// node told to stop without its database ran on for good (NodeCutProcessTests).
func waitBounded(_ limit: Duration? = nil, clock: any SwitchboardClock, _ work: @escaping @Sendable () async -> Void) async {
    let done = WakeSignal()
    let running = Task {
        await work()
        done.signal()
    }
    let timer = limit.map { limit in
        Task {
            try? await clock.sleep(for: limit)
            done.signal()
        }
    }
    await withTaskCancellationHandler {
        await done.wait()
    } onCancel: {
        running.cancel()
    }
    timer?.cancel()
}
