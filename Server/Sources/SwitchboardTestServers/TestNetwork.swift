import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SwitchboardTools

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A small network of Linux network namespaces for tests of links that fail: a router namespace
/// (`hub`) and one namespace per host, each joined to the router by its own veth pair, with its own
/// subnet (host `i` is `10.0.i.2/24` behind `10.0.i.1`). The router forwards between hosts, so two
/// clients reach each other (peer-to-peer media) and the server; nothing routes to the machine's own
/// network, so no traffic leaves the namespaces the test made.
///
/// Links fail from the router's side: ``cut(_:)`` takes the router's end of a host's veth down, so
/// the host's interface loses its carrier and keeps its address and routes (a phone in a lift);
/// ``moveAddress(_:)`` swaps the host's address for another (a phone moving to another network);
/// ``limit(_:kilobitsPerSecond:)`` squeezes the link both ways with `tc tbf`.
///
/// The test process itself stays in the machine's namespace, which has no route into the network;
/// ``proxy(from:to:port:)`` gives it a loopback port that reaches a host's address as from another
/// host (in-process SDK clients, HTTP requests).
///
/// ``remove()`` (also run by `deinit`) deletes every namespace, which deletes their links with them.
/// Names carry this process's id (`sbnet-PID-N-host`), and a new network first deletes the
/// namespaces of processes that no longer run, so a crashed run leaves nothing behind for long.
/// Needs root and iproute2; ``unavailableReason`` says what is missing.
public final class TestNetwork: Sendable {
    /// The prefix of every namespace a test network makes.
    public static let namePrefix = "sbnet-"
    static let ip = URL(fileURLWithPath: "/usr/sbin/ip")
    static let tc = URL(fileURLWithPath: "/usr/sbin/tc")
    private static let counter = NIOLockedValueBox(0)

    /// Why namespaces cannot be made here, or nil when they can (root, `ip` and `tc`, and a probe
    /// namespace made and deleted).
    public static let unavailableReason: String? = {
        guard geteuid() == 0 else { return "network namespaces need root" }
        for tool in [ip, tc] where !FileManager.default.isExecutableFile(atPath: tool.path) {
            return "\(tool.path) is missing (apt-get install iproute2)"
        }
        let probe = "\(namePrefix)\(getpid())-probe"
        do {
            try command(ip, ["netns", "add", probe])
            try command(ip, ["netns", "del", probe])
        } catch {
            return "cannot make a network namespace: \(error)"
        }
        return nil
    }()

    /// One host of the network.
    public struct Host: Sendable, Hashable {
        public let name: String
        /// Its position: its subnet is `10.0.index.0/24`.
        public let index: Int
        /// Its namespace's name (for `ip netns exec`).
        public let namespace: String
        /// The router's end of its veth pair, in the hub namespace.
        let routerLink: String
    }

    public let hosts: [Host]
    /// The router's namespace.
    public let hub: String
    private let addresses: NIOLockedValueBox<[String: String]>
    private let removed = NIOLockedValueBox(false)
    /// A thread per host that joined the host's namespace (for ``proxy(from:to:port:)``).
    private let loops = NIOLockedValueBox<[String: MultiThreadedEventLoopGroup]>([:])

    /// Makes the namespaces, links, addresses and routes for `hostNames` (letters and digits, at
    /// most 12 characters each).
    public init(hosts hostNames: [String]) throws {
        if let reason = Self.unavailableReason { throw ChildProcessError(description: reason) }
        Self.removeStale()
        let number = Self.counter.withLockedValue { value in
            value += 1
            return value
        }
        let prefix = "\(Self.namePrefix)\(getpid())-\(number)"
        hub = "\(prefix)-hub"
        hosts = hostNames.enumerated().map { index, name in
            Host(name: name, index: index + 1, namespace: "\(prefix)-\(name)", routerLink: "h\(index + 1)")
        }
        addresses = NIOLockedValueBox(Dictionary(uniqueKeysWithValues: hosts.map { ($0.name, "10.0.\($0.index).2") }))
        do {
            try Self.command(Self.ip, ["netns", "add", hub])
            for host in hosts { try Self.command(Self.ip, ["netns", "add", host.namespace]) }
            var routerLines = ["link set lo up"]
            for host in hosts {
                let subnet = "10.0.\(host.index)"
                routerLines += [
                    "link add \(host.routerLink) type veth peer name eth0 netns \(host.namespace)",
                    "addr add \(subnet).1/24 dev \(host.routerLink)",
                    "link set \(host.routerLink) up",
                ]
            }
            try Self.batch(in: hub, routerLines)
            for host in hosts {
                let subnet = "10.0.\(host.index)"
                try Self.batch(
                    in: host.namespace,
                    [
                        "link set lo up", "addr add \(subnet).2/24 dev eth0", "link set eth0 up",
                        "route add default via \(subnet).1",
                    ])
            }
            try Self.command(Self.ip, ["netns", "exec", hub, "/usr/sbin/sysctl", "-qw", "net.ipv4.ip_forward=1"])
        } catch {
            remove()
            throw error
        }
    }

