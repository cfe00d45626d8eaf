import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import SwitchboardProtocol

/// Leadership: taking the lock and a new term, restoring the calls, stepping down, and following
/// a new leader (``Leadership`` holds the rules; this runs them against PostgreSQL and the engine).
extension ClusterNode {
    func tryToLead() async throws {
        let connection: PostgresConnection
        if let open = state.withLockedValue({ $0.lockConnection }), !open.isClosed {
            connection = open
        } else {
            connection = try await PostgresConnection.connect(
                configuration: try location.connectionConfiguration(), id: 2, logger: logger)
            // A leader cut off from the database loses its lock within seconds, not the system's
            // default of hours: the server side of this connection gives up on a silent peer.
            for setting in ["tcp_keepalives_idle = 5", "tcp_keepalives_interval = 1", "tcp_keepalives_count = 3"] {
                try await connection.query(PostgresQuery(unsafeSQL: "SET \(setting)"), logger: logger)
            }
            state.withLockedValue { $0.lockConnection = connection }
        }
        let acquired = try await connection.whileOpen(on: EventLoopTaskExecutor(connection.eventLoop)) {
            try await $0.query("SELECT pg_try_advisory_lock(\(Self.leaderLock))", logger: self.logger)
                .decode(Bool.self).first { _ in true }
        }
        if acquired == true, !state.withLockedValue({ $0.leadership.isLeaving }) { try await becomeLeader() }
    }

    func checkLock() async throws {
        guard let connection = state.withLockedValue({ $0.lockConnection }) else { throw ClusterError.noTerm }
        try await connection.whileOpen(on: EventLoopTaskExecutor(connection.eventLoop)) {
            _ = try await $0.query("SELECT 1", logger: self.logger)
        }
    }

    /// Takes over: a new term, the journaled calls restored, the devices the cluster has, the calls
    /// resumed for the devices still connected, and every node told.
    ///
    /// The calls are restored before this node takes device changes (until then it refuses
    /// logins, which are tried again): a device that logged in to an engine without its calls
    /// would hear that they were over. Device changes that came meanwhile are in the devices
    /// table, read after the restore and once more after this node began to take them.
    private func becomeLeader() async throws {
        let term = try await store.beginTerm(id)
        await engine.reset()
        writer.fence = term
        // Who blocks anyone and which devices may ring by push, before the first call: what is
        // answered later comes as messages.
        engine.blockers.replace(with: try await storage.blockers())
        engine.pushReach.replace(with: try await storage.ringingPushDevices())
        let journal = try await storage.loadJournal()
        await engine.recover(journal, lastAlive: try await storage.lastAlive(), grace: grace)
        let live = try await liveNodes()
        directory.reset(try await store.devices().filter { live.contains($0.node) })
        let (took, connection) = state.withLockedValue { state in
            let took = state.leadership.tookLead(term: term)
            return (took, took ? nil : state.takeLockConnection())
        }
        guard took else {
            // It began to leave during the takeover.
            await release(connection, reason: "shutting down")
            return
        }
        logger.notice("this node leads the cluster", metadata: ["term": "\(term)", "calls": "\(journal.count)"])
        // A device that went away between the read and now: its message came while this node did
        // not lead yet, but its row is gone. Only what was noted before this second read is
        // checked against it: a login this node took meanwhile (its row written after the read
        // began) stands.
        let (noted, notes) = directory.all()
        let present = Set(try await store.devices().map { DeviceKey(user: $0.user, device: $0.device, node: $0.node) })
        for (user, device, entry) in noted where !present.contains(DeviceKey(user: user, device: device, node: entry.node)) {
            guard directory.disconnected(user, device, on: entry.node, ifNotedBy: notes) else { continue }
            logger.debug("device gone while this node took over", metadata: ["user": "\(user)", "device": "\(device)", "node": "\(entry.node)"])
            await engine.handle(.deviceOffline(user, device))
        }
        for user in await engine.usersInCalls {
            for (owner, device) in directory.devices(for: user) {
                await engine.handle(.deviceOnline(owner, device))
            }
        }
        for node in live where node != id { links.send(.leaderChanged(node: id, term: term), to: node) }
        await pendingFollow(leader: id)
    }

    private struct DeviceKey: Hashable {
        var user: UserKey
        var device: DeviceID
        var node: String
    }

    /// The nodes whose heartbeat is recent.
    private func liveNodes() async throws -> Set<String> {
        let cutoff = clock.now() - configuration.nodeTimeout.milliseconds
        return Set(try await readNodes().filter { $0.heartbeatAt >= cutoff }.map(\.node))
    }

    /// Stops leading: the calls are the journal's, for the next leader.
    func stepDown(reason: String) async {
        let (led, connection) = state.withLockedValue { state in
            let led = state.leadership.stepDown()
            return (led, led ? state.takeLockConnection() : nil)
        }
        guard led else { return }
        await release(connection, reason: reason)
    }

    /// Lets go of what this node held as leader, once ``Leadership`` says it no longer leads: the
    /// lock (its connection closed), the fence, the engine's calls and the directory.
    func release(_ connection: PostgresConnection?, reason: String) async {
        logger.notice("this node no longer leads", metadata: ["reason": "\(reason)"])
        writer.fence = nil
        await engine.reset()
        directory.reset([])
        try? await connection?.close()
    }

    func learnLeader(_ node: String, term: Int64) {
        let (learned, connection) = state.withLockedValue { state in
            let learned = state.leadership.learn(node, term: term)
            return (learned, learned == .deposed ? state.takeLockConnection() : nil)
        }
        guard learned != .ignored else { return }
        logger.info("the cluster has a new leader", metadata: ["leader": "\(node)", "term": "\(term)"])
        Task {
            if learned == .deposed { await self.release(connection, reason: "a newer term leads") }
            await self.pendingFollow(leader: node)
        }
    }

    /// What waited for a previous leader, which will not answer any more: requests are refused
    /// (the old leader may have carried them out; the client decides whether to ask again); logins
    /// and blocks go to the new leader (telling it twice does no harm).
    private func pendingFollow(leader: String) async {
        let now = clock.now()
        let (moved, refused) = state.withLockedValue { $0.pending.leaderChanged(to: leader, now: now) }
        refuse(refused, with: Self.leaderChangedRefusal)
        for (token, follows) in moved {
            logger.debug("sent again to the new leader", metadata: ["what": "\(follows)", "leader": "\(leader)"])
            if leader == id {
                switch follows {
                case .deviceOnline(let user, let device): await connected(user, device, on: id)
                case .blocks(let user): engine.blockers.insert(user)
                case .ringsByPush(let user, let device): engine.pushReach.insert(user, device)
                }
                answered(token, .ok)
            } else {
                links.send(follows.message(token: token, node: id), to: leader)
            }
        }
    }
}
