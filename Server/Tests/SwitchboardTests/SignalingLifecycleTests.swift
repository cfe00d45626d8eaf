import Foundation
import SwitchboardProtocol
import Testing

@testable import Switchboard

/// The SDK's connection rules as a table (``SignalingLifecycle``): each row plays a script of
/// inputs, then one more, and compares that last input's actions and the phase it leaves, written
/// on one line each. Connections are named c1, c2, … in the order they open.
///
/// Inputs: `open` (a connection for a first login), `login` (its answer), `drop` (the open
/// connection closes), `drop-old` (c1 closes, whatever is open now), `tick` (a heartbeat interval),
/// `frame` (a frame on the open connection), `away` (the server says it is going away), `replaced`,
/// `path` (the network path changed), `try` (the current round's next attempt connects), `late` (an
/// attempt of the round before connects), `back` (the attempt's login is answered), `refused` (it
/// is refused for good: userSig expired), `failed` (it times out), `attempt-failed` (the round's
/// attempt is over and the next scheduled), `end` (logout).
struct SignalingLifecycleTests {
    static let urls = ["a", "b", "c"].map { URL(string: "wss://\($0).example.com/v1/ws")! }
    static let login = LoginRequest(sdkAppID: 1, userID: "alice", userSig: "sig", deviceId: "phone")
    static let response = LoginResponse(
        userID: "alice", deviceId: "phone", protocolVersion: 1, serverTime: 0, heartbeatInterval: 10,
        profile: UserProfile(userId: "alice"))

    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var setup: String = ""
        var input: String
        var actions: String
        var phase: String

