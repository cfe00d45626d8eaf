import CompressNIO
import Crypto
import Foundation
import NIOCore

/// Tencent's TLS-sig v2 UserSig (SPEC §2), so that the server-side generators apps already use
/// work unchanged.
///
/// A UserSig is JSON `{"TLS.ver":"2.0","TLS.identifier","TLS.sdkappid","TLS.expire","TLS.time",
/// "TLS.sig"}` (optionally `"TLS.userbuf"`), zlib-compressed, base64-encoded with `+`→`*`, `/`→`-`,
/// `=`→`_`. `TLS.sig` is base64(HMAC-SHA256(secretKey, "TLS.identifier:ID\nTLS.sdkappid:APP\n
/// TLS.time:T\nTLS.expire:E\n"[ + "TLS.userbuf:B\n"])). `TLS.expire` is a lifetime in seconds
/// counted from `TLS.time` (Unix seconds).
public enum UserSig {
    /// The fields of a decoded UserSig.
    public struct Fields: Equatable, Sendable {
        public var version: String
        public var identifier: String
        public var sdkAppID: SdkAppID
        /// Issue time, Unix seconds.
        public var time: Int64
        /// Lifetime in seconds from ``time``.
        public var expire: Int64
        /// Base64 of the optional user buffer.
        public var userbuf: String?
        /// Base64 of the HMAC.
        public var signature: String

        /// The last second at which the sig is valid. Both numbers come from the client: a sum past
        /// `Int64.max` means "never" (the signer chose it), never a trap.
        public var expiresAt: Int64 { time.clampedAdding(expire) }
    }

    /// The default lifetime of a generated sig: 180 days, as Tencent's generators use.
    public static let defaultExpire: Int64 = 180 * 86_400
    /// How far in the future a sig's issue time may be before it is refused as not yet valid.
    public static let allowedClockSkew: Int64 = 120
    /// The largest encoded sig accepted, in bytes.
    public static let maxEncodedLength = 4096

    /// Makes a UserSig, byte-compatible with Tencent's TLSSigAPIv2 generators.
    public static func generate(
        sdkAppID: SdkAppID, secretKey: String, userID: String, expire: Int64 = defaultExpire,
        time: Int64 = Int64(Date().timeIntervalSince1970), userbuf: Data? = nil
    ) -> String {
        let userbufBase64 = userbuf?.base64EncodedString()
        let signature = hmac(
            secretKey: secretKey, identifier: userID, sdkAppID: sdkAppID, time: time, expire: expire,
            userbuf: userbufBase64)
        var object: [String: Any] = [
            "TLS.ver": "2.0",
            "TLS.identifier": userID,
            "TLS.sdkappid": sdkAppID.rawValue,
            "TLS.expire": expire,
            "TLS.time": time,
            "TLS.sig": signature,
        ]
        if let userbufBase64 { object["TLS.userbuf"] = userbufBase64 }
        // The dictionary holds only strings and integers, so serialization cannot fail.
        let json = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return encodeBase64URL(zlibCompress(json))
    }

