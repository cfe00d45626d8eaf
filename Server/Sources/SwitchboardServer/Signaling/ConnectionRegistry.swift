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
        var users: [UserKey: [DeviceID: Device]] = [:]
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
            table.users[user, default: [:]][device] = Device(sink: sink, platform: platform)
            if old == nil { table.devices += 1 }
            return .registered(replaced: old)
        }
    }

    /// Removes the device if `sink` is still its connection; false when a newer one replaced it.
    func remove(_ sink: any EventSink, user: UserKey, device: DeviceID) -> Bool {
        table.withLockedValue { table in
            guard let current = table.users[user]?[device], current.sink === sink else { return false }
            table.users[user]?[device] = nil
            if table.users[user]?.isEmpty == true { table.users[user] = nil }
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
                return table.users[user].map { $0.values.map(\.sink) } ?? []
            case .device(let user, let device):
                return table.users[user]?[device].map { [$0.sink] } ?? []
            case .userExcept(let user, let device):
                return table.users[user].map { $0.filter { $0.key != device }.map(\.value.sink) } ?? []
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
        table.withLockedValue { Set($0.users[user]?.keys ?? [:].keys) }
    }

    /// The users of `app` with their connected devices and platforms.
    func onlineUsers(app: SdkAppID) -> [(UserID, [(DeviceID, String?)])] {
        table.withLockedValue { table in
            table.users.filter { $0.key.app == app }
                .map { key, devices in (key.user, devices.map { ($0.key, $0.value.platform) }.sorted { $0.0 < $1.0 }) }
                .sorted { $0.0 < $1.0 }
        }
    }

    /// Every connection, for shutdown.
    func allSinks() -> [any EventSink] {
        table.withLockedValue { $0.users.values.flatMap { $0.values.map(\.sink) } }
    }

    /// Number of connected devices.
    var deviceCount: Int {
        table.withLockedValue { $0.devices }
    }
}
