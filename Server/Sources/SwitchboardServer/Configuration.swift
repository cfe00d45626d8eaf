import Foundation
import SwitchboardProtocol

/// Where the server keeps its data.
public enum DatabaseLocation: Sendable, Equatable {
    /// An SQLite file (WAL), the embedded default.
    case sqlite(path: String)
    /// A PostgreSQL database, `postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…]`: the
    /// production store, and what several nodes share to form a cluster.
    case postgres(url: String)

    /// Where the data is, for logs and banners (a URL without its password).
    public var displayName: String {
        switch self {
        case .sqlite(let path):
            return "\(path) (SQLite, WAL)"
        case .postgres(let url):
            guard var components = URLComponents(string: url) else { return "PostgreSQL" }
            components.password = nil
            components.query = nil
            return "\(components.string ?? "") (PostgreSQL)"
        }
    }

    /// A `postgresql://` or `postgres://` URL is PostgreSQL; anything else is an SQLite file path.
    public init(parsing text: String) {
        self = text.hasPrefix("postgresql://") || text.hasPrefix("postgres://") ? .postgres(url: text) : .sqlite(path: text)
    }
}

/// An app's credentials, as given on the command line or in the environment.
public struct AppCredentials: Sendable, Equatable {
    public var sdkAppID: SdkAppID
    public var secretKey: String

    public init(sdkAppID: SdkAppID, secretKey: String) {
        self.sdkAppID = sdkAppID
        self.secretKey = secretKey
    }

    /// Parses `SDKAPPID:SECRET`.
    public init?(parsing text: String) {
        guard let colon = text.firstIndex(of: ":"), let id = Int64(text[..<colon]), id > 0 else { return nil }
        let secret = String(text[text.index(after: colon)...])
        guard !secret.isEmpty else { return nil }
        self.init(sdkAppID: SdkAppID(id), secretKey: secret)
    }
}

/// Everything `switchboard serve` can be told; the defaults make a working development server.
public struct ServerConfiguration: Sendable {
    /// Address to listen on.
    public var host = "127.0.0.1"
    /// Port to listen on; 0 picks a free one.
    public var port = 8080
    public var database = DatabaseLocation.sqlite(path: "switchboard.sqlite")
    /// Apps to serve. When empty, the server serves a development app that it creates on first
    /// start and keeps in its database, and turns on development mode.
    public var apps: [AppCredentials] = []
    /// Settings of an app the database does not have yet (the apps above, the development app),
    /// as it is created. An app the database has keeps its settings (the admin API changes them)
    /// but for those the operator gives at every start (``appSettingOverrides``).
    public var appSettings = AppSettings()
    /// Settings given as `serve` flags: they apply to every app this node serves, at each start.
    public var appSettingOverrides = AppSettingOverrides()
    /// Secret for the admin HTTP API (`Authorization: Bearer …`); generated at start when nil.
    public var adminSecret: String?
    /// How long a member's dropped device may take to come back before the server ends its part.
    public var reconnectGrace: Duration = .seconds(15)
    /// Least time between the starts of two commits of the journal and records: under load, the
    /// writes of one interval share a transaction and its fsync (see `PersistenceWriter`). A
    /// `callRecord` event and a journal save may come up to this much later; a crash may take back
    /// the journal's last interval.
    public var commitInterval: Duration = .milliseconds(5)
    /// Seconds between client pings, told to clients at login. The server pings each WebSocket at
    /// the same pace (on the real clock: it is about the network, not about calls) and closes one
    /// that sent nothing since its last ping, not even the pong: a device whose link went silent
    /// counts as dropped within two intervals, so its reconnect grace runs from about when it went
    /// away, as the SDK's own heartbeat sees it.
    public var heartbeatInterval = 10
    /// Directory of the browser client, served at `/`; nil serves none.
    public var webRoot: String?
    /// Which servers the page may connect to, who may frame it, whose requests get development UserSigs.
    public var web = WebSecurity()
    /// Listen backlog; connection storms need more than the usual 256.
    public var backlog = 4096
    /// Event-loop threads serving connections; nil: one per core (NIO's shared group).
    public var eventLoopThreads: Int?
    /// Abuse limits per IP address, user and connection.
    public var rateLimits = RateLimits()
    /// How long a call from a blocked caller seems to ring before the callee declines, when the
    /// app's blocked callers see a rejection: drawn for each such invitation from this range, like
    /// a person who looks at the phone and declines.
    public var blockedCallerDecline: ClosedRange<Duration> = .seconds(3)...(.seconds(12))
    /// Connections: how many, how long to log in, how much a peer that does not read may cost.
    public var connections = ConnectionLimits()
    /// This node's name in its cluster (PostgreSQL), for logs and `/health`: letters, digits and
    /// `-`, at most 40; nil: the host's name. Each start adds a random suffix: a node that restarts
    /// joins as a new member, and the devices of the run before are dropped as a dead node's.
    public var nodeId: String?
    /// Heartbeats and timeouts of the cluster (PostgreSQL only).
    public var cluster = ClusterTiming()
    /// Where this node listens for the links of the other nodes of its cluster (PostgreSQL only).
    public var nodeLinks = NodeLinkConfiguration()
    /// Apple's push service and the server's APNs key; without a key (the server's or an app's
    /// own), invitees whose devices have only APNs tokens and no connection are `offline`.
    public var apns: APNsConfiguration?
    /// Web Push: the server's VAPID key pair (else each app's generated one) and which push
    /// service hosts it sends to.
    public var webPush = WebPushConfiguration()
    /// Firebase Cloud Messaging: the server's service account (else only apps with their own push
    /// to Android) and where FCM is.
    public var fcm = FCMConfiguration()
    /// STUN and TURN servers for clients' media.
    public var ice = IceConfiguration()
    /// The SFU (Janus) that group calls' media goes through; nil: group calls are a mesh.
    public var sfu: SFUConfiguration?
    /// Webhooks: where they may go, how they are retried, their bounds.
    public var webhooks = WebhookConfiguration()

