import Foundation
import SwitchboardProtocol
import Testing

/// Moving a call between a user's devices (docs/PROTOCOL.md, "Moving a call to another device").
extension GoldenTests {
    @Test func movingACall() throws {
        let expiresAt = Self.created + 90_000
        try check(
            "request.call.offerMove",
            RequestEnvelope(id: "40", data: OfferCallMoveRequest(callId: Self.callId, deviceId: "bob-laptop")))
        try check("request.call.offerMove.anyDevice", RequestEnvelope(id: "41", data: OfferCallMoveRequest(callId: Self.callId)))
        try check("response.call.offerMove", ResponseEnvelope(id: "40", outcome: .success(OfferCallMoveResponse(expiresAt: expiresAt))))
        try check("request.call.take", RequestEnvelope(id: "42", data: TakeCallRequest(callId: Self.callId)))
        try check("response.call.take", ResponseEnvelope(id: "42", outcome: .success(CallSnapshotResponse(call: Self.connected))))
        try check(
            "response.error.moveNotOffered",
            ResponseEnvelope<Empty>(id: "43", outcome: .failure(SwitchboardError(.moveNotOffered))))
        try check(
            "event.callMoveOffered",
            ServerEvent.callMoveOffered(
                CallMoveOfferedEvent(
                    call: Self.connected, fromDeviceId: "bob-phone", toDeviceId: "bob-laptop", expiresAt: expiresAt)))
        try check(
            "event.callMoveOfferEnded",
            ServerEvent.callMoveOfferEnded(CallMoveOfferEndedEvent(callId: Self.callId, reason: .expired)))
        try check(
            "event.callMoved",
            ServerEvent.callMoved(CallMovedEvent(call: Self.connected, fromDeviceId: "bob-phone", toDeviceId: "bob-laptop")))
        try check("event.memberMoved", ServerEvent.memberMoved(MemberMovedEvent(callId: Self.callId, userId: "bob")))
    }
}
