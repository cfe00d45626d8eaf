import Crypto
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOPosix
import ServiceLifecycle
import SwitchboardProtocol
public import UnixSignals

/// A built server node: run it, find its port, shut it down.
public final class SwitchboardNode: Sendable {
    /// The apps this node serves, with their secrets.
    public let apps: [AppCredentials]
    /// The app the server created for itself when none was configured (development mode).
    public let developmentApp: AppCredentials?
    /// The secret of the admin HTTP API.
    public let adminSecret: String
    /// The endpoints `ServerConfiguration.webhooks.startupEndpoints` made or kept, with their
    /// secrets (for the banner).
    public let startupWebhooks: [StartupWebhook]
    private let context: NodeContext
    private let housekeeper: WebhookHousekeeper
    private let application: any Service
    /// The event loops this node made for itself (``ServerConfiguration/eventLoopThreads``).
    private let ownEventLoops: MultiThreadedEventLoopGroup?
    /// The clients, connections and loops let go of when the run ends, however it ends.
    private let teardown: Teardown
    private let signalingShutdown: SignalingShutdown
    private let state = NIOLockedValueBox<RunState>(RunState())

    private struct RunState {
        var port: Int?
        /// The run ended (or failed) before the node listened: nobody waits for a port any more.
        var ended = false
        var portWaiters: [CheckedContinuation<Int?, Never>] = []
        var group: ServiceGroup?
        var shutdownRequested = false
    }

    init(
        apps: [AppCredentials], developmentApp: AppCredentials?, adminSecret: String, startupWebhooks: [StartupWebhook],
        context: NodeContext, housekeeper: WebhookHousekeeper, application: any Service,
        ownEventLoops: MultiThreadedEventLoopGroup?, teardown: Teardown
    ) {
        self.housekeeper = housekeeper
        self.ownEventLoops = ownEventLoops
        self.teardown = teardown
        self.startupWebhooks = startupWebhooks
        self.apps = apps
        self.developmentApp = developmentApp
        self.adminSecret = adminSecret
        self.context = context
        self.application = application
        self.signalingShutdown = SignalingShutdown(context)
    }

