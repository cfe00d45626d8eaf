import NIOConcurrencyHelpers
import SwitchboardProtocol

/// The leader's view of the cluster's devices: which device of which user is on which node. The
/// call engine asks it who is online and sends through it: a frame goes, encoded once, to this
/// node's connections directly and to each other node that has a device it names, as one
/// ``NodeMessage/deliver(frame:recipient:)`` that the node's own registry fans out.
///
/// Bounded by the cluster's connections (each node's are bounded, docs/OPERATIONS.md).
final class ClusterDirectory: CallDelivery {
    let node: String
    private let local: ConnectionRegistry
    private let links: NodeLinks
    /// Where a device is, and when it was noted there (a count of notes, for
    /// ``disconnected(_:_:on:ifNotedBy:)``).
    struct Entry: Equatable, Sendable {
        var node: String
        var note: UInt64
    }

    private struct Devices {
        var byUser: [UserKey: [DeviceID: Entry]] = [:]
        var notes: UInt64 = 0

        mutating func note(_ user: UserKey, _ device: DeviceID, on node: String) {
            notes += 1
            byUser[user, default: [:]][device] = Entry(node: node, note: notes)
        }
    }

    private let devices = NIOLockedValueBox(Devices())

    init(node: String, local: ConnectionRegistry, links: NodeLinks) {
        self.node = node
        self.local = local
        self.links = links
    }

    func isOnline(_ user: UserKey) -> Bool {
        devices.withLockedValue { $0.byUser[user] != nil }
    }

    func connectedDevices(_ user: UserKey) -> Set<DeviceID> {
        devices.withLockedValue { Set($0.byUser[user]?.keys ?? [:].keys) }
    }

    @discardableResult
    func send(_ frame: () -> String, to recipient: Recipient) -> Int {
        let nodes: Set<String> = devices.withLockedValue { devices in
            switch recipient {
            case .user(let user):
                return Set(devices.byUser[user]?.values.map(\.node) ?? [])
            case .device(let user, let device):
                return devices.byUser[user]?[device].map { [$0.node] } ?? []
            case .userExcept(let user, let device):
                return Set(devices.byUser[user]?.filter { $0.key != device }.values.map(\.node) ?? [])
            }
        }
        guard !nodes.isEmpty else { return 0 }
        let text = frame()
        for target in nodes {
            if target == node {
                local.send({ text }, to: recipient)
            } else {
                links.send(.deliver(frame: text, recipient: recipient), to: target)
            }
        }
        return nodes.count
    }

    /// A device logged in on `node`; returns the node it was on before, if another.
    func connected(_ user: UserKey, _ device: DeviceID, on node: String) -> String? {
        devices.withLockedValue { devices in
            let previous = devices.byUser[user]?[device]?.node
            devices.note(user, device, on: node)
            return previous == node ? nil : previous
        }
    }

    /// A device's connection on `node` closed; false when the device is elsewhere by now. With
    /// `note`, only if the device was not noted again since (a login that came meanwhile stands).
    func disconnected(_ user: UserKey, _ device: DeviceID, on node: String, ifNotedBy note: UInt64? = nil) -> Bool {
        devices.withLockedValue { devices in
            guard let entry = devices.byUser[user]?[device], entry.node == node else { return false }
            if let note, entry.note > note { return false }
            devices.byUser[user]?[device] = nil
            if devices.byUser[user]?.isEmpty == true { devices.byUser[user] = nil }
            return true
        }
    }

    /// The devices on `node`.
    func devices(on node: String) -> [(UserKey, DeviceID)] {
        devices.withLockedValue { devices in
            devices.byUser.flatMap { user, byDevice in byDevice.filter { $0.value.node == node }.map { (user, $0.key) } }
        }
    }

    /// The connected devices of a user, on any node.
    func devices(for user: UserKey) -> [(UserKey, DeviceID)] {
        devices.withLockedValue { devices in (devices.byUser[user] ?? [:]).keys.sorted().map { (user, $0) } }
    }

    /// Every device with where it is, and the count of notes so far.
    func all() -> (devices: [(UserKey, DeviceID, Entry)], notes: UInt64) {
        devices.withLockedValue { devices in
            (devices.byUser.flatMap { user, byDevice in byDevice.map { (user, $0.key, $0.value) } }, devices.notes)
        }
    }

    /// Starts over from what the database says (a new leader).
    func reset(_ known: [ClusterStore.Device]) {
        devices.withLockedValue { devices in
            devices.byUser = [:]
            for device in known { devices.note(device.user, device.device, on: device.node) }
        }
    }

    var count: Int { devices.withLockedValue { $0.byUser.values.reduce(0) { $0 + $1.count } } }
}
