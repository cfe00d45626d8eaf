import ArgumentParser

@main
struct SwitchboardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "switchboard",
        abstract: "Self-hostable audio/video calling: signaling server, tools and demos.",
        subcommands: [
            Serve.self, UserSigCommand.self, DemoCommand.self, CallCommand.self, BenchCommand.self,
            EchoServerCommand.self,
            WebhookSinkCommand.self,
        ])
}
