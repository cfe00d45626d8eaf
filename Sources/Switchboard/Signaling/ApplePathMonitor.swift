#if canImport(Network)
import Foundation
import NIOConcurrencyHelpers
import Network

/// The Apple side of ``SystemNetworkPathMonitor``: an `NWPathMonitor` per subscriber, whose updates
/// count as a change when the path's status, interfaces or gateways differ from the last update
/// (the first update only says how things are).
enum ApplePathMonitor {
    /// Holds the monitor for the stream's end (the monitor is used from its own queue only).
    private final class Holder: @unchecked Sendable {
        let monitor = NWPathMonitor()
    }

    static func changes() -> AsyncStream<Void> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let holder = Holder()
            let last = NIOLockedValueBox<String?>(nil)
            holder.monitor.pathUpdateHandler = { path in
                let interfaces = path.availableInterfaces.map { "\($0.name):\($0.type)" }.joined(separator: ",")
                let fingerprint = "\(path.status) \(interfaces) \(path.gateways.map { "\($0)" }.joined(separator: ","))"
                let changed = last.withLockedValue { previous in
                    defer { previous = fingerprint }
                    return previous != nil && previous != fingerprint
                }
                if changed { continuation.yield() }
            }
            continuation.onTermination = { _ in holder.monitor.cancel() }
            holder.monitor.start(queue: DispatchQueue(label: "switchboard.path-monitor"))
        }
    }
}
#endif
