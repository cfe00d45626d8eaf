import NIOConcurrencyHelpers
import SwitchboardProtocol

/// The leader's view of the cluster's devices: which device of which user is on which node. The
/// call engine asks it who is online and sends through it: a frame goes, encoded once, to this
/// node's connections directly and to each other node that has a device it names, as one
/// ``BusMessage/deliver(frame:recipient:)`` that the node's own registry fans out.
///
/// Bounded by the cluster's connections (each node's are bounded, docs/OPERATIONS.md).
final class ClusterDirectory: CallDelivery {
    let node: String
    private let local: ConnectionRegistry
    private let bus: ClusterBus
    private let devices = NIOLockedValueBox<[UserKey: [DeviceID: String]]>([:])

    init(node: String, local: ConnectionRegistry, bus: ClusterBus) {
        self.node = node
        self.local = local
        self.bus = bus
    }

    func isOnline(_ user: UserKey) -> Bool {
        devices.withLockedValue { $0[user] != nil }
    }

    @discardableResult
    func send(_ frame: () -> String, to recipient: Recipient) -> Int {
        let nodes: Set<String> = devices.withLockedValue { devices in
            switch recipient {
            case .user(let user):
                return Set(devices[user]?.values ?? [:].values)
            case .device(let user, let device):
                return devices[user]?[device].map { [$0] } ?? []
            case .userExcept(let user, let device):
                return Set(devices[user]?.filter { $0.key != device }.values ?? [:].values)
            }
        }
        guard !nodes.isEmpty else { return 0 }
        let text = frame()
        for target in nodes {
            if target == node {
                local.send({ text }, to: recipient)
            } else {
                bus.send(.deliver(frame: text, recipient: recipient), to: target)
            }
        }
        return nodes.count
    }

    /// A device logged in on `node`; returns the node it was on before, if another.
    func connected(_ user: UserKey, _ device: DeviceID, on node: String) -> String? {
        devices.withLockedValue { devices in
            let previous = devices[user]?[device]
            devices[user, default: [:]][device] = node
            return previous == node ? nil : previous
        }
    }

    /// A device's connection on `node` closed; false when the device is elsewhere by now.
    func disconnected(_ user: UserKey, _ device: DeviceID, on node: String) -> Bool {
        devices.withLockedValue { devices in
            guard devices[user]?[device] == node else { return false }
            devices[user]?[device] = nil
            if devices[user]?.isEmpty == true { devices[user] = nil }
            return true
        }
    }

    /// The devices on `node`.
    func devices(on node: String) -> [(UserKey, DeviceID)] {
        devices.withLockedValue { devices in
            devices.flatMap { user, byDevice in byDevice.filter { $0.value == node }.map { (user, $0.key) } }
        }
    }

    /// The connected devices of a user, on any node.
    func devices(for user: UserKey) -> [(UserKey, DeviceID)] {
        devices.withLockedValue { devices in (devices[user] ?? [:]).keys.sorted().map { (user, $0) } }
    }

    /// Every device with its node.
    func all() -> [(UserKey, DeviceID, String)] {
        devices.withLockedValue { devices in
            devices.flatMap { user, byDevice in byDevice.map { (user, $0.key, $0.value) } }
        }
    }

    /// Starts over from what the database says (a new leader).
    func reset(_ known: [ClusterStore.Device]) {
        devices.withLockedValue { devices in
            devices = [:]
            for device in known { devices[device.user, default: [:]][device.device] = device.node }
        }
    }

    var count: Int { devices.withLockedValue { $0.values.reduce(0) { $0 + $1.count } } }
}
