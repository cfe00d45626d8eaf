#if GStreamer
import Dispatch
import Synchronization
import SwitchboardTesting
import Testing

@testable import SwitchboardGStreamer

/// The engine's safety net for GStreamer calls that block: it waits for one at most its limit on
/// the engine's clock, then goes on while the call finishes on its own thread.
struct BlockingCallsTests {
    @Test(.timeLimit(.minutes(1))) func aCallThatReturnsIsWaitedFor() async {
        let clock = TestClock()
        let ran = Atomic(false)
        let finished = await BlockingCalls(clock: clock, limit: .seconds(3)).run { ran.store(true, ordering: .relaxed) }
        #expect(finished)
        let didRun = ran.load(ordering: .relaxed)
        #expect(didRun)
    }

    @Test(.timeLimit(.minutes(1))) func aCallStuckPastTheLimitIsLeftBehindAndStillFinishes() async {
        let clock = TestClock()
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let waiting = Task {
            await BlockingCalls(clock: clock, limit: .seconds(3)).run {
                release.wait()
                done.signal()
            }
        }
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .milliseconds(2_999))
        clock.advance(by: .milliseconds(1))
        #expect(await waiting.value == false)
        // The call itself goes on, on its thread, and ends when whatever held it lets go.
        release.signal()
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                done.wait()
                continuation.resume()
            }
        }
    }
}
#endif