    deinit {
        remove()
    }

    /// Deletes every namespace of this network (and so its links). Processes still running inside
    /// keep their namespace alive until they end: stop them first.
    public func remove() {
        guard !removed.withLockedValue({ done in defer { done = true }; return done }) else { return }
        for group in loops.withLockedValue({ loops in defer { loops = [:] }; return loops.values }) {
            group.shutdownGracefully { _ in }
        }
        for namespace in [hub] + hosts.map(\.namespace) {
            _ = try? Self.command(Self.ip, ["netns", "del", namespace])
        }
    }

    /// Deletes the namespaces left by test processes that no longer run.
    public static func removeStale() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/run/netns")) ?? [] {
            removeIfStale(name)
        }
    }

    private static func removeIfStale(_ name: String) {
        guard name.hasPrefix(namePrefix) else { return }
        let parts = name.dropFirst(namePrefix.count).split(separator: "-")
        guard let pid = parts.first.flatMap({ pid_t($0) }), pid != getpid() else { return }
        // ESRCH: no such process. Any other answer (EPERM) means it runs.
        guard kill(pid, 0) == -1, errno == ESRCH else { return }
        _ = try? command(ip, ["netns", "del", name])
    }

    // MARK: - hosts

    public func host(_ name: String) -> Host {
        guard let host = hosts.first(where: { $0.name == name }) else { preconditionFailure("no host \(name)") }
        return host
    }

    /// The host's address now.
    public func address(of name: String) -> String {
        addresses.withLockedValue { $0[name]! }
    }

    /// The command line that runs a program inside the host's namespace: an executable and the
    /// arguments that come before the program's path.
    public func launcher(in name: String) -> (executable: URL, arguments: [String]) {
        (Self.ip, ["netns", "exec", host(name).namespace])
    }

    /// Starts `executable` with `arguments` inside the host's namespace.
    public func start(
        in name: String, executable: URL, arguments: [String], environment: [String: String]? = nil,
        directory: URL? = nil, input: ChildProcess.Stream = .null, output: ChildProcess.Stream = .null,
        error: ChildProcess.Stream = .null
    ) throws -> ChildProcess {
        let launcher = launcher(in: name)
        return try ChildProcess(
            executable: launcher.executable, arguments: launcher.arguments + [executable.path] + arguments,
            environment: environment, directory: directory, input: input, output: output, error: error)
    }

    /// A proxy on a loopback port of the test's own namespace to `address:port`, whose connections
    /// to it are made inside host `name`'s namespace: what the test sends through it crosses the
    /// network as that host's traffic (and fails as its link does). Stop it before ``remove()``.
    public func proxy(from name: String, to address: String, port: Int) async throws -> TCPProxy {
        try await TCPProxy.start(targetHost: address, targetPort: port, connectingLoop: try await loop(in: name))
    }

    /// An event loop whose thread joined the host's namespace: the sockets it makes are the host's.
    private func loop(in name: String) async throws -> any EventLoop {
        let namespace = host(name).namespace
        if let group = loops.withLockedValue({ $0[name] }) { return group.next() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            try await group.next().submit { try Self.join(namespace: namespace) }.get()
        } catch {
            group.shutdownGracefully { _ in }
            throw error
        }
        let kept = loops.withLockedValue { loops in
            if let other = loops[name] { return other }
            loops[name] = group
            return group
        }
        if kept !== group { group.shutdownGracefully { _ in } }
        return kept.next()
    }

    /// Moves the calling thread (only it) into a network namespace (`setns`, which Glibc's module
    /// does not export).
    private static func join(namespace: String) throws {
        typealias SetNamespace = @convention(c) (Int32, Int32) -> Int32
        let cloneNewNet: Int32 = 0x4000_0000
        guard let symbol = dlsym(nil, "setns") else { throw ChildProcessError(description: "no setns in libc") }
        let descriptor = open("/run/netns/\(namespace)", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ChildProcessError(description: "cannot open namespace \(namespace): errno \(errno)") }
        defer { close(descriptor) }
        guard unsafeBitCast(symbol, to: SetNamespace.self)(descriptor, cloneNewNet) == 0 else {
            throw ChildProcessError(description: "setns \(namespace): errno \(errno)")
        }
    }

    // MARK: - failures

    /// Takes the host's link down at the router: its interface loses carrier and nothing gets
    /// through either way; its address and routes stay.
    public func cut(_ name: String) throws {
        try Self.command(Self.ip, ["-n", hub, "link", "set", host(name).routerLink, "down"])
    }

    /// Brings the link that ``cut(_:)`` took down back up.
    public func restore(_ name: String) throws {
        try Self.command(Self.ip, ["-n", hub, "link", "set", host(name).routerLink, "up"])
    }

    /// Removes the host's address and gives it the next one in its subnet, with its default route
    /// again (as a phone moving from one network to another gets a new address); returns it.
    @discardableResult
    public func moveAddress(_ name: String) throws -> String {
        let host = host(name)
        let old = address(of: name)
        let last = Int(old.split(separator: ".").last!)!
        let new = "10.0.\(host.index).\(last + 1)"
        try Self.batch(
            in: host.namespace,
            [
                "addr del \(old)/24 dev eth0", "addr add \(new)/24 dev eth0",
                "route replace default via 10.0.\(host.index).1",
            ])
        addresses.withLockedValue { $0[name] = new }
        return new
    }

    /// Blocks every packet between two hosts at the router (a policy rule each way), so only paths
    /// through a third host (the server, a TURN relay) remain.
    public func isolate(_ first: String, from second: String) throws {
        try Self.batch(in: hub, isolation(first, second).map { "rule add \($0)" })
    }

    /// Lets packets between two hosts through again, after ``isolate(_:from:)``.
    public func reconnect(_ first: String, with second: String) throws {
        try Self.batch(in: hub, isolation(first, second).map { "rule del \($0)" })
    }

    private func isolation(_ first: String, _ second: String) -> [String] {
        let (a, b) = (host(first).index, host(second).index)
        return ["from 10.0.\(a).0/24 to 10.0.\(b).0/24 blackhole", "from 10.0.\(b).0/24 to 10.0.\(a).0/24 blackhole"]
    }

    /// Limits the host's link to `kilobitsPerSecond` both ways (a token bucket, `tc tbf`, holding at
    /// most 200 ms of traffic; more is dropped); nil lifts the limit.
    public func limit(_ name: String, kilobitsPerSecond: Int?) throws {
        let host = host(name)
        for (namespace, link) in [(hub, host.routerLink), (host.namespace, "eth0")] {
            guard let rate = kilobitsPerSecond else {
                _ = try? Self.command(Self.tc, ["-n", namespace, "qdisc", "del", "dev", link, "root"])
                continue
            }
            // The bucket holds at least one full-size packet, or nothing large ever passes.
            let burst = max(1600, rate * 1000 / 8 / 20)
            try Self.command(
                Self.tc,
                ["-n", namespace, "qdisc", "replace", "dev", link, "root", "tbf", "rate", "\(rate)kbit",
                 "burst", "\(burst)", "latency", "200ms"])
        }
    }

    // MARK: - commands

    @discardableResult
    static func command(_ executable: URL, _ arguments: [String]) throws -> String {
        let process = try ChildProcess(executable: executable, arguments: arguments, output: .pipe, error: .pipe)
        let output = process.output!.readDataToEndOfFile()
        let error = process.error!.readDataToEndOfFile()
        guard process.waitForExit() == .exit(0) else {
            throw ChildProcessError(
                description: "\(executable.lastPathComponent) \(arguments.joined(separator: " ")): "
                    + String(decoding: error, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Runs `ip` lines in `namespace`, in one process (`ip -batch`), stopping at the first that fails.
    static func batch(in namespace: String, _ lines: [String]) throws {
        let process = try ChildProcess(executable: ip, arguments: ["-n", namespace, "-batch", "-"], input: .pipe, output: .null, error: .pipe)
        process.input!.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        try process.input!.close()
        let error = process.error!.readDataToEndOfFile()
        guard process.waitForExit() == .exit(0) else {
            throw ChildProcessError(description: "ip -batch: " + String(decoding: error, as: UTF8.self))
        }
    }
}
