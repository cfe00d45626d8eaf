#if GStreamer
import NIOConcurrencyHelpers

/// Runs jobs one after another, in the order they were enqueued, each to its end (awaits
/// included) before the next starts.
///
/// No bound of its own, on purpose: a job is never dropped (a lost description or connection step
/// would leave the call wrong). What bounds it is who can queue: every connection step the SDK
/// takes (a description, a candidate from the network) awaits its job, so each connection has at
/// most one of those waiting; the app's settings coalesce into at most one waiting job
/// (`GStreamerMediaEngine.update`), however fast they change; the rest are the SDK's start and end
/// of a call and opening and closing of connections, one per member and change of the call.
final class JobQueue: Sendable {
    private let continuation: AsyncStream<@Sendable () async -> Void>.Continuation
    private let worker: Task<Void, Never>
    private let count = NIOLockedValueBox(0)

    init() {
        let (stream, continuation) = AsyncStream<@Sendable () async -> Void>.makeStream()
        self.continuation = continuation
        worker = Task { [count] in
            for await job in stream {
                count.withLockedValue { $0 -= 1 }
                await job()
            }
        }
    }

    /// Jobs queued and not started.
    var waiting: Int { count.withLockedValue { $0 } }

    deinit {
        continuation.finish()
    }

    func enqueue(_ job: @escaping @Sendable () async -> Void) {
        count.withLockedValue { $0 += 1 }
        continuation.yield(job)
    }

    func perform<Value: Sendable>(_ job: @escaping @Sendable () async throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            enqueue {
                do {
                    continuation.resume(returning: try await job())
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
#endif
