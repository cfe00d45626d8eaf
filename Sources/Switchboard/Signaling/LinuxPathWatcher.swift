#if !canImport(Network)
import Foundation
import Glibc
import NIOConcurrencyHelpers

/// The Linux side of ``SystemNetworkPathMonitor``: one thread per process reads the kernel's
/// netlink notifications for links and IPv4/IPv6 addresses and, after they go quiet for a moment
/// (one change brings several), compares the interfaces' state with the last one; a difference is
/// a change, told to every subscriber. A lost notification (or no netlink at all) is caught by a
/// look every few seconds. Loopback does not count.
final class LinuxPathWatcher: Sendable {
    static let shared = LinuxPathWatcher()

    /// How long notifications must stay quiet before the state is compared.
    static let settle: Int32 = 100
    /// The longest time between two looks without a notification, in ms.
    static let recheck: Int32 = 3000

    private struct State {
        var subscribers: [UInt64: AsyncStream<Void>.Continuation] = [:]
        var next: UInt64 = 0
        var started = false
    }

    private let state = NIOLockedValueBox(State())

    func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let (id, start) = state.withLockedValue { state -> (UInt64, Bool) in
            state.next += 1
            state.subscribers[state.next] = continuation
            defer { state.started = true }
            return (state.next, !state.started)
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLockedValue { _ = $0.subscribers.removeValue(forKey: id) }
        }
        if start {
            let thread = Thread { [self] in run() }
            thread.name = "switchboard.path-watcher"
            thread.start()
        }
        return stream
    }

    private func run() {
        let socket = Self.openNetlink()
        var last = Self.fingerprint()
        while true {
            var wait = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            if socket >= 0, poll(&wait, 1, Self.recheck) > 0 {
                Self.drain(socket)
                // One change (an address swapped, a link bounced) comes as several messages.
                while poll(&wait, 1, Self.settle) > 0 { Self.drain(socket) }
            } else if socket < 0 {
                usleep(useconds_t(Self.recheck) * 1000)
            }
            let now = Self.fingerprint()
            guard now != last else { continue }
            last = now
            let subscribers = state.withLockedValue { Array($0.subscribers.values) }
            for subscriber in subscribers { subscriber.yield() }
        }
    }

    /// A netlink socket subscribed to link and address changes; -1 when there is none.
    private static func openNetlink() -> Int32 {
        let fd = Glibc.socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0 /* NETLINK_ROUTE */)
        guard fd >= 0 else { return -1 }
        // struct sockaddr_nl: family, padding, port id (0: the kernel assigns), multicast groups.
        var address = [UInt8](repeating: 0, count: 12)
        let family = UInt16(AF_NETLINK)
        let groups: UInt32 = 0x1 /* RTMGRP_LINK */ | 0x10 /* RTMGRP_IPV4_IFADDR */ | 0x100 /* RTMGRP_IPV6_IFADDR */
        withUnsafeBytes(of: family.littleEndian) { address.replaceSubrange(0..<2, with: $0) }
        withUnsafeBytes(of: groups.littleEndian) { address.replaceSubrange(8..<12, with: $0) }
        let bound = address.withUnsafeBytes { bytes in
            bind(fd, bytes.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(bytes.count))
        }
        guard bound == 0 else {
            close(fd)
            return -1
        }
        return fd
    }

    private static func drain(_ socket: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        _ = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
    }

    /// Each interface that is up with its link (carrier), with its addresses: what a path is made of.
    static func fingerprint() -> Set<String> {
        var result = Set<String>()
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return result }
        defer { freeifaddrs(list) }
        var entry = list
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            let flags = Int32(current.pointee.ifa_flags)
            guard flags & Int32(IFF_LOOPBACK) == 0, flags & Int32(IFF_UP) != 0,
                flags & Int32(IFF_RUNNING) != 0
            else { continue }
            let name = String(cString: current.pointee.ifa_name)
            guard let address = current.pointee.ifa_addr else {
                result.insert(name)
                continue
            }
            let family = Int32(address.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else {
                result.insert(name)
                continue
            }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
            if getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 {
                let text = host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
                result.insert("\(name) \(String(decoding: text, as: UTF8.self))")
            }
        }
        return result
    }
}
#endif
