import Logging
import SwitchboardProtocol
import SwitchboardTestServers
import Testing

@testable import SwitchboardServer

/// The server's WebSocket to a real Janus keeps bounded buffers each way; at a bound it closes,
/// and the server then treats that Janus as down (its rooms move or wait, as after a lost
/// connection). Each waits at most 30 s for the socket to close (a guard: it closes at once).
@Suite(.enabled(if: JanusProcess.isAvailable, "needs janus (scripts/test installs it)"))
struct JanusSocketTests {
    static func info(_ n: Int) -> String { #"{"janus":"info","transaction":"t\#(n)"}"# }

    /// Whether the socket closed within 30 s.
    static func closes(_ socket: JanusSocket) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await socket.waitUntilClosed()
                return true
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(30))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Janus answers 100 requests while nothing reads: the buffer keeps the first 8, and the
    /// socket closes instead of holding the rest.
    @Test func janusSendingFasterThanItIsReadClosesTheSocket() async throws {
        let janus = try await JanusProcess.start()
        defer { janus.stop() }
        let socket = try await JanusSocket.connect(
            url: janus.url, timeout: .seconds(10), clock: SystemClock(), logger: Logger(label: "test-janus"), incomingLimit: 8)
        for n in 0..<100 { socket.send(Self.info(n)) }
        try #require(await Self.closes(socket))
        var received = 0
        for await _ in socket.incoming { received += 1 }
        #expect(received == 8)
    }

    /// Far more requests than the outgoing buffer holds, queued faster than a WebSocket writes
    /// them: the socket closes, and Janus never answers them all.
    @Test func requestsJanusDoesNotTakeInTimeCloseTheSocket() async throws {
        let janus = try await JanusProcess.start()
        defer { janus.stop() }
        let socket = try await JanusSocket.connect(
            url: janus.url, timeout: .seconds(10), clock: SystemClock(), logger: Logger(label: "test-janus"),
            incomingLimit: 100_000, outgoingLimit: 8)
        let requests = 10_000
        for n in 0..<requests { socket.send(Self.info(n)) }
        try #require(await Self.closes(socket))
        var received = 0
        for await _ in socket.incoming { received += 1 }
        #expect(received < requests)
    }
}
