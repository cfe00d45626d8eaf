import Foundation
import SwitchboardProtocol

/// The life of the SDK's signaling session, as a value: which connection carries it, whether it
/// is logged in, the reconnect round under way, and the heartbeat watch of the connection in use.
/// Each input (a connection opened or closed, a login answered or refused, a heartbeat tick, a
/// network path change, a reconnect attempt's outcome) changes the phase and returns the actions
/// that ``SignalingClient`` runs. The client owns the sockets, the timers and the pending requests;
/// this value makes every decision about them.
///
/// Each connection gets a generation: frames and closes of a connection that is no longer the one
/// in use (or the one a reconnect attempt logs in on) are ignored. Each reconnect round gets a
/// number: an attempt of an earlier round that connects late (its SYN crossed a link that came
/// back) steps aside.
struct SignalingLifecycle<Connection> {
    struct Link {
        let connection: Connection
        let generation: Int
        /// A new connection counts as heard.
        var watch = HeartbeatWatch()
    }

    /// What a logged-in session keeps from one connection to the next.
    struct Session: Equatable {
        let login: LoginRequest
        var addresses: ServerAddresses
    }

    enum Phase {
        /// No session: requests are refused.
        case idle
        /// A connection carries the requests. No session yet while its first login is under way.
        case connected(Link, Session?)
        /// The connection dropped and round `round` of reconnect attempts runs; `trying` is the
        /// connection an attempt is logging in on, if one connected. Requests wait.
        case reconnecting(round: Int, trying: Link?, Session)
    }

    enum Requests: Equatable {
        /// Pings and logins, which answer a connection that is gone.
        case notResendable
        case all
    }

    enum Action {
        case close(Connection)
        /// Ping every `every`, starting over from now.
        case startHeartbeat(every: Duration)
        case stopHeartbeat
        case ping
        case watchPaths
        case stopWatchingPaths
        /// Start reconnect round `round` in place of any round running: its first attempt at once
        /// (`immediately`) or after the policy's first delay, the next ones with backoff.
        case startReconnecting(round: Int, immediately: Bool)
        case stopReconnecting
        case failRequests(Requests, SwitchboardError)
        /// Send every pending request again, in order, on the connection that took over.
        case resendRequests(on: Connection)
        /// Tell the app (through the login store).
        case tell(SignalingClient.ConnectionEvent)
    }

    private(set) var phase = Phase.idle
    private var lastGeneration = 0
    private var lastRound = 0

    // MARK: - reading the phase

    /// Requests are accepted: sent now, or after the reconnect.
    var isActive: Bool {
        if case .idle = phase { false } else { true }
    }

    /// The connection requests go out on now (none while reconnecting: they wait).
    var sendingConnection: Connection? {
        if case .connected(let link, _) = phase { link.connection } else { nil }
    }

    /// Round `round` of reconnect attempts is still the one under way.
    func isReconnecting(round: Int) -> Bool {
        if case .reconnecting(round, _, _) = phase { true } else { false }
    }

    /// What a reconnect attempt logs in with.
    var login: LoginRequest? { session?.login }

    private var session: Session? {
        switch phase {
        case .idle: nil
        case .connected(_, let session): session
        case .reconnecting(_, _, let session): session
        }
    }

    /// The connection this phase holds open: the one in use, or the one an attempt logs in on.
    private var openLink: Link? {
        switch phase {
        case .idle: nil
        case .connected(let link, _): link
        case .reconnecting(_, let trying, _): trying
        }
    }

    // MARK: - a first login

    /// A connection opened for a first login; returns its generation. Whatever was open before
    /// is closed.
    mutating func opened(_ connection: Connection) -> (generation: Int, [Action]) {
        let before = openLink.map { [Action.close($0.connection)] } ?? []
        lastGeneration += 1
        phase = .connected(Link(connection: connection, generation: lastGeneration), nil)
        return (lastGeneration, before)
    }

