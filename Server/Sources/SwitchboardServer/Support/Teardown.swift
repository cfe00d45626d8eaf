import NIOConcurrencyHelpers

/// What a node holds that must be let go of by hand: the push services' and the webhooks' HTTP
/// clients, the database's connections, its own event loops, the SFU's sockets. Each part is added
/// as it is made, and ``run()`` lets go of them last made first: on every way out of
/// ``buildApplication(configuration:clock:logger:)`` that throws, and at the end of
/// ``SwitchboardNode/run(gracefulShutdownSignals:)`` however the run ended (a graceful shutdown,
/// or a service that failed, such as the HTTP server that could not bind its port).
///
/// AsyncHTTPClient traps in a debug build when a client it made is released before it was shut
/// down, so a client made before a later step of the build failed must never just be dropped
/// (issue 48: `serve --webhook http://127.0.0.1:9/x` without `--webhook-allow` crashed).
final class Teardown: Sendable {
    private let steps = NIOLockedValueBox<[@Sendable () async -> Void]>([])

    /// Adds a part to let go of; the last added goes first.
    func add(_ step: @escaping @Sendable () async -> Void) {
        steps.withLockedValue { $0.append(step) }
    }

    /// Lets go of every part not let go of yet, each once, last added first.
    func run() async {
        while let step = steps.withLockedValue({ $0.popLast() }) {
            await step()
        }
    }
}
