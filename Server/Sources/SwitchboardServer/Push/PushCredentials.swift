import Crypto
import Foundation
import JWTKit
import SwitchboardProtocol

/// An APNs auth key (token authentication), as the developer account gives it.
public struct APNsKey: Codable, Equatable, Sendable {
    /// The text of the `.p8` file: an ES256 private key, PKCS#8 PEM.
    public var privateKey: String
    /// The key's id (10 characters).
    public var keyId: String
    /// The team id (10 characters).
    public var teamId: String

    public init(privateKey: String, keyId: String, teamId: String) {
        self.privateKey = privateKey
        self.keyId = keyId
        self.teamId = teamId
    }

    /// Why the key cannot sign provider tokens, or nil.
    public var problem: SwitchboardError? {
        guard (try? ES256PrivateKey(pem: privateKey)) != nil else {
            return SwitchboardError(.invalidParams, "apns.privateKey: not an ES256 private key in PEM (the .p8 file)")
        }
        guard Self.isIdentifier(keyId) else { return SwitchboardError(.invalidParams, "apns.keyId: 1-64 letters and digits") }
        guard Self.isIdentifier(teamId) else { return SwitchboardError(.invalidParams, "apns.teamId: 1-64 letters and digits") }
        return nil
    }

    static func isIdentifier(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }
}

/// A VAPID key pair (RFC 8292): the server signs each Web Push request with it, and browsers
/// subscribe with its public key, so a push service accepts pushes for a subscription only from
/// the server that holds the private key.
public struct VAPIDKey: Codable, Equatable, Sendable {
    /// The P-256 private key: 32 bytes, base64url (as web-push libraries print it), or PEM.
    public var privateKey: String
    /// Who the push services may contact about this server's pushes (the JWT's `sub`): a
    /// `mailto:` or `https:` URI.
    public var subject: String
    /// Made by the server at the app's first start, not given by an operator.
    public var generated: Bool?

    /// The subject of a generated key until an operator gives one.
    public static let defaultSubject = "mailto:webpush@switchboard.invalid"

    public init(privateKey: String, subject: String, generated: Bool? = nil) {
        self.privateKey = privateKey
        self.subject = subject
        self.generated = generated
    }

    /// A new key pair.
    static func generate(subject: String = defaultSubject) -> VAPIDKey {
        VAPIDKey(
            privateKey: Base64URL.encode(P256.Signing.PrivateKey().rawRepresentation), subject: subject, generated: true)
    }

    /// The private key, or nil when ``privateKey`` is not one.
    var signingKey: P256.Signing.PrivateKey? {
        if privateKey.contains("-----BEGIN") { return try? P256.Signing.PrivateKey(pemRepresentation: privateKey) }
        guard let raw = Base64URL.decode(privateKey), raw.count == 32 else { return nil }
        return try? P256.Signing.PrivateKey(rawRepresentation: raw)
    }

    /// The public key as browsers take it (`applicationServerKey`): the uncompressed point, 65
    /// bytes, base64url.
    public var publicKey: String? {
        signingKey.map { Base64URL.encode($0.publicKey.x963Representation) }
    }

    /// Why the key cannot sign, or nil.
    public var problem: SwitchboardError? {
        guard signingKey != nil else {
            return SwitchboardError(
                .invalidParams, "webPush.privateKey: a P-256 private key, 32 bytes base64url or PEM")
        }
        guard Self.isSubject(subject) else {
            return SwitchboardError(.invalidParams, "webPush.subject: a mailto: or https: URI of at most 256 bytes")
        }
        return nil
    }

    static func isSubject(_ text: String) -> Bool {
        guard (1...256).contains(text.utf8.count), !text.contains(where: { $0.isWhitespace || $0 == "\"" }) else {
            return false
        }
        if text.hasPrefix("mailto:") { return text.count > 7 }
        return URL(string: text)?.scheme == "https" && URL(string: text)?.host != nil
    }
}

/// A Firebase service account, as its JSON key file holds it (only the fields the HTTP v1 API
/// needs are read).
public struct FCMServiceAccount: Codable, Equatable, Sendable {
    /// The Firebase project: pushes go to `/v1/projects/{projectId}/messages:send`.
    public var projectId: String
    /// The account: the `iss` of the OAuth2 grant.
    public var clientEmail: String
    /// An RS256 private key, PKCS#8 PEM.
    public var privateKey: String
    /// The key's id, the grant's `kid`.
    public var privateKeyId: String?
    /// Where access tokens are granted (`https://oauth2.googleapis.com/token`).
    public var tokenURI: String

