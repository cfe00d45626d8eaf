import Foundation
import SwitchboardTools
import Testing

/// The recorder the tests wait on: fed directly (the test servers) or by a sequence (event streams).
struct RecorderTests {
    /// A recorded value answers a wait already under way, and a wait that starts after it.
    @Test func aRecordedValueAnswersWaitsBeforeAndAfter() async throws {
        let recorder = Recorder<Int>()
        async let waiting = recorder.first(from: 0, timeout: .seconds(30)) { $0 == 2 }
        // The wait is registered before the values arrive only if it ran first; either way it
        // must find the match.
        recorder.record(1)
        recorder.record(2)
        #expect(try await waiting == 2)
        #expect(try await recorder.first(from: 0, timeout: .seconds(30)) { $0 == 1 } == 1)
        #expect(recorder.values == [1, 2])
    }

    /// `from` skips what came before it: a value recorded earlier does not answer, the next
    /// match after the position does.
    @Test func aWaitFromAPositionIgnoresEarlierValues() async throws {
        let recorder = Recorder<String>()
        recorder.record("a")
        async let next = recorder.position(after: 1) { $0 == "a" }
        recorder.record("b")
        recorder.record("a")
        #expect(try await next == 3)
        #expect(try await recorder.position(after: 0) { $0 == "a" } == 1)
    }

    /// Two recorders fed directly keep the order they were fed in: whoever saw the second value
    /// finds the first (the test servers record the answer, then the message).
    @Test func directlyFedRecordersKeepTheirOrder() async throws {
        let answers = Recorder<Int>()
        let messages = Recorder<Int>()
        let feeder = Task {
            for n in 0..<200 {
                answers.record(n)
                messages.record(n)
            }
        }
        for n in 0..<200 {
            let seen = try await messages.first(from: 0, timeout: .seconds(30)) { $0 == n }
            #expect(answers.values.contains(seen), "message \(n) seen before its answer")
        }
        await feeder.value
    }

    /// The end: `finish()` answers a wait for it, and a recorder fed by a sequence ends with it.
    @Test func theEndIsSeenWhenFinishedOrWhenTheSequenceEnds() async throws {
        let direct = Recorder<Int>()
        #expect(!direct.isFinished)
        async let ended = direct.waitForEnd(timeout: .seconds(30))
        direct.finish()
        #expect(await ended)
        #expect(direct.isFinished)

        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let fed = Recorder(stream)
        continuation.yield(7)
        #expect(try await fed.first(from: 0, timeout: .seconds(30)) { _ in true } == 7)
        continuation.finish()
        #expect(await fed.waitForEnd(timeout: .seconds(30)))
        #expect(fed.values == [7])
    }

    /// A wait that finds nothing ends at its bound with a clear error, and the recorder goes on.
    @Test func aWaitThatFindsNothingEndsAtItsBound() async throws {
        let recorder = Recorder<Int>()
        await #expect(throws: RecorderTimeout.self) {
            try await recorder.first(from: 0, timeout: .milliseconds(20)) { $0 == 9 }
        }
        #expect(await !recorder.waitForEnd(timeout: .milliseconds(20)))
        recorder.record(9)
        #expect(try await recorder.first(from: 0, timeout: .seconds(30)) { $0 == 9 } == 9)
    }
}