    /// The first login on connection `generation` was answered: the session begins. Nil when
    /// that connection is no longer the one in use (it dropped while the answer was on its way),
    /// so the login failed after all.
    mutating func loggedIn(
        generation: Int, _ login: LoginRequest, urls: [URL], at index: Int, heartbeat: Duration
    ) -> [Action]? {
        guard case .connected(let link, nil) = phase, link.generation == generation else { return nil }
        var addresses = ServerAddresses()
        addresses.loggedIn(urls, at: index)
        phase = .connected(link, Session(login: login, addresses: addresses))
        return [.startHeartbeat(every: heartbeat), .watchPaths]
    }

    /// The session ends: logout, a failed first login, a final refusal, a replaced device.
    mutating func end(_ error: SwitchboardError) -> [Action] {
        var actions: [Action] = [.stopReconnecting, .stopWatchingPaths, .stopHeartbeat]
        if let link = openLink { actions.append(.close(link.connection)) }
        phase = .idle
        actions.append(.failRequests(.all, error))
        return actions
    }

    // MARK: - the connection in use

    /// A frame came on connection `generation`; whether to read it. Frames are read from the
    /// connection in use and from the one an attempt logs in on (the server's events may follow
    /// its login answer before the attempt has taken it in).
    mutating func heard(generation: Int) -> Bool {
        switch phase {
        case .connected(var link, let session) where link.generation == generation:
            link.watch.heard()
            phase = .connected(link, session)
            return true
        case .reconnecting(_, let trying?, _) where trying.generation == generation:
            return true
        default:
            return false
        }
    }

    /// Connection `generation` closed.
    mutating func closed(generation: Int) -> [Action] {
        guard openLink?.generation == generation else { return [] }
        return dropped(SwitchboardError(.connectionLost))
    }

    /// A heartbeat interval is over: ping, or, after two silent intervals, count the connection
    /// as lost and try the next address first.
    mutating func tick() -> [Action] {
        guard case .connected(var link, let session) = phase else { return [] }
        let outcome = link.watch.tick()
        phase = .connected(link, session)
        switch outcome {
        case .lost:
            return dropped(
                SwitchboardError(.connectionLost, "the server stopped answering"), stoppedAnswering: true)
        case .ping(let notice):
            switch notice {
            case .missed: return [.tell(.heartbeatMissed), .ping]
            case .answered: return [.tell(.heartbeatAnswered), .ping]
            case nil: return [.ping]
            }
        }
    }

    /// The server said it is going away (restarting, or handing its calls to another node): the
    /// next drop tries another address first and is no change of network.
    mutating func serverGoingAway() {
        guard case .connected(let link, var session?) = phase else { return }
        session.addresses.serverSaidGoingAway()
        phase = .connected(link, session)
    }

    /// Another connection of this device took the session over: coming back would fight it.
    mutating func sessionReplaced(_ error: SwitchboardError) -> [Action] {
        lost(error)
    }

    /// The session is over and will not come back by itself.
    private mutating func lost(_ error: SwitchboardError) -> [Action] {
        end(error) + [.tell(.sessionLost(error))]
    }

    /// The device's network path changed (a link came back, an address changed): whatever the
    /// connection was doing, the quickest way back is a new connection on the new path now, not
    /// after two silent heartbeats or the next backoff. The server takes the new connection in
    /// place of the old one, and the calls restart ICE once it is logged in (`reconnected`).
    mutating func pathChanged() -> [Action] {
        switch phase {
        case .idle, .connected(_, nil):
            return []
        case .connected(_, .some):
            return [.tell(.pathChanged)]
                + dropped(SwitchboardError(.connectionLost, "the network path changed"), immediately: true)
        case .reconnecting(_, let trying, let session):
            lastRound += 1
            phase = .reconnecting(round: lastRound, trying: nil, session)
            // The attempt logging in belongs to the old path; so does its login.
            let closing: [Action] =
                trying.map {
                    [.close($0.connection), .failRequests(.notResendable, SwitchboardError(.connectionLost))]
                } ?? []
            return [.tell(.pathChanged)] + closing + [.startReconnecting(round: lastRound, immediately: true)]
        }
    }

