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
/// nodes send their call requests and device changes to the leader over the direct links between
/// nodes (``NodeLinks``); the leader answers there and sends events to the nodes that hold their
/// recipients.
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
///
/// This file is the service (the heartbeat, the database watchdog, leaving); the node's other
/// ideas have a file each: leadership (`ClusterNode+Leadership.swift`), the router of a session's
/// requests to the leader (`ClusterNode+Router.swift`) and the dispatcher
/// (`ClusterNode+Messages.swift`). The rules they follow are values of their own: ``Leadership``,
/// ``LeaderRequests``, ``DatabaseWatch``.
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
    let store: ClusterStore
    /// Internal for tests (a leader that stops taking its messages).
    let links: NodeLinks
    /// Where the other nodes reach this node's links (they listen from the start: ``NodeLinks/listen(host:port:)``).
    let address: String
    let directory: ClusterDirectory
    let location: PostgresStorage.Location
    let engine: CallEngine
    let registry: ConnectionRegistry
    let writer: PersistenceWriter
    let storage: any SwitchboardStorage
    let apps: AppDirectory
    let profiles: ProfileDirectory
    let grace: Int64
    /// The reconnect grace of a device whose node the leader took for dead (``lostNodeGrace``).
    let lostNodeGrace: Int64
    let clock: any SwitchboardClock
    let logger: Logger
    let startedAt: Int64

    /// Who waits for the leader's answer to a message: the session's reply, if any, and the task.
    struct Waiter: Sendable {
        var reply: (@Sendable (CallReply) -> Void)?
        var continuation: CheckedContinuation<CallReply?, Never>

        func resume(_ answer: CallReply) {
            reply?(answer)
            continuation.resume(returning: answer)
        }
    }

    struct State {
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

    let state: NIOLockedValueBox<State>
    let ticks = AsyncGate()

    init(
        id: String, configuration: Configuration = Configuration(), store: ClusterStore, links: NodeLinks,
        address: String, directory: ClusterDirectory, location: PostgresStorage.Location, engine: CallEngine,
        registry: ConnectionRegistry, writer: PersistenceWriter, storage: any SwitchboardStorage, apps: AppDirectory,
        profiles: ProfileDirectory, grace: Int64, clientHeartbeat: Duration = .seconds(10), clock: any SwitchboardClock,
        logger: Logger
    ) {
        self.id = id
        self.configuration = configuration
        self.store = store
        self.links = links
        self.address = address
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
        links.handle { [weak self] messages in await self?.received(messages) }
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
    /// A leader steps down first: what it decided now could not be journaled, and PostgreSQL
    /// gives its lock to another node once the keepalives of its lock connection fail, while its own heartbeat, and so its look at the
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

    /// One heartbeat: note that this node is alive, learn where the others are, and either keep
    /// leading (check the lock, the other nodes) or try to lead. One at a time.
    func tick() async {
        await ticks.run { await self.heartbeat() }
    }

    func heartbeat() async {
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
            let joined = try await store.heartbeat(id, address: address, startedAt: startedAt, now: written) == .joined
            if joined { profiles.forgetAll() }
            if state.withLockedValue({ $0.database.heartbeatSucceeded(at: written) }) == .serve {
                logger.notice("this node reaches its database again")
            }
            let nodes = try await readNodes(now: now)
            let cutoff = now - configuration.nodeTimeout.milliseconds
            if isLeader {
                try await checkLock()
                for (node, at) in nodes.map({ ($0.node, $0.heartbeatAt) }) where node != id && at < cutoff {
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
        failStalePending(now: now)
    }

    /// Reads the node table: the live nodes are noted, and the links learn where the nodes in it
    /// listen. The links to nodes no longer in it close (they left, or the leader took them for
    /// dead and removed them); a node that is late with its heartbeat keeps its link until then.
    @discardableResult
    func readNodes(now: Int64? = nil) async throws -> [ClusterStore.Node] {
        let readFrom = links.readBegins()
        let nodes = try await store.nodes()
        let cutoff = (now ?? clock.now()) - configuration.nodeTimeout.milliseconds
        state.withLockedValue { $0.nodes = nodes.filter { $0.heartbeatAt >= cutoff }.map(\.node) }
        links.update(
            peers: Dictionary(nodes.filter { $0.node != id }.map { ($0.node, $0.address) }, uniquingKeysWith: { _, new in new }),
            readFrom: readFrom)
        return nodes
    }

    /// Reads the apps afresh (another node changed them).
    func reloadApps() async {
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
            links.send(.leaderLeaving(node: id), toEveryOtherOf: state.withLockedValue { $0.nodes })
        } else if let leader = leader {
            links.send(.nodeLeaving(node: id), to: leader)
        }
        try? await store.remove(node: id)
        // Give the links a moment to deliver what the closing sessions left.
        await links.drained(within: .seconds(1))
        await links.stop()
    }
}
