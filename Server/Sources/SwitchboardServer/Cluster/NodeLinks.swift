import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

/// Messages between the nodes of a cluster, over direct WebSocket links (docs/ARCHITECTURE.md,
/// "Cluster").
///
/// Each node listens for links from the others on a port of its own (``NodeLinkConfiguration``) and
/// notes where in the node table; to send, a node opens one link (a ``PeerLink``) to each node it
/// has messages for, at the address the table gives. A link is a WebSocket that carries messages
/// one way: numbered messages from the sender, several to a frame (``LinkFrame``), and from the
/// receiver the number of the last message it handled (first as a greeting, then as
/// acknowledgements). A link is opened with the cluster's shared secret (`Authorization: Bearer`,
/// made once and kept in the database: only a node that can read the database gets in), the
/// sender's node id and the link's own id.
///
/// Order and once: the receiver handles one sender's messages one at a time, in number order,
/// each number once, whichever connection brought it (a newer connection from the same sender
/// closes the older one and waits for it to finish); a number that skips one closes the
/// connection, and the sender sends again from what was handled. So messages from one node to
/// another arrive in the order they were sent, each once, across lost connections. Messages that
/// cannot be delivered (a link over its bound, a node that left with messages waiting) are
/// logged and counted (`switchboard_cluster_messages_undelivered_total`), never silently lost.
final class NodeLinks: Sendable {
    static let path = "/v1/cluster"
    static let nodeHeader = HTTPField.Name("Switchboard-Node")!
    static let linkHeader = HTTPField.Name("Switchboard-Link")!

    let node: String
    private let secret: String
    private let logger: Logger
    private let undelivered: @Sendable (Int, String) -> Void
    private let resolve: @Sendable (String) async throws -> String?

    /// A link that comes here: its sender (a node id, new on every run) and the link's own id.
    struct Sender: Hashable, Sendable, CustomStringConvertible {
        var node: String
        var link: String
        var description: String { node + "/" + link }
    }

    private struct Senders {
        /// The last number handled on each link.
        var handled: [Sender: UInt64] = [:]
        /// The open connection of each link, to close when a newer one comes.
        var channels: [Sender: (id: ObjectIdentifier, channel: any Channel)] = [:]
        /// One handler at a time per link.
        var gates: [Sender: AsyncGate] = [:]
    }

    private struct Links {
        var peers: [String: PeerLink] = [:]
        /// When each link was made, counted in links made.
        var made: [String: UInt64] = [:]
        var count: UInt64 = 0
        var addresses: [String: String] = [:]
        var stopped = false
    }

    private let senders = NIOLockedValueBox(Senders())
    private let links = NIOLockedValueBox(Links())
    private let handler = NIOLockedValueBox<(@Sendable ([NodeMessage]) async -> Void)?>(nil)
    /// The listener's run, and its service group (stopped gracefully: the links it holds are
    /// closed first).
    private let listener = NIOLockedValueBox<(task: Task<Void, Never>, group: ServiceGroup)?>(nil)

    /// - Parameters:
    ///   - resolve: where a node listens, from the node table (nil: it is not there).
    ///   - undelivered: counts messages that could not be delivered, with why.
    init(
        node: String, secret: String, logger: Logger, resolve: @escaping @Sendable (String) async throws -> String?,
        undelivered: @escaping @Sendable (Int, String) -> Void = { _, _ in }
    ) {
        self.node = node
        self.resolve = resolve
        self.secret = secret
        self.logger = logger
        self.undelivered = undelivered
    }

    // MARK: - sending

    /// Queues a message for `target`; never waits. A message for this node is handled here.
    func send(_ message: NodeMessage, to target: String) {
        guard target != node else {
            let handler = handler.withLockedValue { $0 }
            Task { await handler?([message]) }
            return
        }
        guard let body = try? message.body() else {
            logger.error("a cluster message could not be encoded")
            return undelivered(1, "unencodable")
        }
        link(to: target)?.send(body)
    }

    /// Queues a message for every other node in `nodes` (the table as read for it).
    func send(_ message: NodeMessage, toEveryOtherOf nodes: [String]) {
        for target in nodes where target != node { send(message, to: target) }
    }

    /// The link to `target`, made on first use; nil once the links stopped.
    private func link(to target: String) -> PeerLink? {
        let (link, made) = links.withLockedValue { links -> (PeerLink?, Bool) in
            guard !links.stopped else { return (nil, false) }
            if let link = links.peers[target] { return (link, false) }
            let link = PeerLink(
                target: target, from: node, secret: secret, logger: logger, resolve: resolve, undelivered: undelivered)
            links.peers[target] = link
            links.count += 1
            links.made[target] = links.count
            return (link, true)
        }
        if made, let link, let address = links.withLockedValue({ $0.addresses[target] }) { link.setAddress(address) }
        if link == nil {
            logger.error("a cluster message dropped: this node's links are closed", metadata: ["node": "\(target)"])
            undelivered(1, "stopped")
        }
        return link
    }

