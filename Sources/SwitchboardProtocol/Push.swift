import Foundation

/// A call ringing for a user whose app is not running: what the server puts under the
/// `switchboard` key of a VoIP push.
public struct IncomingCallPush: Codable, Equatable, Sendable {
    public var callId: CallID
    public var sdkAppID: SdkAppID?
    /// The user the push is for.
    public var userId: UserID?
    public var callerId: UserID
    /// The caller's nickname, when they have one.
    public var callerName: String?
    public var mediaType: CallMediaType
    public var callType: CallType
    /// Who invited the user (the caller, or a member mid-call).
    public var inviterId: UserID?
    /// When the call stops ringing, Unix ms; a push received after it is stale.
    public var deadline: Int64?
    /// The call's `userData`, as the invitation carries it.
    public var userData: String?
    /// The caller's ``PushConfig``, but ``PushConfig/missedCallAlert``.
    public var title: String?
    public var body: String?
    public var sound: String?
    public var extra: String?

    public init(
        callId: CallID, sdkAppID: SdkAppID? = nil, userId: UserID? = nil, callerId: UserID, callerName: String? = nil,
        mediaType: CallMediaType, callType: CallType, inviterId: UserID? = nil, deadline: Int64? = nil,
        userData: String? = nil, pushConfig: PushConfig? = nil
    ) {
        self.callId = callId
        self.sdkAppID = sdkAppID
        self.userId = userId
        self.callerId = callerId
        self.callerName = callerName
        self.mediaType = mediaType
        self.callType = callType
        self.inviterId = inviterId
        self.deadline = deadline
        self.userData = userData
        self.title = pushConfig?.title
        self.body = pushConfig?.body
        self.sound = pushConfig?.sound
        self.extra = pushConfig?.extra
    }
}

/// A call that rang for the user stopped ringing (canceled, answered elsewhere, timed out…).
/// Servers before push configs sent it as a VoIP push to stop a ringing lock screen; servers now
/// send VoIP pushes only for ringing calls (the app learns the end over its connection), and the
/// SDK still reads this kind from older servers.
public struct CallEndedPush: Codable, Equatable, Sendable {
    public var callId: CallID
    public var sdkAppID: SdkAppID?
    public var reason: CallEndReason
    public var mediaType: CallMediaType?

    public init(callId: CallID, sdkAppID: SdkAppID? = nil, reason: CallEndReason, mediaType: CallMediaType? = nil) {
        self.callId = callId
        self.sdkAppID = sdkAppID
        self.reason = reason
        self.mediaType = mediaType
    }

    /// The alert's localization key of the end of a ringing shown as an alert (`"Call ended"`).
    public static let alertLocalizationKey = "SWITCHBOARD_CALL_ENDED"

    /// The end of a ringing on a device that rings without CallKit
    /// (``RegisterPushTokenRequest/alertRinging``): APNs cannot take a delivered notification
    /// away, so this alert, sent with the invitation's `apns-collapse-id` (the call id), replaces
    /// the ringing one in place: a passive alert without sound or actions (no category), with
    /// `content-available` so that an app running in the background removes it
    /// (``NotificationRingingCoordinator``). The `switchboard` object is the VoIP push's `callEnded`.
    public func alertPayload() throws -> Data {
        try PushPayload.encode(aps: Self.endedAlert(sealed: false), kind: "callEnded", self)
    }

    /// The same sealed for a device (``SealedPush``).
    public func sealedAlertPayload(for sealingKey: String) throws -> Data {
        try PushPayload.sealed(
            aps: Self.endedAlert(sealed: true), content: try PushPayload.content(kind: "callEnded", self), for: sealingKey)
    }

    private static func endedAlert(sealed: Bool) -> PushPayload.Alert {
        PushPayload.Alert(
            alert: .init(locKey: alertLocalizationKey), sound: nil, mutableContent: sealed ? 1 : nil,
            interruptionLevel: "passive", contentAvailable: 1)
    }
}

