import Testing

@testable import SwitchboardServer

/// The rules of ``Leadership``: who node "a" takes for the leader, and what each input tells it
/// to do.
struct LeadershipTests {
    enum Step: Sendable, CustomStringConvertible {
        case tookLead(term: Int64)
        case stepDown
        case leave
        case learn(String, term: Int64)
        case leaderLeft(String)

        var description: String {
            switch self {
            case .tookLead(let term): "took the lead for term \(term)"
            case .stepDown: "steps down"
            case .leave: "leaves"
            case .learn(let node, let term): "hears \(node) leads as of term \(term)"
            case .leaderLeft(let node): "hears \(node) left"
            }
        }
    }

    /// What a step returned: whether it holds (a Bool transition) or what was learned.
    enum Outcome: Equatable, Sendable {
        case yes, no
        case learned(Leadership.Learned)
    }

    /// Each case: steps from a fresh node "a", each with what it returns and the phase and term
    /// after it.
    static let cases: [(String, [(Step, Outcome, Leadership.Phase, Int64)])] = [
        (
            "a node follows the first leader it hears of, then only newer terms",
            [
                (.learn("b", term: 3), .learned(.followed), .following("b"), 3),
                (.learn("c", term: 2), .learned(.ignored), .following("b"), 3),
                (.learn("c", term: 3), .learned(.ignored), .following("b"), 3),
                (.learn("c", term: 4), .learned(.followed), .following("c"), 4),
            ]
        ),
        (
            "once its leader left, any leader is taken, an older term's too",
            [
                (.learn("b", term: 3), .learned(.followed), .following("b"), 3),
                (.leaderLeft("c"), .no, .following("b"), 3),
                (.leaderLeft("b"), .yes, .following(nil), 3),
                (.learn("c", term: 2), .learned(.followed), .following("c"), 2),
            ]
        ),
        (
            "a leader steps down once and then knows no leader",
            [
                (.tookLead(term: 5), .yes, .leading, 5),
                (.stepDown, .yes, .following(nil), 5),
                (.stepDown, .no, .following(nil), 5),
            ]
        ),
        (
            "a leader ignores older terms and its own leaving message, and is deposed by a newer term",
            [
                (.tookLead(term: 5), .yes, .leading, 5),
                (.learn("b", term: 4), .learned(.ignored), .leading, 5),
                (.leaderLeft("a"), .no, .leading, 5),
                (.learn("b", term: 6), .learned(.deposed), .following("b"), 6),
                (.stepDown, .no, .following("b"), 6),
            ]
        ),
        (
            "a leader that leaves steps down and never leads again",
            [
                (.tookLead(term: 5), .yes, .leading, 5),
                (.leave, .yes, .leaving(nil), 5),
                (.tookLead(term: 7), .no, .leaving(nil), 5),
                (.stepDown, .no, .leaving(nil), 5),
            ]
        ),
        (
            "a follower that leaves keeps its leader to tell, and learns a newer one",
            [
                (.learn("b", term: 3), .learned(.followed), .following("b"), 3),
                (.leave, .no, .leaving("b"), 3),
                (.leaderLeft("b"), .no, .leaving("b"), 3),
                (.learn("c", term: 4), .learned(.followed), .leaving("c"), 4),
                (.tookLead(term: 5), .no, .leaving("c"), 4),
            ]
        ),
    ]

    @Test(arguments: cases.indices) func transitions(_ index: Int) {
        let (name, steps) = Self.cases[index]
        var leadership = Leadership(node: "a")
        #expect(leadership.phase == .following(nil) && leadership.leader == nil && !leadership.isLeader)
        for (step, expected, phase, term) in steps {
            let outcome: Outcome =
                switch step {
                case .tookLead(let term): leadership.tookLead(term: term) ? .yes : .no
                case .stepDown: leadership.stepDown() ? .yes : .no
                case .leave: leadership.leave() ? .yes : .no
                case .learn(let node, let term): .learned(leadership.learn(node, term: term))
                case .leaderLeft(let node): leadership.leaderLeft(node) ? .yes : .no
                }
            #expect(outcome == expected, "\(name): \(step)")
            #expect(leadership.phase == phase, "\(name): \(step)")
            #expect(leadership.term == term, "\(name): \(step)")
            #expect(leadership.isLeader == (phase == .leading), "\(name): \(step)")
            let leader: String? =
                switch phase {
                case .leading: "a"
                case .following(let node), .leaving(let node): node
                }
            #expect(leadership.leader == leader, "\(name): \(step)")
        }
    }
}
