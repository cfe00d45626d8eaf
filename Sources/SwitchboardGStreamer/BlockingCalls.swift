#if GStreamer
import Dispatch
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Where the engine makes the GStreamer calls that can block: a state change to NULL waits for the
/// streaming threads of the elements it stops, and a thread stuck inside another element (a send
/// path that webrtcbin holds until negotiation or DTLS completes) holds it for as long as that
/// element keeps it. Such calls run on threads of their own, never on Swift's cooperative pool
/// (where one stuck call would take a thread from every task, and the engine's actors with it),
/// and the caller waits for each at most `limit` on `clock`. Past the limit the caller goes on
/// without it: the call finishes on its thread whenever GStreamer lets it (stopping the connection
/// it waits on releases it), and the caller reports what it left behind.
struct BlockingCalls: Sendable {
    let clock: any SwitchboardClock
    let limit: Duration
    private static let threads = DispatchQueue(label: "switchboard.gstreamer.blocking", attributes: .concurrent)

    /// Runs `body` on a thread of its own; true once it returned, false if `limit` passed first.
    func run(_ body: @escaping @Sendable () -> Void) async -> Bool {
        let outcome = Outcome()
        let timer = Task { [clock, limit] in
            guard (try? await clock.sleep(for: limit)) != nil else { return }
            outcome.settle(false)
        }
        Self.threads.async {
            body()
            outcome.settle(true)
        }
        let finished = await outcome.value
        timer.cancel()
        return finished
    }

    /// The first of "finished" and "out of time", to one waiter.
    private final class Outcome: Sendable {
        private let state = NIOLockedValueBox<(value: Bool?, waiter: CheckedContinuation<Bool, Never>?)>((nil, nil))

        func settle(_ value: Bool) {
            let waiter = state.withLockedValue { state -> CheckedContinuation<Bool, Never>? in
                guard state.value == nil else { return nil }
                state.value = value
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: value)
        }

        var value: Bool {
            get async {
                await withCheckedContinuation { continuation in
                    let settled = state.withLockedValue { state -> Bool? in
                        if state.value == nil { state.waiter = continuation }
                        return state.value
                    }
                    if let settled { continuation.resume(returning: settled) }
                }
            }
        }
    }
}
#endif