/// The two kinds of Switchboard VoIP push. On the wire:
/// `{"aps":{},"switchboard":{"v":1,"kind":"incomingCall",…}}` (see docs/PROTOCOL.md).
public enum VoIPPush: Equatable, Sendable {
    case incomingCall(IncomingCallPush)
    case callEnded(CallEndedPush)

    /// The largest payload APNs accepts for a VoIP push, in bytes.
    public static let maxPayloadBytes = 5120

    public var callId: CallID {
        switch self {
        case .incomingCall(let push): push.callId
        case .callEnded(let push): push.callId
        }
    }

    /// The JSON body of the push, made to fit ``maxPayloadBytes`` (see ``PushPayload/fitted(_:limit:dropping:payload:)``).
    public func fittedPayload() throws -> Data {
        guard case .incomingCall(let push) = self else { return try payload() }
        return try PushPayload.fitted(push, limit: Self.maxPayloadBytes, dropping: IncomingCallPush.droppable) {
            try VoIPPush.incomingCall($0).payload()
        }
    }

    /// The JSON body of the push.
    public func payload() throws -> Data {
        switch self {
        case .incomingCall(let push): try PushPayload.encode(aps: PushPayload.NoAlert(), kind: "incomingCall", push)
        case .callEnded(let push): try PushPayload.encode(aps: PushPayload.NoAlert(), kind: "callEnded", push)
        }
    }

    /// The `switchboard` object of the push: what a sealed push carries inside its box.
    public func content() throws -> Data {
        switch self {
        case .incomingCall(let push): try PushPayload.content(kind: "incomingCall", push)
        case .callEnded(let push): try PushPayload.content(kind: "callEnded", push)
        }
    }

    /// The body sealed for a device (``SealedPush``):
    /// `{"aps":{},"switchboard":{"v":1,"kind":"sealed","sealed":…}}`, made to fit
    /// ``maxPayloadBytes`` as ``fittedPayload()`` is (the box grows with what it holds).
    public func fittedSealedPayload(for sealingKey: String) throws -> Data {
        let seal: (VoIPPush) throws -> Data = {
            try PushPayload.sealed(aps: PushPayload.NoAlert(), content: try $0.content(), for: sealingKey)
        }
        guard case .incomingCall(let push) = self else { return try seal(self) }
        return try PushPayload.fitted(push, limit: Self.maxPayloadBytes, dropping: IncomingCallPush.droppable) {
            try seal(.incomingCall($0))
        }
    }
}

extension IncomingCallPush {
    /// What an invitation that would not fit leaves out, in this order: `userData` first (the app
    /// gets it with the invitation once it logs in), then the caller's push texts, the caller's name last.
    static var droppable: [WritableKeyPath<IncomingCallPush, String?>] {
        [\.userData, \.extra, \.body, \.title, \.callerName]
    }

    /// The notification category of an invitation sent as an alert, whose actions the app
    /// registers: ``answerAction`` and ``declineAction``.
    public static let alertCategory = "SWITCHBOARD_INCOMING_CALL"
    public static let answerAction = "SWITCHBOARD_ANSWER"
    public static let declineAction = "SWITCHBOARD_DECLINE"
    /// The alert's localization keys when the caller gave no title: audio and video calls, with the
    /// caller's name as the argument (`"Incoming call from %@"`), and a sealed one that names nobody.
    public static let audioLocalizationKey = "SWITCHBOARD_INCOMING_CALL"
    public static let videoLocalizationKey = "SWITCHBOARD_INCOMING_VIDEO_CALL"
    public static let sealedLocalizationKey = "SWITCHBOARD_INCOMING_CALL_SEALED"

