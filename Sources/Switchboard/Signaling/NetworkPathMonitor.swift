import Foundation
import NIOConcurrencyHelpers

/// Tells the SDK when the device's network path changes: an interface gains or loses its link, an
/// address comes or goes (Wi-Fi to cellular, a lift, a cable). The signaling client then reconnects
/// at once instead of waiting for its heartbeat to time out or for its backoff, and the calls'
/// media restarts ICE on the new path.
public protocol NetworkPathMonitor: Sendable {
    /// One element after each change, for as long as the stream is iterated.
    func changes() -> AsyncStream<Void>
}

/// The platform's own view of the path: `NWPathMonitor` on Apple platforms; on Linux the kernel's
/// netlink notifications (links and addresses), each checked against the interfaces' state so that
/// only a real change counts, with a look every few seconds in case a notification is lost.
/// Where a platform tells nothing, the heartbeat bounds how long a dead path goes unnoticed.
public struct SystemNetworkPathMonitor: NetworkPathMonitor {
    public init() {}

    public func changes() -> AsyncStream<Void> {
        #if canImport(Network)
        ApplePathMonitor.changes()
        #else
        LinuxPathWatcher.shared.changes()
        #endif
    }
}
