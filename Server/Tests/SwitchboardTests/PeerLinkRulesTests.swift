import SwitchboardProtocol
import Testing

@testable import Switchboard

/// The negotiation rules of one peer connection as a table (``PeerLinkRules``): each row plays a
/// script of inputs on the polite or the impolite side, then one more, and compares that input's
/// actions and the state it leaves, written on one line each.
///
/// Inputs: `needed` (the engine needs negotiation), `answered` (this side answered the peer's
/// offer), `expect` (an agreed media change is coming), `failed` (ICE failed here), `asked` (the
/// peer asks for a restart), `connected` (ICE connected), `network` (the network changed),
/// `close`, `offer@stable` / `offer@have-local-offer` / `answer@have-local-offer` (a description
/// from the peer while the engine is in that state), `making` (this side's offer is being made),
/// `made` (it is done).
struct PeerLinkRulesTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var polite: Bool
        var setup: String = ""
        var input: String
        var result: String
        var state: String

        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "the offerer starts", polite: false, input: "start", result: "offer", state: "negotiating path=unknown restarts=0"),
        Row(name: "the polite side does not", polite: true, input: "start", result: "", state: "awaiting path=unknown restarts=0"),
        Row(
            name: "the polite side's need waits for the first offer", polite: true, input: "needed", result: "",
            state: "awaiting(needed) path=unknown restarts=0"),
        Row(
            name: "and is met once it answered", polite: true, setup: "needed", input: "answered", result: "offer",
            state: "negotiating path=unknown restarts=0"),
        Row(
            name: "an answer with no need waiting offers nothing", polite: true, input: "answered", result: "",
            state: "negotiating path=unknown restarts=0"),
        Row(
            name: "after the first answer either side negotiates", polite: true, setup: "answered", input: "needed",
            result: "offer", state: "negotiating path=unknown restarts=0"),
        Row(
            name: "an agreed media change makes the polite side wait for the offer again", polite: true,
            setup: "answered expect", input: "needed", result: "", state: "awaiting(needed) path=unknown restarts=0"),
        Row(
            name: "the offerer does not wait for an agreed change", polite: false, setup: "expect", input: "needed",
            result: "offer", state: "negotiating path=unknown restarts=0"),
        Row(
            name: "the impolite side ignores an offer that crosses its own", polite: false, setup: "making",
            input: "offer@have-local-offer", result: "ignore", state: "negotiating path=unknown restarts=0 ignoring"),
        Row(
            name: "even while its offer is being made from a stable state", polite: false, setup: "making",
            input: "offer@stable", result: "ignore", state: "negotiating path=unknown restarts=0 ignoring"),
        Row(
            name: "the polite side applies it (rolling its own back)", polite: true, setup: "answered making",
            input: "offer@have-local-offer", result: "apply", state: "negotiating path=unknown restarts=0"),
        Row(
            name: "an offer in a stable state is applied", polite: false, setup: "making made", input: "offer@stable",
            result: "apply", state: "negotiating path=unknown restarts=0"),
        Row(
            name: "an answer is always applied", polite: false, setup: "making", input: "answer@have-local-offer",
            result: "apply", state: "negotiating path=unknown restarts=0 applying-answer"),
        Row(
            name: "ICE failing on the offerer reports the peer down and restarts", polite: false, input: "failed",
            result: "down, offer(restart)", state: "negotiating path=down restarts=1"),
        Row(
            name: "ICE failing on the polite side asks the offerer", polite: true, setup: "answered", input: "failed",
            result: "down, ask", state: "negotiating path=down restarts=1"),
        Row(
            name: "the peer is reported down once", polite: false, setup: "failed", input: "failed",
            result: "offer(restart)", state: "negotiating path=down restarts=2"),
        Row(
            name: "restarts stop at the bound", polite: false, setup: "failed failed failed", input: "failed", result: "",
            state: "negotiating path=down restarts=3"),
        Row(
            name: "the offerer honours a request even at the bound, and counts it", polite: false,
            setup: "failed failed failed", input: "asked", result: "offer(restart)", state: "negotiating path=down restarts=4"),
        Row(
            name: "a request over a connected path reports nothing", polite: false, setup: "connected", input: "asked",
            result: "offer(restart)", state: "negotiating path=up restarts=1"),
        Row(
            name: "a request with no path known reports the peer down", polite: false, input: "asked",
            result: "down, offer(restart)", state: "negotiating path=down restarts=1"),
        Row(
            name: "ICE connecting reports the peer back and counts from zero", polite: false,
            setup: "failed failed failed", input: "connected", result: "up", state: "negotiating path=up restarts=0"),
        Row(
            name: "a network change restarts with a fresh count", polite: true, setup: "answered failed failed failed",
            input: "network", result: "ask", state: "negotiating path=down restarts=1"),
        Row(
            name: "closing with the peer down reports it reachable", polite: false, setup: "failed", input: "close",
            result: "up", state: "closed path=unknown restarts=1"),
        Row(
            name: "a closed link asks for nothing", polite: false, setup: "close", input: "failed", result: "",
            state: "closed path=unknown restarts=0"),
        Row(
            name: "nor negotiates", polite: false, setup: "close", input: "needed", result: "",
            state: "closed path=unknown restarts=0"),
        Row(
            name: "nor reopens for an agreed change", polite: true, setup: "answered close expect", input: "needed",
            result: "", state: "closed path=unknown restarts=0"),
    ]

    @Test(arguments: rows)
    func rule(_ row: Row) {
        var rules = PeerLinkRules(polite: row.polite)
        for word in row.setup.split(separator: " ") { _ = Self.play(String(word), on: &rules) }
        #expect(Self.play(row.input, on: &rules) == row.result)
        #expect(Self.describe(rules) == row.state)
    }

    static func play(_ word: String, on rules: inout PeerLinkRules) -> String {
        switch word {
        case "start": return describe(rules.start())
        case "needed": return describe(rules.negotiationNeeded())
        case "answered": return describe(rules.answered())
        case "expect":
            rules.expectOffer()
            return ""
        case "failed": return describe(rules.iceFailed())
        case "asked": return describe(rules.restartAsked())
        case "connected": return describe(rules.iceConnected())
        case "network": return describe(rules.networkChanged())
        case "close": return describe(rules.close())
        case "making":
            rules.offerStarted()
            return ""
        case "made":
            rules.offerDone()
            return ""
        case "offer@stable": return "\(rules.received(.offer, engine: .stable))"
        case "offer@have-local-offer": return "\(rules.received(.offer, engine: .haveLocalOffer))"
        case "answer@have-local-offer": return "\(rules.received(.answer, engine: .haveLocalOffer))"
        default:
            Issue.record("unknown input \(word)")
            return ""
        }
    }

    static func describe(_ actions: [PeerLinkRules.Action]) -> String {
        actions.map { action in
            switch action {
            case .offer(let iceRestart): iceRestart ? "offer(restart)" : "offer"
            case .askForRestart: "ask"
            case .report(let reachable): reachable ? "up" : "down"
            }
        }.joined(separator: ", ")
    }

    static func describe(_ rules: PeerLinkRules) -> String {
        let phase =
            switch rules.phase {
            case .awaitingOffer(let needed): needed ? "awaiting(needed)" : "awaiting"
            case .negotiating: "negotiating"
            case .closed: "closed"
            }
        var line = "\(phase) path=\(rules.path) restarts=\(rules.restartsInARow)"
        if rules.ignoringOffer { line += " ignoring" }
        if rules.applyingAnswer { line += " applying-answer" }
        return line
    }
}
