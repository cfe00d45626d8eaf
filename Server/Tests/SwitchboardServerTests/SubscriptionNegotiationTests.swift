import Testing

@testable import SwitchboardServer

/// ``SubscriptionNegotiation``: news of the room's publishers goes to Janus at once while no offer
/// of Janus's waits for the device's answer, and waits (one entry per publisher, the room's
/// members only) while one does; the answer releases what waited.
struct SubscriptionNegotiationTests {
    /// One step and what it returns (the publishers' ids, with the display of each where the row
    /// says it).
    enum Step: Sendable, CustomStringConvertible {
        /// News of these publishers (`id` or `id:display`), with the room's feeds now.
        case news([String], live: Set<UInt64>)
        case offerSent
        case answered

        var description: String {
            switch self {
            case .news(let publishers, let live): "news \(publishers) live \(live.sorted())"
            case .offerSent: "offer sent"
            case .answered: "answered"
            }
        }
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var name: String
        var steps: [Step]
        /// What each step returned: the publishers to subscribe to now (`id` or `id:display`).
        var expected: [[String]]
        /// Whether an offer is out at the end.
        var offerOut: Bool

        var testDescription: String { name }
    }

    /// The member's own feed in every row.
    static let own: UInt64 = 5

    static let rows: [Row] = [
        Row(
            name: "open: news goes to Janus at once, the member's own feed left out",
            steps: [.news(["1", "5"], live: [1, 5])],
            expected: [["1"]], offerOut: false),
        Row(
            name: "an offer out: news waits, and the answer releases it; then news goes at once again",
            steps: [.offerSent, .news(["1", "2"], live: [1, 2, 5]), .answered, .news(["3"], live: [1, 2, 3, 5])],
            expected: [[], [], ["1", "2"], ["3"]], offerOut: false),
        Row(
            name: "a publisher's latest news replaces its earlier while it waits",
            steps: [.offerSent, .news(["1:camera"], live: [1, 5]), .news(["1:camera+screen"], live: [1, 5]), .answered],
            expected: [[], [], [], ["1:camera+screen"]], offerOut: false),
        Row(
            name: "news of a publisher who left the room meanwhile is dropped",
            steps: [.offerSent, .news(["1", "2"], live: [1, 2, 5]), .news(["3"], live: [2, 3, 5]), .answered],
            expected: [[], [], [], ["2", "3"]], offerOut: false),
        Row(
            name: "the member's own feed never waits",
            steps: [.offerSent, .news(["5", "1"], live: [1, 5]), .answered],
            expected: [[], [], ["1"]], offerOut: false),
        Row(
            name: "a second offer while one is out keeps what waits",
            steps: [.offerSent, .news(["1"], live: [1, 5]), .offerSent, .answered],
            expected: [[], [], [], ["1"]], offerOut: false),
        Row(
            name: "an answer with no offer out releases nothing",
            steps: [.answered, .news(["1"], live: [1, 5])],
            expected: [[], ["1"]], offerOut: false),
        Row(
            name: "an offer out at the end",
            steps: [.news(["1"], live: [1, 5]), .offerSent, .news(["2"], live: [1, 2, 5])],
            expected: [["1"], [], []], offerOut: true),
    ]

    @Test(arguments: rows) func news(_ row: Row) {
        var negotiation = SubscriptionNegotiation()
        var returned: [[String]] = []
        for step in row.steps {
            switch step {
            case .news(let publishers, let live):
                let now = negotiation.news(publishers.map(Self.publisher), liveFeeds: live, own: Self.own)
                returned.append(now.map(Self.name))
            case .offerSent:
                negotiation.offerSent()
                returned.append([])
            case .answered:
                returned.append(negotiation.answered().map(Self.name))
            }
        }
        #expect(returned == row.expected, "\(row.steps)")
        #expect(negotiation.isOfferOut == row.offerOut)
    }

    static func publisher(_ text: String) -> VideoRoomEvent.Publisher {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        return VideoRoomEvent.Publisher(id: UInt64(parts[0])!, display: parts.count > 1 ? parts[1] : nil, streams: nil)
    }

    static func name(_ publisher: VideoRoomEvent.Publisher) -> String {
        publisher.display.map { "\(publisher.id):\($0)" } ?? "\(publisher.id)"
    }
}