    /// Runs until SIGTERM/SIGINT (or ``shutdown()``), then shuts down gracefully: logins are
    /// refused, every call is journaled as it is (the next start restores it), records are
    /// flushed, and connections get `sessionEnded` (`shuttingDown`: come back) and close with 1012.
    ///
    /// A node that cannot listen (the port is in use, the address is not this machine's) throws
    /// a ``StartupError`` saying so and what to do, after letting go of everything it made.
    public func run(gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint]) async throws {
        // Shutdown runs in reverse order: the calls are journaled and the connections told to come
        // back first (`SignalingShutdown`), then the cluster hears of it and lets go of the leadership, then
        // the HTTP server stops.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: application)]
        if let cluster = context.cluster { services.append(.init(service: cluster)) }
        services += [
            .init(service: signalingShutdown),
            .init(service: AliveMarker(storage: context.storage, connections: context.connections, clock: context.clock)),
            .init(service: WebhookService(dispatcher: context.webhookDispatcher)),
            .init(service: WebhookHousekeepingService(housekeeper: housekeeper)),
        ]
        var configuration = ServiceGroupConfiguration(
            services: services, gracefulShutdownSignals: gracefulShutdownSignals, logger: context.logger)
        configuration.maximumGracefulShutdownDuration = .seconds(10)
        let group = ServiceGroup(configuration: configuration)
        let stopAtOnce = state.withLockedValue { state in
            state.group = group
            return state.shutdownRequested
        }
        if stopAtOnce { await group.triggerGracefulShutdown() }
        let lagProbe = EventLoopLagProbe(registry: context.metrics.registry)
        lagProbe.start(on: ownEventLoops ?? MultiThreadedEventLoopGroup.singleton)
        let failure: (any Error)?
        do {
            try await group.run()
            failure = nil
        } catch {
            failure = error
        }
        lagProbe.stop()
        ended()
        // Last, whichever way the run ended (every service above may still have used them): the
        // push and webhook clients, the SFU's sockets, the database, the node's own loops.
        await teardown.run()
        if let failure {
            throw StartupError(listening: failure, host: context.configuration.host, port: context.configuration.port)
                ?? failure
        }
    }

    /// Starts a graceful shutdown of a running node.
    public func shutdown() async {
        let group = state.withLockedValue { state in
            state.shutdownRequested = true
            return state.group
        }
        await group?.triggerGracefulShutdown()
    }

    /// This node's id in its cluster (its name and a suffix for this run); nil on a single node.
    /// The node's parts a test may look at (``NodeInspection``).
    var inspection: NodeInspection { NodeInspection(context) }

    public var clusterNodeId: String? { context.cluster?.id }

    /// Whether this node leads its cluster (always false on a single node, which has none).
    public var isClusterLeader: Bool { context.cluster?.isLeader ?? false }

    /// Runs one cluster heartbeat now (tests drive time; a node runs one every second by itself).
    public func clusterHeartbeat() async {
        await context.cluster?.tick()
    }

    /// Whether this cluster node takes itself for cut off from its database (false on a single node).
    public var isClusterCutOff: Bool { context.cluster?.isCutOff ?? false }

    /// Runs the cluster's database watchdog's look now (tests drive time; a node looks every
    /// heartbeat interval by itself, apart from the heartbeat, which may be waiting for the database).
    public func clusterWatchDatabase() async {
        await context.cluster?.watchDatabase()
    }

    /// Ends a call for everyone with `endByServer`, as `POST /v1/calls/{callId}/end` does.
    @discardableResult
    public func endCall(_ callId: CallID) async -> Result<Void, SwitchboardError> {
        await context.admin.endCall(callId)
    }

    /// The port the node listens on, once it does (0 when its run ended before it listened).
    public func listeningPort() async -> Int {
        await waitUntilListening() ?? 0
    }

    /// The port the node listens on, once it does; nil when its run ended (or failed, as when
    /// the port is in use) before it listened.
    public func waitUntilListening() async -> Int? {
        await withCheckedContinuation { continuation in
            let known = state.withLockedValue { state -> Int?? in
                if let port = state.port { return .some(port) }
                if state.ended { return .some(nil) }
                state.portWaiters.append(continuation)
                return nil
            }
            if let known { continuation.resume(returning: known) }
        }
    }

    func listening(on port: Int) {
        let waiters = state.withLockedValue { state in
            state.port = port
            defer { state.portWaiters = [] }
            return state.portWaiters
        }
        waiters.forEach { $0.resume(returning: port) }
    }

    /// The run is over: whoever still waits for a port gets none.
    private func ended() {
        let waiters = state.withLockedValue { state in
            state.ended = true
            defer { state.portWaiters = [] }
            return state.portWaiters
        }
        waiters.forEach { $0.resume(returning: nil) }
    }
}

/// Waits for graceful shutdown, then winds the signaling layer down before the HTTP server stops,
/// putting away in order the parts of the node it is handed: logins stop, the engine journals its
/// calls and the writer commits, the node notes when the calls stopped, every device is told to
/// come back and its connection closed, then the deadlines, push and the SFU stop.
struct SignalingShutdown: Service {
    let connections: NodeConnections
    let engine: CallEngine
    let writer: PersistenceWriter
    let storage: any SwitchboardStorage
    let registry: ConnectionRegistry
    let deadlines: ConnectionDeadlines
    let push: PushService
    let sfu: SFURooms?
    let clock: any SwitchboardClock
    let logger: Logger

    init(_ context: NodeContext) {
        connections = context.connections
        engine = context.engine
        writer = context.writer
        storage = context.storage
        registry = context.registry
        deadlines = context.deadlines
        push = context.push
        sfu = context.sfu
        clock = context.clock
        logger = context.logger
    }

