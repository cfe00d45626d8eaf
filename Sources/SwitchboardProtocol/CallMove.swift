import Foundation

// Moving a live call to another of the user's devices (docs/PROTOCOL.md, "Moving a call to
// another device"): the device in the call offers it, another device of the same user takes it,
// the call goes on with the same id, start time, members and records.

extension RequestType {
    public static let offerCallMove = RequestType(rawValue: "call.offerMove")
    public static let takeCall = RequestType(rawValue: "call.take")
}

/// Offer the call to another of this user's devices (`deviceId`), or to all of them (absent).
/// Sent from the device in the call; a new offer replaces the previous one.
public struct OfferCallMoveRequest: SignalingRequest {
    public typealias Response = OfferCallMoveResponse
    public static let type = RequestType.offerCallMove

    public var callId: CallID
    public var deviceId: DeviceID?

    public init(callId: CallID, deviceId: DeviceID? = nil) {
        self.callId = callId
        self.deviceId = deviceId
    }
}

public struct OfferCallMoveResponse: Codable, Equatable, Sendable {
    /// When the offer lapses unless taken (Unix ms, server clock).
    public var expiresAt: Int64
    public init(expiresAt: Int64) { self.expiresAt = expiresAt }
}

/// Take the call onto this device: from now on the user is in the call here.
public struct TakeCallRequest: SignalingRequest {
    public typealias Response = CallSnapshotResponse
    public static let type = RequestType.takeCall

    public var callId: CallID
    public init(callId: CallID) { self.callId = callId }
}

/// To the devices a move is offered to: "continue here".
public struct CallMoveOfferedEvent: Codable, Equatable, Sendable {
    public var call: CallInfo
    /// The device the call is on now.
    public var fromDeviceId: DeviceID
    /// The device offered, or absent: every other device of the user.
    public var toDeviceId: DeviceID?
    public var expiresAt: Int64

    public init(call: CallInfo, fromDeviceId: DeviceID, toDeviceId: DeviceID?, expiresAt: Int64) {
        self.call = call
        self.fromDeviceId = fromDeviceId
        self.toDeviceId = toDeviceId
        self.expiresAt = expiresAt
    }
}

/// Why an offer ended without a move.
public enum CallMoveOfferEndReason: String, Codable, Sendable {
    /// Nobody took it in time.
    case expired
    /// The device in the call made another offer in its place.
    case withdrawn
}

/// To the devices an offer went to, when it ends without a move (a move is `callMoved`; the end
/// of the user's part in the call is `callElsewhere` with `active: false`).
public struct CallMoveOfferEndedEvent: Codable, Equatable, Sendable {
    public var callId: CallID
    public var reason: CallMoveOfferEndReason

    public init(callId: CallID, reason: CallMoveOfferEndReason) {
        self.callId = callId
        self.reason = reason
    }
}

/// To every device of the user who moved: the call is on `toDeviceId` now. The device it left
/// stops its part (without ending the call); the others show it elsewhere, on the new device.
public struct CallMovedEvent: Codable, Equatable, Sendable {
    public var call: CallInfo
    public var fromDeviceId: DeviceID
    public var toDeviceId: DeviceID

    public init(call: CallInfo, fromDeviceId: DeviceID, toDeviceId: DeviceID) {
        self.call = call
        self.fromDeviceId = fromDeviceId
        self.toDeviceId = toDeviceId
    }
}

/// To the other members in the call: `userId` is in it on another device now, so the media with
/// them starts over (a new peer connection, or their new SFU tracks). The member stays the same:
/// no one left, no one joined.
public struct MemberMovedEvent: Codable, Equatable, Sendable {
    public var callId: CallID
    public var userId: UserID

    public init(callId: CallID, userId: UserID) {
        self.callId = callId
        self.userId = userId
    }
}

/// `call.member.moved`: a member took the call onto another of their devices.
public struct WebhookMemberMoved: Codable, Equatable, Sendable {
    public var callId: CallID
    public var sequence: Int
    public var userId: UserID
    public var fromDeviceId: DeviceID
    public var toDeviceId: DeviceID
    /// The device took an offer (false: it took the call without one, as the app allows).
    public var offered: Bool

    public init(
        callId: CallID, sequence: Int = 0, userId: UserID, fromDeviceId: DeviceID, toDeviceId: DeviceID, offered: Bool
    ) {
        self.callId = callId
        self.sequence = sequence
        self.userId = userId
        self.fromDeviceId = fromDeviceId
        self.toDeviceId = toDeviceId
        self.offered = offered
    }
}
