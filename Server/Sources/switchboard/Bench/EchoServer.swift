import ArgumentParser
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging

/// The floor of the benchmarks: a WebSocket server with the same library and settings as
/// `switchboard serve` (Hummingbird 2, its WebSocket upgrade) that sends every text frame back and
/// does nothing else.
struct EchoServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "echo-server", abstract: "A WebSocket echo server: the floor `bench echo` measures.",
        shouldDisplay: false)

    @Option var host = "127.0.0.1"
    @Option var port = 0
    @Option(help: "Ignored; accepted like serve's.") var logLevel: String?

    func run() async throws {
        var logger = Logger(label: "switchboard.echo")
        logger.logLevel = .error
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.ws("/v1/ws") { inbound, outbound, _ in
            for try await message in inbound.messages(maxSize: 1 << 20) {
                if case .text(let text) = message { try await outbound.write(.text(text)) }
            }
        }
        let host = self.host
        let application = Application(
            router: router,
            server: .http1WebSocketUpgrade(webSocketRouter: router),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "echo", backlog: 4096),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                FileHandle.standardOutput.write(Data("Switchboard echo server is listening on http://\(host):\(port)\n".utf8))
            },
            logger: logger)
        try await application.runService()
    }
}