    func run() async throws {
        do {
            try await gracefulShutdown()
        } catch {
            return
        }
        connections.beginShutdown()
        logger.info("graceful shutdown: journaling calls; clients are told to come back")
        await engine.suspend()
        await writer.drain()
        if Task.isCancelled, writer.backlog > 0 {
            // The shutdown's time ran out with the database unreachable: stop anyway.
            logger.critical(
                "graceful shutdown: writes not committed, the database did not answer in time",
                metadata: ["writes": "\(writer.backlog)"])
        }
        // The moment the calls stopped: the next start counts the reconnect grace from here (at
        // most 2 s for it: the clients are told to come back next).
        let now = clock.now()
        await waitBounded(.seconds(2), clock: clock) { try? await storage.markAlive(at: now) }
        let sinks = registry.allSinks()
        for sink in sinks {
            sink.close(SwitchboardError(.shuttingDown, "the server is restarting: reconnect, your calls go on"))
        }
        // The HTTP server's own shutdown closes what is left with 1000; let ours (1001) go first.
        await withTaskGroup(of: Void.self) { group in
            for sink in sinks { group.addTask { await sink.waitUntilClosed() } }
        }
        deadlines.stop()
        await push.shutdown()
        // Janus drops this run's handles with the socket; the calls' next run makes new ones.
        await sfu?.stop()
    }
}

/// Notes every few seconds that the server is alive, so that calls cut by a crash can be dated.
struct AliveMarker: Service {
    let storage: any SwitchboardStorage
    let connections: NodeConnections
    let clock: any SwitchboardClock
    static let interval: Duration = .seconds(5)

    func run() async throws {
        while !Task.isCancelled && !connections.isShuttingDown {
            let (storage, now) = (self.storage, clock.now())
            await waitBounded(clock: clock) { try? await storage.markAlive(at: now) }
            do {
                try await cancelWhenGracefulShutdown {
                    try await clock.sleep(for: Self.interval)
                }
            } catch {
                return
            }
        }
    }
}

/// Builds a server node from its configuration: opens and migrates the database, loads (or
/// creates) the apps, and wires the WebSocket endpoint, the admin API and the web client.
///
/// An error thrown on the way lets go of everything made before it (HTTP clients, the database,
/// event loops): nothing is left behind for the caller, who only has the error.
public func buildApplication(
    configuration: ServerConfiguration, clock: any SwitchboardClock = SystemClock(), logger: Logger
) async throws -> SwitchboardNode {
    let teardown = Teardown()
    do {
        return try await assembleNode(configuration: configuration, clock: clock, logger: logger, teardown: teardown)
    } catch {
        await teardown.run()
        throw error
    }
}

