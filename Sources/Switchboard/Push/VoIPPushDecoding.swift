import Foundation
import SwitchboardProtocol

extension VoIPPush {
    /// Reads a VoIP push (`PKPushPayload.dictionaryPayload`) leniently, because every VoIP push must be
    /// reported to CallKit even when parts of it are missing or come from a newer server: the caller's
    /// name falls back to the caller id, an unknown media type to audio, an unknown call type to
    /// one-to-one, an unknown end reason to `unknown`. Nil when the payload has no `switchboard`
    /// object, no call id, or a kind other than an invitation or an end; report such a push as a
    /// call and end it at once.
    ///
    /// A sealed push (`kind` `sealed`, ``SealedPush``) is opened with `sealingKey`, the device's
    /// key whose public half was registered with the token; without it, or when the box does not
    /// open with it, the push is unreadable (nil).
    public init?(payload: [AnyHashable: Any], sealingKey: PushSealingKey? = nil) {
        guard var body = payload["switchboard"] as? [String: Any] else { return nil }
        if body["kind"] as? String == "sealed" {
            guard let sealed = body["sealed"] as? String, let sealingKey, let content = try? sealingKey.open(sealed),
                let inner = (try? JSONSerialization.jsonObject(with: content)) as? [String: Any], inner["kind"] as? String != "sealed"
            else { return nil }
            body = inner
        }
        func string(_ key: String) -> String? {
            (body[key] as? String).flatMap { $0.isEmpty ? nil : $0 }
        }
        func integer(_ key: String) -> Int64? {
            if let value = body[key] as? Int64 { return value }
            if let value = body[key] as? Int { return Int64(value) }
            if let value = body[key] as? Double { return Int64(value) }
            return (body[key] as? String).flatMap { Int64($0) }
        }
        guard let callId = string("callId").map(CallID.init(rawValue:)) else { return nil }
        let app = integer("sdkAppID").map { SdkAppID($0) }
        let kind = string("kind") ?? (body["reason"] != nil ? "callEnded" : "incomingCall")
        // Another kind (a missed-call alert, or one this SDK does not know) rings nothing.
        guard kind == "incomingCall" || kind == "callEnded" else { return nil }
        if kind == "callEnded" {
            self = .callEnded(
                CallEndedPush(
                    callId: callId, sdkAppID: app,
                    reason: string("reason").flatMap(CallEndReason.init(rawValue:)) ?? .unknown,
                    mediaType: string("mediaType").flatMap(CallMediaType.init(rawValue:))))
            return
        }
        let callerId = UserID(rawValue: string("callerId") ?? "unknown")
        self = .incomingCall(
            IncomingCallPush(
                callId: callId, sdkAppID: app, userId: string("userId").map(UserID.init(rawValue:)), callerId: callerId,
                callerName: string("callerName") ?? callerId.rawValue,
                mediaType: string("mediaType").flatMap(CallMediaType.init(rawValue:)) ?? .audio,
                callType: string("callType").flatMap(CallType.init(rawValue:)) ?? .oneToOne,
                inviterId: string("inviterId").map(UserID.init(rawValue:)), deadline: integer("deadline"),
                userData: body["userData"] as? String,
                pushConfig: PushConfig(
                    title: string("title"), body: string("body"), sound: string("sound"), extra: body["extra"] as? String)))
    }

    /// Reads a push from its JSON body (as APNs delivers it).
    public init?(json: Data, sealingKey: PushSealingKey? = nil) {
        guard let object = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] else { return nil }
        self.init(payload: object, sealingKey: sealingKey)
    }
}
