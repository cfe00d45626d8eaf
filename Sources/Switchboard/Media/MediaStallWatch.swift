import SwitchboardProtocol

/// Which members' media stopped arriving, from the engine's counters of packets received, read
/// once a second: a member from whom packets came, who is expected to send, and from whom no
/// packet arrived for ``limit`` is *stalled* until one arrives again. The store shows a stalled
/// member's network quality as `down`.
///
/// Why here: a member's quality is what their own reports say, and a member whose network is
/// gone sends no reports, so the last one (often `excellent`) stood until the server's heartbeat
/// took the member for dropped, 13 s into a blackout (issue 48). The counters tell within a
/// second or two: every engine counts what it receives (``PeerStatistics``), and a member sends
/// something every 20 ms while their microphone or camera is on (a muted microphone sends
/// silence in the GStreamer engine and in WebRTC; the browser client sends nothing for a muted
/// microphone, so a member with both off is not expected to send and never counts as stalled).
/// With one reading a second a stall shows 2–3 s after the last packet.
///
/// The same rules are the browser client's (`Web/js/stall.js`).
struct MediaStallWatch: Equatable, Sendable {
    /// How long without a packet from a member who sends makes their media stalled, ms.
    static let limit: Int64 = 2_000

    enum Change: Equatable, Sendable {
        /// Nothing arrived from the member for ``limit``.
        case stalled(UserID)
        /// Packets arrive again (or the member is not expected to send, or left).
        case flowing(UserID)
    }

    private struct Member: Equatable, Sendable {
        /// All packets received from the member, as last read.
        var received: Int
        /// When the count last grew (the reading that saw it), nil before any packet came.
        var lastArrival: Int64?
        var expected: Bool
        var stalled = false
    }

    private var members: [UserID: Member] = [:]

    /// A reading: every member's packets received so far (audio, video and screen together),
    /// and who is expected to send (microphone or camera on, or sharing a screen). Returns the
    /// members whose media stalled or flows again.
    mutating func sample(received: [UserID: Int], expected: Set<UserID>, now: Int64) -> [Change] {
        var changes: [Change] = []
        for (user, count) in received.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            let sends = expected.contains(user)
            guard var member = members[user] else {
                members[user] = Member(received: count, lastArrival: count > 0 ? now : nil, expected: sends)
                continue
            }
            // Grown, or a new connection's counters starting again: something arrived.
            if count != member.received && count > 0 {
                member.lastArrival = now
            } else if sends && !member.expected && member.lastArrival != nil {
                // The member just turned their microphone or camera on: their packets are due
                // from now on, not from the last one before.
                member.lastArrival = now
            }
            member.received = count
            member.expected = sends
            let quiet = sends && member.lastArrival.map { now - $0 >= Self.limit } == true
            if quiet != member.stalled {
                member.stalled = quiet
                changes.append(quiet ? .stalled(user) : .flowing(user))
            }
            members[user] = member
        }
        for (user, member) in members where received[user] == nil {
            members[user] = nil
            if member.stalled { changes.append(.flowing(user)) }
        }
        return changes
    }
}
