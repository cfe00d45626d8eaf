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
/// parent, writing to it again throws rather than producing wrong JSON.
enum WireEncoder {
    static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let writer = WireWriter()
        let encoder = WireValueEncoder(writer: writer, depth: 0, path: .root)
        try writer.encodeValue(value, with: encoder)
        try writer.finish()
        return writer.bytes
    }
}

/// The output and the containers still open, outermost first.
final class WireWriter {
    struct Frame {
        var id: Int
        var count: Int
        var closer: UInt8
    }

    var bytes: [UInt8] = []
    private(set) var open: [Frame] = []
    private var nextID = 0
    /// A key (or an array slot) was written and its value not yet.
    private var pending = true
    /// The first misuse found where the protocol gives no way to throw (opening a container).
    private var failure: EncodingError?

    init() {
        bytes.reserveCapacity(512)
    }

    func finish() throws {
        if let failure { throw failure }
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

    private func misuse(_ path: WirePath, _ what: String) -> EncodingError {
        EncodingError.invalidValue(
            (), .init(codingPath: path.keys, debugDescription: "\(what): containers must be used in stack order"))
    }

    // MARK: positions

    /// Claims the slot of a value written by the encoder at `depth`.
    func beginValue(depth: Int, path: WirePath) throws {
        guard pending, open.count == depth, failure == nil else { throw failure ?? misuse(path, "a second value") }
        pending = false
    }

    /// Opens a container at `depth`; nil (and the error remembered) when the slot is taken.
    func openContainer(depth: Int, keyed: Bool, path: WirePath) -> Int? {
        guard pending, open.count == depth, failure == nil else {
            failure = failure ?? misuse(path, "a container where a value was written")
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
    func beginElement(of id: Int?, depth: Int, path: WirePath) throws {
        if let failure { throw failure }
        guard let id, isOpen(id, depth: depth) else {
            let error = misuse(path, "a container written after it was left")
            failure = error
            throw error
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

    /// Encodes a value into the pending slot with `encoder` (whose depth is the slot's).
    func encodeValue<T: Encodable>(_ value: T, with encoder: WireValueEncoder) throws {
        if T.self == Data.self {
            try beginValue(depth: encoder.depth, path: encoder.path)
            writeString((value as! Data).base64EncodedString())
        } else if T.self == URL.self {
            try beginValue(depth: encoder.depth, path: encoder.path)
            writeString((value as! URL).absoluteString)
        } else if T.self == Decimal.self {
            try beginValue(depth: encoder.depth, path: encoder.path)
            bytes.append(contentsOf: (value as! Decimal).description.utf8)
        } else {
            try value.encode(to: encoder)
            if pending, open.count == encoder.depth {
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

    func writeInteger<T: FixedWidthInteger>(_ value: T) {
        if value == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        var magnitude = value.magnitude
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: UInt64.max has 20 digits
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                let (quotient, remainder) = magnitude.quotientAndRemainder(dividingBy: 10)
                count += 1
                buffer[24 - count] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: remainder)
                magnitude = quotient
            }
            bytes.append(contentsOf: buffer[(24 - count)...])
        }
    }

    func writeFloatingPoint<T: BinaryFloatingPoint & LosslessStringConvertible>(_ value: T, path: WirePath) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: path.keys, debugDescription: "Unable to encode \(value) directly in JSON."))
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

/// A coding path kept as a list that is only turned into keys for an error message.
indirect enum WirePath {
    case root
    case key(any CodingKey, WirePath)
    case index(Int, WirePath)

    var keys: [any CodingKey] {
        var keys: [any CodingKey] = []
        var node = self
        while true {
            switch node {
            case .root: return keys.reversed()
            case .key(let key, let parent):
                keys.append(key)
                node = parent
            case .index(let index, let parent):
                keys.append(WireIndexKey(intValue: index))
                node = parent
            }
        }
    }
}

struct WireIndexKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }
    init(intValue: Int) {
        self.stringValue = "Index \(intValue)"
        self.intValue = intValue
    }
}

/// The encoder handed to each value: where its slot is (`depth`) and the container it opened.
final class WireValueEncoder: Encoder {
    let writer: WireWriter
    let depth: Int
    let path: WirePath
    private var keyed: Int?

    init(writer: WireWriter, depth: Int, path: WirePath) {
        self.writer = writer
        self.depth = depth
        self.path = path
    }

    var codingPath: [any CodingKey] { path.keys }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        // A second request for the keyed container (a subclass and its superclass) gets the same one.
        if let keyed, writer.isOpen(keyed, depth: depth) {
            return KeyedEncodingContainer(WireKeyedContainer(writer: writer, id: keyed, depth: depth, path: path))
        }
        keyed = writer.openContainer(depth: depth, keyed: true, path: path)
        return KeyedEncodingContainer(WireKeyedContainer(writer: writer, id: keyed, depth: depth, path: path))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        WireUnkeyedContainer(
            writer: writer, id: writer.openContainer(depth: depth, keyed: false, path: path), depth: depth, path: path)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        WireSingleValueContainer(encoder: self)
    }
}

struct WireKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: WireWriter
    let id: Int?
    let depth: Int
    let path: WirePath

