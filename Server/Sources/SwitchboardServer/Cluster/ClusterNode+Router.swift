import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import SwitchboardProtocol

/// The router: a session's call requests and device changes go to the engine here when this node
/// leads, or to the leader over the links between nodes, where they wait for its answer (``LeaderRequests``).
extension ClusterNode {
    /// The leader; when this node does not know one (it just started, or the last one left), it
    /// looks for it (a heartbeat now) first. Callers waiting together look once.
    private func findLeader() async -> String? {
        if let leader = leader { return leader }
        await ticks.run {
            if self.leader == nil { await self.heartbeat() }
        }
        return leader
    }

    @discardableResult
    func handle(_ event: CallEvent, reply: (@Sendable (CallReply) -> Void)?) async -> CallReply? {
        if isCutOff {
            let refusal = CallReply.failure(Self.cutOffRefusal)
            reply?(refusal)
            return refusal
        }
        let leader = await findLeader()
        if leader == id { return await engine.handle(event, reply: reply) }
        guard let leader else {
            let refusal = CallReply.failure(SwitchboardError(.storageUnavailable, "the cluster has no leader now; try again"))
            reply?(refusal)
            return refusal
        }
        return await remote(reply: reply, to: leader) { token in .command(token: token, from: self.id, event: event) }
    }

    /// Sends a message the leader answers with ``NodeMessage/reply(token:reply:)`` and waits for it.
    @discardableResult
    private func remote(
        follows: LeaderFollows? = nil, reply: (@Sendable (CallReply) -> Void)? = nil, to leader: String,
        _ message: @escaping (UInt64) -> NodeMessage
    ) async -> CallReply? {
        await withCheckedContinuation { continuation in
            let waiter = Waiter(reply: reply, continuation: continuation)
            let now = clock.now()
            let token = state.withLockedValue { $0.pending.add(waiter, follows: follows, to: leader, now: now) }
            links.send(message(token), to: leader)
        }
    }

    /// Tells the leader what it must know before this node answers, and waits for its `ok`; the
    /// message goes to the next leader if the leader changes meanwhile.
    private func tell(_ leader: String, _ follows: LeaderFollows) async -> CallReply? {
        await remote(follows: follows, to: leader) { token in follows.message(token: token, node: self.id) }
    }

    func deviceOnline(_ user: UserKey, _ device: DeviceID, platform: String?) async -> SwitchboardError? {
        if isCutOff { return Self.cutOffRefusal }
        do {
            try await store.deviceConnected(ClusterStore.Device(user: user, device: device, node: id, platform: platform))
        } catch {
            logger.error("device not noted in the cluster", metadata: ["error": "\(error)"])
            return SwitchboardError(.storageUnavailable, "the cluster's database did not answer; try again")
        }
        let leader = await findLeader()
        if leader == id {
            await connected(user, device, on: id)
            return nil
        }
        guard let leader else {
            try? await store.deviceDisconnected(user, device, node: id)
            return SwitchboardError(.storageUnavailable, "the cluster has no leader now; try again")
        }
        // Waits for the leader, so that the login is answered once a call to the device rings here.
        if case .failure(let error) = await tell(leader, .deviceOnline(user, device)) {
            try? await store.deviceDisconnected(user, device, node: id)
            return error
        }
        return nil
    }

    func blocks(_ user: UserKey) async -> SwitchboardError? {
        if isCutOff { return Self.cutOffRefusal }
        let leader = await findLeader()
        if leader == id {
            engine.blockers.insert(user)
            return nil
        }
        // Without a leader the next one reads the rows, written already, when it takes over.
        guard let leader else { return nil }
        if case .failure(let error) = await tell(leader, .blocks(user)) { return error }
        return nil
    }

    func ringsByPush(_ user: UserKey, _ device: DeviceID) async -> SwitchboardError? {
        if isCutOff { return Self.cutOffRefusal }
        let leader = await findLeader()
        if leader == id {
            engine.pushReach.insert(user, device)
            return nil
        }
        // Without a leader the next one reads the rows, written already, when it takes over.
        guard let leader else { return nil }
        if case .failure(let error) = await tell(leader, .ringsByPush(user, device)) { return error }
        return nil
    }

