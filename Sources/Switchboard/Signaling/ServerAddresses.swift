import Foundation

/// The server's addresses (several nodes, or one behind a load balancer), the one the session
/// uses, and the rule for which one a reconnect tries: the one in use first, unless it is going
/// away (it said `sessionEnded` `shuttingDown`) or stopped answering; then the others in turn.
struct ServerAddresses: Sendable, Equatable {
    private(set) var urls: [URL] = []
    /// The address in use.
    private(set) var index = 0
    /// The server said it was going away before this drop: the calls go on, the network did not change.
    private(set) var serverRestarting = false

    /// Logged in on `urls[index]`.
    mutating func loggedIn(_ urls: [URL], at index: Int) {
        self.urls = urls
        self.index = index
    }

    var isEmpty: Bool { urls.isEmpty }

    /// The server said it is going away (restarting, or handing its calls to another node).
    mutating func serverSaidGoingAway() {
        serverRestarting = true
    }

    /// The connection dropped. A node that is going away, or that stopped answering
    /// (`stoppedAnswering`), is not tried first: the next address is. (Tried first, a node cut off
    /// from this device costs a connect attempt's bound, 10 s, which the server's reconnect grace,
    /// counted from its own earlier detection, does not have to spare.)
    mutating func dropped(stoppedAnswering: Bool) {
        if serverRestarting || stoppedAnswering { advance() }
    }

    /// The address reconnect attempt `attempt` (0 the first of a round) goes to: the first to the
    /// address in use, later ones round the others.
    mutating func address(forAttempt attempt: Int) -> URL? {
        if attempt > 0 { advance() }
        return urls.isEmpty ? nil : urls[index]
    }

    /// Logged in again; whether the server had said it was going away before the drop.
    mutating func reconnected() -> Bool {
        defer { serverRestarting = false }
        return serverRestarting
    }

    private mutating func advance() {
        guard !urls.isEmpty else { return }
        index = (index + 1) % urls.count
    }
}
