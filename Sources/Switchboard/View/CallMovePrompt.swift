import SwitchboardProtocol

/// The "continue here" prompt (docs/IOS.md, "Moving a call between your devices"): the newest
/// call another of your devices offers to this one, while this device is in no call of its own
/// (a device in a call is busy: it takes an offer once its call is over, if the offer still
/// stands). The views draw it as a banner with the call's other members and a "Continue here"
/// button, whose press is ``CallStore/take(callId:)``; the prompt goes when the offer ends
/// (taken, withdrawn, lapsed: the server says so, and the store drops it).
public struct CallMovePrompt: Equatable, Sendable {
    public var callId: CallID
    /// The device the call is on now.
    public var fromDeviceId: DeviceID
    /// The members other than you who are in the call, as the banner names them.
    public var otherMembers: [CallParticipant]
    public var mediaType: CallMediaType
    /// When the offer lapses (Unix ms, server clock).
    public var expiresAt: Int64

    public static func of(_ state: CallStore.State) -> CallMovePrompt? {
        guard state.activeCall == nil, let offer = state.moveOffers.last else { return nil }
        let me = state.selfInfo.userId
        return CallMovePrompt(
            callId: offer.call.callId, fromDeviceId: offer.fromDeviceId,
            otherMembers: offer.call.participants.filter { $0.userId != me && $0.status == .accept },
            mediaType: offer.call.mediaType, expiresAt: offer.expiresAt)
    }
}
