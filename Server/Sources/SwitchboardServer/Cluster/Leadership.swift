/// Who leads the cluster as one node sees it, and whether that node is leaving: a value whose
/// transitions say what the node must do; ``ClusterNode`` carries that out (the lock connection,
/// the engine, the messages). Tested with tables in `LeadershipTests`.
struct Leadership: Equatable, Sendable {
    enum Phase: Equatable, Sendable {
        /// Another node leads; nil while none is known.
        case following(String?)
        /// This node leads.
        case leading
        /// This node is leaving the cluster (it never leads again); the leader it knows is told.
        case leaving(String?)
    }

    /// What a node hears of another node's term (``learn(_:term:)``).
    enum Learned: Equatable, Sendable {
        /// Nothing new.
        case ignored
        /// The node follows this leader now.
        case followed
        /// A newer term than the node's own: it led without knowing it had lost the lock, and must
        /// let go of what it held as leader now (it follows the new leader already).
        case deposed
    }

    /// This node's id.
    let node: String
    private(set) var phase: Phase = .following(nil)
    /// The newest term this node has seen, its own while it leads.
    private(set) var term: Int64 = 0

    init(node: String) {
        self.node = node
    }

    var isLeader: Bool { phase == .leading }

    var isLeaving: Bool {
        if case .leaving = phase { true } else { false }
    }

    /// The leader as far as this node knows (itself while it leads).
    var leader: String? {
        switch phase {
        case .following(let leader), .leaving(let leader): leader
        case .leading: node
        }
    }

    /// This node's takeover for `term` is over. Refused (false) once it is leaving: the node must
    /// let go of the lock it took meanwhile.
    mutating func tookLead(term: Int64) -> Bool {
        guard !isLeaving else { return false }
        phase = .leading
        self.term = term
        return true
    }

    /// This node stops leading; whether it led (and must let go of the lock, the engine's calls).
    mutating func stepDown() -> Bool {
        guard phase == .leading else { return false }
        phase = .following(nil)
        return true
    }

    /// This node leaves; whether it led (and must step down first).
    mutating func leave() -> Bool {
        let led = phase == .leading
        phase = .leaving(led ? nil : leader)
        return led
    }

    /// `leader` leads as of `term` (from its message or the table). A term older than the newest
    /// seen is ignored, unless no leader is known.
    mutating func learn(_ leader: String, term: Int64) -> Learned {
        switch phase {
        case .leading:
            guard term > self.term else { return .ignored }
            phase = .following(leader)
            self.term = term
            return .deposed
        case .following(let known), .leaving(let known):
            guard term > self.term || known == nil else { return .ignored }
            self.term = term
            phase = isLeaving ? .leaving(leader) : .following(leader)
            return .followed
        }
    }

    /// `leaving` said it no longer leads; whether it was this node's leader (which must look for
    /// the next one now rather than at its next heartbeat).
    mutating func leaderLeft(_ leaving: String) -> Bool {
        guard phase == .following(leaving) else { return false }
        phase = .following(nil)
        return true
    }
}