    /// Where the links stand before a read of the node table: pass it to ``update(peers:readFrom:)``.
    func readBegins() -> UInt64 {
        links.withLockedValue { $0.count }
    }

    /// The nodes and where they listen, from the node table read after `readFrom` (nil: before any
    /// link was made): links get their addresses, and the links to nodes no longer there close
    /// (what they held is undelivered: the node left or was taken for dead), but not one made since
    /// the read began (for a node that joined meanwhile). What this node heard from a sender no
    /// longer there is forgotten.
    func update(peers: [String: String], readFrom: UInt64? = nil) {
        let (gone, known) = links.withLockedValue { links -> ([PeerLink], [(PeerLink, String)]) in
            links.addresses = peers
            let gone = links.peers.filter { peers[$0.key] == nil && (links.made[$0.key] ?? 0) <= (readFrom ?? .max) }
            for key in gone.keys {
                links.peers.removeValue(forKey: key)
                links.made.removeValue(forKey: key)
            }
            return (Array(gone.values), links.peers.compactMap { key, link in peers[key].map { (link, $0) } })
        }
        for (link, address) in known { link.setAddress(address) }
        for link in gone { Task { await link.stop(reason: "node left") } }
        senders.withLockedValue { senders in
            for sender in senders.handled.keys where peers[sender.node] == nil && senders.channels[sender] == nil {
                senders.handled.removeValue(forKey: sender)
                senders.gates.removeValue(forKey: sender)
            }
        }
    }

    /// Messages waiting to be acknowledged by `target` (tests).
    func waiting(for target: String) -> Int {
        links.withLockedValue { $0.peers[target] }?.waiting ?? 0
    }

    /// Returns once every message queued so far (for `targets`, or for every node) is
    /// acknowledged, or after `bound` of real time.
    func drained(_ targets: [String]? = nil, within bound: Duration) async {
        let peers = links.withLockedValue { links in
            targets.map { $0.compactMap { links.peers[$0] } } ?? Array(links.peers.values)
        }
        await withTaskGroup(of: Void.self) { group in
            for peer in peers { group.addTask { await peer.drained(within: bound) } }
        }
    }

    // MARK: - receiving

    /// Hands each sender's messages, in order, to `handler` from now on. Until then a link that
    /// comes is closed before its greeting (its sender tries again: nothing is lost).
    func handle(with handler: @escaping @Sendable ([NodeMessage]) async -> Void) {
        self.handler.withLockedValue { $0 = handler }
    }

