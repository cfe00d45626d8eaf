import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

/// The registry's device count is kept with each change (the metrics and the status endpoint read
/// it at every login); it must follow replacements and stale removals exactly.
struct ConnectionRegistryTests {
    final class Sink: EventSink, @unchecked Sendable {
        private(set) var frames: [String] = []
        func enqueue(_ frame: String) { frames.append(frame) }
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

    /// A user's devices are kept in order of connection, the first inside the user's entry and the
    /// others beside it: each recipient reaches exactly the devices connected at the moment, as
    /// the first leaves, returns and is replaced.
    @Test func eachRecipientReachesTheDevicesConnectedNow() {
        let registry = ConnectionRegistry()
        let alice = UserKey(app: 1_400_000_001, user: "alice")
        let (phone, laptop, tablet) = (Sink(), Sink(), Sink())
        _ = registry.register(phone, user: alice, device: "phone", platform: "ios")
        _ = registry.register(laptop, user: alice, device: "laptop", platform: "web")
        _ = registry.register(tablet, user: alice, device: "tablet", platform: nil)
        #expect(registry.connectedDevices(alice) == ["phone", "laptop", "tablet"])
        #expect(registry.onlineUsers(app: alice.app).first?.1.map(\.0) == ["laptop", "phone", "tablet"])

        // The first device leaves: the others still get everything, the phone nothing.
        #expect(registry.remove(phone, user: alice, device: "phone"))
        #expect(registry.send({ "1" }, to: .user(alice)) == 2)
        #expect(registry.send({ "2" }, to: .userExcept(alice, "laptop")) == 1)
        #expect(registry.send({ "3" }, to: .device(alice, "phone")) == 0)
        #expect(registry.sink(alice, "laptop") === laptop && registry.sink(alice, "phone") == nil)

        // It comes back, and the laptop's connection is replaced by a new one.
        let newPhone = Sink()
        let newLaptop = Sink()
        _ = registry.register(newPhone, user: alice, device: "phone", platform: "ios")
        #expect(Self.replaced(registry.register(newLaptop, user: alice, device: "laptop", platform: "web"))! === laptop)
        #expect(registry.send({ "4" }, to: .user(alice)) == 3)
        #expect(registry.allSinks().count == 3)

        #expect(phone.frames == [])
        #expect(laptop.frames == ["1"])
        #expect(tablet.frames == ["1", "2", "4"])
        #expect(newPhone.frames == ["4"])
        #expect(newLaptop.frames == ["4"])
        #expect(registry.deviceCount == 3)

        // Every device gone, in another order: the user is offline and reached by nothing.
        #expect(registry.remove(tablet, user: alice, device: "tablet"))
        #expect(registry.remove(newPhone, user: alice, device: "phone"))
        #expect(registry.remove(newLaptop, user: alice, device: "laptop"))
        #expect(!registry.isOnline(alice) && registry.deviceCount == 0 && registry.allSinks().isEmpty)
    }
}
