import Foundation

/// A call's push as Web Push and FCM carry it: the same object APNs pushes carry under their
/// `switchboard` key, `{"v":1,"kind":…,…}`, without `aps` (docs/PROTOCOL.md, "Web Push and FCM").
///
/// Unlike a VoIP push, these may say that a call stopped ringing (``callEnded(_:)``): a browser's
/// notification or an Android app's ringing screen must go away when the caller cancels or
/// another device answers, and nothing obliges those apps to ring for every push they get.
public enum CallPush: Equatable, Sendable {
    /// A call rings for the user.
    case incomingCall(IncomingCallPush)
    /// A call that rang for the user by push stopped ringing (canceled, answered elsewhere,
    /// declined elsewhere, timed out).
    case callEnded(CallEndedPush)
    /// A call the user missed, when the caller asked to announce it (``PushConfig/missedCallAlert``).
    case missedCall(MissedCallPush)

    public var callId: CallID {
        switch self {
        case .incomingCall(let push): push.callId
        case .callEnded(let push): push.callId
        case .missedCall(let push): push.callId
        }
    }

    /// `incomingCall`, `callEnded` or `missedCall`, as the object's `kind` says.
    public var kind: String {
        switch self {
        case .incomingCall: "incomingCall"
        case .callEnded: "callEnded"
        case .missedCall: "missedCall"
        }
    }

    /// The object as JSON.
    public func object() throws -> Data {
        switch self {
        case .incomingCall(let push): try PushPayload.content(kind: kind, push)
        case .callEnded(let push): try PushPayload.content(kind: kind, push)
        case .missedCall(let push): try PushPayload.content(kind: kind, push)
        }
    }

    /// The object made to fit `limit` bytes, leaving out the optional texts as APNs pushes do
    /// (``PushPayload/fitted(_:limit:dropping:payload:)``). For a device with a sealing key
    /// (``RegisterPushTokenRequest/sealingKey``) the object is sealed for it,
    /// `{"v":1,"kind":"sealed","sealed":…}` (``SealedPush``), the box fitted to `limit` the same way.
    public func fittedObject(limit: Int, sealingKey: String? = nil) throws -> Data {
        let encode: (CallPush) throws -> Data = { push in
            guard let sealingKey else { return try push.object() }
            return try PushPayload.sealedContent(try push.object(), for: sealingKey)
        }
        switch self {
        case .incomingCall(let push):
            return try PushPayload.fitted(push, limit: limit, dropping: IncomingCallPush.droppable) {
                try encode(.incomingCall($0))
            }
        case .callEnded:
            return try encode(self)
        case .missedCall(let push):
            return try PushPayload.fitted(push, limit: limit, dropping: MissedCallPush.droppable) {
                try encode(.missedCall($0))
            }
        }
    }

    /// Reads an object that may be sealed: a sealed one (`kind` `sealed`) opens with `sealingKey`;
    /// nil when it does not open or is not one of the three kinds.
    public init?(object: Data, sealingKey: PushSealingKey?) {
        struct Sealed: Decodable {
            var kind: String
            var sealed: String?
        }
        guard let envelope = try? SwitchboardJSON.decode(Sealed.self, from: object) else { return nil }
        guard envelope.kind == "sealed" else {
            self.init(object: object)
            return
        }
        guard let sealed = envelope.sealed, let content = try? sealingKey?.open(sealed) else { return nil }
        self.init(object: content)
    }

    /// Reads an object written by ``object()``; nil when it is not one of the three kinds.
    public init?(object: Data) {
        struct Kind: Decodable { var kind: String }
        guard let kind = try? SwitchboardJSON.decode(Kind.self, from: object) else { return nil }
        switch kind.kind {
        case "incomingCall":
            guard let push = try? SwitchboardJSON.decode(IncomingCallPush.self, from: object) else { return nil }
            self = .incomingCall(push)
        case "callEnded":
            guard let push = try? SwitchboardJSON.decode(CallEndedPush.self, from: object) else { return nil }
            self = .callEnded(push)
        case "missedCall":
            guard let push = try? SwitchboardJSON.decode(MissedCallPush.self, from: object) else { return nil }
            self = .missedCall(push)
        default:
            return nil
        }
    }
}
