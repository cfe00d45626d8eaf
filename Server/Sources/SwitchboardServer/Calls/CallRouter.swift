import SwitchboardProtocol

/// Where a node's sessions (and its admin API) send call requests and device changes: the node's
/// own ``CallEngine`` on a single node (``LocalCallRouter``), or the cluster's leader
/// (``ClusterNode``), which may be this node or another one.
protocol CallRouter: Sendable {
    /// Hands an event to the engine. `reply` gets the answer to a request before any event the
    /// request causes reaches this node's connections. Returns the answer (nil for events that
    /// are not requests).
    @discardableResult
    func handle(_ event: CallEvent, reply: (@Sendable (CallReply) -> Void)?) async -> CallReply?

    /// A device logged in on this node (after its connection was registered here). Returns why the
    /// engine could not be told (a cluster without a leader for now): the login is refused then.
    func deviceOnline(_ user: UserKey, _ device: DeviceID, platform: String?) async -> SwitchboardError?

    /// `user` now blocks someone (the rows are written): the engine's ``BlockerIndex`` has them
    /// before the block is answered, so a call placed after the answer, on any node, is blocked.
    /// Returns why the engine could not be told (its node did not answer).
    func blocks(_ user: UserKey) async -> SwitchboardError?

    /// `device` of `user` has a token that rings (the row is written): the engine's
    /// ``PushReachIndex`` has it before the registration is answered, so a call placed after the
    /// answer reads the device's tokens when it is not connected. Returns why the engine could not
    /// be told (its node did not answer).
    func ringsByPush(_ user: UserKey, _ device: DeviceID) async -> SwitchboardError?

    /// A device's connection on this node closed without a logout.
    func deviceOffline(_ user: UserKey, _ device: DeviceID) async

    /// A device logged out on this node.
    func logout(_ user: UserKey, _ device: DeviceID) async

    /// Calls in progress, when this node knows (it runs the engine); nil on a node that does not lead.
    func activeCallCount() async -> Int?
}

/// A single node: the engine is here.
struct LocalCallRouter: CallRouter {
    let engine: CallEngine

    @discardableResult
    func handle(_ event: CallEvent, reply: (@Sendable (CallReply) -> Void)?) async -> CallReply? {
        await engine.handle(event, reply: reply)
    }

    func deviceOnline(_ user: UserKey, _ device: DeviceID, platform: String?) async -> SwitchboardError? {
        await engine.handle(.deviceOnline(user, device))
        return nil
    }

    func blocks(_ user: UserKey) async -> SwitchboardError? {
        engine.blockers.insert(user)
        return nil
    }

    func ringsByPush(_ user: UserKey, _ device: DeviceID) async -> SwitchboardError? {
        engine.pushReach.insert(user, device)
        return nil
    }

    func deviceOffline(_ user: UserKey, _ device: DeviceID) async {
        await engine.handle(.deviceOffline(user, device))
    }

    func logout(_ user: UserKey, _ device: DeviceID) async {
        await engine.handle(.logout(user, device))
    }

    func activeCallCount() async -> Int? { await engine.activeCallCount }
}
