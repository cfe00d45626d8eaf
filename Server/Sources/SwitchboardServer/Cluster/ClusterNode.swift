import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import ServiceLifecycle
import SwitchboardProtocol

/// The heartbeats and timeouts of a cluster's nodes (docs/OPERATIONS.md, "Running a cluster").
public struct ClusterTiming: Sendable, Equatable {
    /// How often a node notes that it is alive, looks for messages it missed and, when it does not
    /// lead, tries to take the leader's lock.
    public var heartbeat: Duration = .seconds(1)
    /// A node whose heartbeat is older than this is taken for dead.
    public var nodeTimeout: Duration = .seconds(5)
    /// How long a request waits for the leader's answer before it is answered `storageUnavailable`.
    public var commandTimeout: Duration = .seconds(10)

    public init() {}
}

/// One node of a cluster of nodes that share a PostgreSQL database (docs/ARCHITECTURE.md,
/// "Cluster").
///
/// Every node serves connections. One node, the **leader**, runs the call engine for the whole
/// cluster: it holds PostgreSQL's advisory lock ``leaderLock`` on a connection of its own, and
/// every term it leads is numbered in `switchboard_leader`; its journal and record writes carry the
/// term and are refused once a newer one began (``ClusterError/fenced``). Sessions on the other
/// nodes send their call requests and device changes to the leader through the ``ClusterBus``;
/// the leader answers there and sends events to the nodes that hold their recipients.
///
/// Liveness: each node notes a heartbeat in `switchboard_nodes` every ``Configuration/heartbeat``;
/// the leader takes a node whose heartbeat is older than ``Configuration/nodeTimeout`` for dead: its
/// devices count as dropped (the reconnect grace starts) and it is removed. A node that finds
/// itself removed closes its connections (they come back, here or elsewhere). A node whose heartbeat
/// has not reached the database for ``Configuration/nodeTimeout`` (a cut that drops packets leaves
/// the query waiting, not failing) closes its connections by itself and refuses what needs the
/// database until a heartbeat gets through (``DatabaseWatch``). When the leader's
/// lock connection dies, PostgreSQL releases the lock; another node takes it within a heartbeat,
/// restores the journaled calls and resumes them for the devices still connected.
final class ClusterNode: CallRouter, Service {
    typealias Configuration = ClusterTiming

    /// The reconnect grace of the devices of a node taken for dead. A node that stopped answering
    /// without closing anything (its machine froze or vanished, the network to it dropped every
    /// packet) told its clients nothing: each notices by itself, after two silent heartbeats, up to
    /// three client heartbeat intervals after the node went silent, while the leader noticed
    /// `nodeTimeout` after it. Their grace counts from when they notice, not from when the leader
    /// did (measured before: a call on a frozen node ended 21 s after the freeze, its clients came
    /// back at 30 s; `NodeCutProcessTests`).
    static func lostNodeGrace(grace: Int64, clientHeartbeat: Duration, nodeTimeout: Duration) -> Int64 {
        grace + max(0, 3 * clientHeartbeat.milliseconds - nodeTimeout.milliseconds)
    }

    /// The advisory-lock key of leadership.
    static let leaderLock: Int64 = 7_419_002

    let id: String
    let configuration: Configuration
    private let store: ClusterStore
    /// Internal for tests (a leader that stops taking its messages).
    let bus: ClusterBus
    let directory: ClusterDirectory
    private let location: PostgresStorage.Location
    private let engine: CallEngine
    private let registry: ConnectionRegistry
    private let writer: PersistenceWriter
    private let storage: any SwitchboardStorage
    private let apps: AppDirectory
    private let profiles: ProfileDirectory
    private let grace: Int64
    /// The reconnect grace of a device whose node the leader took for dead (``lostNodeGrace``).
    private let lostNodeGrace: Int64
    private let clock: any SwitchboardClock
    private let logger: Logger
    private let startedAt: Int64