    /// The invitation as a time-sensitive alert, for a device that rings without CallKit
    /// (``RegisterPushTokenRequest/alertRinging``): the system shows it with the answer and decline
    /// actions of ``alertCategory``; the `switchboard` object is the VoIP push's. Made to fit
    /// ``MissedCallPush/maxPayloadBytes``.
    public func fittedAlertPayload() throws -> Data {
        try PushPayload.fitted(self, limit: MissedCallPush.maxPayloadBytes, dropping: Self.droppable) { push in
            try PushPayload.encode(aps: push.ringingAlert(sealed: false), kind: "incomingCall", push)
        }
    }

    /// The same sealed for a device (``SealedPush``): a neutral alert the app's notification
    /// service extension may rewrite (`mutable-content`), the invitation in the box.
    public func fittedSealedAlertPayload(for sealingKey: String) throws -> Data {
        try PushPayload.fitted(self, limit: MissedCallPush.maxPayloadBytes, dropping: Self.droppable) { push in
            try PushPayload.sealed(
                aps: push.ringingAlert(sealed: true), content: try PushPayload.content(kind: "incomingCall", push),
                for: sealingKey)
        }
    }

    private func ringingAlert(sealed: Bool) -> PushPayload.Alert {
        let text: PushPayload.Alert.Text =
            if sealed {
                .init(locKey: Self.sealedLocalizationKey)
            } else if title != nil || body != nil {
                .init(title: title, body: body)
            } else {
                .init(
                    locKey: mediaType == .video ? Self.videoLocalizationKey : Self.audioLocalizationKey,
                    locArgs: [callerName ?? callerId.rawValue])
            }
        return PushPayload.Alert(
            alert: text, sound: sound ?? "default", mutableContent: sealed ? 1 : nil, category: Self.alertCategory,
            interruptionLevel: "time-sensitive")
    }
}

/// A call the user did not answer while their app was not running: a regular alert push
/// (`apns-push-type: alert`), sent to alert tokens when the caller asked for it
/// (``PushConfig/missedCallAlert``). The system shows it; the app reads `switchboard` when the user
/// opens it.
///
/// On the wire: `{"aps":{"alert":{…},"sound":…},"switchboard":{"v":1,"kind":"missedCall",…}}`. The
/// alert is the caller's ``PushConfig/title`` and ``PushConfig/body``; without them it is the
/// localizable `SWITCHBOARD_MISSED_CALL` with the caller's name as its argument, which the app's
/// `Localizable.strings` translates (e.g. `"Missed call from %@"`).
public struct MissedCallPush: Codable, Equatable, Sendable {
    public var callId: CallID
    public var sdkAppID: SdkAppID?
    public var userId: UserID?
    public var callerId: UserID
    public var callerName: String?
    public var mediaType: CallMediaType
    public var callType: CallType
    /// How the ringing ended for the user: `noResponse`, `canceled` or `endByServer`.
    public var reason: CallEndReason
    public var userData: String?
    public var title: String?
    public var body: String?
    public var sound: String?
    public var extra: String?

    /// The largest payload APNs accepts for an alert push, in bytes.
    public static let maxPayloadBytes = 4096
    /// The alert's localization key when the caller gave no text.
    public static let localizationKey = "SWITCHBOARD_MISSED_CALL"

    public init(
        callId: CallID, sdkAppID: SdkAppID? = nil, userId: UserID? = nil, callerId: UserID, callerName: String? = nil,
        mediaType: CallMediaType, callType: CallType, reason: CallEndReason, userData: String? = nil,
        pushConfig: PushConfig? = nil
    ) {
        self.callId = callId
        self.sdkAppID = sdkAppID
        self.userId = userId
        self.callerId = callerId
        self.callerName = callerName
        self.mediaType = mediaType
        self.callType = callType
        self.reason = reason
        self.userData = userData
        self.title = pushConfig?.title
        self.body = pushConfig?.body
        self.sound = pushConfig?.sound
        self.extra = pushConfig?.extra
    }

    /// What a missed-call push that would not fit leaves out, in the invitation's order.
    static var droppable: [WritableKeyPath<MissedCallPush, String?>] {
        [\.userData, \.extra, \.body, \.title, \.callerName]
    }

