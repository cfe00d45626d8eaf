import Foundation

/// An identifier that travels on the wire as a plain JSON string.
///
/// IDs are typed so that a `CallID` can never be passed where a `UserID` is expected.
public protocol StringIdentifier: RawRepresentable, Codable, Hashable, Sendable, Comparable,
    CustomStringConvertible, ExpressibleByStringLiteral where RawValue == String
{
    init(rawValue: String)
}

extension StringIdentifier {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self.init(rawValue: try container.decode(String.self))
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A user of one app: 1–32 characters of letters, digits, `-` and `_` (SPEC §2).
///
/// Decoding does not validate, so that a bad userID reaches the server's checks and gets the
/// `invalidUserID` error instead of a generic decoding failure; call ``isValid`` where it matters.
public struct UserID: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The longest userID allowed.
    public static let maxLength = 32

    /// Whether this userID follows the rules of SPEC §2.
    public var isValid: Bool { Self.isValid(rawValue) }

    /// Whether `value` is 1–32 ASCII letters, digits, `-` or `_`.
    public static func isValid(_ value: String) -> Bool {
        let utf8 = value.utf8
        guard !utf8.isEmpty, utf8.count <= maxLength else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default:
                false
            }
        }
    }
}

/// The server-assigned identifier of one call.
public struct CallID: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A new random call identifier.
    public static func random() -> CallID { CallID(rawValue: UUID.random().lowercasedString) }
}

/// The media room of a call; the server assigns one when the caller does not.
public struct RoomID: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The longest roomId a caller may choose.
    public static let maxLength = 64
}

/// One logged-in device of a user (phone, tablet, browser tab).
public struct DeviceID: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The longest deviceId a client may choose.
    public static let maxLength = 64
    /// A new random device identifier.
    public static func random() -> DeviceID { DeviceID(rawValue: UUID.random().lowercasedString) }
}

/// The identifier of one request on one connection, chosen by the client.
public struct RequestID: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The longest request id accepted.
    public static let maxLength = 64
}

/// An application (tenant): its users, calls and records are separate from every other app's.
public struct SdkAppID: RawRepresentable, Codable, Hashable, Sendable, Comparable, CustomStringConvertible,
    ExpressibleByIntegerLiteral
{
    public let rawValue: Int64
    public init(rawValue: Int64) { self.rawValue = rawValue }
    public init(_ value: Int64) { self.rawValue = value }
    public init(integerLiteral value: Int64) { self.rawValue = value }
    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(Int64.self)
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
    public var description: String { String(rawValue) }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The identifier of one media-type change, assigned by the server.
public struct TransactionID: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A new random transaction identifier.
    public static func random() -> TransactionID { TransactionID(rawValue: UUID.random().lowercasedString) }
}

/// A chat group whose members may join its group calls.
public struct ChatGroupID: StringIdentifier {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
}
