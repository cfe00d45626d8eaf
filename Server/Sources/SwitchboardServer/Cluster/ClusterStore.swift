import Foundation
import Logging
import PostgresNIO
import SwitchboardProtocol

/// What the nodes of a cluster share in PostgreSQL besides the data: who is alive, which device is
/// on which node and where it listens for the others' links, who leads and in which term, and the
/// secret the links are opened with. (The messages between nodes: ``NodeLinks``.)
struct ClusterStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    struct Device: Sendable, Equatable {
        var user: UserKey
        var device: DeviceID
        var node: String
        var platform: String?
    }

    // MARK: - nodes

    /// Notes that `node` (whose links listen at `address`) is alive at `now`, inserting it the
    /// first time.
    func heartbeat(_ node: String, address: String, startedAt: Int64, now: Int64) async throws -> Heartbeat {
        // `xmax` is 0 in the row an upsert inserted, the id of this transaction in one it updated.
        let inserted = try await client.query(
            """
            INSERT INTO switchboard_nodes (node_id, started_at, heartbeat_at, address)
            VALUES (\(node), \(startedAt), \(now), \(address))
            ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, address = excluded.address
            RETURNING xmax = 0
            """, logger: logger
        ).decode(Bool.self).first { _ in true }
        return inserted == true ? .joined : .present
    }

    /// What a heartbeat found in the table.
    enum Heartbeat: Sendable {
        /// The node was not in it (it starts, or the leader took it for dead and removed it).
        case joined
        /// It was.
        case present
    }

    /// Whether `node` is still in the table (a node presumed dead and removed must not carry on).
    func isRegistered(_ node: String) async throws -> Bool {
        try await client.query("SELECT node_id FROM switchboard_nodes WHERE node_id = \(node)", logger: logger)
            .decode(String.self).first { _ in true } != nil
    }

    /// A node of the table: its last heartbeat, and where it listens for links.
    struct Node: Sendable, Equatable {
        var node: String
        var heartbeatAt: Int64
        var address: String
    }

    /// The nodes and their last heartbeats.
    func nodes() async throws -> [Node] {
        var nodes: [Node] = []
        for try await (node, at, address) in try await client.query(
            "SELECT node_id, heartbeat_at, address FROM switchboard_nodes ORDER BY node_id", logger: logger
        ).decode((String, Int64, String).self) {
            nodes.append(Node(node: node, heartbeatAt: at, address: address))
        }
        return nodes
    }

    /// Where `node` listens for links; nil when it is not in the table.
    func address(of node: String) async throws -> String? {
        try await client.query("SELECT address FROM switchboard_nodes WHERE node_id = \(node)", logger: logger)
            .decode(String.self).first { _ in true }
    }

    /// The secret every node of the cluster opens its links with: made by the first node that
    /// asks, read by the others.
    func linkSecret() async throws -> String {
        let made = randomHex(bytes: 32)
        try await client.query(
            "INSERT INTO switchboard_cluster (key, value) VALUES ('link-secret', \(made)) ON CONFLICT (key) DO NOTHING",
            logger: logger)
        let secret = try await client.query("SELECT value FROM switchboard_cluster WHERE key = 'link-secret'", logger: logger)
            .decode(String.self).first { _ in true }
        guard let secret else { throw ClusterError.noSecret }
        return secret
    }

    /// Forgets a node that left or died, and its devices.
    func remove(node: String) async throws {
        try await client.query("DELETE FROM switchboard_devices WHERE node_id = \(node)", logger: logger)
        try await client.query("DELETE FROM switchboard_nodes WHERE node_id = \(node)", logger: logger)
    }

    // MARK: - devices

    func deviceConnected(_ device: Device) async throws {
        try await client.query(
            """
            INSERT INTO switchboard_devices (sdk_app_id, user_id, device_id, node_id, platform)
            VALUES (\(device.user.app.rawValue), \(device.user.user.rawValue), \(device.device.rawValue), \(device.node),
                \(device.platform))
            ON CONFLICT (sdk_app_id, user_id, device_id) DO UPDATE SET node_id = excluded.node_id,
                platform = excluded.platform
            """, logger: logger)
    }

    /// Removes the device if it is still `node`'s (another node may have it by now).
    func deviceDisconnected(_ user: UserKey, _ device: DeviceID, node: String) async throws {
        try await client.query(
            """
            DELETE FROM switchboard_devices WHERE sdk_app_id = \(user.app.rawValue) AND user_id = \(user.user.rawValue)
                AND device_id = \(device.rawValue) AND node_id = \(node)
            """, logger: logger)
    }

    /// Every connected device of the cluster.
    func devices() async throws -> [Device] {
        var devices: [Device] = []
        for try await (app, user, device, node, platform) in try await client.query(
            "SELECT sdk_app_id, user_id, device_id, node_id, platform FROM switchboard_devices", logger: logger
        ).decode((Int64, String, String, String, String?).self) {
            devices.append(
                Device(
                    user: UserKey(app: SdkAppID(app), user: UserID(rawValue: user)), device: DeviceID(rawValue: device),
                    node: node, platform: platform))
        }
        return devices
    }

    // MARK: - the leader

    /// Starts a new term with `node` as leader (it holds the leader lock); returns the term.
    func beginTerm(_ node: String) async throws -> Int64 {
        let term = try await client.query(
            """
            INSERT INTO switchboard_leader (key, node_id, term) VALUES ('leader', \(node), 1)
            ON CONFLICT (key) DO UPDATE SET node_id = excluded.node_id, term = switchboard_leader.term + 1
            RETURNING term
            """, logger: logger
        ).decode(Int64.self).first { _ in true }
        guard let term else { throw ClusterError.noTerm }
        return term
    }

    /// The node that leads now, if any has ever led.
    func leader() async throws -> (node: String, term: Int64)? {
        try await client.query("SELECT node_id, term FROM switchboard_leader WHERE key = 'leader'", logger: logger)
            .decode((String, Int64).self).first { _ in true }.map { (node: $0.0, term: $0.1) }
    }
}

enum ClusterError: Error, Equatable {
    case noTerm
    /// The cluster's link secret could not be read.
    case noSecret
    /// A write of a node that is no longer the leader (its term is over): refused.
    case fenced
    /// A statement not sent: the connection it was for had closed.
    case connectionClosed
}
