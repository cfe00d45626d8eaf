import Foundation

/// Which APNs environment a token belongs to: development builds get sandbox tokens.
public enum PushEnvironment: String, Codable, Sendable, CaseIterable {
    case sandbox
    case production
}

/// What a push token is, and so where its pushes go. iOS gives an app two different tokens:
/// PushKit's, for VoIP pushes (a ringing call), and the remote-notification token of
/// `registerForRemoteNotifications`, for alerts the user sees (a missed call, or a ringing call
/// where CallKit is not used). APNs refuses a push sent to the other kind of token. The browser
/// client's service worker has a Web Push subscription, an Android app an FCM registration token.
public enum PushTokenKind: String, Codable, Sendable, CaseIterable {
    /// PushKit's VoIP token: invitations (`apns-push-type: voip`, topic `<bundleId>.voip`).
    case voip
    /// The remote-notification token: missed-call alerts (`apns-push-type: alert`, topic
    /// `<bundleId>`), and invitations too on a device that rings without CallKit
    /// (``RegisterPushTokenRequest/alertRinging``).
    case alert
    /// A Web Push subscription (RFC 8030, messages encrypted per RFC 8291, VAPID per RFC 8292):
    /// the token is the subscription's endpoint URL, its keys in ``RegisterPushTokenRequest/webPush``.
    case web
    /// A Firebase Cloud Messaging registration token (HTTP v1 API): high-priority data messages.
    case fcm
}

/// The keys of a Web Push subscription (`PushSubscription.getKey`), base64url without padding.
public struct WebPushKeys: Codable, Equatable, Sendable {
    /// The user agent's P-256 public key, uncompressed (65 bytes).
    public var p256dh: String
    /// The authentication secret (16 bytes).
    public var auth: String

    public init(p256dh: String, auth: String) {
        self.p256dh = p256dh
        self.auth = auth
    }
}

/// Register one of this device's push tokens so that calls reach it while the app is not running.
/// One token of each kind per device. A token held by another device or user is refused
/// (`pushTokenInUse`) unless ``move`` is set, which takes it over within the same app.
public struct RegisterPushTokenRequest: SignalingRequest {
    public typealias Response = Empty
    public static let type = RequestType.registerPushToken

    /// APNs tokens (``PushTokenKind/voip``, ``PushTokenKind/alert``): hex, 64 digits today (32–200
    /// accepted). FCM: the registration token. Web Push: the subscription's `https` endpoint.
    public var token: String
    /// APNs tokens only (required there): which APNs environment the token belongs to.
    public var environment: PushEnvironment?
    /// APNs tokens only (required there): the app's bundle id; VoIP pushes go to topic
    /// `<bundleId>.voip`, alerts to `<bundleId>`.
    public var bundleId: String?
    /// Take the token over from another device or user of the same app that holds it.
    public var move: Bool?
    /// What the token is; absent means ``PushTokenKind/voip``.
    public var kind: PushTokenKind?
    /// Web Push only (required there): the subscription's keys.
    public var webPush: WebPushKeys?
    /// This device's X25519 public key (32 bytes, base64url): its pushes then carry their content
    /// only as a sealed box for it (``SealedPush``), so the push service sees no names.
    public var sealingKey: String?
    /// Alert tokens only: the device rings without CallKit (a region or app policy), so
    /// invitations come to this token as time-sensitive alerts with answer and decline actions.
    public var alertRinging: Bool?

    public init(
        token: String, environment: PushEnvironment? = nil, bundleId: String? = nil, move: Bool? = nil,
        kind: PushTokenKind? = nil, webPush: WebPushKeys? = nil, sealingKey: String? = nil, alertRinging: Bool? = nil
    ) {
        self.token = token
        self.environment = environment
        self.bundleId = bundleId
        self.move = move
        self.kind = kind
        self.webPush = webPush
        self.sealingKey = sealingKey
        self.alertRinging = alertRinging
    }

