import Crypto
import Foundation
import SwitchboardProtocol

/// The STUN and TURN servers clients are told to use.
public struct IceConfiguration: Sendable, Equatable {
    /// STUN URLs (`stun:host:port`), handed out as they are.
    public var stunURLs: [String] = []
    /// TURN URLs (`turn:host:port?transport=udp`, `turns:…`), handed out with credentials when
    /// ``turnSecret`` is set.
    public var turnURLs: [String] = []
    /// coturn's `static-auth-secret` (its `use-auth-secret` REST scheme).
    public var turnSecret: String?
    /// How long issued TURN credentials stay valid. coturn checks them when an allocation is made
    /// and refreshed, so they must outlast the longest call.
    public var credentialLifetime: Duration = .seconds(24 * 3600)

    public init() {}
}

extension IceConfiguration {
    /// The ICE servers for `user` at `now` (Unix ms): STUN as configured, and TURN with a
    /// username `expiry:sdkAppID:userID` and the password base64(HMAC-SHA1(secret, username)),
    /// which coturn checks with the same secret without knowing the user. The app is part of the
    /// name: same-named users of two apps are two identities to coturn (quotas, logs).
    func iceServers(for user: UserKey, now: Int64) -> IceServersResponse {
        var servers: [IceServer] = []
        if !stunURLs.isEmpty { servers.append(IceServer(urls: stunURLs)) }
        guard let turnSecret, !turnURLs.isEmpty else { return IceServersResponse(iceServers: servers, expiresAt: nil) }
        let expiry = now / 1000 + credentialLifetime.milliseconds / 1000
        let username = "\(expiry):\(user.app.rawValue):\(user.user.rawValue)"
        let credential = Self.turnPassword(secret: turnSecret, username: username)
        servers.append(IceServer(urls: turnURLs, username: username, credential: credential))
        return IceServersResponse(iceServers: servers, expiresAt: expiry * 1000)
    }

    /// coturn's REST-API password: base64(HMAC-SHA1(secret, username)).
    static func turnPassword(secret: String, username: String) -> String {
        let mac = HMAC<Insecure.SHA1>.authenticationCode(for: Data(username.utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return Data(mac).base64EncodedString()
    }
}
