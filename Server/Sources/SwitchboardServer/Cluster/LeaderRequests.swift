import SwitchboardProtocol

/// What a node must tell the leader before it answers its client, and tells the next leader again
/// if the leader changes meanwhile (telling it twice does no harm).
enum LeaderFollows: Equatable, Sendable {
    /// A device logged in on this node.
    case deviceOnline(UserKey, DeviceID)
    /// A user's blocks changed.
    case blocks(UserKey)
    /// A device registered a token that rings.
    case ringsByPush(UserKey, DeviceID)

    func message(token: UInt64, node: String) -> NodeMessage {
        switch self {
        case .deviceOnline(let user, let device): .deviceOnline(token: token, user: user, device: device, node: node)
        case .blocks(let user): .blocks(token: token, user: user, node: node)
        case .ringsByPush(let user, let device): .ringsByPush(token: token, user: user, device: device, node: node)
        }
    }
}

/// The messages a node sent the leader and waits for the leader to answer, by token
/// (``ClusterNode``'s router). A value: the node keeps it under its lock and resumes the waiters
/// it hands back outside.
///
/// Bounded in time: a message unanswered for the command timeout is refused (``removeStale(now:timeout:)``,
/// every heartbeat), so the table holds at most what a node sends in that time.
struct LeaderRequests<Waiter> {
    struct Request {
        /// What is sent again to a new leader; nil for a request, which is refused then.
        var follows: LeaderFollows?
        var waiter: Waiter
        /// The leader it was sent to.
        var leader: String
        var sentAt: Int64
    }

    private var requests: [UInt64: Request] = [:]
    private var nextToken: UInt64 = 0

    /// Files a message sent to `leader`; returns its token.
    mutating func add(_ waiter: Waiter, follows: LeaderFollows? = nil, to leader: String, now: Int64) -> UInt64 {
        nextToken += 1
        requests[nextToken] = Request(follows: follows, waiter: waiter, leader: leader, sentAt: now)
        return nextToken
    }

    /// The leader answered `token`: its waiter (nil: not waiting here any more).
    mutating func answer(_ token: UInt64) -> Waiter? {
        requests.removeValue(forKey: token)?.waiter
    }

    /// `leader` leads now: what was sent to another leader and must be told again goes to it
    /// (returned, to send; its time starts again), and the requests are refused (returned: the old
    /// leader may have carried them out, and the client decides whether to ask again).
    mutating func leaderChanged(to leader: String, now: Int64) -> (resend: [(UInt64, LeaderFollows)], refused: [Waiter]) {
        var resend: [(UInt64, LeaderFollows)] = []
        for (token, request) in requests.sorted(by: { $0.key < $1.key }) where request.leader != leader {
            guard let follows = request.follows else { continue }
            requests[token]?.leader = leader
            requests[token]?.sentAt = now
            resend.append((token, follows))
        }
        return (resend, removeAll { $0.leader != leader })
    }

    /// Removes the messages that meet `condition`, oldest first, and returns their waiters.
    mutating func removeAll(where condition: (Request) -> Bool) -> [Waiter] {
        let tokens = requests.filter { condition($0.value) }.map(\.key).sorted()
        return tokens.compactMap { requests.removeValue(forKey: $0)?.waiter }
    }

    /// Removes the messages unanswered for more than `timeout` ms and returns their waiters.
    mutating func removeStale(now: Int64, timeout: Int64) -> [Waiter] {
        removeAll { now - $0.sentAt > timeout }
    }
}

extension LeaderRequests: Sendable where Waiter: Sendable {}
extension LeaderRequests.Request: Sendable where Waiter: Sendable {}
