import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Switchboard

/// Callbacks the SDK keeps behind a lock and reads for every use (``LockedCallback``).
struct CallbackReadTests {
    /// The hook the client runs before each login is read at every login (and reconnect): after
    /// a thousand it is still called directly, not through a chain of wrappers grown by the reads.
    @Test func theLoginHookIsCalledAtTheSameDepthAfterManyReads() {
        let client = SwitchboardClient()
        let depth = NIOLockedValueBox(0)
        client.loginStore.beforeLogin = { depth.withLockedValue { $0 = Thread.callStackSymbols.count } }
        client.loginStore.beforeLogin()
        let first = depth.withLockedValue { $0 }
        for _ in 0..<1_000 { _ = client.loginStore.beforeLogin }
        client.loginStore.beforeLogin()
        #expect(depth.withLockedValue { $0 } == first)
    }
}
