import ArgumentParser
import Foundation
import Logging
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTools

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Play call scenarios between SDK clients and print the timeline; exits 0 if every expected event arrived.",
        discussion: """
            Without --server it starts a server in this process on a free port with a temporary database. \
            With --server, pass the app's --app-id and --secret.
            """)

    @Option(help: "A running server's WebSocket URL, e.g. ws://127.0.0.1:8080/v1/ws.")
    var server: String?

    @Option(name: .customLong("app-id"), help: "sdkAppID of the app on --server.")
    var appID: Int64?

    @Option(help: "secretKey of the app on --server.")
    var secret: String?

    @Option(help: "Scenario: \(Demo.Scenario.allCases.map(\.rawValue).joined(separator: ", ")).")
    var scenario: String = Demo.Scenario.basic.rawValue

    func run() async throws {
        guard let scenario = Demo.Scenario(rawValue: scenario) else {
            throw ValidationError("unknown scenario \(scenario)")
        }
        let clock = SystemClock()
        let serverURL: URL
        let app: AppCredentials
        var local: (node: SwitchboardNode, task: Task<Void, any Error>, directory: URL)?
        if let server {
            guard let url = URL(string: server), let appID, let secret else {
                throw ValidationError("--server needs a ws:// URL, --app-id and --secret")
            }
            serverURL = url
            app = AppCredentials(sdkAppID: SdkAppID(appID), secretKey: secret)
        } else {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-demo-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var configuration = ServerConfiguration()
            configuration.port = 0
            configuration.database = .sqlite(path: directory.appendingPathComponent("demo.sqlite").path)
            var logger = Logger(label: "switchboard.demo-server")
            logger.logLevel = .warning
            let node = try await buildApplication(configuration: configuration, clock: clock, logger: logger)
            let task = Task { try await node.run(gracefulShutdownSignals: []) }
            let port = await node.listeningPort()
            serverURL = URL(string: "ws://127.0.0.1:\(port)/v1/ws")!
            app = node.developmentApp!
            local = (node, task, directory)
            print("started a server in this process at \(serverURL)")
        }
        let demo = Demo(
            serverURL: serverURL, sdkAppID: app.sdkAppID, clock: clock,
            userSig: { UserSig.generate(sdkAppID: app.sdkAppID, secretKey: app.secretKey, userID: $0, expire: 3600) },
            pause: { try await clock.sleep(for: $0) },
            output: { print($0) })
        let passed = await demo.run(scenario)
        if let local {
            await local.node.shutdown()
            _ = try? await local.task.value
            try? FileManager.default.removeItem(at: local.directory)
        }
        if !passed { throw ExitCode(1) }
    }
}
