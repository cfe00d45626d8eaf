import Logging
import PostgresNIO
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

/// The leader's directory of the cluster's devices (no database, and no link is used here).
struct ClusterDirectoryTests {
    /// A new leader checks the devices it read at the start against a second read, and drops
    /// those whose row is gone; a login it took between the two (noted after the check began)
    /// stands, even though the second read missed its row. (Under load, a device that logged in
    /// during a takeover was dropped so and missed every event of its call.)
    @Test func aDeviceNotedDuringTheCheckIsNotDroppedByIt() {
        let links = NodeLinks(node: "a", secret: "s", logger: Logger(label: "test.cluster"), resolve: { _ in nil })
        let directory = ClusterDirectory(node: "a", local: ConnectionRegistry(), links: links)
        let alice = UserKey(app: 1_400_000_001, user: "alice")
        let bob = UserKey(app: 1_400_000_001, user: "bob")
        directory.reset([
            ClusterStore.Device(user: alice, device: "phone", node: "b", platform: nil),
            ClusterStore.Device(user: bob, device: "phone", node: "b", platform: nil),
        ])
        let (noted, notes) = directory.all()
        #expect(noted.count == 2)
        // Meanwhile: bob logs in again on node c, alice on the same node b.
        #expect(directory.connected(bob, "phone", on: "c") == "b")
        #expect(directory.connected(alice, "phone", on: "b") == nil)
        // The second read found neither row (both were being rewritten): nothing is dropped.
        for (user, device, entry) in noted {
            #expect(!directory.disconnected(user, device, on: entry.node, ifNotedBy: notes))
        }
        #expect(directory.isOnline(alice) && directory.isOnline(bob))
        // A device noted before the check and gone is dropped.
        let (_, later) = directory.all()
        #expect(directory.disconnected(alice, "phone", on: "b", ifNotedBy: later))
        #expect(!directory.isOnline(alice))
    }
}
