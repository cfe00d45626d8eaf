import Foundation
import SwitchboardProtocol

/// One push service (APNs, Web Push, FCM): it carries pushes to the tokens of its kinds. The
/// rules that hold for every service (which devices are pushed, retries, withdrawn invitations,
/// dead tokens, the in-flight bound, metrics) are ``PushService``'s; a transport only turns one
/// push for one token into one request and its answer into a ``PushOutcome``.
protocol PushTransport: Sendable {
    /// The metrics label of the service: `apns`, `web`, `fcm`.
    var name: String { get }
    /// The token kinds this service carries.
    var kinds: Set<PushTokenKind> { get }
    /// Whether the app has what the service needs (a key, an account), so that a push to one of
    /// its tokens can ring a device.
    func isConfigured(for app: SdkAppID) -> Bool
    /// Sends one push to one token of a kind this service carries; the service may drop it after
    /// `expiration` (Unix ms).
    func send(_ push: CallPush, to token: PushToken, expiration: Int64) async -> PushOutcome
    /// The service refused `rejected` as expired: sign a new credential, unless another push did
    /// meanwhile. False when none can be made.
    func refresh(app: SdkAppID, after rejected: String) async -> Bool
    func shutdown() async
}

/// How one attempt to deliver one push to one token ended.
enum PushOutcome: Equatable, Sendable {
    case delivered
    /// The token is dead (APNs 410, Web Push 404/410, FCM `UNREGISTERED` or `INVALID_ARGUMENT`
    /// for the token): it is removed.
    case tokenInvalid(reason: String)
    /// The credential the push was sent with (APNs provider token, FCM access token) was refused
    /// as expired: it is replaced once and the push sent again.
    case credentialExpired(String)
    /// 429, 5xx or no answer: worth trying again; not before `retryAfter` ms when the service
    /// said when (`Retry-After`).
    case retryable(reason: String, retryAfter: Int64? = nil)
    /// Any other refusal: trying again would not help.
    case rejected(status: Int, reason: String)
    /// Nothing was sent: the app has no credentials for the service, or its key cannot sign.
    case notSent(reason: String)
}

extension CallPush {
    /// Whether `token` gets this push. Invitations ring VoIP tokens (PushKit), alert tokens of
    /// devices that ring without CallKit (``PushToken/alertRinging``), browsers and Android apps.
    /// The end of a pushed ringing goes to those that show the ringing themselves: ringing alert
    /// tokens, browsers and Android apps (iOS punishes a VoIP push that does not report a call,
    /// and a CallKit call learns its end over the app's connection). A missed call is announced on
    /// alert tokens, browsers and Android apps; it also ends the ringing there (it replaces the
    /// ringing notification), so a ringing that ends as an announced missed call sends no end.
    func isFor(_ token: PushToken) -> Bool {
        switch (self, token.kind) {
        case (.incomingCall, .voip), (.incomingCall, .web), (.incomingCall, .fcm): true
        case (.incomingCall, .alert), (.callEnded, .alert): token.alertRinging
        case (.callEnded, .web), (.callEnded, .fcm): true
        case (.missedCall, .alert), (.missedCall, .web), (.missedCall, .fcm): true
        default: false
        }
    }
}

/// A push service's `Retry-After` (RFC 9110 §10.2.3): seconds, or an HTTP date. FCM sends it with
/// 429 and 503 and asks senders to wait at least that long; Web Push services (RFC 8030 §8.4)
/// may too.
enum RetryAfter {
    /// The wait it asks for, in ms from `now` (Unix ms); nil when there is none or it is not one
    /// of the two forms. At most a day: a push never waits that long anyway.
    static func milliseconds(_ value: String?, now: Int64) -> Int64? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int64(value) { return seconds >= 0 ? min(seconds, 86_400) * 1000 : nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: value) else { return nil }
        return min(max(0, Int64(date.timeIntervalSince1970 * 1000) - now), 86_400_000)
    }
}
