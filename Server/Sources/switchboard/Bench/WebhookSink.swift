import ArgumentParser
import Foundation
import Hummingbird
import Logging

/// The receiver of `bench … --server-webhook`: takes every webhook with 200 and does nothing
/// else, so the bench measures what sending them costs the server.
struct WebhookSinkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhook-sink", abstract: "An HTTP server that answers 200 to every POST /hooks.", shouldDisplay: false)

    @Option var host = "127.0.0.1"
    @Option var port = 0
    @Option(help: "Ignored; accepted like serve's.") var logLevel: String?

    func run() async throws {
        var logger = Logger(label: "switchboard.webhook-sink")
        logger.logLevel = .error
        let router = Router()
        router.post("/hooks") { request, _ -> HTTPResponse.Status in
            _ = try await request.body.collect(upTo: 1 << 20)
            return .ok
        }
        let host = self.host
        let application = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "sink", backlog: 4096),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                FileHandle.standardOutput.write(Data("Switchboard webhook sink is listening on http://\(host):\(port)\n".utf8))
            },
            logger: logger)
        try await application.runService()
    }
}
