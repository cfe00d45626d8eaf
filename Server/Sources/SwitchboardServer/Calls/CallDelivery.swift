import SwitchboardProtocol

/// Where the call engine's events go, and how it knows who has a connected device: this node's
/// connections (``ConnectionRegistry``), or, on a cluster's leader, every node's
/// (``ClusterDirectory``).
protocol CallDelivery: Sendable {
    /// Whether the user has at least one connected device.
    func isOnline(_ user: UserKey) -> Bool
    /// The user's devices that have a live connection now (anywhere in the cluster).
    func connectedDevices(_ user: UserKey) -> Set<DeviceID>
    /// Sends a frame to every device the recipient names, making it only when someone is there;
    /// returns how many devices (or nodes) it went to.
    @discardableResult
    func send(_ frame: () -> String, to recipient: Recipient) -> Int
}

extension ConnectionRegistry: CallDelivery {}