    /// The JSON body of the push, made to fit ``maxPayloadBytes``.
    public func fittedPayload() throws -> Data {
        try PushPayload.fitted(self, limit: Self.maxPayloadBytes, dropping: Self.droppable) { try $0.payload() }
    }

    /// The JSON body of the push.
    public func payload() throws -> Data {
        try PushPayload.encode(aps: aps, kind: "missedCall", self)
    }

    /// The alert's localization key of a sealed missed-call push, which names nobody: the system
    /// shows it as it is unless the app's notification service extension opens the box and
    /// rewrites the alert (`mutable-content`).
    public static let sealedLocalizationKey = "SWITCHBOARD_MISSED_CALL_SEALED"

    /// The body sealed for a device (``SealedPush``): a neutral alert with `mutable-content`, and
    /// `{"v":1,"kind":"sealed","sealed":…}` under `switchboard`, made to fit ``maxPayloadBytes``.
    public func fittedSealedPayload(for sealingKey: String) throws -> Data {
        try PushPayload.fitted(self, limit: Self.maxPayloadBytes, dropping: Self.droppable) { push in
            let aps = PushPayload.Alert(
                alert: .init(locKey: Self.sealedLocalizationKey), sound: push.sound ?? "default", mutableContent: 1)
            return try PushPayload.sealed(aps: aps, content: try PushPayload.content(kind: "missedCall", push), for: sealingKey)
        }
    }

    /// Reads a missed-call push from its JSON body; nil when it is not one.
    /// A sealed one (``fittedSealedPayload(for:)``) opens with `sealingKey` (a notification
    /// service extension does that to rewrite the alert with the caller's name).
    public init?(json: Data, sealingKey: PushSealingKey? = nil) {
        struct Body: Decodable {
            struct Envelope: Decodable {
                var kind: String
                var sealed: String?
            }
            var switchboard: Envelope
        }
        struct Content: Decodable { var switchboard: MissedCallPush }
        guard let body = try? SwitchboardJSON.decode(Body.self, from: json) else { return nil }
        if body.switchboard.kind == "sealed" {
            guard let sealed = body.switchboard.sealed, let content = try? sealingKey?.open(sealed) else { return nil }
            self.init(content: content)
            return
        }
        guard body.switchboard.kind == "missedCall", let content = try? SwitchboardJSON.decode(Content.self, from: json)
        else { return nil }
        self = content.switchboard
    }

    /// Reads the `switchboard` object of a missed-call push (what a sealed one holds).
    init?(content: Data) {
        struct Envelope: Decodable { var kind: String }
        guard (try? SwitchboardJSON.decode(Envelope.self, from: content))?.kind == "missedCall",
            let push = try? SwitchboardJSON.decode(MissedCallPush.self, from: content)
        else { return nil }
        self = push
    }

    private var aps: PushPayload.Alert {
        let alert: PushPayload.Alert.Text =
            if title != nil || body != nil {
                .init(title: title, body: body)
            } else {
                .init(locKey: Self.localizationKey, locArgs: [callerName ?? callerId.rawValue])
            }
        return PushPayload.Alert(alert: alert, sound: sound ?? "default")
    }
}

/// The one way Switchboard writes push bodies, and makes them fit APNs' limits.
public enum PushPayload {
    /// Encodes `{"aps":…,"switchboard":{"v":1,"kind":…,…content}}`.
    static func encode<APS: Encodable, Content: Encodable>(aps: APS, kind: String, _ content: Content) throws -> Data {
        try SwitchboardJSON.encode(Body(aps: aps, switchboard: Envelope(kind: kind, content: content)))
    }

    /// Encodes the `switchboard` object alone: `{"v":1,"kind":…,…content}`.
    static func content<Content: Encodable>(kind: String, _ content: Content) throws -> Data {
        try SwitchboardJSON.encode(Envelope(kind: kind, content: content))
    }

