import Foundation
import SwitchboardProtocol

/// `bench json`: the cost of the frames a call sends, in this process: encoding with the server's
/// encoder (``SwitchboardJSON``) against Foundation's `JSONEncoder`, and decoding a request.
struct JSONBenchReport: Codable {
    struct Row: Codable {
        var message: String
        var bytes: Int
        var wireEncoderNanos: Double
        var foundationEncoderNanos: Double
        var speedup: Double
    }
    var iterations: Int
    var rows: [Row]
    var decodeRequestNanos: Double
}

enum JSONBench {
    static let callReceived = #"{"event":"callReceived","data":{"inviterId":"alice","call":{"callId":"5c3a8f2e-1b7d-4e0a-9c21-6f4d2b8e7a10","roomId":"room-42","callType":"oneToOne","mediaType":"audio","callerId":"alice","isEphemeral":false,"timeout":30,"createdAt":1767225600000,"participants":[{"userId":"alice","status":"accept","microphoneOn":true,"cameraOn":false},{"userId":"bob","status":"waiting","inviterId":"alice","microphoneOn":true,"cameraOn":false}]}}}"#
    static let callRecord = #"{"event":"callRecord","data":{"record":{"callId":"5c3a8f2e-1b7d-4e0a-9c21-6f4d2b8e7a10","roomId":"room-42","callType":"oneToOne","mediaType":"audio","callerId":"alice","inviterId":"alice","participantIds":["alice","bob"],"direction":"outgoing","result":"success","startTime":1767225601000,"endTime":1767225630000,"duration":29,"endReason":"hangup","syncTime":1767225630000}}}"#
    static let startCall = #"{"id":"s12.3","type":"call.start","data":{"participantIds":["bob"],"mediaType":"audio"}}"#

    static func run(iterations: Int) throws -> JSONBenchReport {
        let received = try SwitchboardJSON.decode(ServerEvent.self, from: Data(callReceived.utf8))
        let record = try SwitchboardJSON.decode(ServerEvent.self, from: Data(callRecord.utf8))
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.withoutEscapingSlashes]
        var rows: [JSONBenchReport.Row] = []
        for (name, event) in [("event callReceived", received), ("event callRecord", record)] {
            let bytes = try SwitchboardJSON.encode(event).count
            let wire = try time(iterations) { _ = try SwitchboardJSON.encodeString(event) }
            let boxed = try time(iterations) { _ = String(decoding: try foundation.encode(event), as: UTF8.self) }
            rows.append(.init(message: name, bytes: bytes, wireEncoderNanos: wire, foundationEncoderNanos: boxed,
                speedup: (boxed / wire * 10).rounded() / 10))
        }
        let request = Data(startCall.utf8)
        let decode = try time(iterations) {
            _ = try SwitchboardJSON.decode(RequestEnvelope<StartCallRequest>.self, from: request)
        }
        return JSONBenchReport(iterations: iterations, rows: rows, decodeRequestNanos: decode)
    }

    /// Median over 5 rounds of the nanoseconds per call of `body`.
    private static func time(_ iterations: Int, _ body: () throws -> Void) throws -> Double {
        for _ in 0..<max(1, iterations / 10) { try body() }  // warm-up
        var rounds: [Double] = []
        for _ in 0..<5 {
            let start = monotonicNanos()
            for _ in 0..<iterations { try body() }
            rounds.append(Double(monotonicNanos() - start) / Double(iterations))
        }
        return rounds.sorted()[2].rounded()
    }
}
