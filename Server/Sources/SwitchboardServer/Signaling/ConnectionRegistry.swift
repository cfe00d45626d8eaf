import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Something the server can push frames to: one logged-in device's connection.
protocol EventSink: AnyObject, Sendable {
    /// Queues a text frame; never blocks.
    func enqueue(_ frame: String)
    /// Closes the connection after the frames already queued and `last`, the first time only.
    func close(after last: String?, reason: CloseReason)
    /// Returns once the connection is closed.
    func waitUntilClosed() async
}

extension EventSink {
    /// Ends the session: `sessionEnded` with the error (none for a plain logout), then the close,
    /// whose code says whether to come back (shutdown) or what rule was broken.
    func close(_ error: SwitchboardError?) {
        let reason: CloseReason =
            switch error?.code {
            case .some(.shuttingDown): .comeBack
            case .some(.loginTimeout): .policyViolation
            default: .normal
            }
        close(after: error.map { CallEngine.frame(.sessionEnded(SessionEndedEvent(error: $0))) }, reason: reason)
    }
}

/// Which device of which user is connected where, on this node.
final class ConnectionRegistry: Sendable {
    private struct Device {
        var sink: any EventSink
        var platform: String?
    }

    private struct Table {
        var users: [UserKey: UserDevices] = [:]
        /// Kept with every change: counting on demand walked every user at each login.
        var devices = 0
    }

    private let table = NIOLockedValueBox(Table())

    enum Registration {
        /// Registered; the older connection of the same device, if any, for the caller to close.
        case registered(replaced: (any EventSink)?)
        /// The user has `maxDevices` other devices connected: nothing changed.
        case tooManyDevices
    }

    /// Registers a device's connection, unless the user already has `maxDevices` other devices.
    func register(_ sink: any EventSink, user: UserKey, device: DeviceID, platform: String?, maxDevices: Int = .max)
        -> Registration
    {
        table.withLockedValue { table in
            let old = table.users[user]?[device]?.sink
            if old == nil, (table.users[user]?.count ?? 0) >= maxDevices { return .tooManyDevices }
            let entry = Device(sink: sink, platform: platform)
            if table.users[user]?.set(device, entry) == nil { table.users[user] = UserDevices(device, entry) }
            if old == nil { table.devices += 1 }
            return .registered(replaced: old)
        }
    }

    /// Removes the device if `sink` is still its connection; false when a newer one replaced it.
    func remove(_ sink: any EventSink, user: UserKey, device: DeviceID) -> Bool {
        table.withLockedValue { table in
            guard let devices = table.users[user], let current = devices[device], current.sink === sink else {
                return false
            }
            table.users[user] = devices.removing(device)
            table.devices -= 1
            return true
        }
    }

    /// Queues a frame for every device the recipient names; returns how many got it. The frame is
    /// made only when somebody is there to get it.
    @discardableResult
    func send(_ frame: () -> String, to recipient: Recipient) -> Int {
        let sinks: [any EventSink] = table.withLockedValue { table in
            switch recipient {
            case .user(let user):
                return table.users[user]?.map(\.device.sink) ?? []
            case .device(let user, let device):
                return table.users[user]?[device].map { [$0.sink] } ?? []
            case .userExcept(let user, let device):
                return table.users[user]?.compactMap { $0.id == device ? nil : $0.device.sink } ?? []
            }
        }
        guard !sinks.isEmpty else { return 0 }
        let text = frame()
        for sink in sinks { sink.enqueue(text) }
        return sinks.count
    }

    /// The connection of one device, if it is on this node.
    func sink(_ user: UserKey, _ device: DeviceID) -> (any EventSink)? {
        table.withLockedValue { $0.users[user]?[device]?.sink }
    }

    /// Whether the user has at least one connected device.
    func isOnline(_ user: UserKey) -> Bool {
        table.withLockedValue { $0.users[user] != nil }
    }

    func connectedDevices(_ user: UserKey) -> Set<DeviceID> {
        table.withLockedValue { Set($0.users[user]?.map(\.id) ?? []) }
    }

    /// The users of `app` with their connected devices and platforms.
    func onlineUsers(app: SdkAppID) -> [(UserID, [(DeviceID, String?)])] {
        table.withLockedValue { table in
            table.users.filter { $0.key.app == app }
                .map { key, devices in (key.user, devices.map { ($0.id, $0.device.platform) }.sorted { $0.0 < $1.0 }) }
                .sorted { $0.0 < $1.0 }
        }
    }

    /// Every connection, for shutdown.
    func allSinks() -> [any EventSink] {
        table.withLockedValue { $0.users.values.flatMap { $0.map(\.device.sink) } }
    }

    /// Number of connected devices.
    var deviceCount: Int {
        table.withLockedValue { $0.devices }
    }
}

extension ConnectionRegistry {
    /// One user's connected devices on this node, never empty. Most users have one: it is kept
    /// in the value itself, and only further devices take an array (a dictionary per user cost
    /// every held connection 168 bytes).
    private struct UserDevices {
        typealias Entry = (id: DeviceID, device: Device)
        private var first: Entry
        private var others: [Entry] = []

        init(_ id: DeviceID, _ device: Device) {
            first = (id, device)
        }

        var count: Int { 1 + others.count }

        /// Each device's transform, in the order they connected, into one array (sending to a
        /// user runs this for every event: no array of the entries first).
        func map<T>(_ transform: (Entry) -> T) -> [T] {
            compactMap(transform)
        }

        /// The non-nil transforms, in the order the devices connected.
        func compactMap<T>(_ transform: (Entry) -> T?) -> [T] {
            var result: [T] = []
            result.reserveCapacity(count)
            if let value = transform(first) { result.append(value) }
            for entry in others {
                if let value = transform(entry) { result.append(value) }
            }
            return result
        }

        subscript(id: DeviceID) -> Device? {
            if first.id == id { return first.device }
            return others.first { $0.id == id }?.device
        }

        /// Adds the device or replaces its connection.
        mutating func set(_ id: DeviceID, _ device: Device) {
            if first.id == id {
                first.device = device
            } else if let index = others.firstIndex(where: { $0.id == id }) {
                others[index].device = device
            } else {
                others.append((id, device))
            }
        }

        /// Without the device; nil when it was the last.
        func removing(_ id: DeviceID) -> UserDevices? {
            var rest = self
            if first.id == id {
                guard !others.isEmpty else { return nil }
                rest.first = rest.others.removeFirst()
            } else {
                rest.others.removeAll { $0.id == id }
            }
            return rest
        }
    }
}
