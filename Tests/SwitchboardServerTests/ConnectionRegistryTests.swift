import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

/// The registry's device count is kept with each change (the metrics and the status endpoint read
/// it at every login); it must follow replacements and stale removals exactly.
struct ConnectionRegistryTests {
    final class Sink: EventSink {
        func enqueue(_ frame: String) {}
        func close(_ error: SwitchboardError?) {}
        func waitUntilClosed() async {}
    }

    @Test func theDeviceCountFollowsEveryChange() {
        let registry = ConnectionRegistry()
        let alice = UserKey(app: 1_400_000_001, user: "alice")
        let bob = UserKey(app: 1_400_000_001, user: "bob")
        let phone = Sink()
        let laptop = Sink()
        #expect(registry.register(phone, user: alice, device: "phone", platform: "ios") == nil)
        #expect(registry.register(laptop, user: alice, device: "laptop", platform: "web") == nil)
        #expect(registry.register(Sink(), user: bob, device: "phone", platform: nil) == nil)
        #expect(registry.deviceCount == 3)

        // The same device connecting again replaces its old connection: still three devices.
        let newPhone = Sink()
        #expect(registry.register(newPhone, user: alice, device: "phone", platform: "ios") === phone)
        #expect(registry.deviceCount == 3)
        // The replaced connection closing later removes nothing.
        #expect(!registry.remove(phone, user: alice, device: "phone"))
        #expect(registry.deviceCount == 3)

        #expect(registry.remove(newPhone, user: alice, device: "phone"))
        #expect(registry.remove(laptop, user: alice, device: "laptop"))
        #expect(registry.deviceCount == 1)
        #expect(!registry.isOnline(alice) && registry.isOnline(bob))
        #expect(registry.send({ "x" }, to: .user(alice)) == 0)
    }
}
