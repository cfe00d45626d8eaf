import Crypto
import Foundation

extension UUID {
    /// A UUID derived from a name: the first 16 bytes of the name's SHA-256 with the version 5
    /// (name-based) and RFC 4122 variant bits, so the same name always gives the same UUID. (RFC
    /// 4122's version 5 hashes with SHA-1; the layout is the same.)
    public init(nameBasedOn name: String) {
        var bytes = Array(SHA256.hash(data: Data(name.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        self.init(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
