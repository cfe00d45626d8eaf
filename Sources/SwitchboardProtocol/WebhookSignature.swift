import Crypto
import Foundation

/// Webhook signatures as Standard Webhooks defines them (the scheme Svix and others use, close to
/// Stripe's): `HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{body}")`, sent base64 in
/// `webhook-signature` as `v1,<signature>`, one per valid secret, space-separated (two while a
/// secret is being rotated). A secret is `whsec_` and the base64 of its key. docs/WEBHOOKS.md has a
/// test vector.
public enum WebhookSignature {
    public static let idHeader = "webhook-id"
    public static let timestampHeader = "webhook-timestamp"
    public static let signatureHeader = "webhook-signature"
    /// The prefix of a serialized secret.
    public static let secretPrefix = "whsec_"
    /// Receivers should refuse a timestamp further than this from their clock (replays).
    public static let defaultTolerance: Int64 = 300

    /// A new secret: `whsec_` and the base64 of 32 random bytes.
    public static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return secretPrefix + Data(bytes).base64EncodedString()
    }

    /// The key of a serialized secret (with or without its `whsec_` prefix); nil if it is not
    /// base64 of 24 to 64 bytes.
    public static func key(_ secret: String) -> SymmetricKey? {
        let text = secret.hasPrefix(secretPrefix) ? String(secret.dropFirst(secretPrefix.count)) : secret
        guard let bytes = Data(base64Encoded: text), (24...64).contains(bytes.count) else { return nil }
        return SymmetricKey(data: bytes)
    }

    /// One signature, `v1,<base64>`.
    public static func sign(id: String, timestamp: Int64, body: some DataProtocol, key: SymmetricKey) -> String {
        var hmac = HMAC<SHA256>(key: key)
        hmac.update(data: Data("\(id).\(timestamp).".utf8))
        hmac.update(data: body)
        return "v1," + Data(hmac.finalize()).base64EncodedString()
    }

    /// The `webhook-signature` header: a signature for each key, space-separated.
    public static func header(id: String, timestamp: Int64, body: some DataProtocol, keys: [SymmetricKey]) -> String {
        keys.map { sign(id: id, timestamp: timestamp, body: body, key: $0) }.joined(separator: " ")
    }

    /// Why a delivery was not accepted as authentic.
    public enum Failure: Error, Equatable, Sendable {
        case missingHeader(String)
        case timestampOutOfTolerance
        case noValidSignature
    }

    /// Checks a delivery as a receiver must: the timestamp within `tolerance` seconds of `now`
    /// (Unix seconds), and one of the header's `v1` signatures made with one of `secrets` over the
    /// body exactly as received. Compares in constant time.
    public static func verify(
        id: String?, timestamp: String?, signature: String?, body: some DataProtocol, secrets: [String], now: Int64,
        tolerance: Int64 = defaultTolerance
    ) throws(Failure) {
        guard let id, !id.isEmpty else { throw .missingHeader(idHeader) }
        guard let timestamp, let seconds = Int64(timestamp) else { throw .missingHeader(timestampHeader) }
        guard let signature, !signature.isEmpty else { throw .missingHeader(signatureHeader) }
        guard abs(now - seconds) <= tolerance else { throw .timestampOutOfTolerance }
        let offered = signature.split(separator: " ").compactMap { entry -> Data? in
            guard entry.hasPrefix("v1,") else { return nil }
            return Data(base64Encoded: String(entry.dropFirst(3)))
        }
        for key in secrets.compactMap(Self.key) {
            let expected = Data(sign(id: id, timestamp: seconds, body: body, key: key).dropFirst(3).utf8)
            guard let expectedBytes = Data(base64Encoded: expected) else { continue }
            for candidate in offered where constantTimeEquals(candidate, expectedBytes) {
                return
            }
        }
        throw .noValidSignature
    }

    private static func constantTimeEquals(_ a: Data, _ b: Data) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}
