import Foundation

/// An error with a stable numeric code, as it travels on the wire (`{"code": 3001, "message": "…"}`).
///
/// Codes are grouped in ranges: 1xxx protocol and connection, 2xxx login, 3xxx calls, 4xxx records,
/// 5xxx server and admin API, 6xxx push, 7xxx media, 8xxx webhooks and the admin API's records,
/// 9xxx client side (never on the wire).
/// A code never changes meaning once released; docs/PROTOCOL.md lists them all.
public struct SwitchboardError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The stable code.
    public let code: Code
    /// A human-readable explanation; may carry details such as the offending field.
    public let message: String
    /// For `rateLimited`: how many milliseconds to wait before trying again.
    public let retryAfter: Int64?

    public init(_ code: Code, _ message: String? = nil, retryAfter: Int64? = nil) {
        self.code = code
        self.message = message ?? code.defaultMessage
        self.retryAfter = retryAfter
    }

    public var description: String { "\(code.name) (\(code.rawValue)): \(message)" }

    /// A stable error code. Use the static members; ``name`` is a short label for metrics and logs.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Int, CaseIterable {
            case malformedMessage = 1001
            case unknownType = 1002
            case invalidParams = 1003
            case messageTooLarge = 1004
            case notLoggedIn = 1005
            case alreadyLoggedIn = 1006
            case unsupportedProtocolVersion = 1007
            case rateLimited = 1008
            case invalidRequestID = 1010
            case sessionReplaced = 1011
            case loginTimeout = 1012
            case tooManyDevices = 1013

            case userSigMalformed = 2001
            case userSigBadSignature = 2002
            case userSigExpired = 2003
            case userSigNotYetValid = 2004
            case userSigWrongApp = 2005
            case userSigWrongUser = 2006
            case invalidUserID = 2007
            case unknownApp = 2008
            case invalidDeviceID = 2009

            case callNotFound = 3001
            case notInCall = 3002
            case invalidCallState = 3003
            case alreadyAccepted = 3004
            case callAlreadyEnded = 3005
            case cannotCallSelf = 3006
            case tooManyParticipants = 3007
            case userDataTooLarge = 3008
            case alreadyInCall = 3009
            case invalidTimeout = 3010
            case noParticipants = 3011
            case joinNotAllowed = 3012
            case groupCallOnly = 3013
            case mediaChangeInProgress = 3014
            case transactionNotFound = 3015
            case invalidRoomID = 3016
            case oneToOneOnly = 3017
            case invalidChatGroupID = 3018
            case invalidPushConfig = 3019
            case moveNotOffered = 3020
            case recordingNotAllowed = 3021
            case recordingUnavailable = 3022

            case invalidRecordCount = 4001
            case tooManyCallIDs = 4002
            case invalidSyncTime = 4003

            case internalError = 5001
            case shuttingDown = 5002
            case storageUnavailable = 5003
            case unauthorized = 5004
            case notFound = 5005
            case developmentOnly = 5006
            case hostNotAllowed = 5007

            case invalidPushToken = 6001
            case invalidBundleID = 6002
            case pushTokenInUse = 6003
            case pushEndpointNotAllowed = 6004

            case mediaPayloadTooLarge = 7001
            case peerNotInCall = 7002
            case sfuSessionMismatch = 7003
            case sfuNotInUse = 7004
            case invalidSessionDescription = 7005
            case tooManyPublishedTracks = 7006

            case invalidWebhookURL = 8001
            case webhookURLNotAllowed = 8002
            case unknownWebhookEvent = 8003
            case tooManyWebhookEndpoints = 8004
            case invalidTimeRange = 8005
            case invalidCursor = 8006

            case connectionFailed = 9001
            case requestTimedOut = 9002
            case notConnected = 9003
            case connectionLost = 9004
            case invalidResponse = 9005
            case systemRefused = 9006
            case pushNotSealedForThisDevice = 9007
        }

        private let base: Base?
        /// The numeric code carried on the wire.
        public let rawValue: Int

        private init(_ base: Base) {
            self.base = base
            self.rawValue = base.rawValue
        }

        /// A code received from a newer peer that this build does not know.
        public init(rawValue: Int) {
            self.base = Base(rawValue: rawValue)
            self.rawValue = rawValue
        }

        /// Every code this build knows, in numeric order.
        public static var allCases: [Code] { Base.allCases.map(Code.init) }

        /// Short constant label, e.g. `callNotFound`; never contains request data.
        public var name: String { base.map { "\($0)" } ?? "unknown(\(rawValue))" }
        public var description: String { name }

        // MARK: 1xxx protocol
        /// The frame is not a JSON object with a string `type` (or `id`).
        public static let malformedMessage = Code(.malformedMessage)
        /// The request `type` is not one this server knows.
        public static let unknownType = Code(.unknownType)
        /// A field is missing, has the wrong type or an invalid value.
        public static let invalidParams = Code(.invalidParams)
        /// The message is larger than the 64 KiB limit.
        public static let messageTooLarge = Code(.messageTooLarge)
        /// The request needs a logged-in session.
        public static let notLoggedIn = Code(.notLoggedIn)
        /// The connection is already logged in.
        public static let alreadyLoggedIn = Code(.alreadyLoggedIn)
        /// The client speaks a protocol version this server does not.
        public static let unsupportedProtocolVersion = Code(.unsupportedProtocolVersion)
        /// Too many requests; retry after the time given in the message.
        public static let rateLimited = Code(.rateLimited)
        /// The request id is empty or too long.
        public static let invalidRequestID = Code(.invalidRequestID)
        /// The same device logged in on another connection; this one is closed.
        public static let sessionReplaced = Code(.sessionReplaced)
        /// The connection did not log in within the login deadline (10 s) and is closed.
        public static let loginTimeout = Code(.loginTimeout)
        /// The user has as many connected devices as the server allows.
        public static let tooManyDevices = Code(.tooManyDevices)

        // MARK: 2xxx login
        /// The UserSig is not base64url-encoded zlib-compressed JSON with the TLS fields.
        public static let userSigMalformed = Code(.userSigMalformed)
        /// The UserSig's HMAC does not match (forged or made with another secret).
        public static let userSigBadSignature = Code(.userSigBadSignature)
        /// The UserSig's lifetime is over.
        public static let userSigExpired = Code(.userSigExpired)
        /// The UserSig was issued in the future, beyond the allowed clock skew.
        public static let userSigNotYetValid = Code(.userSigNotYetValid)
        /// The UserSig was issued for another sdkAppID.
        public static let userSigWrongApp = Code(.userSigWrongApp)
        /// The UserSig was issued for another userID.
        public static let userSigWrongUser = Code(.userSigWrongUser)
        /// The userID breaks the rules: 1–32 letters, digits, `-` or `_`.
        public static let invalidUserID = Code(.invalidUserID)
        /// This server has no app with that sdkAppID.
        public static let unknownApp = Code(.unknownApp)
        /// The deviceId is empty or too long.
        public static let invalidDeviceID = Code(.invalidDeviceID)

        // MARK: 3xxx calls
        /// No such call (never existed, or ended long ago).
        public static let callNotFound = Code(.callNotFound)
        /// The call exists but the user is not one of its members.
        public static let notInCall = Code(.notInCall)
        /// The action does not fit the member's or the call's current state.
        public static let invalidCallState = Code(.invalidCallState)
        /// The user already accepted this call.
        public static let alreadyAccepted = Code(.alreadyAccepted)
        /// The call has ended.
        public static let callAlreadyEnded = Code(.callAlreadyEnded)
        /// A user cannot call themselves.
        public static let cannotCallSelf = Code(.cannotCallSelf)
        /// More participants than the app allows.
        public static let tooManyParticipants = Code(.tooManyParticipants)
        /// `userData` is larger than allowed.
        public static let userDataTooLarge = Code(.userDataTooLarge)
        /// The caller is already in a call.
        public static let alreadyInCall = Code(.alreadyInCall)
        /// The timeout is outside the allowed range.
        public static let invalidTimeout = Code(.invalidTimeout)
        /// A call needs at least one participant.
        public static let noParticipants = Code(.noParticipants)
        /// The user may not join this call (not invited, not in its chat group).
        public static let joinNotAllowed = Code(.joinNotAllowed)
        /// The action exists for group calls only.
        public static let groupCallOnly = Code(.groupCallOnly)
        /// A media-type change is already open for this call.
        public static let mediaChangeInProgress = Code(.mediaChangeInProgress)
        /// No open transaction with that id.
        public static let transactionNotFound = Code(.transactionNotFound)
        /// The roomId is empty, too long or has forbidden characters.
        public static let invalidRoomID = Code(.invalidRoomID)
        /// The action exists for one-to-one calls only.
        public static let oneToOneOnly = Code(.oneToOneOnly)
        /// The chatGroupId is empty, too long or has forbidden characters.
        public static let invalidChatGroupID = Code(.invalidChatGroupID)
        /// A `pushConfig` field is too long or malformed (see ``PushConfig``).
        public static let invalidPushConfig = Code(.invalidPushConfig)
        /// This device may not take the call: no open move offer names it (it expired, was
        /// withdrawn, or another device took the call first), and the app lets a device take a
        /// call only when offered.
        public static let moveNotOffered = Code(.moveNotOffered)
        /// The app's recording policy or recording control does not let this member start or
        /// stop a recording (off; `always` cannot be stopped; only the caller controls it).
        public static let recordingNotAllowed = Code(.recordingNotAllowed)
        /// The server cannot record now: it has no SFU or no recordings directory, or too many
        /// recordings wait for conversion.
        public static let recordingUnavailable = Code(.recordingUnavailable)

        // MARK: 4xxx records
        /// `count` must be 1…100.
        public static let invalidRecordCount = Code(.invalidRecordCount)
        /// Too many callIds in one delete.
        public static let tooManyCallIDs = Code(.tooManyCallIDs)
        /// `syncTime` must be -1 or a non-negative timestamp.
        public static let invalidSyncTime = Code(.invalidSyncTime)

        // MARK: 5xxx server
        /// Something failed inside the server; the request may be retried.
        public static let internalError = Code(.internalError)
        /// The server is shutting down and takes no new work.
        public static let shuttingDown = Code(.shuttingDown)
        /// The database could not be reached or written.
        public static let storageUnavailable = Code(.storageUnavailable)
        /// The admin secret is missing or wrong.
        public static let unauthorized = Code(.unauthorized)
        /// No such resource on the admin API.
        public static let notFound = Code(.notFound)
        /// The endpoint exists in development mode only.
        public static let developmentOnly = Code(.developmentOnly)
        /// The development endpoint answers requests for loopback hosts only (or those the
        /// operator lists): another `Host` may be a site that rebound its name to this server.
        public static let hostNotAllowed = Code(.hostNotAllowed)

        // MARK: 6xxx push
        /// The push token is not 32–200 hex digits.
        public static let invalidPushToken = Code(.invalidPushToken)
        /// The bundle id is empty or malformed.
        public static let invalidBundleID = Code(.invalidBundleID)
        /// The token is registered to another device or user; say `move: true` to take it over
        /// (within the same app only).
        public static let pushTokenInUse = Code(.pushTokenInUse)
        /// A Web Push endpoint on a host the server does not send to: loopback, private,
        /// link-local or otherwise not public, a name that is not a public DNS name, or a port
        /// other than 443, unless the operator allows the host (`--web-push-allowed-hosts`).
        public static let pushEndpointNotAllowed = Code(.pushEndpointNotAllowed)

        // MARK: 7xxx media
        /// An SDP or ICE payload is larger than allowed.
        public static let mediaPayloadTooLarge = Code(.mediaPayloadTooLarge)
        /// The target of a media message is not a connected member of the call.
        public static let peerNotInCall = Code(.peerNotInCall)
        /// An SFU signal names another session than the member's current one (an older one, after
        /// a restart): its connections are gone; the current session's `sfuSession` says what to do.
        public static let sfuSessionMismatch = Code(.sfuSessionMismatch)
        /// An SFU request in a call whose media is peer to peer.
        public static let sfuNotInUse = Code(.sfuNotInUse)
        /// An SFU offer or answer that is not a session description the SFU can take: it must
        /// start with `v=0`, have a media section, and give every media section an `a=mid` of at
        /// most 32 bytes.
        public static let invalidSessionDescription = Code(.invalidSessionDescription)
        /// A publish offer with more media sections than a member publishes (microphone, camera,
        /// screen, and the screen's sound: 4).
        public static let tooManyPublishedTracks = Code(.tooManyPublishedTracks)

        // MARK: 8xxx webhooks and records (admin API)
        /// A webhook endpoint must be an http(s) URL with a host, without user info or fragment.
        public static let invalidWebhookURL = Code(.invalidWebhookURL)
        /// The endpoint's host does not resolve, or resolves to a loopback, private, link-local or
        /// reserved address the operator did not allow (`--webhook-allow`).
        public static let webhookURLNotAllowed = Code(.webhookURLNotAllowed)
        /// An event type that does not exist.
        public static let unknownWebhookEvent = Code(.unknownWebhookEvent)
        /// The app has as many webhook endpoints as allowed (10).
        public static let tooManyWebhookEndpoints = Code(.tooManyWebhookEndpoints)
        /// `from`/`to` must be Unix milliseconds with `from` before `to`.
        public static let invalidTimeRange = Code(.invalidTimeRange)
        /// The paging cursor is not one this server gave.
        public static let invalidCursor = Code(.invalidCursor)

        // MARK: 9xxx client side (never sent by the server)
        /// The client could not open the WebSocket.
        public static let connectionFailed = Code(.connectionFailed)
        /// No response arrived within the request timeout.
        public static let requestTimedOut = Code(.requestTimedOut)
        /// The client is not connected (log in first).
        public static let notConnected = Code(.notConnected)
        /// The connection dropped before the response arrived.
        public static let connectionLost = Code(.connectionLost)
        /// The server's response could not be decoded.
        public static let invalidResponse = Code(.invalidResponse)
        /// The system (CallKit) refused the change, or the call is not one the system knows.
        public static let systemRefused = Code(.systemRefused)
        /// A sealed push does not open with this device's key (sealed for another key, changed, or
        /// not a sealed box at all).
        public static let pushNotSealedForThisDevice = Code(.pushNotSealedForThisDevice)

        fileprivate var defaultMessage: String {
            switch base {
            case .malformedMessage: "message is not a JSON object with a string type and id"
            case .unknownType: "unknown request type"
            case .invalidParams: "invalid parameters"
            case .messageTooLarge: "message too large"
            case .notLoggedIn: "log in first"
            case .alreadyLoggedIn: "already logged in on this connection"
            case .unsupportedProtocolVersion: "unsupported protocol version"
            case .rateLimited: "too many requests"
            case .invalidRequestID: "request id must be 1-64 characters"
            case .sessionReplaced: "this device logged in on another connection"
            case .loginTimeout: "no login within the login deadline"
            case .tooManyDevices: "too many connected devices for this user"
            case .userSigMalformed: "UserSig is malformed"
            case .userSigBadSignature: "UserSig signature does not match"
            case .userSigExpired: "UserSig has expired"
            case .userSigNotYetValid: "UserSig is not valid yet"
            case .userSigWrongApp: "UserSig was issued for another sdkAppID"
            case .userSigWrongUser: "UserSig was issued for another userID"
            case .invalidUserID: "userID must be 1-32 letters, digits, '-' or '_'"
            case .unknownApp: "unknown sdkAppID"
            case .invalidDeviceID: "deviceId must be 1-64 characters"
            case .callNotFound: "call not found"
            case .notInCall: "you are not a member of this call"
            case .invalidCallState: "not possible in the call's current state"
            case .alreadyAccepted: "call already accepted"
            case .callAlreadyEnded: "call has ended"
            case .cannotCallSelf: "cannot call yourself"
            case .tooManyParticipants: "too many participants"
            case .userDataTooLarge: "userData too large"
            case .alreadyInCall: "you are already in a call"
            case .invalidTimeout: "timeout out of range"
            case .noParticipants: "no participants"
            case .joinNotAllowed: "you may not join this call"
            case .groupCallOnly: "only for group calls"
            case .mediaChangeInProgress: "a media type change is already in progress"
            case .transactionNotFound: "no such transaction"
            case .invalidRoomID: "invalid roomId"
            case .oneToOneOnly: "only for one-to-one calls"
            case .invalidChatGroupID: "invalid chatGroupId"
            case .invalidPushConfig: "invalid pushConfig"
            case .moveNotOffered: "the call was not offered to this device"
            case .recordingNotAllowed: "recording is not allowed"
            case .recordingUnavailable: "recording is unavailable"
            case .invalidRecordCount: "count must be 1-100"
            case .tooManyCallIDs: "too many callIds"
            case .invalidSyncTime: "syncTime must be -1 or >= 0"
            case .internalError: "internal server error"
            case .shuttingDown: "server is shutting down"
            case .storageUnavailable: "storage unavailable"
            case .unauthorized: "unauthorized"
            case .notFound: "not found"
            case .developmentOnly: "available in development mode only"
            case .hostNotAllowed: "not available to requests for this host"
            case .invalidPushToken: "invalid push token"
            case .invalidBundleID: "invalid bundle id"
            case .pushTokenInUse: "push token registered to another device"
            case .pushEndpointNotAllowed: "the server does not send pushes to this endpoint"
            case .mediaPayloadTooLarge: "media payload too large"
            case .peerNotInCall: "peer is not in this call"
            case .sfuSessionMismatch: "not your current SFU session"
            case .sfuNotInUse: "this call's media is peer to peer"
            case .invalidSessionDescription: "not a session description the SFU can take"
            case .tooManyPublishedTracks: "too many tracks published"
            case .invalidWebhookURL: "invalid webhook endpoint URL"
            case .webhookURLNotAllowed: "webhook endpoint not allowed"
            case .unknownWebhookEvent: "unknown webhook event type"
            case .tooManyWebhookEndpoints: "too many webhook endpoints for this app"
            case .invalidTimeRange: "invalid time range"
            case .invalidCursor: "invalid cursor"
            case .connectionFailed: "could not connect to the server"
            case .requestTimedOut: "the server did not answer in time"
            case .notConnected: "not connected"
            case .connectionLost: "the connection was lost"
            case .invalidResponse: "the server's response could not be decoded"
            case .systemRefused: "the system refused the call action"
            case .pushNotSealedForThisDevice: "the sealed push is not for this device"
            case .none: "error \(rawValue)"
            }
        }
    }
}

extension SwitchboardError: Codable {
    private enum CodingKeys: String, CodingKey { case code, message, retryAfter }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.code = Code(rawValue: try container.decode(Int.self, forKey: .code))
        self.message = try container.decodeIfPresent(String.self, forKey: .message) ?? ""
        self.retryAfter = try container.decodeIfPresent(Int64.self, forKey: .retryAfter)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code.rawValue, forKey: .code)
        try container.encode(message, forKey: .message)
        try container.encodeIfPresent(retryAfter, forKey: .retryAfter)
    }
}