    public init() {}

    /// Whether `name` can name a node: 1-40 ASCII letters, digits and `-`.
    public static func isValidNodeName(_ name: String) -> Bool {
        (1...40).contains(name.utf8.count) && name.unicodeScalars.allSatisfy(isNodeNameCharacter)
    }

    private static func isNodeNameCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "-" || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
    }

    /// The name a node goes by: the one configured, else the host's first label, cut to what a
    /// node name may hold.
    static func nodeName(_ configured: String?) -> String {
        if let configured, isValidNodeName(configured) { return configured }
        let host = ProcessInfo.processInfo.hostName.unicodeScalars.prefix { $0 != "." }.filter(isNodeNameCharacter)
        let name = String(String.UnicodeScalarView(host.prefix(40)))
        return name.isEmpty ? "node" : name
    }
}

/// The Janus servers that carry group calls' media (VideoRoom plugin, WebSocket API).
public struct SFUConfiguration: Sendable, Equatable {
    /// `ws://HOST:PORT` (or `wss://`) of each Janus server's WebSocket API.
    public var urls: [String]
    /// Janus's `api_secret` (and the VideoRoom plugin's `admin_key`, which must be the same); nil
    /// when Janus has none.
    public var secret: String?
    /// Where recordings go: Janus's `rec_dir` root and the server's recordings, one directory both
    /// reach at this path (the same machine, or a shared volume); nil: calls are not recorded.
    public var recordings: String?

    public init(urls: [String], secret: String?, recordings: String? = nil) {
        self.urls = urls
        self.secret = secret
        self.recordings = recordings
    }

    /// The problem with these settings, if any.
    public var problem: String? {
        if urls.isEmpty { return "--sfu needs at least one ws:// or wss:// URL" }
        for url in urls {
            guard let components = URLComponents(string: url), ["ws", "wss"].contains(components.scheme ?? ""),
                components.host?.isEmpty == false
            else { return "--sfu: \(url) is not a ws:// or wss:// URL" }
        }
        if Set(urls).count != urls.count { return "--sfu names a server twice" }
        return nil
    }
}

/// App settings an operator gives at start (`serve --busy-policy`, `--max-participants`,
/// `--blocked-caller-sees`): each one given replaces the app's stored value; those not given leave
/// it as the database (and the admin API) has it.
public struct AppSettingOverrides: Sendable, Equatable {
    public var busyPolicy: BusyPolicy?
    public var maxParticipants: Int?
    public var blockedCallerSees: BlockedCallerSees?

    public init(busyPolicy: BusyPolicy? = nil, maxParticipants: Int? = nil, blockedCallerSees: BlockedCallerSees? = nil) {
        self.busyPolicy = busyPolicy
        self.maxParticipants = maxParticipants
        self.blockedCallerSees = blockedCallerSees
    }

    func applied(to settings: AppSettings) -> AppSettings {
        var settings = settings
        if let busyPolicy { settings.busyPolicy = busyPolicy }
        if let maxParticipants { settings.maxParticipants = maxParticipants }
        if let blockedCallerSees { settings.blockedCallerSees = blockedCallerSees }
        return settings
    }
}
