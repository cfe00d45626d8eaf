import Foundation
import NIOConcurrencyHelpers
import SwitchboardProtocol
import Testing

struct LockedCallbackTests {
    /// Reading a callback does not wrap it: after many reads it is called through as many frames as
    /// at first, so neither the time of a call nor the memory it holds grows with use.
    @Test func aCallbackReadManyTimesIsCalledAtTheSameDepth() {
        let depth = NIOLockedValueBox(0)
        let callback = LockedCallback<@Sendable () -> Void>({ depth.withLockedValue { $0 = Thread.callStackSymbols.count } })
        callback.function()
        let first = depth.withLockedValue { $0 }
        for _ in 0..<1_000 { _ = callback.function }
        callback.function()
        #expect(depth.withLockedValue { $0 } == first)
    }

    /// The same for an optional callback, set after it was first read.
    @Test func anOptionalCallbackReadManyTimesIsCalledAtTheSameDepth() throws {
        let depth = NIOLockedValueBox(0)
        let callback = LockedCallback<(@Sendable (Int) -> Void)?>(nil)
        #expect(callback.function == nil)
        callback.function = { _ in depth.withLockedValue { $0 = Thread.callStackSymbols.count } }
        let set = try #require(callback.function)
        set(1)
        let first = depth.withLockedValue { $0 }
        for _ in 0..<1_000 { _ = callback.function }
        let read = try #require(callback.function)
        read(2)
        #expect(depth.withLockedValue { $0 } == first)
    }
}
