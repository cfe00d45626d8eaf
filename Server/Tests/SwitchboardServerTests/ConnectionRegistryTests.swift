import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

/// The registry's device count is kept with each change (the metrics and the status endpoint read
/// it at every login); it must follow replacements and stale removals exactly.
struct ConnectionRegistryTests {
    final class Sink: EventSink {
        func enqueue(_ frame: String) {}
        func close(after last: String?, reason: CloseReason) {}
        func waitUntilClosed() async {}
    }

    static func replaced(_ registration: ConnectionRegistry.Registration) -> (any EventSink)?? {
        if case .registered(let replaced) = registration { replaced } else { nil }
    }

    @Test func theDeviceCountFollowsEveryChange() {
        let registry = ConnectionRegistry()
        let alice = UserKey(app: 1_400_000_001, user: "alice")
        let bob = UserKey(app: 1_400_000_001, user: "bob")
        let phone = Sink()
        let laptop = Sink()
        #expect(Self.replaced(registry.register(phone, user: alice, device: "phone", platform: "ios")) != nil)
        #expect(Self.replaced(registry.register(laptop, user: alice, device: "laptop", platform: "web"))! == nil)
        #expect(Self.replaced(registry.register(Sink(), user: bob, device: "phone", platform: nil))! == nil)
        #expect(registry.deviceCount == 3)

        // The same device connecting again replaces its old connection: still three devices.
        let newPhone = Sink()
        #expect(Self.replaced(registry.register(newPhone, user: alice, device: "phone", platform: "ios"))! === phone)
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

    /// A user has at most `maxDevices` connected; the next device is refused, the same device replaced.
    @Test func devicesPerUserAreBounded() {
        let registry = ConnectionRegistry()
        let alice = UserKey(app: 1_400_000_001, user: "alice")
        for index in 0..<3 {
            let registration = registry.register(Sink(), user: alice, device: DeviceID(rawValue: "d\(index)"), platform: nil, maxDevices: 3)
            #expect(Self.replaced(registration) != nil)
        }
        #expect(Self.replaced(registry.register(Sink(), user: alice, device: "d9", platform: nil, maxDevices: 3)) == nil)
        #expect(Self.replaced(registry.register(Sink(), user: alice, device: "d1", platform: nil, maxDevices: 3)) != nil)
        #expect(registry.deviceCount == 3)
    }
}
