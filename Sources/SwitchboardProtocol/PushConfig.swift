import Foundation

/// CallPlus's push config (TRTC's offline push info): what a call's pushes carry, chosen by the
/// caller in ``CallParams/pushConfig``. The VoIP push of the invitation carries all of it for the
/// callee's app (it shows nothing by itself: the app reports the call to CallKit); a missed-call
/// alert shows ``title`` and ``body`` with ``sound``.
public struct PushConfig: Codable, Equatable, Sendable {
    /// The alert's title (at most ``maxTitleBytes`` UTF-8 bytes of text that shows what it says:
    /// ``Swift/String/isBoundedText(maxBytes:)``).
    public var title: String?
    /// The alert's text (at most ``maxBodyBytes`` UTF-8 bytes, as ``title``).
    public var body: String?
    /// A sound file in the callee's app bundle, or `default` (at most ``maxSoundBytes`` letters,
    /// digits, `.`, `-`, `_`).
    public var sound: String?
    /// Opaque data for the callee's app, delivered in every push (at most ``maxExtraBytes`` UTF-8 bytes).
    public var extra: String?
    /// Callees who had no connected device when the call rang (it rang through a VoIP push) and
    /// did not answer get a regular alert push about the missed call (on their alert token).
    public var missedCallAlert: Bool?

    public static let maxTitleBytes = 128
    public static let maxBodyBytes = 512
    public static let maxSoundBytes = 64
    public static let maxExtraBytes = 1024
    /// The largest `pushConfig`, as JSON. With this bound every push fits APNs' limits whatever the
    /// fields hold (escaping can make a string six times longer).
    public static let maxEncodedBytes = 2048

    public init(
        title: String? = nil, body: String? = nil, sound: String? = nil, extra: String? = nil,
        missedCallAlert: Bool? = nil
    ) {
        self.title = title
        self.body = body
        self.sound = sound
        self.extra = extra
        self.missedCallAlert = missedCallAlert
    }

    /// Why the server refuses this config (`invalidPushConfig`), or nil when it is fine.
    public var problem: SwitchboardError? {
        func refuse(_ message: String) -> SwitchboardError { SwitchboardError(.invalidPushConfig, message) }
        if let title, !title.isBoundedText(maxBytes: Self.maxTitleBytes) {
            return refuse(
                "pushConfig.title: at most \(Self.maxTitleBytes) bytes, without control, bidirectional or invisible "
                    + "format characters")
        }
        if let body, !body.isBoundedText(maxBytes: Self.maxBodyBytes) {
            return refuse(
                "pushConfig.body: at most \(Self.maxBodyBytes) bytes, without control, bidirectional or invisible "
                    + "format characters")
        }
        if let sound, !Self.isValidSound(sound) {
            return refuse("pushConfig.sound: 1-\(Self.maxSoundBytes) letters, digits, '.', '-', '_'")
        }
        if let extra, extra.utf8.count > Self.maxExtraBytes {
            return refuse("pushConfig.extra: at most \(Self.maxExtraBytes) bytes")
        }
        if let encoded = try? SwitchboardJSON.encode(self), encoded.count > Self.maxEncodedBytes {
            return refuse("pushConfig: at most \(Self.maxEncodedBytes) bytes as JSON")
        }
        return nil
    }

    static func isValidSound(_ sound: String) -> Bool {
        (1...maxSoundBytes).contains(sound.utf8.count) && sound.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default:
                false
            }
        }
    }
}
