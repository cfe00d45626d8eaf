import NIOCore

/// Runs a task's jobs on one NIO event loop: a connection's session is served on the event loop
/// that reads and writes its socket, so a request is read, handled and answered without waking
/// another thread (docs/BENCHMARKS.md, "What limits it": thread hand-offs were a sixth of the CPU).
///
/// Only tasks that ask for it (`withTaskExecutorPreference`) run here, and so do the default actors
/// they call (the call engine) while they hold them; blocking work never does.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    /// One per loop for a node's sessions (``PerEventLoop``); the cluster's database connections
    /// make their own.
    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
