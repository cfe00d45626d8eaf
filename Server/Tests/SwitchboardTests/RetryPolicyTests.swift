import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import Testing

/// What the SDK tries again: passing failures a few times, waiting longer each time (or as long as
/// a rate limit says) on the client's clock; anything else at once.
struct RetryPolicyTests {
    @Test func passingFailuresAreRetriedWithGrowingWaits() async throws {
        let clock = TestClock()
        let start = clock.now()
        let attempts = NIOLockedValueBox<[Int64]>([])
        let failures = [SwitchboardError(.connectionLost), SwitchboardError(.rateLimited, retryAfter: 5_000)]
        let task = Task {
            try await RetryPolicy(attempts: 4, firstDelay: .seconds(1)).run(clock: clock) {
                let count = attempts.withLockedValue { attempts in
                    attempts.append(clock.now() - start)
                    return attempts.count
                }
                if count <= failures.count { throw failures[count - 1] }
                return count
            }
        }
        // 1 s after the dropped connection; then the rate limit's 5 s, longer than the 2 s backoff.
        for wait in [1, 5] {
            await clock.waitForSleepers(atLeast: 1)
            clock.advance(by: .seconds(wait))
        }
        #expect(try await task.value == 3)
        #expect(attempts.withLockedValue { $0 } == [0, 1_000, 6_000])
    }

    @Test func aLastingFailureIsThrownAfterTheAttempts() async throws {
        let clock = TestClock()
        let count = NIOLockedValueBox(0)
        let task = Task {
            try await RetryPolicy(attempts: 3, firstDelay: .seconds(1)).run(clock: clock) { () async throws -> Void in
                count.withLockedValue { $0 += 1 }
                throw SwitchboardError(.requestTimedOut)
            }
        }
        for _ in 0..<2 {
            await clock.waitForSleepers(atLeast: 1)
            clock.advance(by: .seconds(4))
        }
        await #expect(throws: SwitchboardError(.requestTimedOut)) { try await task.value }
        #expect(count.withLockedValue { $0 } == 3)
    }

    @Test func otherFailuresAreNotRetried() async throws {
        let count = NIOLockedValueBox(0)
        await #expect(throws: SwitchboardError(.notInCall)) {
            try await RetryPolicy().run(clock: TestClock()) { () async throws -> Void in
                count.withLockedValue { $0 += 1 }
                throw SwitchboardError(.notInCall)
            }
        }
        #expect(count.withLockedValue { $0 } == 1)
        #expect(SwitchboardError(.storageUnavailable).isTransient && !SwitchboardError(.callNotFound).isTransient)
    }
}