    /// Decodes a UserSig without checking its signature or times.
    public static func decode(_ sig: String) throws(SwitchboardError) -> Fields {
        guard !sig.isEmpty, sig.utf8.count <= maxEncodedLength else {
            throw SwitchboardError(.userSigMalformed, "UserSig is empty or longer than \(maxEncodedLength) bytes")
        }
        guard let compressed = decodeBase64URL(sig) else {
            throw SwitchboardError(.userSigMalformed, "UserSig is not base64url")
        }
        guard let json = zlibDecompress(compressed, limit: 16 * 1024) else {
            throw SwitchboardError(.userSigMalformed, "UserSig is not zlib data")
        }
        guard let object = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] else {
            throw SwitchboardError(.userSigMalformed, "UserSig does not hold a JSON object")
        }
        func string(_ key: String) throws(SwitchboardError) -> String {
            guard let value = object[key] as? String else {
                throw SwitchboardError(.userSigMalformed, "UserSig has no string \(key)")
            }
            return value
        }
        func integer(_ key: String) throws(SwitchboardError) -> Int64 {
            // Generators differ: most write numbers, some write numeric strings.
            if let string = object[key] as? String, let value = Int64(string) { return value }
            if let value = object[key] as? Int64 { return value }
            if let value = object[key] as? Int { return Int64(value) }
            throw SwitchboardError(.userSigMalformed, "UserSig has no integer \(key)")
        }
        let version = try string("TLS.ver")
        guard version == "2.0" else {
            throw SwitchboardError(.userSigMalformed, "UserSig version \(version) is not 2.0")
        }
        let userbuf: String?
        if object["TLS.userbuf"] != nil { userbuf = try string("TLS.userbuf") } else { userbuf = nil }
        return Fields(
            version: version,
            identifier: try string("TLS.identifier"),
            sdkAppID: SdkAppID(try integer("TLS.sdkappid")),
            time: try integer("TLS.time"),
            expire: try integer("TLS.expire"),
            userbuf: userbuf,
            signature: try string("TLS.sig"))
    }

    /// Decodes and verifies a UserSig for a login: app, user, signature (constant time), then times.
    ///
    /// - Parameters:
    ///   - userID: the user the sig must be for; nil accepts any user.
    ///   - now: the current time, Unix seconds.
    public static func verify(
        _ sig: String, sdkAppID: SdkAppID, secretKey: String, userID: String?, now: Int64,
        allowedSkew: Int64 = allowedClockSkew
    ) throws(SwitchboardError) -> Fields {
        let fields = try decode(sig)
        guard fields.sdkAppID == sdkAppID else {
            throw SwitchboardError(.userSigWrongApp, "UserSig was issued for sdkAppID \(fields.sdkAppID)")
        }
        if let userID, fields.identifier != userID {
            throw SwitchboardError(.userSigWrongUser)
        }
        guard let provided = Data(base64Encoded: fields.signature) else {
            throw SwitchboardError(.userSigBadSignature)
        }
        let content = signedContent(
            identifier: fields.identifier, sdkAppID: fields.sdkAppID, time: fields.time, expire: fields.expire,
            userbuf: fields.userbuf)
        let key = SymmetricKey(data: Data(secretKey.utf8))
        // isValidAuthenticationCode compares in constant time.
        guard HMAC<SHA256>.isValidAuthenticationCode(provided, authenticating: content, using: key) else {
            throw SwitchboardError(.userSigBadSignature)
        }
        guard fields.time <= now.clampedAdding(allowedSkew) else {
            throw SwitchboardError(.userSigNotYetValid, "UserSig is issued \(fields.time) s, after now (\(now))")
        }
        guard fields.expire >= 0, now <= fields.expiresAt else {
            throw SwitchboardError(.userSigExpired, "UserSig expired at \(fields.expiresAt)")
        }
        return fields
    }

    static func signedContent(
        identifier: String, sdkAppID: SdkAppID, time: Int64, expire: Int64, userbuf: String?
    ) -> Data {
        var content =
            "TLS.identifier:\(identifier)\nTLS.sdkappid:\(sdkAppID.rawValue)\nTLS.time:\(time)\nTLS.expire:\(expire)\n"
        if let userbuf { content += "TLS.userbuf:\(userbuf)\n" }
        return Data(content.utf8)
    }

    static func hmac(
        secretKey: String, identifier: String, sdkAppID: SdkAppID, time: Int64, expire: Int64, userbuf: String?
    ) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: signedContent(identifier: identifier, sdkAppID: sdkAppID, time: time, expire: expire, userbuf: userbuf),
            using: SymmetricKey(data: Data(secretKey.utf8)))
        return Data(mac).base64EncodedString()
    }

    static func encodeBase64URL(_ data: Data) -> String {
        String(
            data.base64EncodedString().map { character -> Character in
                switch character {
                case "+": "*"
                case "/": "-"
                case "=": "_"
                default: character
                }
            })
    }

    static func decodeBase64URL(_ string: String) -> Data? {
        let standard = String(
            string.map { character -> Character in
                switch character {
                case "*": "+"
                case "-": "/"
                case "_": "="
                default: character
                }
            })
        return Data(base64Encoded: standard)
    }
}

// MARK: - zlib

func zlibCompress(_ input: Data) -> Data {
    var buffer = ByteBuffer(bytes: input)
    do {
        let compressed = try buffer.compress(with: .zlib())
        return Data(compressed.readableBytesView)
    } catch {
        // compress-nio sizes its output with deflateBound: only running out of memory can fail.
        preconditionFailure("zlib failed to compress \(input.count) bytes: \(error)")
    }
}

/// Inflates zlib data (RFC 1950), refusing results larger than `limit` (a guard against zip bombs)
/// and streams that end before their checksum (truncated).
func zlibDecompress(_ input: Data, limit: Int) -> Data? {
    // A two-byte header, the deflate data and a four-byte Adler-32 of the output.
    guard input.count > 6 else { return nil }
    var buffer = ByteBuffer(bytes: input)
    guard let inflated = try? buffer.decompress(with: .zlib(), maxSize: limit + 1), inflated.readableBytes <= limit
    else { return nil }
    let output = Data(inflated.readableBytesView)
    // zlib checks the Adler-32 when it reaches it, but a stream cut short just stops: the stream
    // is whole when its last four bytes are the checksum of what it inflated to.
    let trailer = input.suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    return adler32(output) == trailer ? output : nil
}

/// The Adler-32 checksum zlib ends its streams with.
private func adler32(_ data: Data) -> UInt32 {
    var a: UInt32 = 1
    var b: UInt32 = 0
    for byte in data {
        a = (a + UInt32(byte)) % 65_521
        b = (b + a) % 65_521
    }
    return b << 16 | a
}