/// The body of ``buildApplication(configuration:clock:logger:)``: each part that must be let go of
/// by hand is added to `teardown` as soon as it is made.
private func assembleNode(
    configuration: ServerConfiguration, clock: any SwitchboardClock, logger: Logger, teardown: Teardown
) async throws -> SwitchboardNode {
    let webPolicy = try WebPolicy(configuration.web)
    let endpointPolicy = try WebPushEndpointPolicy(allowedHosts: configuration.webPush.allowedHosts)
    let serverPush = AppPushCredentials(
        apns: try configuration.apns?.key(), webPush: configuration.webPush.vapid, fcm: configuration.fcm.serviceAccount)
    for problem in [serverPush.webPush?.problem, serverPush.fcm?.problem].compactMap({ $0 }) { throw problem }
    let storage: any SwitchboardStorage
    switch configuration.database {
    case .sqlite(let path):
        storage = try SQLiteStorage.open(path)
    case .postgres(let url):
        guard let location = PostgresStorage.Location(url: url) else {
            throw SwitchboardError(
                .invalidParams, "the database URL must be postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE")
        }
        storage = try await PostgresStorage(location, logger: logger)
    }
    // Last of all: everything else may still write to it. At most 5 s (the node's clock): a
    // PostgreSQL that does not answer keeps its connections' queries waiting, and the client's
    // shutdown waits for them.
    teardown.add { await waitBounded(.seconds(5), clock: clock) { await storage.shutdown() } }
    try await storage.setWebhookMaxBacklog(configuration.webhooks.maxBacklog)

    let now = clock.now()
    var served: [AppRecord] = []
    var developmentApp: AppCredentials?
    // An app the database has keeps its settings, but for the operator's flags; a new one starts
    // from the configured settings.
    let storedApps = try await storage.loadApps()
    func settings(of existing: AppRecord?) -> AppSettings {
        configuration.appSettingOverrides.applied(to: existing?.settings ?? configuration.appSettings)
    }
    if configuration.apps.isEmpty {
        let existing = storedApps.first(where: \.isDevelopment)
        var app =
            existing
            ?? AppRecord(
                sdkAppID: SdkAppID(1_400_000_000 + Int64.random(in: 1...999_999)), secretKey: randomHex(bytes: 32),
                settings: configuration.appSettings, isDevelopment: true, createdAt: now)
        app.settings = settings(of: existing)
        try await storage.saveApp(app)
        served = [app]
        developmentApp = AppCredentials(sdkAppID: app.sdkAppID, secretKey: app.secretKey)
    } else {
        for credentials in configuration.apps {
            let existing = storedApps.first { $0.sdkAppID == credentials.sdkAppID }
            let app = AppRecord(
                sdkAppID: credentials.sdkAppID, secretKey: credentials.secretKey, settings: settings(of: existing),
                isDevelopment: false, createdAt: existing?.createdAt ?? now)
            try await storage.saveApp(app)
            served.append(app)
        }
    }

    // Every app has a VAPID key pair from its first start on: a browser subscribes with its public
    // key. Added only where none is stored, so nodes of a cluster starting together agree on one.
    for app in served where app.push.webPush == nil {
        try await storage.addPushCredentials(
            app: app.sdkAppID, AppPushCredentials(webPush: .generate()), now: now)
    }
    let stored = Dictionary(try await storage.loadApps().map { ($0.sdkAppID, $0.push) }, uniquingKeysWith: { _, new in new })
    for index in served.indices { served[index].push = stored[served[index].sdkAppID] ?? AppPushCredentials() }

    let registry = ConnectionRegistry()
    let metrics = ServerMetrics()
    let apps = AppDirectory(served)
    let credentials = PushCredentials(apps: apps, server: serverPush)
    let transports: [any PushTransport] = [
        APNsTransport(
            configuration: configuration.apns ?? APNsConfiguration(), credentials: credentials, clock: clock, logger: logger),
        WebPushTransport(
            configuration: configuration.webPush, policy: endpointPolicy, credentials: credentials, clock: clock,
            logger: logger),
        FCMTransport(configuration: configuration.fcm, credentials: credentials, clock: clock, logger: logger),
    ]
    teardown.add { for transport in transports { await transport.shutdown() } }
    let profiles = ProfileDirectory(store: storage)

    // On PostgreSQL the node is one of a cluster: the engine's events go wherever their devices
    // are connected, through the leader's directory of the cluster's devices.
    let postgres = storage as? PostgresStorage
    if let name = configuration.nodeId, !ServerConfiguration.isValidNodeName(name) {
        throw SwitchboardError(.invalidParams, "a node name is 1-40 letters, digits and -")
    }
    let nodeId = ServerConfiguration.nodeName(configuration.nodeId) + "-" + randomHex(bytes: 3)
    // The links from the other nodes are listened for from here on (the port is in the node's row
    // from its first heartbeat); their messages are handled once the node runs.
    var links: (links: NodeLinks, address: String)?
    if let postgres {
        let store = ClusterStore(client: postgres.client, logger: logger)
        let made = NodeLinks(
            node: nodeId, secret: try await store.linkSecret(), logger: logger, resolve: { try await store.address(of: $0) },
            undelivered: { metrics.clusterMessagesUndelivered($0, reason: $1) })
        let port: Int
        do {
            port = try await made.listen(host: configuration.host, port: configuration.nodeLinks.port)
        } catch {
            throw SwitchboardError(
                .invalidParams, "cannot listen for the other nodes' links on \(configuration.host):\(configuration.nodeLinks.port): \(error)")
        }
        teardown.add { await made.stop() }
        links = (made, configuration.nodeLinks.advertised(host: configuration.host, port: port))
        logger.info("listening for the other nodes' links", metadata: ["address": "\(links?.address ?? "")"])
    }
    let directory = links.map { ClusterDirectory(node: nodeId, local: registry, links: $0.links) }
    let delivery: any CallDelivery = directory ?? registry
    let push = PushService(
        store: storage, presence: delivery, transports: transports, clock: clock, metrics: metrics, logger: logger)
    let writer = PersistenceWriter(
        store: storage, clock: clock, commitInterval: configuration.commitInterval, logger: logger
    ) { stored in
        for item in stored {
            delivery.send({ CallEngine.frame(.callRecord(CallRecordEvent(record: item.record))) }, to: .user(item.owner))
        }
    }
    // Webhooks: the endpoints as the database has them, the dispatcher that sends on this node.
    let webhooks = WebhookDirectory()
    webhooks.replace(with: try await storage.webhookEndpoints(app: nil))
    let webhookPolicy = WebhookAddressPolicy(allowed: configuration.webhooks.allowedNetworks)
    let webhookMetrics = WebhookMetrics(registry: metrics.registry)
    let webhookSender = WebhookTransport(policy: webhookPolicy, clock: clock)
    teardown.add { await webhookSender.shutdown() }
    let dispatcher = WebhookDispatcher(
        store: storage, directory: webhooks, sender: webhookSender,
        configuration: configuration.webhooks, node: nodeId, clock: clock, metrics: webhookMetrics, logger: logger)
    writer.onEventsCommitted.function = { dispatcher.wake() }
    if postgres == nil {
        // A single node: claims left by the run before are nobody's now.
        try await storage.releaseWebhookClaims()
    }
    let startupWebhooks = try await makeStartupWebhooks(
        configuration.webhooks, apps: served.map(\.sdkAppID), storage: storage, policy: webhookPolicy, now: now)
    if !startupWebhooks.isEmpty { webhooks.replace(with: try await storage.webhookEndpoints(app: nil)) }
    let limiter = RateLimiter(disabled: configuration.rateLimits.disabled)
    var rules = CallStateMachine.Configuration(reconnectGrace: configuration.reconnectGrace.milliseconds)
    rules.relayBytes = configuration.rateLimits.disabled ? nil : configuration.rateLimits.relayBytesPerMember
    let decline = configuration.blockedCallerDecline
    rules.declineDelays = decline.lowerBound.milliseconds...decline.upperBound.milliseconds
    var sfu: SFURooms?
    var recorder: RecordingWorker?
    if let settings = configuration.sfu {
        if let problem = settings.problem { throw SwitchboardError(.invalidParams, problem) }
        if let directory = settings.recordings {
            let tools: RecordingTools
            switch RecordingTools.find() {
            case .success(let found): tools = found
            case .failure(let missing): throw SwitchboardError(.invalidParams, missing.description)
            }
            let files = RecordingFiles(root: directory)
            do {
                try FileManager.default.createDirectory(atPath: files.root, withIntermediateDirectories: true)
            } catch {
                throw SwitchboardError(.invalidParams, "the recordings directory \(files.root) cannot be made: \(error)")
            }
            guard FileManager.default.isWritableFile(atPath: files.root) else {
                throw SwitchboardError(.invalidParams, "the recordings directory \(files.root) is not writable")
            }
            recorder = RecordingWorker(
                store: storage, files: files, tools: tools,
                retention: { apps.all.map { ($0.sdkAppID, $0.settings.recording.retentionDays) } }, clock: clock,
                logger: logger)
            rules.recording = true
        }
        sfu = SFURooms(
            urls: settings.urls, secret: settings.secret, delivery: delivery, recordings: recorder?.files, clock: clock,
            logger: logger)
        rules.sfu = true
    }
    let engine = CallEngine(
        configuration: rules,
        delivery: delivery, storage: storage, limiter: limiter, limits: configuration.rateLimits, writer: writer,
        push: push, webhooks: webhooks, metrics: metrics, sfu: sfu, clock: clock, logger: logger)
    if let sfu {
        sfu.onLost.function = { [weak engine] callId, user in
            await engine?.handle(.sfuRestart(callId, user))
        }
        teardown.add { await sfu.stop() }
        await sfu.start()
    }
    if let recorder {
        writer.onRecordingsCommitted.function = { recorder.wake() }
        engine.recordingBacklogged.function = { recorder.isBacklogged }
        recorder.onEventsWritten.function = { dispatcher.wake() }
        recorder.start()
        teardown.add { recorder.stop() }
    }
    var cluster: ClusterNode?
    if let postgres, let links, let directory {
        cluster = ClusterNode(
            id: nodeId, configuration: configuration.cluster, store: ClusterStore(client: postgres.client, logger: logger),
            links: links.links, address: links.address, directory: directory, location: postgres.location, engine: engine, registry: registry,
            writer: writer, storage: storage, apps: apps, profiles: profiles,
            grace: configuration.reconnectGrace.milliseconds,
            clientHeartbeat: .seconds(configuration.heartbeatInterval), clock: clock, logger: logger)
        cluster?.onAppsChanged.function = {
            if let endpoints = try? await storage.webhookEndpoints(app: nil) { webhooks.replace(with: endpoints) }
            dispatcher.wake()
        }
    }
    let context = NodeContext(
        configuration: configuration, storage: storage, apps: apps, profiles: profiles, registry: registry,
        engine: engine, cluster: cluster, limiter: limiter, writer: writer, metrics: metrics, push: push,
        pushCredentials: credentials, webPushEndpoints: endpointPolicy,
        webhooks: webhooks, webhookDispatcher: dispatcher, webhookPolicy: webhookPolicy, sfu: sfu, recorder: recorder,
        clock: clock, logger: logger)
    let clusterNode = cluster
    let webhookHousekeeper = WebhookHousekeeper(
        store: storage, apps: apps, directory: webhooks, configuration: configuration.webhooks, metrics: webhookMetrics,
        clock: clock, logger: logger, sweeps: { clusterNode?.isLeader ?? true })
    let adminSecret = configuration.adminSecret ?? randomHex(bytes: 24)

    // Calls the last run left in the journal (a deploy, a crash) are restored before anyone
    // connects, or ended with records when the node was down longer than the reconnect grace. (In
    // a cluster the node that comes to lead does it, and reads who blocks anyone and which devices
    // may ring by push then.)
    if cluster == nil {
        engine.blockers.replace(with: try await storage.blockers())
        engine.pushReach.replace(with: try await storage.ringingPushDevices())
        let journal = try await storage.loadJournal()
        if !journal.isEmpty {
            await engine.recover(
                journal, lastAlive: try await storage.lastAlive(), grace: configuration.reconnectGrace.milliseconds)
            await writer.drain()
        }
    }

    let router = Router(context: SwitchboardRequestContext.self)
    // First, so that it wraps everything after it: the files and every route.
    router.add(middleware: SecurityHeadersMiddleware(policy: webPolicy))
    if let folder = configuration.webRoot {
        guard let webRoot = WebRoot(folder: folder, logger: logger) else {
            throw SwitchboardError(.invalidParams, "the web root \(folder) is not a directory")
        }
        router.add(middleware: FileMiddleware(fileProvider: webRoot, searchForIndexHtml: true))
    }
    AdminAPI.register(on: router, services: context.admin, adminSecret: adminSecret, web: webPolicy)

    let portBox = NIOLockedValueBox<SwitchboardNode?>(nil)
    let ownEventLoops = configuration.eventLoopThreads.map { MultiThreadedEventLoopGroup(numberOfThreads: max(1, $0)) }
    if let ownEventLoops { teardown.add { try? await ownEventLoops.shutdownGracefully() } }
    let application = Application(
        router: router,
        server: HTTPServerBuilder { responder in SignalingChannel(responder: responder, services: context.channel) },
        configuration: ApplicationConfiguration(
            address: .hostname(configuration.host, port: configuration.port), serverName: "switchboard",
            backlog: configuration.backlog),
        onServerRunning: { channel in
            if let port = channel.localAddress?.port {
                portBox.withLockedValue { $0 }?.listening(on: port)
            }
        },
        eventLoopGroupProvider: ownEventLoops.map { .shared($0) } ?? .singleton,
        logger: logger)
    let node = SwitchboardNode(
        apps: served.map { AppCredentials(sdkAppID: $0.sdkAppID, secretKey: $0.secretKey) },
        developmentApp: developmentApp, adminSecret: adminSecret, startupWebhooks: startupWebhooks, context: context,
        housekeeper: webhookHousekeeper, application: application, ownEventLoops: ownEventLoops, teardown: teardown)
    portBox.withLockedValue { $0 = node }
    return node
}

