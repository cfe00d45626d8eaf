import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTesting

/// A real server node in this process, on a free loopback port, with its own SQLite file and a
/// ``TestClock``. Clients reach it over real WebSocket connections.
public final class TestServer: Sendable {
    public let node: SwitchboardNode
    public let clock: TestClock
    public let port: Int
    public let directory: URL
    private let runTask: Task<Void, any Error>

    /// The WebSocket endpoint.
    public var url: URL { URL(string: "ws://127.0.0.1:\(port)/v1/ws")! }
    /// The HTTP base URL.
    public var httpURL: URL { URL(string: "http://127.0.0.1:\(port)")! }
    /// The development app the server created.
    public var app: AppCredentials { node.developmentApp ?? node.apps[0] }

    private init(node: SwitchboardNode, clock: TestClock, port: Int, directory: URL, runTask: Task<Void, any Error>) {
        self.node = node
        self.clock = clock
        self.port = port
        self.directory = directory
        self.runTask = runTask
    }

    /// Starts a server; `configure` may change the configuration (the database and port are set).
    public static func start(
        clock: TestClock = TestClock(), directory: URL? = nil,
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> TestServer {
        let directory =
            directory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.database = .sqlite(path: directory.appendingPathComponent("switchboard.sqlite").path)
        configuration.adminSecret = "test-admin-secret"
        // The test clock moves only when a test moves it, so commits spaced on it would wait for
        // that. PersistenceWriterTests covers the spacing; the tests of server processes run the
        // default.
        configuration.commitInterval = .zero
        configure(&configuration)
        var logger = Logger(label: "switchboard.test-server")
        logger.logLevel = ProcessInfo.processInfo.environment["SWITCHBOARD_TEST_LOG"].flatMap { Logger.Level(rawValue: $0) } ?? .critical
        let node = try await buildApplication(configuration: configuration, clock: clock, logger: logger)
        let runTask = Task { try await node.run(gracefulShutdownSignals: []) }
        let port = await node.listeningPort()
        return TestServer(node: node, clock: clock, port: port, directory: directory, runTask: runTask)
    }

    /// An HTTP request to the server with the admin secret (nil `authorized`: none): its status, body
    /// and headers.
    public func http(
        _ method: String, _ path: String, json: [String: any Sendable]? = nil, headers: [String: String] = [:],
        authorized: Bool = true
    ) async throws -> (status: Int, body: Data, headers: [String: String]) {
        var request = URLRequest(url: URL(string: path, relativeTo: httpURL)!)
        request.httpMethod = method
        if authorized { request.setValue("Bearer test-admin-secret", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let json {
            request.httpBody = try JSONSerialization.data(withJSONObject: json)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http?.allHeaderFields ?? [:] {
            if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
        }
        return (http?.statusCode ?? 0, data, fields)
    }

    /// A UserSig for `user` on the server's app, issued at the test clock's time.
    public func userSig(_ user: String, expire: Int64 = 86_400) -> String {
        UserSig.generate(
            sdkAppID: app.sdkAppID, secretKey: app.secretKey, userID: user, expire: expire, time: clock.now() / 1000)
    }

    /// An SDK client for this server on the test clock, logged in as `user` unless `login` is false.
    ///
    /// - Parameters:
    ///   - url: connect here instead (a ``TCPProxy`` in front of the server).
    ///   - reconnectPolicy: by default without jitter: the first retry 1 s after a drop, at most 8 s apart.
    ///   - mediaEngine: the client's media engine (a ``FakeMediaEngine`` to see what the SDK asks).
    ///   - networkPathMonitor: none by default, so that the machine's own network changes never
    ///     reach a test (a ``ManualNetworkPathMonitor`` makes changes on cue).
    public func client(
        _ user: String, deviceId: String? = nil, login: Bool = true, url: URL? = nil, fallbackURLs: [URL] = [],
        userSigExpire: Int64 = 86_400,
        reconnectPolicy: ReconnectPolicy = ReconnectPolicy(initialDelay: .seconds(1), maxDelay: .seconds(8), jitter: 0),
        mediaEngine: (any MediaEngine)? = nil, networkPathMonitor: (any NetworkPathMonitor)? = nil
    ) async throws -> SwitchboardClient {
        var logger = Logger(label: "switchboard.test-client.\(user)")
        logger.logLevel = ProcessInfo.processInfo.environment["SWITCHBOARD_TEST_LOG"].flatMap { Logger.Level(rawValue: $0) } ?? .critical
        let client = SwitchboardClient(
            configuration: SwitchboardConfiguration(
                serverURL: url ?? self.url, fallbackServerURLs: fallbackURLs, deviceId: deviceId.map(DeviceID.init(rawValue:)),
                platform: "test",
                reconnectPolicy: reconnectPolicy, clock: clock, mediaEngine: mediaEngine,
                networkPathMonitor: networkPathMonitor, logger: logger))
        if login {
            try await client.loginStore.login(
                sdkAppID: app.sdkAppID, userID: user, userSig: userSig(user, expire: userSigExpire))
        }
        return client
    }

    /// The WebSocket URL through a proxy.
    public func url(via proxy: TCPProxy) -> URL {
        URL(string: "ws://127.0.0.1:\(proxy.port)/v1/ws")!
    }

    /// Gracefully stops the server and deletes its files.
    public func stop() async {
        await node.shutdown()
        _ = try? await runTask.value
        try? FileManager.default.removeItem(at: directory)
    }

    /// Stops the server but keeps its database, to start another on the same files.
    public func stopKeepingFiles() async {
        await node.shutdown()
        _ = try? await runTask.value
    }
}