    /// What is wrong with the request, if anything: each kind's token and the fields it needs.
    public var problem: SwitchboardError? {
        let kind = self.kind ?? .voip
        switch kind {
        case .voip, .alert:
            guard Self.isValidToken(token) else {
                return SwitchboardError(.invalidPushToken, "an APNs token is 32-200 hex digits")
            }
            guard environment != nil else { return SwitchboardError(.invalidParams, "an APNs token needs its environment") }
            guard let bundleId, Self.isValidBundleID(bundleId) else { return SwitchboardError(.invalidBundleID) }
        case .fcm:
            guard Self.isValidFCMToken(token) else {
                return SwitchboardError(.invalidPushToken, "an FCM token is 1-4096 letters, digits, '-', '_', ':' and '.'")
            }
        case .web:
            guard Self.isValidWebPushEndpoint(token) else {
                return SwitchboardError(.invalidPushToken, "a Web Push endpoint is an https URL of at most 2048 bytes")
            }
            guard let keys = webPush, Base64URL.decode(keys.p256dh)?.count == 65, Base64URL.decode(keys.p256dh)?.first == 4,
                Base64URL.decode(keys.auth)?.count == 16
            else {
                return SwitchboardError(
                    .invalidPushToken, "webPush needs p256dh (65 bytes) and auth (16 bytes), base64url")
            }
        }
        if webPush != nil && kind != .web { return SwitchboardError(.invalidParams, "webPush is for web tokens") }
        if alertRinging == true && kind != .alert { return SwitchboardError(.invalidParams, "alertRinging is for alert tokens") }
        if let sealingKey, Base64URL.decode(sealingKey)?.count != 32 {
            return SwitchboardError(.invalidParams, "sealingKey is an X25519 public key: 32 bytes, base64url")
        }
        return nil
    }

    /// The token as stored: APNs tokens lowercased (they are hex), others as given.
    public var normalizedToken: String {
        switch kind ?? .voip {
        case .voip, .alert: token.lowercased()
        case .web, .fcm: token
        }
    }

    /// Whether `token` is 32–200 hex digits.
    public static func isValidToken(_ token: String) -> Bool {
        (32...200).contains(token.utf8.count) && token.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
                UInt8(ascii: "A")...UInt8(ascii: "F"):
                true
            default:
                false
            }
        }
    }

    /// Whether `token` can be an FCM registration token: 1–4096 letters, digits, `-`, `_`, `:`, `.`.
    public static func isValidFCMToken(_ token: String) -> Bool {
        (1...4096).contains(token.utf8.count) && token.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"),
                UInt8(ascii: "."):
                true
            default:
                false
            }
        }
    }

    /// Whether `endpoint` is an `https` URL with a host, at most 2048 bytes, without credentials.
    public static func isValidWebPushEndpoint(_ endpoint: String) -> Bool {
        guard endpoint.utf8.count <= 2048, let url = URL(string: endpoint), url.scheme == "https",
            let host = url.host, !host.isEmpty, url.user == nil, url.password == nil
        else { return false }
        return true
    }

    /// Whether `bundleId` looks like a bundle id: 1–155 letters, digits, `.` and `-`, not starting with `.`.
    public static func isValidBundleID(_ bundleId: String) -> Bool {
        (1...155).contains(bundleId.utf8.count) && !bundleId.hasPrefix(".")
            && bundleId.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"):
                    true
                default:
                    false
                }
            }
    }
}

/// Base64url without padding (RFC 4648 §5), as Web Push and JOSE write keys.
public enum Base64URL {
    public static func encode(_ data: some Collection<UInt8>) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The bytes, or nil when `text` is not base64url (padding is accepted).
    public static func decode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.hasSuffix("=") { base64.removeLast() }
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}

/// Stop pushes to this device: of one kind, or (``kind`` absent) of every kind.
public struct UnregisterPushTokenRequest: SignalingRequest {
    public typealias Response = Empty
    public static let type = RequestType.unregisterPushToken
    public var kind: PushTokenKind?
    public init(kind: PushTokenKind? = nil) { self.kind = kind }
}

extension RequestType {
    public static let registerPushToken = RequestType(rawValue: "push.register")
    public static let unregisterPushToken = RequestType(rawValue: "push.unregister")
}