    /// The connection in use (or the one an attempt logged in on) is gone: a logged-in session
    /// starts a reconnect round, any other ends.
    private mutating func dropped(
        _ error: SwitchboardError, immediately: Bool = false, stoppedAnswering: Bool = false
    ) -> [Action] {
        guard var session else { return end(error) }
        var actions: [Action] = [.stopHeartbeat]
        if let link = openLink { actions.append(.close(link.connection)) }
        session.addresses.dropped(stoppedAnswering: stoppedAnswering)
        lastRound += 1
        phase = .reconnecting(round: lastRound, trying: nil, session)
        // The round's first deadline is fixed before the app hears of it, so a test that moves its
        // clock right after seeing `reconnecting` never races the timer.
        actions += [
            .failRequests(.notResendable, error),
            .startReconnecting(round: lastRound, immediately: immediately),
            .tell(.reconnecting(error)),
        ]
        return actions
    }

    // MARK: - reconnect attempts

    /// Where attempt `attempt` (0 the first) of round `round` goes: the address in use first, then
    /// round the others. Nil when the round is over.
    mutating func address(forAttempt attempt: Int, round: Int) -> URL? {
        guard case .reconnecting(round, let trying, var session) = phase else { return nil }
        let url = session.addresses.address(forAttempt: attempt)
        phase = .reconnecting(round: round, trying: trying, session)
        return url
    }

    /// An attempt of round `round` connected: the generation to log in on, or nil when the round
    /// is over (the connection is not wanted: close it).
    mutating func attemptConnected(_ connection: Connection, round: Int) -> Int? {
        guard case .reconnecting(round, nil, let session) = phase else { return nil }
        lastGeneration += 1
        phase = .reconnecting(
            round: round, trying: Link(connection: connection, generation: lastGeneration), session)
        return lastGeneration
    }

    /// The login on attempt connection `generation` was answered: the session is back on it.
    mutating func attemptLoggedIn(generation: Int, _ response: LoginResponse, heartbeat: Duration) -> [Action] {
        guard case .reconnecting(_, let trying?, var session) = phase, trying.generation == generation else {
            return []
        }
        let afterRestart = session.addresses.reconnected()
        phase = .connected(Link(connection: trying.connection, generation: generation), session)
        return [
            .startHeartbeat(every: heartbeat),
            .resendRequests(on: trying.connection),
            .tell(.reconnected(response, afterRestart: afterRestart)),
        ]
    }

    /// The login on attempt connection `generation` failed: after a final refusal the session
    /// ends; otherwise that connection is let go and the round goes on.
    mutating func attemptRefused(generation: Int, _ error: SwitchboardError) -> [Action] {
        guard case .reconnecting(let round, let trying?, let session) = phase, trying.generation == generation else {
            return []
        }
        if Self.isFinal(error) { return lost(error) }
        phase = .reconnecting(round: round, trying: nil, session)
        return [.close(trying.connection)]
    }

    /// Attempt `attempt` of round `round` failed and the next is scheduled.
    func attemptFailed(_ attempt: Int, round: Int) -> [Action] {
        guard isReconnecting(round: round) else { return [] }
        return [.tell(.reconnectAttemptFailed(attempt: attempt, SwitchboardError(.connectionFailed)))]
    }

    /// Errors after which trying again cannot help: the app must log in anew.
    static func isFinal(_ error: SwitchboardError) -> Bool {
        (2000..<3000).contains(error.code.rawValue) || error.code == .unsupportedProtocolVersion
    }
}

extension SignalingLifecycle.Link: Equatable where Connection: Equatable {}
extension SignalingLifecycle.Phase: Equatable where Connection: Equatable {}
extension SignalingLifecycle.Action: Equatable where Connection: Equatable {}
