import NIOWebSocket
import Testing

@testable import SwitchboardServer

/// The parts of a connection's WebSocket handler, each a value with one job, as tables:
/// ``FrameOutput`` (where outgoing frames go and the outgoing budget), ``Liveness`` and
/// ``CloseCodes``. The handler performs their answers; TransportLimitTests and the signaling
/// suites hold the same rules over real sockets.
struct TransportPartsTests {
    /// A script of inputs on an output with a budget of 100 bytes and 3 frames, then one more,
    /// compared with that input's answer and the state it leaves.
    ///
    /// Inputs: `send` (a frame while the socket is writable), `send-stuck` (while it is not),
    /// `wrote:N` (a frame written, N bytes waiting), `writable`, `hold`, `release`, `close`.
    struct OutputRow: CustomTestStringConvertible, Sendable {
        var name: String
        var setup = ""
        var input: String
        var result: String
        var state: String

        var testDescription: String { name }
    }

    static let outputRows: [OutputRow] = [
        OutputRow(name: "an open output writes", input: "send", result: "write", state: "open unwritable=0"),
        OutputRow(
            name: "frames while the socket takes nothing are counted", input: "send-stuck", result: "write",
            state: "open unwritable=1"),
        OutputRow(
            name: "the count starts again when it takes more", setup: "send-stuck send-stuck", input: "writable",
            result: "", state: "open unwritable=0"),
        OutputRow(
            name: "a peer over the frame budget is closed", setup: "send-stuck send-stuck send-stuck send-stuck",
            input: "wrote:0", result: "over", state: "closed"),
        OutputRow(
            name: "at the budget it is not", setup: "send-stuck send-stuck send-stuck", input: "wrote:0", result: "fine",
            state: "open unwritable=3"),
        OutputRow(
            name: "a peer over the byte budget is closed", setup: "send", input: "wrote:101", result: "over",
            state: "closed"),
        OutputRow(name: "at it, not", setup: "send", input: "wrote:100", result: "fine", state: "open unwritable=0"),
        OutputRow(name: "held frames wait", setup: "hold", input: "send", result: "held", state: "holding(1)"),
        OutputRow(
            name: "up to the frame budget", setup: "hold send send send", input: "send", result: "close", state: "closed"),
        OutputRow(
            name: "released in order", setup: "hold send send", input: "release", result: "f1 f2",
            state: "open unwritable=0"),
        OutputRow(name: "releasing what was not held gives nothing", input: "release", result: "", state: "open unwritable=0"),
        OutputRow(name: "a closed output drops frames", setup: "close", input: "send", result: "drop", state: "closed"),
        OutputRow(name: "and does not hold", setup: "close", input: "hold", result: "", state: "closed"),
        OutputRow(name: "closing says it was open", input: "close", result: "was-open", state: "closed"),
        OutputRow(name: "once", setup: "close", input: "close", result: "was-closed", state: "closed"),
    ]

    @Test(arguments: outputRows)
    func output(_ row: OutputRow) {
        var output = FrameOutput(budgetBytes: 100, budgetFrames: 3)
        var sent = 0
        for word in row.setup.split(separator: " ") { _ = Self.play(String(word), on: &output, sent: &sent) }
        #expect(Self.play(row.input, on: &output, sent: &sent) == row.result)
        #expect(Self.describe(output) == row.state)
    }

    @Test func aSilentPeerIsClosedAtTheSecondHeartbeat() {
        var liveness = Liveness()
        #expect(liveness.tick() == .ping)
        liveness.heard()
        #expect(liveness.tick() == .ping)
        #expect(liveness.tick() == .close)
    }

    @Test(arguments: [
        (CloseReason.normal, 1000), (.comeBack, 1012), (.policyViolation, 1008),
    ])
    func closeReasons(_ reason: CloseReason, code: Int) {
        #expect(CloseCodes.code(for: reason) == WebSocketErrorCode(codeNumber: code))
    }

    @Test func errorsOfThePeerHaveTheirCodes() {
        #expect(CloseCodes.code(for: NIOWebSocketFrameAggregator.Error.accumulatedFrameSizeIsTooLarge) == .messageTooLarge)
        #expect(CloseCodes.code(for: NIOWebSocketFrameAggregator.Error.tooManyFragments) == .messageTooLarge)
        #expect(CloseCodes.code(for: NIOWebSocketError.invalidFrameLength) == .messageTooLarge)
        #expect(CloseCodes.code(for: ClientFrameError.unmasked) == .protocolError)
        #expect(CloseCodes.code(for: ClientFrameError.reservedBit) == .protocolError)
        #expect(CloseCodes.code(for: CancellationError()) == nil)
    }

    @Test(arguments: [
        (Optional<Int>.none, 1000), (1000, 1000), (1001, 1001), (1008, 1008), (3000, 3000), (4999, 4999),
        (1005, 1000), (1006, 1000), (1015, 1000), (2999, 1000), (5000, 1000),
    ])
    func thePeersCodeIsEchoedWhereItMayBeSent(_ received: Int?, echoed: Int) {
        #expect(CloseCodes.echo(received.map { WebSocketErrorCode(codeNumber: $0) }) == WebSocketErrorCode(codeNumber: echoed))
    }

    static func play(_ word: String, on output: inout FrameOutput, sent: inout Int) -> String {
        let parts = word.split(separator: ":")
        switch parts[0] {
        case "send", "send-stuck":
            sent += 1
            return "\(output.send("f\(sent)", writable: parts[0] == "send"))"
        case "wrote": return output.wrote(buffered: Int(parts[1])!) ? "over" : "fine"
        case "writable":
            output.writabilityChanged(writable: true)
            return ""
        case "hold":
            output.hold()
            return ""
        case "release": return output.release().joined(separator: " ")
        case "close": return output.close() ? "was-open" : "was-closed"
        default:
            Issue.record("unknown input \(word)")
            return ""
        }
    }

    static func describe(_ output: FrameOutput) -> String {
        switch output.phase {
        case .open: "open unwritable=\(output.framesWhileUnwritable)"
        case .holding(let waiting): "holding(\(waiting.count))"
        case .closed: "closed"
        }
    }
}
