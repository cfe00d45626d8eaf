import Foundation
import Testing

@testable import SwitchboardProtocol

/// `WireEncoder` against Foundation's `JSONEncoder`: the same JSON for every shape Codable can
/// produce (the golden tests cover every wire message), errors where JSON cannot say it.
@Suite struct WireEncoderTests {
    struct Inner: Codable, Equatable {
        var name: String
        var tags: [String]
        var score: Double?
    }

    enum Shape: Codable, Equatable {
        case circle(radius: Double)
        case labelled(String, Int)
        case empty
    }

    struct Everything: Codable, Equatable {
        var string = "plain"
        var escaped = "quote \" backslash \\ slash / newline \n tab \t bell \u{07} nul \u{0} é 漢字 🎉"
        var int = Int.min
        var int8 = Int8.max
        var uint64 = UInt64.max
        var zero = 0
        var double = 0.1
        var whole = 3.0
        var tiny = Double.leastNonzeroMagnitude
        var huge = 1.7976931348623157e308
        var float: Float = 1.5
        var yes = true
        var no = false
        var missing: String? = nil
        var present: Int? = 7
        var inner = Inner(name: "n", tags: ["a", "b"], score: nil)
        var list = [Inner(name: "x", tags: [], score: 2.5), Inner(name: "y", tags: ["z"], score: nil)]
        var nested = [[1, 2], [], [3]]
        var map = ["b": 2, "a": 1]
        var intKeys = [1: "one", 2: "two"]
        var shapes: [Shape] = [.circle(radius: 2), .labelled("l", 4), .empty]
        var optionals: [Int?] = [1, nil, 3]
        var data = Data([0, 1, 2, 250, 255])
        var url = URL(string: "https://example.com/a/b?c=d")!
        var date = Date(timeIntervalSinceReferenceDate: 12345.5)
        var decimal = Decimal(string: "12.75")!
    }

    class Base: Codable {
        var base = 1
    }

    final class Derived: Base, @unchecked Sendable {
        var derived = "d"
        private enum CodingKeys: String, CodingKey { case derived }
        override init() { super.init() }
        required init(from decoder: any Decoder) throws { fatalError("not decoded here") }
        override func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(derived, forKey: .derived)
            try super.encode(to: container.superEncoder())
        }
    }

    struct EncodesNothing: Encodable {
        func encode(to encoder: any Encoder) throws {}
    }

    /// Parses both encodings and compares them as JSON values.
    func sameJSON<T: Encodable>(_ value: T, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.withoutEscapingSlashes]
        let expected = try JSONSerialization.jsonObject(with: foundation.encode(value), options: .fragmentsAllowed)
        let produced = try WireEncoder.encode(value)
        let parsed = try JSONSerialization.jsonObject(with: Data(produced), options: .fragmentsAllowed)
        #expect(
            (parsed as? NSObject) == (expected as? NSObject),
            "\(String(decoding: produced, as: UTF8.self))", sourceLocation: sourceLocation)
    }

    @Test func matchesFoundationForEveryShape() throws {
        try sameJSON(Everything())
        try sameJSON(Derived())
        try sameJSON([Shape.circle(radius: 1)])
        try sameJSON("top-level string")
        try sameJSON(42)
        try sameJSON([String: [Int]]())
        try sameJSON([Inner]())
        try sameJSON(["k": EncodesNothingBox()])
    }

    struct EncodesNothingBox: Encodable {
        var nothing = EncodesNothing()
        var after = 1
    }

    @Test func decodesBackToTheSameValue() throws {
        let value = Everything()
        let decoded = try JSONDecoder().decode(Everything.self, from: Data(WireEncoder.encode(value)))
        #expect(decoded == value)
    }

    @Test func writesCompactJSONInEncodingOrder() throws {
        #expect(
            String(decoding: try WireEncoder.encode(Inner(name: "a\"b", tags: ["x/y"], score: 1.0)), as: UTF8.self)
                == #"{"name":"a\"b","tags":["x/y"],"score":1}"#)
        #expect(String(decoding: try WireEncoder.encode("\u{1}\r"), as: UTF8.self) == #""\u0001\r""#)
        #expect(String(decoding: try WireEncoder.encode(EncodesNothingBox()), as: UTF8.self) == #"{"nothing":{},"after":1}"#)
        #expect(String(decoding: try WireEncoder.encode([Int64.min, 0, -5]), as: UTF8.self) == "[-9223372036854775808,0,-5]")
    }

    @Test func refusesNumbersJSONCannotHold() {
        #expect(throws: EncodingError.self) { try WireEncoder.encode(["x": Double.nan]) }
        #expect(throws: EncodingError.self) { try WireEncoder.encode([Float.infinity]) }
    }

    /// Writing to a container after leaving it would produce wrong JSON: it throws instead.
    struct OutOfOrder: Encodable {
        enum Keys: String, CodingKey { case a, b }
        func encode(to encoder: any Encoder) throws {
            var outer = encoder.container(keyedBy: Keys.self)
            var first = outer.nestedUnkeyedContainer(forKey: .a)
            var second = outer.nestedUnkeyedContainer(forKey: .b)
            try second.encode(1)
            try first.encode(2)
        }
    }

    struct TwoValues: Encodable {
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(1)
            try container.encode(2)
        }
    }

    @Test func refusesContainersUsedOutOfOrder() {
        #expect(throws: EncodingError.self) { try WireEncoder.encode(OutOfOrder()) }
        #expect(throws: EncodingError.self) { try WireEncoder.encode(TwoValues()) }
    }
}
