/// Where a member's subscription stands in its negotiation with Janus, and what news of the
/// room's publishers does in each place.
///
/// Janus takes no change of a subscription while its last offer for it waits for the device's
/// answer. News that comes meanwhile (a member published, a screen started or stopped) waits, at
/// most one entry per publisher: a publisher's latest news replaces its earlier, and news of a
/// publisher no longer in the room is dropped, so what waits is never more than one entry per
/// member of the call. Once the answer is in, what waited is taken up.
///
///     open ──offerSent──▶ offerOut(waiting) ──answered──▶ open  (and what waited is subscribed to)
///     open: news is subscribed to at once; offerOut: news waits
struct SubscriptionNegotiation: Sendable {
    enum Phase: Sendable {
        /// No offer of Janus's waits for an answer: a change goes to Janus now.
        case open
        /// Janus's offer went to the device and its answer has not come back.
        case offerOut(waiting: [UInt64: VideoRoomEvent.Publisher])
    }

    private(set) var phase = Phase.open

    /// News of `publishers`: those to subscribe to now (none of them the member's own `feed`),
    /// or none while an offer is out, when they wait instead. `liveFeeds` are the feeds of the
    /// room's members now.
    mutating func news(
        _ publishers: [VideoRoomEvent.Publisher], liveFeeds: Set<UInt64>, own feed: UInt64?
    ) -> [VideoRoomEvent.Publisher] {
        let others = publishers.filter { $0.id != feed }
        switch phase {
        case .open:
            return others
        case .offerOut(var waiting):
            for publisher in others { waiting[publisher.id] = publisher }
            phase = .offerOut(waiting: waiting.filter { liveFeeds.contains($0.key) })
            return []
        }
    }

    /// Janus sent an offer for the subscription (to the device): changes wait for its answer.
    mutating func offerSent() {
        if case .open = phase { phase = .offerOut(waiting: [:]) }
    }

    /// The device's answer went to Janus: changes go to Janus again. Returns what waited, to
    /// subscribe to now (in the order of the publishers' ids).
    mutating func answered() -> [VideoRoomEvent.Publisher] {
        defer { phase = .open }
        guard case .offerOut(let waiting) = phase else { return [] }
        return waiting.sorted { $0.key < $1.key }.map(\.value)
    }

    /// Whether an offer waits for the device's answer.
    var isOfferOut: Bool {
        if case .offerOut = phase { true } else { false }
    }
}