        var testDescription: String { name }
    }

    static let loggedIn = "open login"

    static let rows: [Row] = [
        Row(name: "a first connection carries the login", input: "open", actions: "", phase: "connected c1"),
        Row(
            name: "the login answered starts the heartbeat and the path watch", setup: "open", input: "login",
            actions: "heartbeat 10s, watch paths", phase: "connected c1 session@a"),
        Row(
            name: "a drop before the first login is answered ends it", setup: "open", input: "drop",
            actions: "stop reconnecting, stop watching paths, stop heartbeat, close c1, fail all connectionLost",
            phase: "idle"),
        Row(
            name: "a drop of a logged-in session starts a round", setup: loggedIn, input: "drop",
            actions:
                "stop heartbeat, close c1, fail notResendable connectionLost, reconnect r1, tell reconnecting connectionLost",
            phase: "reconnecting r1 session@a"),
        Row(
            name: "a close of a connection no longer in use changes nothing", setup: loggedIn + " drop try back",
            input: "drop-old", actions: "", phase: "connected c2 session@a"),
        Row(name: "a heard tick pings", setup: loggedIn + " frame", input: "tick", actions: "ping", phase: "connected c1 session@a"),
        Row(
            name: "a silent tick warns the app", setup: loggedIn + " tick", input: "tick",
            actions: "tell heartbeatMissed, ping", phase: "connected c1 session@a"),
        Row(
            name: "a frame after a silent tick is an answer", setup: loggedIn + " tick tick frame", input: "tick",
            actions: "tell heartbeatAnswered, ping", phase: "connected c1 session@a"),
        Row(
            name: "two silent ticks drop the connection and the next address goes first",
            setup: loggedIn + " tick tick", input: "tick",
            actions:
                "stop heartbeat, close c1, fail notResendable connectionLost, reconnect r1, tell reconnecting connectionLost",
            phase: "reconnecting r1 session@b"),
        Row(
            name: "ticks while reconnecting do nothing", setup: loggedIn + " drop", input: "tick", actions: "",
            phase: "reconnecting r1 session@a"),
        Row(
            name: "a path change while connected reconnects at once", setup: loggedIn, input: "path",
            actions:
                "tell pathChanged, stop heartbeat, close c1, fail notResendable connectionLost, reconnect r1 now, tell reconnecting connectionLost",
            phase: "reconnecting r1 session@a"),
        Row(
            name: "a path change while an attempt logs in starts a new round at once", setup: loggedIn + " drop try",
            input: "path", actions: "tell pathChanged, close c2, fail notResendable connectionLost, reconnect r2 now",
            phase: "reconnecting r2 session@a"),
        Row(name: "a path change before the login is answered does nothing", setup: "open", input: "path", actions: "", phase: "connected c1"),
        Row(name: "a path change with no session does nothing", input: "path", actions: "", phase: "idle"),
        Row(
            name: "an attempt that connects logs in on its connection", setup: loggedIn + " drop", input: "try", actions: "",
            phase: "reconnecting r1 trying c2 session@a"),
        Row(
            name: "an attempt of a round gone by that connects late steps aside", setup: loggedIn + " drop path",
            input: "late", actions: "not wanted", phase: "reconnecting r2 session@a"),
        Row(
            name: "frames of the connection an attempt logs in on are read", setup: loggedIn + " drop try", input: "frame",
            actions: "read", phase: "reconnecting r1 trying c2 session@a"),
        Row(
            name: "frames of a connection gone by are not", setup: loggedIn + " drop try", input: "frame-old",
            actions: "ignored", phase: "reconnecting r1 trying c2 session@a"),
        Row(
            name: "the login again resends the requests and tells the app", setup: loggedIn + " drop try", input: "back",
            actions: "heartbeat 10s, resend on c2, tell reconnected afterRestart=false", phase: "connected c2 session@a"),
        Row(
            name: "after the server said it was going away the next address goes first, and the app hears why",
            setup: loggedIn + " away drop try", input: "back",
            actions: "heartbeat 10s, resend on c2, tell reconnected afterRestart=true", phase: "connected c2 session@b"),
        Row(
            name: "the going-away notice is told once", setup: loggedIn + " away drop try back drop try", input: "back",
            actions: "heartbeat 10s, resend on c3, tell reconnected afterRestart=false", phase: "connected c3 session@b"),
        Row(
            name: "a login refused for good ends the session", setup: loggedIn + " drop try", input: "refused",
            actions:
                "stop reconnecting, stop watching paths, stop heartbeat, close c2, fail all userSigExpired, tell sessionLost userSigExpired",
            phase: "idle"),
        Row(
            name: "a refusal for good of an attempt a path change replaced changes nothing",
            setup: loggedIn + " drop try path try", input: "refused-old", actions: "",
            phase: "reconnecting r2 trying c3 session@a"),
        Row(
            name: "an answer to an attempt a path change replaced is not taken", setup: loggedIn + " drop try path try",
            input: "back-old", actions: "", phase: "reconnecting r2 trying c3 session@a"),
        Row(
            name: "a login that failed otherwise lets the attempt go and the round goes on", setup: loggedIn + " drop try",
            input: "failed", actions: "close c2", phase: "reconnecting r1 session@a"),
        Row(
            name: "the attempt's connection dropping starts a new round", setup: loggedIn + " drop try", input: "drop",
            actions:
                "stop heartbeat, close c2, fail notResendable connectionLost, reconnect r2, tell reconnecting connectionLost",
            phase: "reconnecting r2 session@a"),
        Row(
            name: "a failed attempt is told", setup: loggedIn + " drop", input: "attempt-failed",
            actions: "tell reconnectAttemptFailed 1", phase: "reconnecting r1 session@a"),
        Row(
            name: "a failed attempt of a round gone by is not", setup: loggedIn + " drop path", input: "attempt-failed-old",
            actions: "", phase: "reconnecting r2 session@a"),
        Row(
            name: "a replaced device ends the session and is told", setup: loggedIn, input: "replaced",
            actions:
                "stop reconnecting, stop watching paths, stop heartbeat, close c1, fail all sessionReplaced, tell sessionLost sessionReplaced",
            phase: "idle"),
        Row(
            name: "a logout while reconnecting ends the round", setup: loggedIn + " drop try", input: "end",
            actions: "stop reconnecting, stop watching paths, stop heartbeat, close c2, fail all notConnected",
            phase: "idle"),
        Row(
            name: "a connection opened for a new login closes the one before", setup: "open", input: "open",
            actions: "close c1", phase: "connected c2"),
        Row(
            name: "a first login answered after its connection dropped does not begin a session",
            setup: "open drop", input: "login", actions: "refused", phase: "idle"),
    ]

    @Test(arguments: rows)
    func rule(_ row: Row) {
        var driver = Driver()
        for word in row.setup.split(separator: " ") { _ = driver.play(String(word)) }
        let actions = driver.play(row.input)
        #expect(actions == row.actions)
        #expect(driver.describePhase() == row.phase)
    }

    /// Plays the words of the table on a lifecycle of named connections.
    struct Driver {
        var lifecycle = SignalingLifecycle<String>()
        var opened = 0
        var round = 0
        var attempts = 0

        mutating func connection() -> String {
            opened += 1
            return "c\(opened)"
        }

        /// The generation of the open connection (c1 is 1, and so on: one generation per connection).
        var openGeneration: Int {
            switch lifecycle.phase {
            case .idle: 0
            case .connected(let link, _): link.generation
            case .reconnecting(_, let trying, _): trying?.generation ?? 0
            }
        }

        mutating func play(_ word: String) -> String {
            if case .reconnecting(let current, _, _) = lifecycle.phase, current != round {
                round = current
                attempts = 0
            }
            switch word {
            case "open": return describe(lifecycle.opened(connection()).1)
            case "login":
                let actions = lifecycle.loggedIn(
                    generation: opened, SignalingLifecycleTests.login, urls: SignalingLifecycleTests.urls, at: 0,
                    heartbeat: .seconds(10))
                return actions.map(describe) ?? "refused"
            case "drop": return describe(lifecycle.closed(generation: openGeneration))
            case "drop-old": return describe(lifecycle.closed(generation: 1))
            case "tick": return describe(lifecycle.tick())
            case "frame": return lifecycle.heard(generation: openGeneration) ? "read" : "ignored"
            case "frame-old": return lifecycle.heard(generation: 1) ? "read" : "ignored"
            case "away":
                lifecycle.serverGoingAway()
                return ""
            case "replaced": return describe(lifecycle.sessionReplaced(SwitchboardError(.sessionReplaced)))
            case "path": return describe(lifecycle.pathChanged())
            case "try":
                _ = lifecycle.address(forAttempt: attempts, round: round)
                attempts += 1
                return lifecycle.attemptConnected(connection(), round: round) == nil ? "not wanted" : ""
            case "late":
                return lifecycle.attemptConnected(connection(), round: round - 1) == nil ? "not wanted" : ""
            case "back":
                return describe(
                    lifecycle.attemptLoggedIn(
                        generation: openGeneration, SignalingLifecycleTests.response, heartbeat: .seconds(10)))
            case "refused": return describe(lifecycle.attemptRefused(generation: openGeneration, SwitchboardError(.userSigExpired)))
            case "refused-old": return describe(lifecycle.attemptRefused(generation: 2, SwitchboardError(.userSigExpired)))
            case "back-old":
                return describe(
                    lifecycle.attemptLoggedIn(generation: 2, SignalingLifecycleTests.response, heartbeat: .seconds(10)))
            case "failed": return describe(lifecycle.attemptRefused(generation: openGeneration, SwitchboardError(.requestTimedOut)))
            case "attempt-failed": return describe(lifecycle.attemptFailed(1, round: round))
            case "attempt-failed-old": return describe(lifecycle.attemptFailed(1, round: round - 1))
            case "end": return describe(lifecycle.end(SwitchboardError(.notConnected)))
            default:
                Issue.record("unknown input \(word)")
                return ""
            }
        }

        func describePhase() -> String {
            func session(_ session: SignalingLifecycle<String>.Session?) -> String {
                guard let session else { return "" }
                let host = session.addresses.urls[session.addresses.index].host()?.prefix(1) ?? "-"
                return " session@\(host)"
            }
            switch lifecycle.phase {
            case .idle:
                return "idle"
            case .connected(let link, let current):
                return "connected \(link.connection)\(session(current))"
            case .reconnecting(let round, let trying, let current):
                return "reconnecting r\(round)\(trying.map { " trying \($0.connection)" } ?? "")\(session(current))"
            }
        }

        func describe(_ actions: [SignalingLifecycle<String>.Action]) -> String {
            actions.map { action in
                switch action {
                case .close(let connection): "close \(connection)"
                case .startHeartbeat(let every): "heartbeat \(every.components.seconds)s"
                case .stopHeartbeat: "stop heartbeat"
                case .ping: "ping"
                case .watchPaths: "watch paths"
                case .stopWatchingPaths: "stop watching paths"
                case .startReconnecting(let round, let immediately): "reconnect r\(round)\(immediately ? " now" : "")"
                case .stopReconnecting: "stop reconnecting"
                case .failRequests(let which, let error): "fail \(which) \(error.code.name)"
                case .resendRequests(let connection): "resend on \(connection)"
                case .tell(let event): "tell \(Self.describe(event))"
                }
            }.joined(separator: ", ")
        }

        static func describe(_ event: SignalingClient.ConnectionEvent) -> String {
            switch event {
            case .reconnecting(let error): "reconnecting \(error.code.name)"
            case .pathChanged: "pathChanged"
            case .reconnectAttemptFailed(let attempt, _): "reconnectAttemptFailed \(attempt)"
            case .heartbeatMissed: "heartbeatMissed"
            case .heartbeatAnswered: "heartbeatAnswered"
            case .reconnected(_, let afterRestart): "reconnected afterRestart=\(afterRestart)"
            case .sessionLost(let error): "sessionLost \(error.code.name)"
            }
        }
    }
}