    /// Who waits for the leader's answer to a message: the session's reply, if any, and the task.
    private struct Waiter: Sendable {
        var reply: (@Sendable (CallReply) -> Void)?
        var continuation: CheckedContinuation<CallReply?, Never>

        func resume(_ answer: CallReply) {
            reply?(answer)
            continuation.resume(returning: answer)
        }
    }

    private struct State {
        /// Who leads, as far as this node knows, and whether this node is leaving.
        var leadership: Leadership
        /// This node's lock connection while it leads (or tries to).
        var lockConnection: PostgresConnection?
        /// The messages sent to the leader that wait for its answer.
        var pending = LeaderRequests<Waiter>()
        /// The live nodes, from the last heartbeat.
        var nodes: [String] = []
        /// Whether the heartbeats reach the database.
        var database: DatabaseWatch

        /// The lock connection, for a node that no longer leads to close (taken in the same
        /// critical section as the transition that says so: a takeover attempt that follows opens
        /// its own).
        mutating func takeLockConnection() -> PostgresConnection? {
            defer { lockConnection = nil }
            return lockConnection
        }
    }

    private let state: NIOLockedValueBox<State>
    private let ticks = AsyncGate()

    init(
        id: String, configuration: Configuration = Configuration(), store: ClusterStore, bus: ClusterBus,
        directory: ClusterDirectory, location: PostgresStorage.Location, engine: CallEngine,
        registry: ConnectionRegistry, writer: PersistenceWriter, storage: any SwitchboardStorage, apps: AppDirectory,
        profiles: ProfileDirectory, grace: Int64, clientHeartbeat: Duration = .seconds(10), clock: any SwitchboardClock,
        logger: Logger
    ) {
        self.id = id
        self.configuration = configuration
        self.store = store
        self.bus = bus
        self.directory = directory
        self.location = location
        self.engine = engine
        self.registry = registry
        self.writer = writer
        self.storage = storage
        self.apps = apps
        self.profiles = profiles
        self.grace = grace
        self.lostNodeGrace = Self.lostNodeGrace(grace: grace, clientHeartbeat: clientHeartbeat, nodeTimeout: configuration.nodeTimeout)
        self.clock = clock
        self.logger = logger
        let startedAt = clock.now()
        self.startedAt = startedAt
        self.state = NIOLockedValueBox(
            State(
                leadership: Leadership(node: id),
                database: DatabaseWatch(timeout: configuration.nodeTimeout.milliseconds, startedAt: startedAt)))
    }

    /// Called when another node changed the apps, their settings or their webhook endpoints
    /// (after the apps were read again here).
    let onAppsChanged = LockedCallback<(@Sendable () async -> Void)?>(nil)

    /// Whether this node leads now.
    var isLeader: Bool { state.withLockedValue { $0.leadership.isLeader } }

    /// The leader as far as this node knows.
    var leader: String? { state.withLockedValue { $0.leadership.leader } }

    /// Whether this node takes itself for cut off from the database (``DatabaseWatch``).
    var isCutOff: Bool { state.withLockedValue { $0.database.isCutOff } }

    /// What a node cut off from its database answers at once instead of waiting for it.
    static let cutOffRefusal = SwitchboardError(.storageUnavailable, "this node lost its database; try another node")

    // MARK: - the service

    func run() async throws {
        writer.onFenced.function = { [weak self] in Task { await self?.stepDown(reason: "fenced") } }
        bus.start { [weak self] messages in await self?.received(messages) }
        // Apart from the heartbeat, which waits as long as the database does not answer.
        let watchdog = Task { [weak self, clock, configuration] in
            while (try? await clock.sleep(for: configuration.heartbeat)) != nil {
                guard let self else { return }
                await self.watchDatabase()
            }
        }
        defer { watchdog.cancel() }
        while !Task.isCancelled {
            await waitBounded(clock: clock) { await self.tick() }
            do {
                try await cancelWhenGracefulShutdown {
                    try await self.clock.sleep(for: self.configuration.heartbeat)
                }
            } catch {
                break
            }
        }
        await waitBounded(clock: clock) { await self.leave() }
    }