    /// Starts listening on `host`:`port` (0: any free port) for links from other nodes. Returns
    /// the port.
    func listen(host: String, port: Int) async throws -> Int {
        let bound = NIOLockedValueBox<CheckedContinuation<Int, any Error>?>(nil)
        let application = Application(
            router: Router(),
            server: .http1WebSocketUpgrade(configuration: .init(ws: .init(maxFrameSize: PeerLink.maxFrame))) {
                [weak self] request, channel, _ in
                guard let self, let sender = self.admit(request) else { return .dontUpgrade }
                return .upgrade([:]) { inbound, outbound, _ in
                    await self.serve(sender, channel: channel, inbound: inbound, outbound: outbound)
                }
            },
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "switchboard-node"),
            onServerRunning: { channel in
                bound.withLockedValue { waiter in
                    defer { waiter = nil }
                    return waiter
                }?.resume(returning: channel.localAddress?.port ?? port)
            },
            logger: logger)
        return try await withCheckedThrowingContinuation { continuation in
            bound.withLockedValue { $0 = continuation }
            let group = ServiceGroup(services: [application], gracefulShutdownSignals: [], logger: logger)
            let task = Task {
                do {
                    try await group.run()
                } catch {
                    bound.withLockedValue { waiter in
                        defer { waiter = nil }
                        return waiter
                    }?.resume(throwing: error)
                    if !Task.isCancelled { self.logger.error("the cluster link listener stopped", metadata: ["error": "\(error)"]) }
                }
            }
            listener.withLockedValue { $0 = (task, group) }
        }
    }

    /// The sender a link request comes from, if it carries the cluster's secret, a node id and a
    /// link id.
    private func admit(_ request: HTTPRequest) -> Sender? {
        func isName(_ text: String) -> Bool {
            (1...64).contains(text.utf8.count)
                && text.unicodeScalars.allSatisfy { $0 == "-" || ($0.isASCII && CharacterSet.alphanumerics.contains($0)) }
        }
        guard request.path == Self.path, let node = request.headerFields[Self.nodeHeader], isName(node),
            let link = request.headerFields[Self.linkHeader], isName(link),
            let authorization = request.headerFields[.authorization], authorization.hasPrefix("Bearer ")
        else { return nil }
        let offered = SHA256.hash(data: Data(authorization.dropFirst("Bearer ".count).utf8))
        let expected = SHA256.hash(data: Data(secret.utf8))
        guard offered == expected else {
            logger.warning("a cluster link with a wrong secret refused", metadata: ["sender": "\(node)"])
            return nil
        }
        return Sender(node: node, link: link)
    }

    /// One connection from `sender`: the older one is closed and finishes first; then the
    /// greeting, and each message in order, acknowledged once handled.
    private func serve(
        _ sender: Sender, channel: any Channel, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter
    ) async {
        let id = ObjectIdentifier(channel)
        let (older, gate) = senders.withLockedValue { senders -> ((any Channel)?, AsyncGate) in
            let older = senders.channels[sender]?.channel
            senders.channels[sender] = (id, channel)
            // A node's new link replaces its links before it that are not connected: what was
            // kept of them goes (so what is kept per node is bounded by its open links).
            for other in Array(senders.handled.keys)
            where other.node == sender.node && other != sender && senders.channels[other] == nil {
                senders.handled.removeValue(forKey: other)
                senders.gates.removeValue(forKey: other)
            }
            let gate = senders.gates[sender] ?? AsyncGate()
            senders.gates[sender] = gate
            return (older, gate)
        }
        older?.close(promise: nil)
        let executor = EventLoopTaskExecutor(channel.eventLoop)
        await withTaskExecutorPreference(executor) {
            await gate.run { await self.receive(from: sender, channel: channel, inbound: inbound, outbound: outbound) }
        }
        senders.withLockedValue { senders in
            if senders.channels[sender]?.id == id { senders.channels.removeValue(forKey: sender) }
        }
    }

    private func receive(
        from sender: Sender, channel: any Channel, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter
    ) async {
        guard let handler = handler.withLockedValue({ $0 }) else { return }
        let (acks, acknowledge) = AsyncStream<UInt64>.makeStream(bufferingPolicy: .bufferingNewest(1))
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await number in acks { try await outbound.write(.text(String(number))) }
                }
                var last = senders.withLockedValue { $0.handled[sender] }
                acknowledge.yield(last ?? 0)
                for try await message in inbound.messages(maxSize: PeerLink.maxFrame) {
                    guard case .text(let text) = message else { throw NodeLinkError.unreadable }
                    var messages: [NodeMessage] = []
                    var newest: UInt64?
                    for (number, body) in try LinkFrame.decode(text) {
                        if let seen = newest ?? last, number <= seen { continue }
                        // A gap: this connection missed some; the sender sends again from what was handled.
                        if let seen = newest ?? last, number != seen + 1 { throw NodeLinkError.unreadable }
                        newest = number
                        do {
                            messages.append(try NodeMessage(body: body))
                        } catch {
                            logger.error("an unreadable cluster message dropped", metadata: ["sender": "\(sender)", "error": "\(error)"])
                            undelivered(1, "unreadable")
                        }
                    }
                    guard let newest else { continue }
                    if !messages.isEmpty { await handler(messages) }
                    last = newest
                    senders.withLockedValue { $0.handled[sender] = newest }
                    acknowledge.yield(newest)
                }
                acknowledge.finish()
                group.cancelAll()
            }
        } catch {
            acknowledge.finish()
            logger.debug("a cluster link closed", metadata: ["sender": "\(sender)", "error": "\(error)"])
            channel.close(promise: nil)
        }
    }

    // MARK: - stopping

    /// Stops listening and sending: the links close, and what they still held is undelivered.
    func stop() async {
        let peers = links.withLockedValue { links -> [PeerLink] in
            links.stopped = true
            defer {
                links.peers.removeAll()
                links.made.removeAll()
            }
            return Array(links.peers.values)
        }
        for peer in peers { await peer.stop(reason: "this node stopped") }
        let open = senders.withLockedValue { Array($0.channels.values) }
        for (_, channel) in open { channel.close(promise: nil) }
        guard let (task, group) = listener.withLockedValue({ $0 }) else { return }
        await group.triggerGracefulShutdown()
        await task.value
    }

    /// Closes every link this node receives on (tests: a lost connection).
    func dropIncomingConnections() {
        for (_, channel) in senders.withLockedValue({ Array($0.channels.values) }) { channel.close(promise: nil) }
    }
}

/// Where a node listens for the links of the other nodes of its cluster (PostgreSQL only).
public struct NodeLinkConfiguration: Sendable, Equatable {
    /// The port (on the server's `host`); 0: any free port (the table says which).
    public var port = 0
    /// What the other nodes connect to: a host name or address, with `:port` or without (then
    /// the port listened on). Nil: the server's `host`, unless that is every address (`0.0.0.0`,
    /// `::`), then this machine's host name.
    public var address: String?

    public init() {}

    /// The address other nodes are told, for a listener on `host`:`port`.
    func advertised(host: String, port: Int) -> String {
        if let address {
            if address.hasPrefix("[") ? address.contains("]:") : address.contains(":") { return address }
            return "\(address):\(port)"
        }
        let wildcard = host == "0.0.0.0" || host == "::" || host.isEmpty
        let name = wildcard ? ProcessInfo.processInfo.hostName : host
        return name.contains(":") ? "[\(name)]:\(port)" : "\(name):\(port)"
    }
}