    public static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    private enum CodingKeys: String, CodingKey {
        case projectId = "project_id"
        case clientEmail = "client_email"
        case privateKey = "private_key"
        case privateKeyId = "private_key_id"
        case tokenURI = "token_uri"
    }

    public init(projectId: String, clientEmail: String, privateKey: String, privateKeyId: String? = nil,
        tokenURI: String = defaultTokenURI)
    {
        self.projectId = projectId
        self.clientEmail = clientEmail
        self.privateKey = privateKey
        self.privateKeyId = privateKeyId
        self.tokenURI = tokenURI
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        projectId = try container.decode(String.self, forKey: .projectId)
        clientEmail = try container.decode(String.self, forKey: .clientEmail)
        privateKey = try container.decode(String.self, forKey: .privateKey)
        privateKeyId = try container.decodeIfPresent(String.self, forKey: .privateKeyId)
        tokenURI = try container.decodeIfPresent(String.self, forKey: .tokenURI) ?? Self.defaultTokenURI
    }

    /// Reads a service account's key file; throws `invalidParams` naming what is missing or wrong.
    public init(json: Data) throws(SwitchboardError) {
        do {
            self = try SwitchboardJSON.decode(FCMServiceAccount.self, from: json)
        } catch {
            throw SwitchboardError(.invalidParams, "fcm.serviceAccount: \(SwitchboardJSON.describe(error))")
        }
        if let problem { throw problem }
    }

    /// Why the account cannot be used, or nil.
    public var problem: SwitchboardError? {
        guard (1...100).contains(projectId.utf8.count),
            projectId.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2d || $0 == 0x3a || $0 == 0x2e })
        else {
            return SwitchboardError(.invalidParams, "fcm.serviceAccount.project_id: lowercase letters, digits, '-', ':' and '.'")
        }
        guard (1...320).contains(clientEmail.utf8.count), clientEmail.contains("@") else {
            return SwitchboardError(.invalidParams, "fcm.serviceAccount.client_email: an e-mail address")
        }
        guard (try? Insecure.RSA.PrivateKey(pem: privateKey)) != nil else {
            return SwitchboardError(
                .invalidParams, "fcm.serviceAccount.private_key: an RSA private key of at least 2048 bits, PEM")
        }
        guard let url = URL(string: tokenURI), url.scheme == "https", url.host != nil else {
            return SwitchboardError(.invalidParams, "fcm.serviceAccount.token_uri: an https URL")
        }
        return nil
    }
}

/// An app's own push credentials, kept with the app in the database (admin API). Each one the
/// app lacks falls back to the server's (its flags): ``PushCredentials``.
struct AppPushCredentials: Codable, Equatable, Sendable {
    var apns: APNsKey?
    var webPush: VAPIDKey?
    var fcm: FCMServiceAccount?

    /// As the database keeps them: JSON.
    func storedText() throws -> String {
        try SwitchboardJSON.encodeString(self)
    }

    /// Read back from the database; none stored yet is none at all.
    static func stored(_ text: String?) throws -> AppPushCredentials {
        guard let text else { return AppPushCredentials() }
        return try SwitchboardJSON.decode(AppPushCredentials.self, from: Data(text.utf8))
    }
}

/// Which credentials each app's pushes go out with: the app's own (set through the admin API),
/// else the server's (its flags); for Web Push, a key pair the server generated for the app at
/// its first start when neither was given.
struct PushCredentials: Sendable {
    let apps: AppDirectory
    /// The server's, from its configuration.
    let server: AppPushCredentials

    enum Source: String, Codable, Sendable {
        /// The app's own, set through the admin API.
        case app
        /// The server's flags.
        case server
        /// Made by the server for the app.
        case generated
    }

    func apns(_ app: SdkAppID) -> (key: APNsKey, source: Source)? {
        if let own = apps.app(app)?.push.apns { return (own, .app) }
        return server.apns.map { ($0, .server) }
    }

    func webPush(_ app: SdkAppID) -> (key: VAPIDKey, source: Source)? {
        let own = apps.app(app)?.push.webPush
        if let own, own.generated != true { return (own, .app) }
        if let key = server.webPush { return (key, .server) }
        return own.map { ($0, .generated) }
    }

    func fcm(_ app: SdkAppID) -> (account: FCMServiceAccount, source: Source)? {
        if let own = apps.app(app)?.push.fcm { return (own, .app) }
        return server.fcm.map { ($0, .server) }
    }
}