    /// The watchdog's look: a node whose heartbeat has not reached the database for `nodeTimeout`
    /// closes its connections, as the leader now takes it for dead, and refuses what waits for the
    /// leader; its clients log in on another node within the reconnect grace, and their calls go on.
    ///
    /// A leader steps down first: what it decided now could neither be journaled nor reach the
    /// other nodes (the bus is the database), and PostgreSQL gives its lock to another node once
    /// the keepalives of its lock connection fail, while its own heartbeat, and so its look at the
    /// lock, waits until the cut ends: it would go on saying it leads beside the new leader. Its
    /// engine stops with it (the calls are the journal's), so its clients, closed next, end
    /// nothing: no grace runs out on a node that no longer leads.
    func watchDatabase() async {
        let now = clock.now()
        let (action, last) = state.withLockedValue { ($0.database.check(now: now), $0.database.lastHeartbeat) }
        guard action == .closeConnections else { return }
        if isLeader { await stepDown(reason: "lost its database") }
        let sinks = registry.allSinks()
        logger.error(
            "this node lost its database; closing its connections",
            metadata: ["since": "\(now - last) ms", "connections": "\(sinks.count)"])
        for sink in sinks { sink.close(SwitchboardError(.shuttingDown, "this node lost its database: reconnect, your calls go on")) }
        failAllPending(with: Self.cutOffRefusal)
    }

    /// One heartbeat: note that this node is alive, look for messages it was not woken for, and
    /// either keep leading (check the lock, the other nodes) or try to lead. One at a time.
    func tick() async {
        await ticks.run { await self.heartbeat() }
    }

    private func heartbeat() async {
        let now = clock.now()
        do {
            // This look also waits out a cut, so that the time below is the write's.
            if try await !store.isRegistered(id), state.withLockedValue({ $0.nodes.contains(id) }) {
                // The leader took this node for dead: its devices were dropped. Start clean.
                logger.warning("this node was taken for dead; closing its connections")
                for sink in registry.allSinks() { sink.close(SwitchboardError(.shuttingDown, "reconnect")) }
            }
            // The time of the write, not of the start: a heartbeat that waited out a cut must not
            // note the node alive as of before it (the leader would take it for dead again).
            let written = clock.now()
            // Joined: this node's row is new (it starts, or the leader took it for dead and removed
            // it), so no message for every node reached it before. It forgets every cached profile
            // now (a read under way is not cached) and reads the apps again below.
            let joined = try await store.heartbeat(id, startedAt: startedAt, now: written) == .joined
            if joined { profiles.forgetAll() }
            if state.withLockedValue({ $0.database.heartbeatSucceeded(at: written) }) == .serve {
                logger.notice("this node reaches its database again")
            }
            let nodes = try await store.nodes()
            let cutoff = now - configuration.nodeTimeout.milliseconds
            state.withLockedValue { $0.nodes = nodes.filter { $0.heartbeatAt >= cutoff }.map(\.node) }
            if isLeader {
                try await checkLock()
                for (node, at) in nodes where node != id && at < cutoff {
                    logger.warning("a node stopped answering: its devices count as dropped", metadata: ["node": "\(node)"])
                    await dropDevices(on: node, grace: lostNodeGrace)
                    try await store.remove(node: node)
                }
            } else {
                try await tryToLead()
                if !isLeader, let found = try await store.leader() {
                    learnLeader(found.node, term: found.term)
                }
            }
            // After the lead: a node that starts takes it first (the first to look leads).
            if joined { await reloadApps() }
        } catch {
            logger.warning("cluster heartbeat failed", metadata: ["error": "\(error)"])
            if isLeader, (try? await checkLock()) == nil { await stepDown(reason: "lock connection failed") }
        }
        bus.drainSoon()
        failStalePending(now: now)
    }

    /// Reads the apps afresh (another node changed them).
    private func reloadApps() async {
        if let loaded = try? await storage.loadApps() { apps.replace(loaded) }
        await onAppsChanged.function?()
    }