    /// Removes a device's row, waiting at most ``Configuration/commandTimeout`` for the database
    /// (none while cut off from it: the leader drops this node's devices then): a connection's end
    /// must not wait for good on a database that does not answer.
    private func forget(_ user: UserKey, _ device: DeviceID) async {
        guard !isCutOff else { return }
        let (store, id) = (self.store, self.id)
        await waitBounded(configuration.commandTimeout, clock: clock) {
            try? await store.deviceDisconnected(user, device, node: id)
        }
    }

    func deviceOffline(_ user: UserKey, _ device: DeviceID) async {
        await forget(user, device)
        if isLeader {
            if directory.disconnected(user, device, on: id) { await engine.handle(.deviceOffline(user, device)) }
        } else if let leader {
            links.send(.deviceOffline(user: user, device: device, node: id), to: leader)
        }
    }

    func logout(_ user: UserKey, _ device: DeviceID) async {
        await forget(user, device)
        if isLeader {
            await engine.handle(.logout(user, device))
            _ = directory.disconnected(user, device, on: id)
        } else if let leader {
            links.send(.logout(user: user, device: device, node: id), to: leader)
        }
    }

    func activeCallCount() async -> Int? {
        isLeader ? await engine.activeCallCount : nil
    }

    /// The users of `app` with their connected devices on any node, sorted as the single node's
    /// registry sorts them.
    func onlineUsers(app: SdkAppID) async throws -> [(UserID, [(DeviceID, String?)])] {
        let live = Set(state.withLockedValue { $0.nodes } + [id])
        var users: [UserID: [(DeviceID, String?)]] = [:]
        for device in try await store.devices() where device.user.app == app && live.contains(device.node) {
            users[device.user.user, default: []].append((device.device, device.platform))
        }
        return users.map { ($0.key, $0.value.sorted { $0.0 < $1.0 }) }.sorted { $0.0 < $1.0 }
    }

    /// Tells every other node in the table as it is read now (profiles, apps), a node that joined
    /// since this one last looked included, and returns once each has handled it, or after
    /// ``broadcastBound``: a change answered here is then in force on every node that answers. One
    /// that joins later reads everything afresh as it joins (``heartbeat()``). Without the table
    /// (the database does not answer), the nodes of the last heartbeat.
    func broadcast(_ message: NodeMessage) async {
        var nodes = state.withLockedValue { $0.nodes }
        do {
            nodes = try await readNodes().map(\.node)
        } catch {
            logger.warning("the node table was not read: telling the nodes of the last heartbeat", metadata: ["error": "\(error)"])
        }
        let others = nodes.filter { $0 != id }
        links.send(message, toEveryOtherOf: others)
        await links.drained(others, within: Self.broadcastBound)
    }

    /// How long a change waits for the other nodes to have handled it (a node that does not
    /// answer gets it when it does, or reads everything afresh when it joins again).
    static let broadcastBound: Duration = .seconds(2)

    // MARK: - the messages waiting for the leader

    func answered(_ token: UInt64, _ reply: CallReply) {
        state.withLockedValue { $0.pending.answer(token) }?.resume(reply)
    }

    /// What a message the leader will not answer gets: its leader changed, or it waited too long.
    static let leaderChangedRefusal = SwitchboardError(.storageUnavailable, "the cluster's leader changed; try again")

    func refuse(_ waiters: [Waiter], with refusal: SwitchboardError) {
        for waiter in waiters { waiter.resume(.failure(refusal)) }
    }

    /// Refuses every message waiting for the leader (this node lost its database).
    func failAllPending(with refusal: SwitchboardError) {
        refuse(state.withLockedValue { $0.pending.removeAll { _ in true } }, with: refusal)
    }

    func failStalePending(now: Int64) {
        let timeout = configuration.commandTimeout.milliseconds
        refuse(state.withLockedValue { $0.pending.removeStale(now: now, timeout: timeout) }, with: Self.leaderChangedRefusal)
    }
}
