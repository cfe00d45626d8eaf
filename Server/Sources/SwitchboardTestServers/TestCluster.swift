import Foundation
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTesting

/// Several real server nodes in this process on one fresh PostgreSQL database, sharing a
/// ``TestClock``: a cluster (docs/ARCHITECTURE.md, "Cluster"). Their heartbeats sleep on the test
/// clock; ``tick()`` runs one on every node, in order, so tests decide when nodes notice things.
public final class TestCluster: Sendable {
    public let nodes: [TestServer]
    public let clock: TestClock
    public let databaseURL: String
    /// The proxy between a node and the database, for the nodes started with one.
    public let databaseProxies: [Int: TCPProxy]

    private init(nodes: [TestServer], clock: TestClock, databaseURL: String, databaseProxies: [Int: TCPProxy]) {
        self.nodes = nodes
        self.clock = clock
        self.databaseURL = databaseURL
        self.databaseProxies = databaseProxies
    }

    /// Starts `count` nodes named `node0`, `node1`…, each after the one before has had a heartbeat
    /// (its own loop's first one runs in a task and could come late), so `node0` leads. The nodes in
    /// `databaseThroughProxy` reach the database through a ``TCPProxy`` of their own (a network
    /// between them and the database that a test can cut).
    public static func start(
        nodes count: Int = 3, clock: TestClock = TestClock(), databaseThroughProxy: Set<Int> = [],
        configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> TestCluster {
        let url = try await PostgresTestDatabase.create()
        var proxies: [Int: TCPProxy] = [:]
        var nodes: [TestServer] = []
        for index in 0..<count {
            var nodeURL = url
            if databaseThroughProxy.contains(index), var components = URLComponents(string: url) {
                let proxy = try await TCPProxy.start(targetPort: components.port ?? 5432)
                proxies[index] = proxy
                components.host = "127.0.0.1"
                components.port = proxy.port
                nodeURL = components.string ?? url
            }
            let node = try await TestServer.start(clock: clock) { [nodeURL] configuration in
                configuration.database = .postgres(url: nodeURL)
                configuration.nodeId = "node\(index)"
                configure(&configuration)
            }
            await node.node.clusterHeartbeat()
            nodes.append(node)
        }
        let cluster = TestCluster(nodes: nodes, clock: clock, databaseURL: url, databaseProxies: proxies)
        await cluster.tick()
        return cluster
    }

    /// Starts one more node, `node<index>`, on the cluster's database and clock, and waits for its
    /// first heartbeat (it is in the table then); the others learn of it at their next look. Not
    /// in ``nodes``: the caller stops it.
    public func startNode(_ index: Int) async throws -> TestServer {
        let node = try await TestServer.start(clock: clock) { [databaseURL] configuration in
            configuration.database = .postgres(url: databaseURL)
            configuration.nodeId = "node\(index)"
        }
        await node.node.clusterHeartbeat()
        return node
    }

    /// One heartbeat on every node, in order: each notes it is alive, looks for messages it missed,
    /// and leads or learns who does.
    public func tick() async {
        for node in nodes { await node.node.clusterHeartbeat() }
    }

    /// The index of the node that leads.
    public var leaderIndex: Int? {
        nodes.firstIndex { $0.node.isClusterLeader }
    }

    public func stop() async {
        for node in nodes.reversed() { await node.stop() }
        for proxy in databaseProxies.values { proxy.stop() }
    }
}
