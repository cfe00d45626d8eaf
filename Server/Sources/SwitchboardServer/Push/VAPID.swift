import Crypto
import Foundation
import SwitchboardProtocol

/// Voluntary application server identification (RFC 8292): each Web Push request carries
/// `Authorization: vapid t=<JWT>, k=<public key>`, the JWT signed with ES256 by the key the
/// subscription was made with, for the push service's origin (`aud`), with an expiry within a
/// day (`exp`) and a contact (`sub`).
enum VAPID {
    /// How long a token is valid; RFC 8292 allows at most 24 hours.
    static let lifetime: Int64 = 12 * 3600

    /// The `Authorization` header of a request to `endpoint`, at `now` (Unix ms).
    static func authorization(
        endpoint: URL, key: P256.Signing.PrivateKey, subject: String, now: Int64
    ) throws -> String {
        "vapid t=\(try token(audience: audience(of: endpoint), key: key, subject: subject, now: now)), "
            + "k=\(Base64URL.encode(key.publicKey.x963Representation))"
    }

    /// The origin of the push service: `https://host[:port]`.
    static func audience(of endpoint: URL) -> String {
        let port = endpoint.port.map { $0 == 443 ? "" : ":\($0)" } ?? ""
        return "\(endpoint.scheme ?? "https")://\(endpoint.host ?? "")\(port)"
    }

    /// A JWT (JWS compact form): `{"typ":"JWT","alg":"ES256"}`, `{"aud","exp","sub"}`, and the
    /// signature as JWS writes ES256 (r ‖ s, 64 bytes).
    static func token(audience: String, key: P256.Signing.PrivateKey, subject: String, now: Int64) throws -> String {
        struct Claims: Encodable {
            var aud: String
            var exp: Int64
            var sub: String
        }
        let header = Base64URL.encode(Data(#"{"typ":"JWT","alg":"ES256"}"#.utf8))
        let claims = Base64URL.encode(
            try SwitchboardJSON.encode(Claims(aud: audience, exp: now / 1000 + lifetime, sub: subject)))
        let input = "\(header).\(claims)"
        let signature = try key.signature(for: Data(input.utf8))
        return "\(input).\(Base64URL.encode(signature.rawRepresentation))"
    }
}
