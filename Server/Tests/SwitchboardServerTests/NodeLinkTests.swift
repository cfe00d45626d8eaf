import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import Testing
import WSClient

@testable import SwitchboardServer

/// The direct links between the nodes of a cluster (``NodeLinks``, ``PeerLink``): real WebSockets on
/// 127.0.0.1, no database (each node's table is a dictionary here).
struct NodeLinkTests {
    /// What a node received, in order, with a way to wait for a count.
    final class Inbox: Sendable {
        private let state = NIOLockedValueBox<(messages: [NodeMessage], waiters: [(Int, CheckedContinuation<Void, Never>)])>(([], []))

        func take(_ messages: [NodeMessage]) {
            let ready = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
                state.messages += messages
                let count = state.messages.count
                let ready = state.waiters.filter { $0.0 <= count }.map(\.1)
                state.waiters.removeAll { $0.0 <= count }
                return ready
            }
            ready.forEach { $0.resume() }
        }

        var messages: [NodeMessage] { state.withLockedValue { $0.messages } }

        func wait(for count: Int) async {
            await withCheckedContinuation { continuation in
                let now = state.withLockedValue { state -> Bool in
                    guard state.messages.count < count else { return true }
                    state.waiters.append((count, continuation))
                    return false
                }
                if now { continuation.resume() }
            }
        }
    }

    /// What was counted as undelivered, by reason.
    final class Undelivered: Sendable {
        private let counts = NIOLockedValueBox<[String: Int]>([:])
        func add(_ count: Int, _ reason: String) { counts.withLockedValue { $0[reason, default: 0] += count } }
        subscript(reason reason: String) -> Int { counts.withLockedValue { $0[reason] ?? 0 } }
    }

    /// Nodes "a" and "b" (and any more), each listening on a free port, with a shared table.
    struct Nodes {
        let links: [String: NodeLinks]
        let inboxes: [String: Inbox]
        let undelivered: [String: Undelivered]
        let table: NIOLockedValueBox<[String: String]>

        static func start(_ names: [String] = ["a", "b"], secret: String = "s3cret") async throws -> Nodes {
            let table = NIOLockedValueBox<[String: String]>([:])
            var links: [String: NodeLinks] = [:]
            var inboxes: [String: Inbox] = [:]
            var undelivered: [String: Undelivered] = [:]
            for name in names {
                let inbox = Inbox()
                let counted = Undelivered()
                let node = NodeLinks(
                    node: name, secret: secret, logger: Self.logger,
                    resolve: { target in table.withLockedValue { $0[target] } }, undelivered: { counted.add($0, $1) })
                let port = try await node.listen(host: "127.0.0.1", port: 0)
                node.handle { inbox.take($0) }
                table.withLockedValue { $0[name] = "127.0.0.1:\(port)" }
                links[name] = node
                inboxes[name] = inbox
                undelivered[name] = counted
            }
            return Nodes(links: links, inboxes: inboxes, undelivered: undelivered, table: table)
        }

        func stop() async {
            for node in links.values { await node.stop() }
        }

        static let logger: Logger = {
            var logger = Logger(label: "test.links")
            logger.logLevel = ProcessInfo.processInfo.environment["SWITCHBOARD_TEST_LOG"].flatMap { Logger.Level(rawValue: $0) } ?? .critical
            return logger
        }()
    }

    static func message(_ number: Int) -> NodeMessage { .reply(token: UInt64(number), reply: .ok) }

    /// Messages from one node to another arrive in the order sent, each once, though the
    /// receiver drops every connection between them: what was in flight is sent again from what
    /// it handled, and nothing is handled twice. A delivery (the most frequent message, its frame
    /// kept as written) arrives as sent.
    @Test(.timeLimit(.minutes(1))) func messagesArriveOnceAndInOrderAcrossDroppedConnections() async throws {
        let nodes = try await Nodes.start()
        let (a, b, inbox) = (try #require(nodes.links["a"]), try #require(nodes.links["b"]), try #require(nodes.inboxes["b"]))
        var sent: [NodeMessage] = []
        for round in 0..<5 {
            for number in 1...400 {
                let message = Self.message(round * 400 + number)
                sent.append(message)
                a.send(message, to: "b")
                if number % 97 == 0 { b.dropIncomingConnections() }
            }
            await inbox.wait(for: sent.count)
        }
        let frame = #"{"event":"callEnded","data":{"text":"a line\nand \"quotes\""}}"#
        let delivery = NodeMessage.deliver(frame: frame, recipient: .user(.init(app: 1_400_000_001, user: "bob")))
        a.send(delivery, to: "b")
        sent.append(delivery)
        await inbox.wait(for: sent.count)
        // Then a later message, so that a duplicate of any of the first would be in by now.
        a.send(.appsChanged, to: "b")
        sent.append(.appsChanged)
        await inbox.wait(for: sent.count)
        await a.drained(within: .seconds(30))
        #expect(inbox.messages == sent)
        #expect(a.waiting(for: "b") == 0)
        await nodes.stop()
    }

    /// A message for a node whose listener is not up yet waits, and arrives once it is.
    @Test(.timeLimit(.minutes(1))) func aMessageWaitsForANodeThatIsNotListeningYet() async throws {
        let nodes = try await Nodes.start(["a"])
        let a = try #require(nodes.links["a"])
        a.send(Self.message(1), to: "late")
        a.send(Self.message(2), to: "late")
        #expect(a.waiting(for: "late") == 2)

        let late = try await Nodes.start(["late"])
        let address = try #require(late.table.withLockedValue { $0["late"] })
        nodes.table.withLockedValue { $0["late"] = address }
        let inbox = try #require(late.inboxes["late"])
        await inbox.wait(for: 2)
        #expect(inbox.messages == [Self.message(1), Self.message(2)])
        await nodes.stop()
        await late.stop()
    }

    /// A link opened without the cluster's secret is refused (not upgraded), and what is sent over
    /// it never reaches the node; the node's own links go on.
    @Test(.timeLimit(.minutes(1))) func aLinkWithoutTheSecretIsRefused() async throws {
        let nodes = try await Nodes.start()
        let address = try #require(nodes.table.withLockedValue { $0["b"] })
        for secret in ["wrong", ""] {
            var headers = HTTPFields()
            headers[.authorization] = "Bearer " + secret
            headers[NodeLinks.nodeHeader] = "intruder"
            headers[NodeLinks.linkHeader] = "1"
            await #expect(throws: (any Error).self) {
                try await WebSocketClient.connect(
                    url: "ws://\(address)\(NodeLinks.path)", configuration: WebSocketClientConfiguration(additionalHeaders: headers),
                    logger: Logger(label: "test.links")
                ) { _, outbound, _ in
                    try await outbound.write(.text("1\n" + (try NodeMessage.appsChanged.body())))
                }
            }
        }
        // A node's own message after them is the first the node hands over.
        try #require(nodes.links["a"]).send(Self.message(7), to: "b")
        let inbox = try #require(nodes.inboxes["b"])
        await inbox.wait(for: 1)
        #expect(inbox.messages == [Self.message(7)])
        await nodes.stop()
    }

    /// A node that leaves the table with messages still waiting for it (it is gone, or was taken
    /// for dead): its link closes and they are counted as undelivered, not kept for good; a link
    /// holds at most ``PeerLink/maxMessages``, the oldest dropped and counted beyond that. A link
    /// made while the table was being read stays.
    @Test(.timeLimit(.minutes(1))) func undeliverableMessagesAreCountedNotKept() async throws {
        let nodes = try await Nodes.start(["a"])
        let (a, counted) = (try #require(nodes.links["a"]), try #require(nodes.undelivered["a"]))
        // "gone" is in the table at an address where nobody listens.
        nodes.table.withLockedValue { $0["gone"] = "127.0.0.1:1" }
        a.update(peers: ["gone": "127.0.0.1:1"])
        for number in 1...(PeerLink.maxMessages + 25) { a.send(Self.message(number), to: "gone") }
        #expect(a.waiting(for: "gone") == PeerLink.maxMessages)
        #expect(counted[reason: "full"] == 25)

        // A table read that began before a link to "newcomer" was made does not close it (the
        // node joined after the read); "gone", made before, closes.
        let readFrom = a.readBegins()
        a.send(Self.message(1), to: "newcomer")
        a.update(peers: [:], readFrom: readFrom)
        #expect(a.waiting(for: "gone") == 0)
        #expect(a.waiting(for: "newcomer") == 1)
        while counted[reason: "node left"] < PeerLink.maxMessages { await Task.yield() }
        #expect(counted[reason: "node left"] == PeerLink.maxMessages)
        await nodes.stop()
    }
}