/// An endpoint the server made (or kept) at start for an app it serves (`serve --webhook`).
public struct StartupWebhook: Sendable, Equatable {
    public var sdkAppID: SdkAppID
    public var endpointId: String
    public var url: String
    public var secret: String
}

/// Makes the endpoints of `serve --webhook` for every served app (all events), or keeps those
/// already there with that URL (their secret set to the configured one, if any).
func makeStartupWebhooks(
    _ configuration: WebhookConfiguration, apps: [SdkAppID], storage: any SwitchboardStorage,
    policy: WebhookAddressPolicy, now: Int64
) async throws -> [StartupWebhook] {
    guard !configuration.startupEndpoints.isEmpty else { return [] }
    if let secret = configuration.startupSecret, WebhookSignature.key(secret) == nil {
        throw SwitchboardError(.invalidParams, "a webhook secret is whsec_ and the base64 of 24-64 bytes")
    }
    var made: [StartupWebhook] = []
    for url in configuration.startupEndpoints {
        if case .failure(let error) = await policy.check(url) {
            throw SwitchboardError(error.code, "--webhook \(url): \(error.message)")
        }
        for app in apps {
            var endpoint =
                try await storage.webhookEndpoints(app: app).first { $0.url == url }
                ?? WebhookEndpoint(
                    id: startupEndpointId(app: app, url: url), app: app, url: url, events: nil,
                    description: "serve --webhook",
                    secret: configuration.startupSecret ?? WebhookSignature.newSecret(), paused: false, gaps: [],
                    createdAt: now, updatedAt: now)
            if let secret = configuration.startupSecret, secret != endpoint.secret {
                endpoint.secret = secret
                endpoint.previousSecret = nil
                endpoint.previousSecretUntil = nil
                endpoint.updatedAt = now
            }
            try await storage.saveWebhookEndpoint(endpoint)
            made.append(StartupWebhook(sdkAppID: app, endpointId: endpoint.id, url: url, secret: endpoint.secret))
        }
    }
    return made
}

/// The id of a `serve --webhook` endpoint: made from the app and the URL, so nodes of a cluster
/// that start at once make one endpoint, not one each.
func startupEndpointId(app: SdkAppID, url: String) -> String {
    let digest = SHA256.hash(data: Data("\(app.rawValue) \(url)".utf8))
    return "ep_" + digest.prefix(8).map { String(format: "%02x", $0) }.joined()
}

/// Cryptographically random bytes as lowercase hex.
func randomHex(bytes: Int) -> String {
    var generator = SystemRandomNumberGenerator()
    return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
}