    var codingPath: [any CodingKey] { path.keys }

    private func begin(_ key: some CodingKey) throws {
        try writer.beginElement(of: id, depth: depth, path: path)
        writer.writeKey(key)
        try writer.beginValue(depth: depth + 1, path: .key(key, path))
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
        try writer.writeFloatingPoint(value, path: .key(key, path))
    }

    mutating func encode(_ value: Float, forKey key: Key) throws {
        try begin(key)
        try writer.writeFloatingPoint(value, path: .key(key, path))
    }

    mutating func encode(_ value: Int, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try integer(value, key) }

    private func integer(_ value: some FixedWidthInteger, _ key: Key) throws {
        try begin(key)
        writer.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try writer.beginElement(of: id, depth: depth, path: path)
        writer.writeKey(key)
        try writer.encodeValue(value, with: WireValueEncoder(writer: writer, depth: depth + 1, path: .key(key, path)))
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
        child(WireIndexKey(stringValue: "super"))
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        child(key)
    }

    /// An encoder for the value of `key`; a misuse here surfaces at the next write or at the end.
    private func child(_ key: some CodingKey) -> WireValueEncoder {
        let path = WirePath.key(key, path)
        if (try? writer.beginElement(of: id, depth: depth, path: path)) != nil {
            writer.writeKey(key)
        }
        return WireValueEncoder(writer: writer, depth: depth + 1, path: path)
    }
}

struct WireUnkeyedContainer: UnkeyedEncodingContainer {
    let writer: WireWriter
    let id: Int?
    let depth: Int
    let path: WirePath

    var codingPath: [any CodingKey] { path.keys }
    var count: Int { writer.count(of: id, depth: depth) }

    private func begin() throws {
        try writer.beginElement(of: id, depth: depth, path: path)
        try writer.beginValue(depth: depth + 1, path: path)
    }

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
        try writer.writeFloatingPoint(value, path: path)
    }

    mutating func encode(_ value: Float) throws {
        try begin()
        try writer.writeFloatingPoint(value, path: path)
    }

    mutating func encode(_ value: Int) throws { try integer(value) }
    mutating func encode(_ value: Int8) throws { try integer(value) }
    mutating func encode(_ value: Int16) throws { try integer(value) }
    mutating func encode(_ value: Int32) throws { try integer(value) }
    mutating func encode(_ value: Int64) throws { try integer(value) }
    mutating func encode(_ value: UInt) throws { try integer(value) }
    mutating func encode(_ value: UInt8) throws { try integer(value) }
    mutating func encode(_ value: UInt16) throws { try integer(value) }
    mutating func encode(_ value: UInt32) throws { try integer(value) }
    mutating func encode(_ value: UInt64) throws { try integer(value) }

    private func integer(_ value: some FixedWidthInteger) throws {
        try begin()
        writer.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let index = count
        try writer.beginElement(of: id, depth: depth, path: path)
        try writer.encodeValue(value, with: WireValueEncoder(writer: writer, depth: depth + 1, path: .index(index, path)))
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
        let path = WirePath.index(count, path)
        _ = try? writer.beginElement(of: id, depth: depth, path: path)
        return WireValueEncoder(writer: writer, depth: depth + 1, path: path)
    }
}

struct WireSingleValueContainer: SingleValueEncodingContainer {
    let encoder: WireValueEncoder

    var codingPath: [any CodingKey] { encoder.codingPath }
    private var writer: WireWriter { encoder.writer }

    private func begin() throws {
        try writer.beginValue(depth: encoder.depth, path: encoder.path)
    }

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
        try writer.writeFloatingPoint(value, path: encoder.path)
    }

    mutating func encode(_ value: Float) throws {
        try begin()
        try writer.writeFloatingPoint(value, path: encoder.path)
    }

    mutating func encode(_ value: Int) throws { try integer(value) }
    mutating func encode(_ value: Int8) throws { try integer(value) }
    mutating func encode(_ value: Int16) throws { try integer(value) }
    mutating func encode(_ value: Int32) throws { try integer(value) }
    mutating func encode(_ value: Int64) throws { try integer(value) }
    mutating func encode(_ value: UInt) throws { try integer(value) }
    mutating func encode(_ value: UInt8) throws { try integer(value) }
    mutating func encode(_ value: UInt16) throws { try integer(value) }
    mutating func encode(_ value: UInt32) throws { try integer(value) }
    mutating func encode(_ value: UInt64) throws { try integer(value) }

    private func integer(_ value: some FixedWidthInteger) throws {
        try begin()
        writer.writeInteger(value)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try writer.encodeValue(value, with: encoder)
    }
}
