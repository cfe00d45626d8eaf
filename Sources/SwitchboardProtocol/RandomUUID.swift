import Foundation

extension UUID {
    /// A random (version 4, RFC 4122 variant) UUID from the system's random source. Foundation's
    /// `UUID()` on Linux opens, reads and closes `/dev/urandom` for each one: three system calls
    /// per call placed. This reads the same kernel source through `getrandom`, without a file.
    public static func random() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { bytes in
            bytes.storeBytes(of: generator.next() as UInt64, toByteOffset: 0, as: UInt64.self)
            bytes.storeBytes(of: generator.next() as UInt64, toByteOffset: 8, as: UInt64.self)
            bytes[6] = (bytes[6] & 0x0F) | 0x40
            bytes[8] = (bytes[8] & 0x3F) | 0x80
        }
        return UUID(uuid: uuid)
    }

    /// The form of every identifier the server makes (docs/PROTOCOL.md): 36 lowercase characters.
    public var lowercasedString: String { uuidString.lowercased() }
}
