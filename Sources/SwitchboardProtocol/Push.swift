import Foundation

/// Which APNs environment a token belongs to: development builds get sandbox tokens.
public enum PushEnvironment: String, Codable, Sendable, CaseIterable {
    case sandbox
    case production
}

/// Register this device's VoIP push token (from PushKit) so that calls reach it while the app is
/// not running. One token per device. A token held by another device or user is refused
/// (`pushTokenInUse`) unless ``move`` is set, which takes it over within the same app.
public struct RegisterPushTokenRequest: SignalingRequest {
    public typealias Response = Empty
    public static let type = RequestType.registerPushToken

    /// The token as hex (64 digits for today's tokens; 32–200 accepted).
    public var token: String
    public var environment: PushEnvironment
    /// The app's bundle id; pushes go to topic `<bundleId>.voip`.
    public var bundleId: String
    /// Take the token over from another device or user of the same app that holds it.
    public var move: Bool?

    public init(token: String, environment: PushEnvironment, bundleId: String, move: Bool? = nil) {
        self.token = token
        self.environment = environment
        self.bundleId = bundleId
        self.move = move
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

/// Stop VoIP pushes to this device.
public struct UnregisterPushTokenRequest: SignalingRequest {
    public typealias Response = Empty
    public static let type = RequestType.unregisterPushToken
    public init() {}
}

extension RequestType {
    public static let registerPushToken = RequestType(rawValue: "push.register")
    public static let unregisterPushToken = RequestType(rawValue: "push.unregister")
}

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

    public init(
        callId: CallID, sdkAppID: SdkAppID? = nil, userId: UserID? = nil, callerId: UserID, callerName: String? = nil,
        mediaType: CallMediaType, callType: CallType, inviterId: UserID? = nil, deadline: Int64? = nil
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
    }
}

/// A call that rang for the user stopped ringing (canceled, answered elsewhere, timed out…):
/// the follow-up push that takes the ringing screen away.
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

    /// The JSON body of the push, made to fit ``maxPayloadBytes``: the text a client chose (the
    /// caller's nickname) is left out before APNs would refuse the whole push.
    public func fittedPayload() throws -> Data {
        let body = try payload()
        guard body.count > Self.maxPayloadBytes, case .incomingCall(var push) = self else { return body }
        push.callerName = nil
        return try VoIPPush.incomingCall(push).payload()
    }

    /// The JSON body of the push.
    public func payload() throws -> Data {
        struct Body<Content: Encodable>: Encodable {
            struct Envelope: Encodable {
                var v = 1
                var kind: String
                var content: Content
                private enum CodingKeys: String, CodingKey { case v, kind }
                func encode(to encoder: any Encoder) throws {
                    var container = encoder.container(keyedBy: CodingKeys.self)
                    try container.encode(v, forKey: .v)
                    try container.encode(kind, forKey: .kind)
                    try content.encode(to: encoder)
                }
            }
            var aps: [String: String] = [:]
            var switchboard: Envelope
        }
        switch self {
        case .incomingCall(let push):
            return try SwitchboardJSON.encode(Body(switchboard: .init(kind: "incomingCall", content: push)))
        case .callEnded(let push):
            return try SwitchboardJSON.encode(Body(switchboard: .init(kind: "callEnded", content: push)))
        }
    }
}
