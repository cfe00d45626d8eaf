import Foundation

/// Encodes `Encodable` values to JSON in one pass, writing each value as it is encoded.
///
/// Foundation's `JSONEncoder` first builds a tree of boxed values, then serializes it; on the
/// server that was a quarter of the CPU a call costs (docs/BENCHMARKS.md, "What limits it"). The
/// output is what `JSONEncoder` with `.withoutEscapingSlashes` and its default strategies writes,
/// except for key order (here: the order of encoding) and whitespace (none): `Data` as base64, `URL`
/// as its absolute string, `Date` as seconds since 2001, `Decimal` as a number, `nil` optionals
/// left out, non-finite floating-point numbers refused, an encoder that writes nothing as `{}`.
///
/// Containers are closed lazily, so they must be used as a stack, as synthesized and ordinary
/// hand-written `encode(to:)` methods do: once a container has been left for a sibling or for its
/// parent, writing to it again throws rather than producing wrong JSON. Coding paths are not
/// tracked (they would cost an allocation per value); errors name the problem, not the path.
enum WireEncoder {
    static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let writer = WireWriter()
        try writer.encodeValue(value, depth: 0)
        try writer.finish()
        return writer.bytes
    }
}

/// The output, the containers still open (outermost first) and one reusable encoder per depth.
final class WireWriter {
    struct Frame {
        var id: Int
        var count: Int
        var closer: UInt8
    }

    // Only this writer touches these, one call at a time: no need for dynamic exclusivity checks,
    // which cost a fifth of the encoding time.
    @exclusivity(unchecked) var bytes: [UInt8] = []
    @exclusivity(unchecked) private var open: [Frame] = []
    @exclusivity(unchecked) private var encoders: [WireValueEncoder] = []
    @exclusivity(unchecked) private var nextID = 0
    /// A key (or an array slot) was written and its value not yet.
    @exclusivity(unchecked) private var pending = true
    /// The first misuse found where the protocol gives no way to throw (opening a container);
    /// `failed` is what the hot paths check.
    @exclusivity(unchecked) private var failure: EncodingError?
    @exclusivity(unchecked) private var failed = false

    init() {
        bytes.reserveCapacity(512)
    }

    func finish() throws {
        if failed, let failure { throw failure }
        settle(depth: 0)
    }

    /// Writes what an abandoned slot needs (`{}`) and closes the containers deeper than `depth`.
    private func settle(depth: Int) {
        if pending {
            bytes.append(contentsOf: "{}".utf8)
            pending = false
        }
        while open.count > depth {
            bytes.append(open.removeLast().closer)
        }
    }

    private func misuse(_ what: String) -> EncodingError {
        let error = EncodingError.invalidValue(
            (), .init(codingPath: [], debugDescription: "\(what): containers must be used in stack order"))
        if !failed {
            failure = error
            failed = true
        }
        return error
    }

    /// The encoder for a value whose slot is at `depth`; one per depth, reset for each value.
    func encoder(at depth: Int) -> WireValueEncoder {
        while encoders.count <= depth {
            encoders.append(WireValueEncoder(writer: self, depth: encoders.count))
        }
        let encoder = encoders[depth]
        encoder.keyed = nil
        return encoder
    }

    // MARK: positions

    /// Claims the slot of a value written by the encoder at `depth`.
    func beginValue(depth: Int) throws {
        guard pending, open.count == depth, !failed else { throw failure ?? misuse("a second value") }
        pending = false
    }

    /// Opens a container at `depth`; nil (and the error remembered) when the slot is taken.
    func openContainer(depth: Int, keyed: Bool) -> Int? {
        guard pending, open.count == depth, !failed else {
            _ = misuse("a container where a value was written")
            return nil
        }
        pending = false
        nextID += 1
        open.append(Frame(id: nextID, count: 0, closer: UInt8(ascii: keyed ? "}" : "]")))
        bytes.append(UInt8(ascii: keyed ? "{" : "["))
        return nextID
    }

    /// Whether container `id` is still open at `depth`.
    func isOpen(_ id: Int, depth: Int) -> Bool {
        open.count > depth && open[depth].id == id
    }