    /// Encodes `{"aps":…,"switchboard":{"v":1,"kind":"sealed","sealed":…}}` with `content` sealed for the key.
    static func sealed<APS: Encodable>(aps: APS, content: Data, for sealingKey: String) throws -> Data {
        try encode(aps: aps, kind: "sealed", Sealed(sealed: try SealedPush.seal(content, to: sealingKey)))
    }

    /// Encodes the `switchboard` object of a sealed push alone, `{"v":1,"kind":"sealed","sealed":…}`
    /// with `content` sealed for the key: what Web Push and FCM carry for a device with a sealing key.
    static func sealedContent(_ content: Data, for sealingKey: String) throws -> Data {
        try SwitchboardJSON.encode(Envelope(kind: "sealed", content: Sealed(sealed: try SealedPush.seal(content, to: sealingKey))))
    }

    private struct Sealed: Encodable {
        var sealed: String
    }

    private struct Body<APS: Encodable, Content: Encodable>: Encodable {
        var aps: APS
        var switchboard: Envelope<Content>
    }

    /// `v`, `kind` and the content's fields in one object.
    private struct Envelope<Content: Encodable>: Encodable {
        var kind: String
        var content: Content
        private enum CodingKeys: String, CodingKey { case v, kind }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(1, forKey: .v)
            try container.encode(kind, forKey: .kind)
            try content.encode(to: encoder)
        }
    }

    /// `aps` of a VoIP push: empty (the app reports the call; the system shows nothing itself).
    struct NoAlert: Encodable {}

    /// `aps` of an alert push.
    struct Alert: Encodable {
        struct Text: Encodable {
            var title: String?
            var body: String?
            var locKey: String?
            var locArgs: [String]?

            init(title: String? = nil, body: String? = nil, locKey: String? = nil, locArgs: [String]? = nil) {
                self.title = title
                self.body = body
                self.locKey = locKey
                self.locArgs = locArgs
            }

            private enum CodingKeys: String, CodingKey {
                case title, body
                case locKey = "loc-key"
                case locArgs = "loc-args"
            }
        }

        var alert: Text
        /// Absent: the alert makes no sound.
        var sound: String?
        /// 1 lets the app's notification service extension change the alert (a sealed push).
        var mutableContent: Int?
        /// The notification category, whose actions the app registered.
        var category: String?
        /// `time-sensitive` breaks through Focus, as a ringing call must; `passive` neither sounds
        /// nor lights the screen.
        var interruptionLevel: String?
        /// 1 also hands the push to the app when it runs in the background (where iOS allows it).
        var contentAvailable: Int?

        init(
            alert: Text, sound: String?, mutableContent: Int? = nil, category: String? = nil, interruptionLevel: String? = nil,
            contentAvailable: Int? = nil
        ) {
            self.alert = alert
            self.sound = sound
            self.mutableContent = mutableContent
            self.category = category
            self.interruptionLevel = interruptionLevel
            self.contentAvailable = contentAvailable
        }

        private enum CodingKeys: String, CodingKey {
            case alert, sound, category
            case mutableContent = "mutable-content"
            case interruptionLevel = "interruption-level"
            case contentAvailable = "content-available"
        }
    }

    /// The body of `push`, leaving out its optional texts in the order `dropping` gives, one by
    /// one, until it fits `limit` bytes: APNs refuses a whole push that is too large, and a call
    /// must ring whatever its callers chose to put in it.
    public static func fitted<Push>(
        _ push: Push, limit: Int, dropping: [WritableKeyPath<Push, String?>], payload: (Push) throws -> Data
    ) throws -> Data {
        var push = push
        var body = try payload(push)
        for field in dropping where body.count > limit {
            guard push[keyPath: field] != nil else { continue }
            push[keyPath: field] = nil
            body = try payload(push)
        }
        return body
    }
}
