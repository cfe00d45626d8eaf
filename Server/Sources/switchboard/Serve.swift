import ArgumentParser
import Foundation
import Logging
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardWebClient

/// `switchboard serve`: every option also reads an environment variable, the flag winning.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the signaling server.",
        discussion: """
            With no options it listens on 127.0.0.1:8080, keeps its data in ./switchboard.sqlite and serves a \
            development app that it creates on first start and prints.
            """)

    @Option(help: "Address to listen on [SWITCHBOARD_HOST, default 127.0.0.1].")
    var host: String?

    @Option(help: "Port to listen on, 0 for any [SWITCHBOARD_PORT, default 8080].")
    var port: Int?

    @Option(
        help: "An SQLite file, or postgresql://USER[:PASSWORD]@HOST[:PORT]/DB for PostgreSQL (a cluster's nodes share one) [SWITCHBOARD_DATABASE, default switchboard.sqlite]."
    )
    var database: String?

    @Option(
        name: .customLong("app"),
        help: "An app to serve as SDKAPPID:SECRET; repeat for several [SWITCHBOARD_APPS, comma-separated]. None: development app."
    )
    var apps: [String] = []

    @Option(help: "reject or callWaiting, for every app [SWITCHBOARD_BUSY_POLICY, default reject].")
    var busyPolicy: String?

    @Option(help: "Largest call, the caller included [SWITCHBOARD_MAX_PARTICIPANTS, default 16].")
    var maxParticipants: Int?

    @Option(help: "How a blocked caller sees the callee: reject or offline [SWITCHBOARD_BLOCKED_CALLER_SEES, default reject].")
    var blockedCallerSees: String?

    @Option(
        help: """
            An abuse limit as NAME=N/s|min|h[:BURST]; repeat for several [SWITCHBOARD_RATE_LIMITS, comma-separated].             Names: \(RateLimits.names.joined(separator: ", ")).
            """)
    var rateLimit: [String] = []

    @Flag(help: "Turn every abuse limit off (benchmarks only) [SWITCHBOARD_NO_RATE_LIMITS=1].")
    var noRateLimits = false

    @Option(help: "The APNs auth key (.p8) for VoIP pushes [SWITCHBOARD_APNS_KEY_FILE]; needs --apns-key-id and --apns-team-id.")
    var apnsKeyFile: String?

    @Option(help: "The APNs key id [SWITCHBOARD_APNS_KEY_ID].")
    var apnsKeyId: String?

    @Option(help: "The Apple team id [SWITCHBOARD_APNS_TEAM_ID].")
    var apnsTeamId: String?

    @Option(help: "APNs base URL for production tokens [SWITCHBOARD_APNS_PRODUCTION_URL, default https://api.push.apple.com].")
    var apnsProductionUrl: String?

    @Option(help: "APNs base URL for sandbox tokens [SWITCHBOARD_APNS_SANDBOX_URL, default https://api.sandbox.push.apple.com].")
    var apnsSandboxUrl: String?

    @Option(help: "A PEM file of extra CAs to trust for APNs [SWITCHBOARD_APNS_CA_FILE].")
    var apnsCaFile: String?

    @Option(help: "Minutes a provider token is reused, 20-59 [SWITCHBOARD_APNS_TOKEN_LIFETIME, default 25].")
    var apnsTokenLifetime: Int?

    @Option(
        help: "The server's VAPID private key for Web Push (a file: PEM, or 32 bytes base64url), for apps without their own [SWITCHBOARD_VAPID_KEY_FILE, default: each app's generated key pair].")
    var vapidKeyFile: String?

    @Option(help: "Contact for push services with --vapid-key-file: mailto: or https: [SWITCHBOARD_VAPID_SUBJECT].")
    var vapidSubject: String?

    @Option(
        help: "Hosts of Web Push endpoints to send to although they are loopback, private or local, or on a port other than 443; repeatable or comma-separated [SWITCHBOARD_WEB_PUSH_ALLOWED_HOSTS, default: none].")
    var webPushAllowedHosts: [String] = []

    @Option(
        help: "A Firebase service account's JSON key file for FCM, for apps without their own [SWITCHBOARD_FCM_SERVICE_ACCOUNT].")
    var fcmServiceAccount: String?

    @Option(help: "FCM HTTP v1 base URL [SWITCHBOARD_FCM_URL, default https://fcm.googleapis.com].")
    var fcmUrl: String?

    @Option(help: "A PEM file of extra CAs to trust for Web Push services, FCM and its token endpoint [SWITCHBOARD_PUSH_CA_FILE].")
    var pushCaFile: String?

    @Option(help: "Secret of the admin HTTP API [SWITCHBOARD_ADMIN_SECRET, default: generated and printed].")
    var adminSecret: String?

    @Option(help: "Seconds a dropped device may take to come back to its call [SWITCHBOARD_RECONNECT_GRACE, default 15].")
    var reconnectGrace: Int?

    @Option(
        help: "Seconds between heartbeats: clients ping at this pace, and the server pings them and takes one silent for a whole interval as dropped [SWITCHBOARD_HEARTBEAT_INTERVAL, default 10].")
    var heartbeatInterval: Int?

    @Option(
        help: "Least milliseconds between two commits of records and the journal, 0-1000; under load one commit covers the interval's calls [SWITCHBOARD_COMMIT_INTERVAL, default 5].")
    var commitInterval: Int?

    @Option(help: "A STUN URL for clients, e.g. stun:stun.example.com:3478; repeatable [SWITCHBOARD_STUN_URLS, comma-separated].")
    var stunUrl: [String] = []

    @Option(help: "A TURN URL for clients, e.g. turn:turn.example.com:3478?transport=udp; repeatable [SWITCHBOARD_TURN_URLS, comma-separated].")
    var turnUrl: [String] = []

    @Option(help: "coturn's static-auth-secret: TURN credentials are issued with it [SWITCHBOARD_TURN_SECRET].")
    var turnSecret: String?

    @Option(help: "Hours issued TURN credentials stay valid [SWITCHBOARD_TURN_CREDENTIAL_HOURS, default 24].")
    var turnCredentialHours: Int?

    @Option(
        help: "Janus servers for group calls' media, ws://HOST:PORT of each one's WebSocket API, comma-separated or repeated [SWITCHBOARD_SFU, default: none: group calls are a mesh].")
    var sfu: [String] = []

    @Option(help: "The Janus servers' api_secret, also their VideoRoom admin_key [SWITCHBOARD_SFU_SECRET].")
    var sfuSecret: String?

    @Option(
        help: "Record calls (needs --sfu): the directory Janus writes recordings to (its rec_dir) and the server converts them in, the same path for both [SWITCHBOARD_RECORDINGS_DIR, default: none: calls are not recorded].")
    var recordingsDir: String?

    @Option(
        help: "Directory of the browser client served at / [SWITCHBOARD_WEB_ROOT, default: the files shipped with this binary].")
    var webRoot: String?

    @Option(
        help: "WebSocket origins besides this server's that the browser client may connect to (and send UserSigs to) when a link says ?server=, e.g. wss://node2.example.com; repeatable or comma-separated [SWITCHBOARD_WEB_ALLOWED_SERVERS, default: none].")
    var webAllowedServers: [String] = []

    @Option(
        help: "Who may show the browser client in a frame: 'self' or origins such as https://app.example.com; repeatable or comma-separated [SWITCHBOARD_WEB_FRAME_ANCESTORS, default: nobody].")
    var webFrameAncestors: [String] = []

    @Option(
        help: "Origins besides this server's that members' avatar images may come from in the browser client, e.g. https://cdn.example.com; repeatable or comma-separated [SWITCHBOARD_WEB_IMAGE_ORIGINS, default: none: other avatars show as initials].")
    var webImageOrigins: [String] = []

    @Option(
        help: "Hosts besides localhost, 127.0.0.0/8 and [::1] whose requests get development UserSigs (a guard against DNS rebinding); repeatable or comma-separated [SWITCHBOARD_DEV_ALLOWED_HOSTS, default: none].")
    var devAllowedHosts: [String] = []

    @Option(
        help: "Connections at once [SWITCHBOARD_MAX_CONNECTIONS, default: the open-file limit minus 256 kept for the server's own files].")
    var maxConnections: Int?

    @Option(
        help: "Connections not logged in yet from one IP address; raise it behind a reverse proxy [SWITCHBOARD_MAX_PENDING_PER_IP, default 128].")
    var maxPendingPerIp: Int?

    @Option(help: "Connections not logged in yet, from all addresses [SWITCHBOARD_MAX_PENDING, default: a quarter of the connections].")
    var maxPending: Int?

    @Option(help: "Connected devices per user [SWITCHBOARD_MAX_DEVICES_PER_USER, default 16].")
    var maxDevicesPerUser: Int?

    @Option(help: "This node's name in a cluster (PostgreSQL), in logs and /health: letters, digits, - [SWITCHBOARD_NODE_ID, default: the host name].")
    var nodeId: String?

    @Option(
        help: "The port this node listens on for the links of the other nodes of its cluster (PostgreSQL), on --host [SWITCHBOARD_NODE_PORT, default: any free port].")
    var nodePort: Int?

    @Option(
        help: "What the other nodes of the cluster connect to for this node's links: HOST or HOST:PORT [SWITCHBOARD_NODE_ADDRESS, default: --host, or the host name when --host is every address].")
    var nodeAddress: String?

    @Option(help: "Event-loop threads serving connections [SWITCHBOARD_THREADS, default: one per core].")
    var threads: Int?

    @Option(help: "trace, debug, info, notice, warning, error or critical [SWITCHBOARD_LOG_LEVEL, default info].")
    var logLevel: String?

    @Option(
        help: "A webhook endpoint URL every served app (the development app above all) posts all its events to; repeatable [SWITCHBOARD_WEBHOOKS, comma-separated].")
    var webhook: [String] = []

    @Option(help: "The signing secret of the --webhook endpoints, whsec_ and base64 [SWITCHBOARD_WEBHOOK_SECRET, default: a new one, printed].")
    var webhookSecret: String?

    @Option(
        help: "A network webhooks may go to although it is loopback, private or link-local, e.g. 127.0.0.0/8 or 10.1.0.0/16; repeatable [SWITCHBOARD_WEBHOOK_ALLOW, comma-separated; default: public addresses only].")
    var webhookAllow: [String] = []

    @Option(help: "Milliseconds a webhook receiver has to answer [SWITCHBOARD_WEBHOOK_TIMEOUT_MS, default 15000].")
    var webhookTimeoutMs: Int?

    @Option(help: "Milliseconds before the first webhook retry; each next waits twice as long [SWITCHBOARD_WEBHOOK_RETRY_INITIAL_MS, default 5000].")
    var webhookRetryInitialMs: Int?

    @Option(help: "Longest wait between two webhook retries, ms [SWITCHBOARD_WEBHOOK_RETRY_MAX_MS, default 3600000].")
    var webhookRetryMaxMs: Int?

    @Option(help: "Seconds after its first attempt a webhook delivery is given up [SWITCHBOARD_WEBHOOK_GIVE_UP_AFTER, default 86400].")
    var webhookGiveUpAfter: Int?

    @Option(help: "Deliveries waiting for one endpoint beyond which new events are not queued for it [SWITCHBOARD_WEBHOOK_MAX_BACKLOG, default 100000].")
    var webhookMaxBacklog: Int?

    @Option(help: "Hours webhook events are kept for replays [SWITCHBOARD_WEBHOOK_EVENT_RETENTION_HOURS, default 168].")
    var webhookEventRetentionHours: Int?

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        func setting(_ flag: String?, _ name: String) -> String? { flag ?? environment[name] }

        var configuration = ServerConfiguration()
        configuration.host = setting(host, "SWITCHBOARD_HOST") ?? configuration.host
        if let value = setting(port.map(String.init), "SWITCHBOARD_PORT") {
            guard let port = Int(value), (0...65535).contains(port) else { throw ValidationError("port must be 0-65535") }
            configuration.port = port
        }
        configuration.database = DatabaseLocation(parsing: setting(database, "SWITCHBOARD_DATABASE") ?? "switchboard.sqlite")
        let appTexts = apps.isEmpty ? (environment["SWITCHBOARD_APPS"]?.split(separator: ",").map(String.init) ?? []) : apps
        configuration.apps = try appTexts.map { text in
            guard let app = AppCredentials(parsing: text) else {
                throw ValidationError("--app takes SDKAPPID:SECRET, got '\(text)'")
            }
            return app
        }
        if let value = setting(busyPolicy, "SWITCHBOARD_BUSY_POLICY") {
            guard let policy = BusyPolicy(rawValue: value) else {
                throw ValidationError("busy policy must be reject or callWaiting")
            }
            configuration.appSettingOverrides.busyPolicy = policy
        }
        if let value = setting(maxParticipants.map(String.init), "SWITCHBOARD_MAX_PARTICIPANTS") {
            guard let count = Int(value), count >= 2 else { throw ValidationError("max participants must be at least 2") }
            configuration.appSettingOverrides.maxParticipants = count
        }
        if let value = setting(blockedCallerSees, "SWITCHBOARD_BLOCKED_CALLER_SEES") {
            guard let sees = BlockedCallerSees(rawValue: value) else {
                throw ValidationError("blocked caller sees must be reject or offline")
            }
            configuration.appSettingOverrides.blockedCallerSees = sees
        }
        let limitTexts =
            rateLimit.isEmpty
            ? (environment["SWITCHBOARD_RATE_LIMITS"]?.split(separator: ",").map(String.init) ?? []) : rateLimit
        for text in limitTexts {
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let limit = RateLimit(parsing: parts[1]),
                configuration.rateLimits.set(parts[0], limit)
            else {
                throw ValidationError("--rate-limit takes NAME=N/s|min|h[:BURST], got '\(text)'")
            }
        }
        if let value = setting(threads.map(String.init), "SWITCHBOARD_THREADS") {
            guard let count = Int(value), (1...256).contains(count) else { throw ValidationError("threads must be 1-256") }
            configuration.eventLoopThreads = count
        }
        func positive(_ flag: Int?, _ name: String) throws -> Int? {
            guard let value = setting(flag.map(String.init), name) else { return nil }
            guard let number = Int(value), number > 0 else { throw ValidationError("\(name) must be a positive number") }
            return number
        }
        configuration.connections.maxConnections = try positive(maxConnections, "SWITCHBOARD_MAX_CONNECTIONS")
        configuration.connections.maxPending = try positive(maxPending, "SWITCHBOARD_MAX_PENDING")
        if let value = try positive(maxPendingPerIp, "SWITCHBOARD_MAX_PENDING_PER_IP") {
            configuration.connections.maxPendingPerAddress = value
        }
        if let value = try positive(maxDevicesPerUser, "SWITCHBOARD_MAX_DEVICES_PER_USER") {
            configuration.connections.maxDevicesPerUser = value
        }
        if let name = setting(nodeId, "SWITCHBOARD_NODE_ID") {
            guard ServerConfiguration.isValidNodeName(name) else {
                throw ValidationError("a node id is 1-40 letters, digits and -")
            }
            configuration.nodeId = name
        }
        if let text = setting(nodePort.map(String.init), "SWITCHBOARD_NODE_PORT") {
            guard let port = Int(text), (0...65535).contains(port) else { throw ValidationError("a node port is 0-65535") }
            configuration.nodeLinks.port = port
        }
        if let address = setting(nodeAddress, "SWITCHBOARD_NODE_ADDRESS") {
            guard !address.isEmpty, !address.contains("/"), !address.contains(" ") else {
                throw ValidationError("a node address is HOST or HOST:PORT")
            }
            configuration.nodeLinks.address = address
        }
        configuration.rateLimits.disabled = noRateLimits || environment["SWITCHBOARD_NO_RATE_LIMITS"] == "1"
        configuration.adminSecret = setting(adminSecret, "SWITCHBOARD_ADMIN_SECRET")
        let keyFile = setting(apnsKeyFile, "SWITCHBOARD_APNS_KEY_FILE")
        let keyId = setting(apnsKeyId, "SWITCHBOARD_APNS_KEY_ID")
        let teamId = setting(apnsTeamId, "SWITCHBOARD_APNS_TEAM_ID")
        if keyFile != nil || keyId != nil || teamId != nil {
            guard let keyFile, let keyId, let teamId else {
                throw ValidationError("VoIP push needs --apns-key-file, --apns-key-id and --apns-team-id together")
            }
            _ = try Self.contents(of: keyFile, flag: "--apns-key-file")
            var apns = APNsConfiguration(keyPath: keyFile, keyId: keyId, teamId: teamId)
            if let url = setting(apnsProductionUrl, "SWITCHBOARD_APNS_PRODUCTION_URL") { apns.productionURL = url }
            if let url = setting(apnsSandboxUrl, "SWITCHBOARD_APNS_SANDBOX_URL") { apns.sandboxURL = url }
            apns.trustRootsPath = setting(apnsCaFile, "SWITCHBOARD_APNS_CA_FILE")
            if let value = setting(apnsTokenLifetime.map(String.init), "SWITCHBOARD_APNS_TOKEN_LIFETIME") {
                guard let minutes = Int(value), (20...59).contains(minutes) else {
                    throw ValidationError("the APNs token lifetime must be 20-59 minutes")
                }
                apns.tokenLifetime = .seconds(minutes * 60)
            }
            configuration.apns = apns
        }
        if let value = setting(reconnectGrace.map(String.init), "SWITCHBOARD_RECONNECT_GRACE") {
            guard let seconds = Int(value), seconds >= 0 else { throw ValidationError("reconnect grace must be >= 0") }
            configuration.reconnectGrace = .seconds(seconds)
        }
        if let value = setting(heartbeatInterval.map(String.init), "SWITCHBOARD_HEARTBEAT_INTERVAL") {
            guard let seconds = Int(value), (1...300).contains(seconds) else {
                throw ValidationError("the heartbeat interval must be 1-300 seconds")
            }
            configuration.heartbeatInterval = seconds
        }
        if let value = setting(commitInterval.map(String.init), "SWITCHBOARD_COMMIT_INTERVAL") {
            guard let milliseconds = Int(value), (0...1000).contains(milliseconds) else {
                throw ValidationError("the commit interval must be 0-1000 ms")
            }
            configuration.commitInterval = .milliseconds(milliseconds)
        }
        func list(_ flags: [String], _ name: String) -> [String] {
            flags.isEmpty ? (environment[name]?.split(separator: ",").map(String.init) ?? []) : flags
        }
        if let file = setting(vapidKeyFile, "SWITCHBOARD_VAPID_KEY_FILE") {
            let text = String(decoding: try Self.contents(of: file, flag: "--vapid-key-file"), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let key = VAPIDKey(privateKey: text, subject: setting(vapidSubject, "SWITCHBOARD_VAPID_SUBJECT") ?? "")
            if let problem = key.problem { throw ValidationError("--vapid-key-file/--vapid-subject: \(problem.message)") }
            configuration.webPush.vapid = key
        }
        configuration.webPush.trustRootsPath = setting(pushCaFile, "SWITCHBOARD_PUSH_CA_FILE")
        configuration.fcm.trustRootsPath = configuration.webPush.trustRootsPath
        if let file = setting(fcmServiceAccount, "SWITCHBOARD_FCM_SERVICE_ACCOUNT") {
            do {
                configuration.fcm.serviceAccount = try FCMServiceAccount(
                    json: try Self.contents(of: file, flag: "--fcm-service-account"))
            } catch let error as SwitchboardError {
                throw ValidationError("--fcm-service-account: \(error.message)")
            }
        }
        if let url = setting(fcmUrl, "SWITCHBOARD_FCM_URL") { configuration.fcm.apiURL = url }
        configuration.ice.stunURLs = list(stunUrl, "SWITCHBOARD_STUN_URLS")
        configuration.ice.turnURLs = list(turnUrl, "SWITCHBOARD_TURN_URLS")
        configuration.ice.turnSecret = setting(turnSecret, "SWITCHBOARD_TURN_SECRET")
        if !configuration.ice.turnURLs.isEmpty, configuration.ice.turnSecret == nil {
            throw ValidationError("TURN URLs need --turn-secret (coturn's static-auth-secret)")
        }
        if let value = setting(turnCredentialHours.map(String.init), "SWITCHBOARD_TURN_CREDENTIAL_HOURS") {
            guard let hours = Int(value), (1...720).contains(hours) else {
                throw ValidationError("TURN credentials must stay valid 1-720 hours")
            }
            configuration.ice.credentialLifetime = .seconds(hours * 3600)
        }
        let sfuURLs = list(sfu, "SWITCHBOARD_SFU").flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let sfuSecretValue = setting(sfuSecret, "SWITCHBOARD_SFU_SECRET")
        let recordings = setting(recordingsDir, "SWITCHBOARD_RECORDINGS_DIR")
        if recordings != nil && sfuURLs.isEmpty { throw ValidationError("--recordings-dir needs --sfu") }
        if !sfuURLs.isEmpty {
            let settings = SFUConfiguration(urls: sfuURLs, secret: sfuSecretValue, recordings: recordings)
            if let problem = settings.problem { throw ValidationError(problem) }
            configuration.sfu = settings
        } else if sfuSecretValue != nil {
            throw ValidationError("--sfu-secret needs --sfu")
        }
        // The browser client: the folder given, else the files shipped beside the binary.
        configuration.webRoot = setting(webRoot, "SWITCHBOARD_WEB_ROOT") ?? WebClient.bundledRoot
        func items(_ flags: [String], _ name: String) -> [String] {
            list(flags, name).flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
        }
        configuration.webPush.allowedHosts = items(webPushAllowedHosts, "SWITCHBOARD_WEB_PUSH_ALLOWED_HOSTS")
        configuration.web.allowedServers = try items(webAllowedServers, "SWITCHBOARD_WEB_ALLOWED_SERVERS").map { text in
            guard let origin = WebSecurity.serverOrigin(text) else {
                throw ValidationError(
                    "--web-allowed-servers takes WebSocket origins such as wss://node2.example.com:8443 (no path; a host name or IPv4 address), got '\(text)'")
            }
            return origin
        }
        configuration.web.frameAncestors = try items(webFrameAncestors, "SWITCHBOARD_WEB_FRAME_ANCESTORS").map { text in
            guard let ancestor = WebSecurity.frameAncestor(text) else {
                throw ValidationError(
                    "--web-frame-ancestors takes 'self' or origins such as https://app.example.com, got '\(text)'")
            }
            return ancestor
        }
        configuration.web.imageOrigins = try items(webImageOrigins, "SWITCHBOARD_WEB_IMAGE_ORIGINS").map { text in
            guard let origin = WebSecurity.imageOrigin(text) else {
                throw ValidationError(
                    "--web-image-origins takes origins such as https://cdn.example.com (no path; a host name or IPv4 address), got '\(text)'")
            }
            return origin
        }
        configuration.web.devAllowedHosts = try items(devAllowedHosts, "SWITCHBOARD_DEV_ALLOWED_HOSTS").map { text in
            guard WebSecurity.isDevHost(text) else {
                throw ValidationError("--dev-allowed-hosts takes host names or addresses without a port, got '\(text)'")
            }
            return text
        }

        configuration.webhooks.startupEndpoints = items(webhook, "SWITCHBOARD_WEBHOOKS")
        configuration.webhooks.startupSecret = setting(webhookSecret, "SWITCHBOARD_WEBHOOK_SECRET")
        configuration.webhooks.allowedNetworks = try items(webhookAllow, "SWITCHBOARD_WEBHOOK_ALLOW").map { text in
            guard let network = IPNetwork(text) else {
                throw ValidationError("--webhook-allow takes networks such as 127.0.0.0/8 or fd00::/8, got '\(text)'")
            }
            return network
        }
        func milliseconds(_ flag: Int?, _ name: String, _ range: ClosedRange<Int>) throws -> Duration? {
            guard let value = setting(flag.map(String.init), name) else { return nil }
            guard let number = Int(value), range.contains(number) else {
                throw ValidationError("\(name) must be \(range.lowerBound)-\(range.upperBound)")
            }
            return .milliseconds(number)
        }
        if let timeout = try milliseconds(webhookTimeoutMs, "SWITCHBOARD_WEBHOOK_TIMEOUT_MS", 100...60_000) {
            configuration.webhooks.timeout = timeout
        }
        if let initial = try milliseconds(webhookRetryInitialMs, "SWITCHBOARD_WEBHOOK_RETRY_INITIAL_MS", 10...3_600_000) {
            configuration.webhooks.retry.initial = initial
        }
        if let max = try milliseconds(webhookRetryMaxMs, "SWITCHBOARD_WEBHOOK_RETRY_MAX_MS", 10...86_400_000) {
            configuration.webhooks.retry.maxInterval = max
        }
        if let seconds = try positive(webhookGiveUpAfter, "SWITCHBOARD_WEBHOOK_GIVE_UP_AFTER") {
            configuration.webhooks.retry.giveUpAfter = .seconds(seconds)
        }
        if let count = try positive(webhookMaxBacklog, "SWITCHBOARD_WEBHOOK_MAX_BACKLOG") {
            configuration.webhooks.maxBacklog = count
        }
        if let hours = try positive(webhookEventRetentionHours, "SWITCHBOARD_WEBHOOK_EVENT_RETENTION_HOURS") {
            configuration.webhooks.eventRetention = .seconds(hours * 3600)
        }
        guard configuration.webhooks.eventRetention > configuration.webhooks.retry.giveUpAfter else {
            throw ValidationError("webhook events must be kept longer than a delivery is retried")
        }

        var logger = Logger(label: "switchboard")
        let level = setting(logLevel, "SWITCHBOARD_LOG_LEVEL") ?? "info"
        guard let parsedLevel = Logger.Level(rawValue: level) else { throw ValidationError("unknown log level \(level)") }
        logger.logLevel = parsedLevel

        let node: SwitchboardNode
        do {
            node = try await buildApplication(configuration: configuration, logger: logger)
        } catch let error as SwitchboardError {
            // The server's own sentence (a refused --webhook, a web root that is no folder),
            // without the wire code that means nothing here.
            throw Failure(description: error.message)
        }
        let banner = Task {
            // None when the node could not listen: its run throws why.
            guard let port = await node.waitUntilListening() else { return }
            // Written unbuffered: the banner must show up at once when stdout is a pipe or a file.
            FileHandle.standardOutput.write(Data((Self.banner(configuration: configuration, node: node, port: port) + "\n").utf8))
        }
        defer { banner.cancel() }
        try await node.run()
    }

    /// A start that failed, in a sentence that says why and what to do; printed as `Error: …`, exit 1.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The bytes of a file a flag names; a sentence naming the flag, the file and the problem
    /// when it cannot be read (Foundation's own error names neither).
    static func contents(of path: String, flag: String) throws -> Data {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ValidationError("\(flag) \(path): no such file")
        }
        guard !isDirectory.boolValue else { throw ValidationError("\(flag) \(path): a directory, not a file") }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("\(flag) \(path): the file cannot be read (permissions?)")
        }
        return data
    }

    /// What the banner says about the browser client: where it is served from, or why it is not.
    static func webClientLine(_ root: String?, base: String) -> String {
        guard let root else {
            return "  web client none: the files shipped with this binary are not beside it "
                + "(\(WebClient.resourcesName)); serve a folder with --web-root DIR"
        }
        let shipped = root == WebClient.bundledRoot ? "shipped with this binary, " : ""
        return "  web client \(base)/ (\(shipped)\(root))"
    }

    static func banner(configuration: ServerConfiguration, node: SwitchboardNode, port: Int) -> String {
        let base = "http://\(configuration.host):\(port)"
        var lines = [
            "Switchboard is listening on \(base)",
            "  signaling  ws://\(configuration.host):\(port)/v1/ws",
        ]
        lines.append(Self.webClientLine(configuration.webRoot, base: base))
        lines.append("  database   \(configuration.database.displayName)")
        if let cluster = node.clusterNodeId {
            lines.append("  cluster    node \(cluster); every node on this database serves the same apps and calls")
        }
        if let app = node.developmentApp {
            lines += [
                "",
                "Development app (created on first start, kept in the database):",
                "  sdkAppID   \(app.sdkAppID)",
                "  secretKey  \(app.secretKey)",
                "  a UserSig: swift run --package-path Server switchboard usersig gen --app-id \(app.sdkAppID) --secret \(app.secretKey) --user alice",
            ]
        } else {
            lines.append("  apps       \(node.apps.map { String($0.sdkAppID.rawValue) }.joined(separator: ", "))")
        }
        lines.append(
            configuration.apns?.keyPath.map { _ in "  APNs       key \(configuration.apns?.keyId ?? ""), team \(configuration.apns?.teamId ?? "")" }
                ?? "  APNs       no server key (apps may have their own: PUT /v1/apps/{sdkAppID}/push)")
        lines.append(
            "  Web Push   " + (configuration.webPush.vapid.map { _ in "the server's VAPID key" } ?? "each app's generated VAPID key"))
        lines.append(
            configuration.fcm.serviceAccount.map { "  FCM        project \($0.projectId)" }
                ?? "  FCM        no server account (apps may have their own)")
        let ice = configuration.ice
        lines.append(
            ice.turnURLs.isEmpty
                ? "  ICE        " + (ice.stunURLs.isEmpty ? "host candidates only (no STUN or TURN configured)" : "STUN \(ice.stunURLs.joined(separator: ", "))")
                : "  ICE        TURN \(ice.turnURLs.joined(separator: ", ")) (credentials for \(ice.credentialLifetime.milliseconds / 3_600_000) h)")
        if node.developmentApp != nil {
            lines.append("  dev sigs   \(base)/v1/dev/usersig?userID=alice  (development mode only)")
        }
        if configuration.adminSecret == nil {
            lines.append("  admin API  Authorization: Bearer \(node.adminSecret)  (set SWITCHBOARD_ADMIN_SECRET to choose it)")
        }
        for webhook in node.startupWebhooks {
            let secret = configuration.webhooks.startupSecret == nil ? webhook.secret : "the --webhook-secret"
            lines.append("  webhook    app \(webhook.sdkAppID) → \(webhook.url) (\(webhook.endpointId)), signed with \(secret)")
        }
        lines.append(
            "Stop with Ctrl-C: calls are kept for the next start (or another node) and clients told to come back.")
        return lines.joined(separator: "\n")
    }
}