    /// Starts the next element of container `id` (at `depth`): closes what was opened inside the
    /// previous one and writes the separator. The element's value is pending afterwards.
    func beginElement(of id: Int?, depth: Int) throws {
        guard !failed, let id, isOpen(id, depth: depth) else {
            throw failure ?? misuse("a container written after it was left")
        }
        settle(depth: depth + 1)
        if open[depth].count > 0 { bytes.append(UInt8(ascii: ",")) }
        open[depth].count += 1
        pending = true
    }

    func count(of id: Int?, depth: Int) -> Int {
        guard let id, isOpen(id, depth: depth) else { return 0 }
        return open[depth].count
    }

    // MARK: values

    /// Encodes a value into the pending slot at `depth`.
    func encodeValue<T: Encodable>(_ value: T, depth: Int) throws {
        if T.self == Data.self {
            try beginValue(depth: depth)
            writeString((value as! Data).base64EncodedString())
        } else if T.self == URL.self {
            try beginValue(depth: depth)
            writeString((value as! URL).absoluteString)
        } else if T.self == Decimal.self {
            try beginValue(depth: depth)
            bytes.append(contentsOf: (value as! Decimal).description.utf8)
        } else {
            try value.encode(to: encoder(at: depth))
            if pending, open.count == depth {
                // The value encoded nothing: JSONEncoder writes an empty object.
                bytes.append(contentsOf: "{}".utf8)
                pending = false
            }
        }
    }

    func writeKey(_ key: some CodingKey) {
        writeString(key.stringValue)
        bytes.append(UInt8(ascii: ":"))
    }

    func writeNull() {
        bytes.append(contentsOf: "null".utf8)
    }

    func writeBool(_ value: Bool) {
        if value { bytes.append(contentsOf: "true".utf8) } else { bytes.append(contentsOf: "false".utf8) }
    }

    func writeInteger(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        writeInteger(value.magnitude)
    }

    func writeInteger(_ value: UInt64) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: UInt64.max has 20 digits
        var magnitude = value
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                let (quotient, remainder) = magnitude.quotientAndRemainder(dividingBy: 10)
                count += 1
                buffer[24 - count] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: remainder)
                magnitude = quotient
            } while magnitude > 0
            bytes.append(contentsOf: buffer[(24 - count)...])
        }
    }

    /// Shortest round-tripping digits, without a trailing ".0"; non-finite values are refused.
    func writeFloatingPoint<Value: BinaryFloatingPoint & LosslessStringConvertible & Sendable>(_ value: Value) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: [], debugDescription: "Unable to encode \(value) directly in JSON."))
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    func writeString(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            bytes.append(UInt8(ascii: "\""))
            var start = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                start = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [
                        UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)],
                    ])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
            bytes.append(UInt8(ascii: "\""))
        }
    }
}

/// The key a superclass is encoded under, as in Foundation.
struct WireSuperKey: CodingKey {
    var stringValue: String { "super" }
    var intValue: Int? { nil }
    init() {}
    init?(stringValue: String) { nil }
    init?(intValue: Int) { nil }
}

/// The encoder handed to a value at `depth`, and the keyed container it opened (asked twice, by a
/// subclass and its superclass, it gives the same one).
final class WireValueEncoder: Encoder {
    unowned let writer: WireWriter
    let depth: Int
    var keyed: Int?

    init(writer: WireWriter, depth: Int) {
        self.writer = writer
        self.depth = depth
    }

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if keyed == nil || !writer.isOpen(keyed!, depth: depth) {
            keyed = writer.openContainer(depth: depth, keyed: true)
        }
        return KeyedEncodingContainer(WireKeyedContainer(writer: writer, id: keyed, depth: depth))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        WireUnkeyedContainer(writer: writer, id: writer.openContainer(depth: depth, keyed: false), depth: depth)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        WireSingleValueContainer(writer: writer, depth: depth)
    }
}

