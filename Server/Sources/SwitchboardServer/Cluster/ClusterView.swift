import SwitchboardProtocol

/// What sessions and the admin API may ask of the node's cluster: whether this node can still
/// write, telling the other nodes what changed here, where it stands, and who is online across
/// the nodes. Not the calls (they go through a ``CallRouter``), the links or the leadership. A
/// cluster node is one (``ClusterNode``); a single node has ``SingleNode``.
protocol ClusterView: Sendable {
    /// The node lost its database: requests that need it are refused at once.
    var isCutOff: Bool { get }
    /// A user's profile changed here: the other nodes forget what they cached of it.
    func profileChanged(_ user: UserKey) async
    /// An app's settings, push credentials or webhook endpoints changed here: the other nodes
    /// read them again.
    func appsChanged() async
    /// This node's id and the cluster's leader (none: no leader for now); nil for a single node.
    var standing: (node: String, leader: String?)? { get }
    /// The app's users online on any node, with their devices and platforms.
    func onlineUsers(app: SdkAppID) async throws -> [(UserID, [(DeviceID, String?)])]
}

/// A node without a cluster: nothing to tell, never cut off, and online is who is connected here.
struct SingleNode: ClusterView {
    let registry: ConnectionRegistry

    var isCutOff: Bool { false }
    func profileChanged(_ user: UserKey) {}
    func appsChanged() {}
    var standing: (node: String, leader: String?)? { nil }
    func onlineUsers(app: SdkAppID) async throws -> [(UserID, [(DeviceID, String?)])] {
        registry.onlineUsers(app: app)
    }
}

extension ClusterNode: ClusterView {
    func profileChanged(_ user: UserKey) async { await broadcast(.profileChanged(user)) }
    func appsChanged() async { await broadcast(.appsChanged) }
    var standing: (node: String, leader: String?)? { (id, leader) }
}
