import CZlib
import Crypto
import Foundation

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
    var destinationLength = compressBound(uLong(input.count))
    var output = Data(count: Int(destinationLength))
    let status = output.withUnsafeMutableBytes { destination in
        input.withUnsafeBytes { source in
            compress2(
                destination.bindMemory(to: Bytef.self).baseAddress, &destinationLength,
                source.bindMemory(to: Bytef.self).baseAddress, uLong(input.count), Z_DEFAULT_COMPRESSION)
        }
    }
    precondition(status == Z_OK, "compress2 cannot fail with a compressBound-sized buffer")
    output.count = Int(destinationLength)
    return output
}

/// Inflates zlib data, refusing results larger than `limit` (a guard against zip bombs).
func zlibDecompress(_ input: Data, limit: Int) -> Data? {
    guard !input.isEmpty else { return nil }
    var stream = z_stream()
    guard inflateInit_(&stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
    defer { inflateEnd(&stream) }
    var output = Data()
    let chunkSize = 4096
    var chunk = [UInt8](repeating: 0, count: chunkSize)
    var input = input
    return input.withUnsafeMutableBytes { (source: UnsafeMutableRawBufferPointer) -> Data? in
        stream.next_in = source.bindMemory(to: Bytef.self).baseAddress
        stream.avail_in = uInt(source.count)
        while true {
            let status = chunk.withUnsafeMutableBufferPointer { buffer -> Int32 in
                stream.next_out = buffer.baseAddress
                stream.avail_out = uInt(chunkSize)
                return inflate(&stream, Z_NO_FLUSH)
            }
            let produced = chunkSize - Int(stream.avail_out)
            output.append(contentsOf: chunk[0..<produced])
            if output.count > limit { return nil }
            switch status {
            case Z_STREAM_END: return output
            case Z_OK: if stream.avail_in == 0 && produced == 0 { return nil }
            default: return nil
            }
        }
    }
}