struct WireKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: WireWriter
    let id: Int?
    let depth: Int

    var codingPath: [any CodingKey] { [] }

    private func begin(_ key: Key) throws {
        try writer.beginElement(of: id, depth: depth)
        writer.writeKey(key)
        try writer.beginValue(depth: depth + 1)
    }

    mutating func encodeNil(forKey key: Key) throws {
        try begin(key)
        writer.writeNull()
    }

    mutating func encode(_ value: Bool, forKey key: Key) throws {
        try begin(key)
        writer.writeBool(value)
    }

    mutating func encode(_ value: String, forKey key: Key) throws {
        try begin(key)
        writer.writeString(value)
    }

    mutating func encode(_ value: Double, forKey key: Key) throws {
        try begin(key)
        try writer.writeFloatingPoint(value)
    }

    mutating func encode(_ value: Float, forKey key: Key) throws {
        try begin(key)
        try writer.writeFloatingPoint(value)
    }

    mutating func encode(_ value: Int, forKey key: Key) throws { try signed(Int64(value), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try signed(Int64(value), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try signed(Int64(value), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try signed(Int64(value), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try signed(value, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try unsigned(UInt64(value), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try unsigned(UInt64(value), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try unsigned(UInt64(value), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try unsigned(UInt64(value), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try unsigned(value, key) }

    private func signed(_ value: Int64, _ key: Key) throws {
        try begin(key)
        writer.writeInteger(value)
    }

    private func unsigned(_ value: UInt64, _ key: Key) throws {
        try begin(key)
        writer.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try writer.beginElement(of: id, depth: depth)
        writer.writeKey(key)
        try writer.encodeValue(value, depth: depth + 1)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        child(key).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        child(key).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        child(WireSuperKey())
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        child(key)
    }

    /// An encoder for the value of `key`; a misuse here surfaces at the next write or at the end.
    private func child(_ key: some CodingKey) -> WireValueEncoder {
        if (try? writer.beginElement(of: id, depth: depth)) != nil {
            writer.writeKey(key)
        }
        return writer.encoder(at: depth + 1)
    }
}

/// The encodes of single values that the unkeyed and the single-value containers share: claim
/// the slot (``begin()``), then write the value.
protocol WireSlotContainer {
    var writer: WireWriter { get }
    func begin() throws
}

extension WireSlotContainer {
    mutating func encodeNil() throws {
        try begin()
        writer.writeNull()
    }

    mutating func encode(_ value: Bool) throws {
        try begin()
        writer.writeBool(value)
    }

    mutating func encode(_ value: String) throws {
        try begin()
        writer.writeString(value)
    }

    mutating func encode(_ value: Double) throws {
        try begin()
        try writer.writeFloatingPoint(value)
    }

    mutating func encode(_ value: Float) throws {
        try begin()
        try writer.writeFloatingPoint(value)
    }

    mutating func encode(_ value: Int) throws { try signed(Int64(value)) }
    mutating func encode(_ value: Int8) throws { try signed(Int64(value)) }
    mutating func encode(_ value: Int16) throws { try signed(Int64(value)) }
    mutating func encode(_ value: Int32) throws { try signed(Int64(value)) }
    mutating func encode(_ value: Int64) throws { try signed(value) }
    mutating func encode(_ value: UInt) throws { try unsigned(UInt64(value)) }
    mutating func encode(_ value: UInt8) throws { try unsigned(UInt64(value)) }
    mutating func encode(_ value: UInt16) throws { try unsigned(UInt64(value)) }
    mutating func encode(_ value: UInt32) throws { try unsigned(UInt64(value)) }
    mutating func encode(_ value: UInt64) throws { try unsigned(value) }

    private func signed(_ value: Int64) throws {
        try begin()
        writer.writeInteger(value)
    }

    private func unsigned(_ value: UInt64) throws {
        try begin()
        writer.writeInteger(value)
    }
}

struct WireUnkeyedContainer: UnkeyedEncodingContainer, WireSlotContainer {
    let writer: WireWriter
    let id: Int?
    let depth: Int

    var codingPath: [any CodingKey] { [] }
    var count: Int { writer.count(of: id, depth: depth) }

    func begin() throws {
        try writer.beginElement(of: id, depth: depth)
        try writer.beginValue(depth: depth + 1)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try writer.beginElement(of: id, depth: depth)
        try writer.encodeValue(value, depth: depth + 1)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        child().container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        child().unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        child()
    }

    private func child() -> WireValueEncoder {
        _ = try? writer.beginElement(of: id, depth: depth)
        return writer.encoder(at: depth + 1)
    }
}

struct WireSingleValueContainer: SingleValueEncodingContainer, WireSlotContainer {
    let writer: WireWriter
    let depth: Int

    var codingPath: [any CodingKey] { [] }

    func begin() throws {
        try writer.beginValue(depth: depth)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        // The same slot: the value's own encode writes it (and claims it).
        try writer.encodeValue(value, depth: depth)
    }
}
