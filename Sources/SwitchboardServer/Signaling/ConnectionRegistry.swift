import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Something the server can push frames to: one logged-in device's connection.
protocol EventSink: AnyObject, Sendable {
    /// Queues a text frame; never blocks.
    func enqueue(_ frame: String)
    /// Closes the connection after the frames already queued.
    func close(_ error: SwitchboardError?)
    /// Returns once the connection is closed.
    func waitUntilClosed() async
}

/// Which device of which user is connected where, on this node.
final class ConnectionRegistry: Sendable {
    private struct Device {
        var sink: any EventSink
        var platform: String?
    }

    private let users = NIOLockedValueBox<[UserKey: [DeviceID: Device]]>([:])

    /// Registers a device's connection, returning the older connection of the same device, which
    /// the caller closes.
    func register(_ sink: any EventSink, user: UserKey, device: DeviceID, platform: String?) -> (any EventSink)? {
        users.withLockedValue { users in
            let old = users[user]?[device]?.sink
            users[user, default: [:]][device] = Device(sink: sink, platform: platform)
            return old
        }
    }

    /// Removes the device if `sink` is still its connection; false when a newer one replaced it.
    func remove(_ sink: any EventSink, user: UserKey, device: DeviceID) -> Bool {
        users.withLockedValue { users in
            guard let current = users[user]?[device], current.sink === sink else { return false }
            users[user]?[device] = nil
            if users[user]?.isEmpty == true { users[user] = nil }
            return true
        }
    }

    /// Queues a frame for every device the recipient names; returns how many got it. The frame is
    /// made only when somebody is there to get it.
    @discardableResult
    func send(_ frame: () -> String, to recipient: Recipient) -> Int {
        let sinks: [any EventSink] = users.withLockedValue { users in
            switch recipient {
            case .user(let user):
                return users[user].map { $0.values.map(\.sink) } ?? []
            case .device(let user, let device):
                return users[user]?[device].map { [$0.sink] } ?? []
            case .userExcept(let user, let device):
                return users[user].map { $0.filter { $0.key != device }.map(\.value.sink) } ?? []
            }
        }
        guard !sinks.isEmpty else { return 0 }
        let text = frame()
        for sink in sinks { sink.enqueue(text) }
        return sinks.count
    }

    /// Whether the user has at least one connected device.
    func isOnline(_ user: UserKey) -> Bool {
        users.withLockedValue { $0[user] != nil }
    }

    /// The users of `app` with their connected devices and platforms.
    func onlineUsers(app: SdkAppID) -> [(UserID, [(DeviceID, String?)])] {
        users.withLockedValue { users in
            users.filter { $0.key.app == app }
                .map { key, devices in (key.user, devices.map { ($0.key, $0.value.platform) }.sorted { $0.0 < $1.0 }) }
                .sorted { $0.0 < $1.0 }
        }
    }

    /// Every connection, for shutdown.
    func allSinks() -> [any EventSink] {
        users.withLockedValue { $0.values.flatMap { $0.values.map(\.sink) } }
    }

    /// Number of connected devices.
    var deviceCount: Int {
        users.withLockedValue { $0.values.reduce(0) { $0 + $1.count } }
    }
}