    /// The graceful end of this node: its devices were closed (by the lifecycle); tell the leader,
    /// let go of the lock, and leave the table.
    private func leave() async {
        let (led, connection) = state.withLockedValue { state in
            let led = state.leadership.leave()
            return (led, led ? state.takeLockConnection() : nil)
        }
        if led {
            await release(connection, reason: "shutting down")
            // The lock is free: the others need not wait for their next heartbeat to take it.
            broadcast(.leaderLeaving(node: id))
        } else if let leader = leader {
            bus.send(.nodeLeaving(node: id), to: leader)
        }
        try? await store.remove(node: id)
        // Give the bus a moment to send what the closing sessions left.
        await bus.drained(within: .seconds(1))
        await bus.stop()
    }

    // MARK: - leadership

    private func tryToLead() async throws {
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

    private func checkLock() async throws {
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
        // Who blocks anyone, before the first call: blocks answered later come as messages.
        engine.blockers.replace(with: try await storage.blockers())
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
        for node in live where node != id { bus.send(.leaderChanged(node: id, term: term), to: node) }
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
        return Set(try await store.nodes().filter { $0.heartbeatAt >= cutoff }.map(\.node))
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
    private func release(_ connection: PostgresConnection?, reason: String) async {
        logger.notice("this node no longer leads", metadata: ["reason": "\(reason)"])
        writer.fence = nil
        await engine.reset()
        directory.reset([])
        try? await connection?.close()
    }

    private func learnLeader(_ node: String, term: Int64) {
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
                }
                answered(token, .ok)
            } else {
                bus.send(follows.message(token: token, node: id), to: leader)
            }
        }
    }

    // MARK: - the router

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

    /// Sends a message the leader answers with ``BusMessage/reply(token:reply:)`` and waits for it.
    @discardableResult
    private func remote(
        follows: LeaderFollows? = nil, reply: (@Sendable (CallReply) -> Void)? = nil, to leader: String,
        _ message: @escaping (UInt64) -> BusMessage
    ) async -> CallReply? {
        await withCheckedContinuation { continuation in
            let waiter = Waiter(reply: reply, continuation: continuation)
            let now = clock.now()
            let token = state.withLockedValue { $0.pending.add(waiter, follows: follows, to: leader, now: now) }
            bus.send(message(token), to: leader)
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
            bus.send(.deviceOffline(user: user, device: device, node: id), to: leader)
        }
    }

    func logout(_ user: UserKey, _ device: DeviceID) async {
        await forget(user, device)
        if isLeader {
            await engine.handle(.logout(user, device))
            _ = directory.disconnected(user, device, on: id)
        } else if let leader {
            bus.send(.logout(user: user, device: device, node: id), to: leader)
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

    /// Tells every other node in the table when the message is written (profiles, apps), a node
    /// that joined since this one last looked included. One that joins later reads everything
    /// afresh as it joins (``heartbeat()``).
    func broadcast(_ message: BusMessage) {
        bus.sendToEveryOtherNode(message)
    }

    // MARK: - messages

    private func received(_ messages: [BusMessage]) async {
        for message in messages {
            switch message {
            case .command(let token, let from, let event):
                guard isLeader else {
                    bus.send(
                        .reply(token: token, reply: .failure(SwitchboardError(.storageUnavailable, "not the leader"))),
                        to: from)
                    continue
                }
                // The answer is queued for the bus inside the engine's critical section, before the
                // events the request causes: the requester's node gets them in that order.
                await engine.handle(event) { reply in self.bus.send(.reply(token: token, reply: reply), to: from) }
            case .deviceOnline(let token, let user, let device, let node):
                await learn(token, from: node) { await self.connected(user, device, on: node) }
            case .blocks(let token, let user, let node):
                await learn(token, from: node) { self.engine.blockers.insert(user) }
            case .deviceOffline(let user, let device, let node):
                if isLeader, directory.disconnected(user, device, on: node) {
                    logger.debug("device offline", metadata: ["user": "\(user)", "device": "\(device)", "node": "\(node)"])
                    await engine.handle(.deviceOffline(user, device))
                }
            case .logout(let user, let device, let node):
                if isLeader {
                    await engine.handle(.logout(user, device))
                    _ = directory.disconnected(user, device, on: node)
                }
            case .nodeLeaving(let node):
                if isLeader { await dropDevices(on: node) }
            case .leaderLeaving(let node):
                if state.withLockedValue({ $0.leadership.leaderLeft(node) }) { Task { await self.tick() } }
            case .reply(let token, let reply):
                answered(token, reply)
            case .deliver(let frame, let recipient):
                registry.send({ frame }, to: recipient)
            case .replaceDevice(let user, let device):
                registry.sink(user, device)?.close(SwitchboardError(.sessionReplaced))
            case .leaderChanged(let node, let term):
                learnLeader(node, term: term)
            case .profileChanged(let user):
                profiles.forget(user)
            case .appsChanged:
                await reloadApps()
            }
        }
    }

    /// What another node ``tell(_:_:)``s the leader: noted while this node leads, answered `ok`;
    /// otherwise refused. A node that is taking the lead right now (its term is in the table, where
    /// the sender read it, but its takeover runs in the heartbeat) answers once the takeover is
    /// over. Whether it leads is then asked once: a node that began to lead between two looks would
    /// answer yes for what it never noted (a device would miss every event of its calls).
    private func learn(_ token: UInt64, from node: String, _ note: () async -> Void) async {
        if !isLeader { await ticks.run {} }
        let leading = isLeader
        if leading { await note() }
        bus.send(
            .reply(token: token, reply: leading ? .ok : .failure(SwitchboardError(.storageUnavailable, "not the leader"))),
            to: node)
    }

    /// A device logged in on `node`: the leader notes it, closes its older connection on another
    /// node, and hands the login to the engine (pending invitations, resumed calls).
    private func connected(_ user: UserKey, _ device: DeviceID, on node: String) async {
        let previous = directory.connected(user, device, on: node)
        logger.debug(
            "device noted", metadata: ["user": "\(user)", "device": "\(device)", "node": "\(node)", "previous": "\(previous ?? "-")"])
        if let previous {
            if previous == id {
                registry.sink(user, device)?.close(SwitchboardError(.sessionReplaced))
            } else {
                bus.send(.replaceDevice(user: user, device: device), to: previous)
            }
        }
        await engine.handle(.deviceOnline(user, device))
    }

    /// A node died or left: each of its devices counts as dropped; with `grace`, the grace of a
    /// device whose client may not know yet (the node stopped answering).
    private func dropDevices(on node: String, grace: Int64? = nil) async {
        for (user, device) in directory.devices(on: node) where directory.disconnected(user, device, on: node) {
            logger.debug("device dropped with its node", metadata: ["user": "\(user)", "device": "\(device)", "node": "\(node)"])
            await engine.handle(grace.map { .deviceLost(user, device, grace: $0) } ?? .deviceOffline(user, device))
        }
    }

    private func answered(_ token: UInt64, _ reply: CallReply) {
        state.withLockedValue { $0.pending.answer(token) }?.resume(reply)
    }

    /// What a message the leader will not answer gets: its leader changed, or it waited too long.
    private static let leaderChangedRefusal = SwitchboardError(.storageUnavailable, "the cluster's leader changed; try again")

    private func refuse(_ waiters: [Waiter], with refusal: SwitchboardError) {
        for waiter in waiters { waiter.resume(.failure(refusal)) }
    }

    /// Refuses every message waiting for the leader (this node lost its database).
    private func failAllPending(with refusal: SwitchboardError) {
        refuse(state.withLockedValue { $0.pending.removeAll { _ in true } }, with: refusal)
    }

    private func failStalePending(now: Int64) {
        let timeout = configuration.commandTimeout.milliseconds
        refuse(state.withLockedValue { $0.pending.removeStale(now: now, timeout: timeout) }, with: Self.leaderChangedRefusal)
    }
}
