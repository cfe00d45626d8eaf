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

    private init(nodes: [TestServer], clock: TestClock, databaseURL: String) {
        self.nodes = nodes
        self.clock = clock
        self.databaseURL = databaseURL
    }

    /// Starts `count` nodes named `node0`, `node1`…; the first to look takes the lead.
    public static func start(
        nodes count: Int = 3, clock: TestClock = TestClock(),
        configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> TestCluster {
        let url = try await PostgresTestDatabase.create()
        var nodes: [TestServer] = []
        for index in 0..<count {
            nodes.append(
                try await TestServer.start(clock: clock) { configuration in
                    configuration.database = .postgres(url: url)
                    configuration.nodeId = "node\(index)"
                    configure(&configuration)
                })
        }
        let cluster = TestCluster(nodes: nodes, clock: clock, databaseURL: url)
        await cluster.tick()
        return cluster
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
    }
}
