import Foundation
import SwitchboardProtocol
import Testing

/// Sealed pushes (issue 29): the box is what docs/PROTOCOL.md says, checked against a vector made
/// by an independent implementation (Python's `cryptography`, Golden/push.sealed.vector.json); a
/// wrong key fails cleanly; every sealed push still fits APNs' limits.
struct SealedPushTests {
    struct Vector: Decodable {
        var devicePrivateKey: String
        var devicePublicKey: String
        var ephemeralPrivateKey: String
        var content: String
        var sealed: String
    }

    static func vector() throws -> Vector {
        let url = GoldenTests.goldenDirectory.appendingPathComponent("push.sealed.vector.json")
        return try JSONDecoder().decode(Vector.self, from: Data(contentsOf: url))
    }

    /// Expects the error of a box that does not open, whatever its message.
    static func expectNotForThisDevice(
        sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Data
    ) {
        let error = #expect(throws: SwitchboardError.self, sourceLocation: sourceLocation) { _ = try body() }
        #expect(error?.code == .pushNotSealedForThisDevice, sourceLocation: sourceLocation)
    }

    static func key(_ base64url: String) throws -> PushSealingKey {
        try PushSealingKey(rawRepresentation: try #require(Base64URL.decode(base64url)))
    }

    @Test func theVectorSealsAndOpens() throws {
        let vector = try Self.vector()
        let device = try Self.key(vector.devicePrivateKey)
        #expect(device.publicKey == vector.devicePublicKey)
        let ephemeral = try #require(Base64URL.decode(vector.ephemeralPrivateKey))
        #expect(try SealedPush.seal(Data(vector.content.utf8), to: vector.devicePublicKey, ephemeralKey: ephemeral) == vector.sealed)
        #expect(String(decoding: try device.open(vector.sealed), as: UTF8.self) == vector.content)
        // The golden push carries the vector's box, and its content is the plain invitation's.
        let golden = try Data(contentsOf: GoldenTests.goldenDirectory.appendingPathComponent("push.incomingCall.sealed.json"))
        let body = try #require(try JSONSerialization.jsonObject(with: golden) as? [String: Any])
        let switchboard = try #require(body["switchboard"] as? [String: Any])
        #expect(switchboard["kind"] as? String == "sealed" && switchboard["sealed"] as? String == vector.sealed)
        #expect((body["aps"] as? [String: Any])?.isEmpty == true)
        // Web Push and FCM carry the same box as the whole object.
        let web = try Data(contentsOf: GoldenTests.goldenDirectory.appendingPathComponent("push.web.sealed.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: web) as? [String: Any])
        #expect(object.count == 3 && object["v"] as? Int == 1 && object["kind"] as? String == "sealed")
        #expect(object["sealed"] as? String == vector.sealed)
        let plain = try #require(CallPush(object: Data(vector.content.utf8)))
        #expect(CallPush(object: web, sealingKey: device) == plain)
        #expect(CallPush(object: web, sealingKey: PushSealingKey()) == nil)
        #expect(CallPush(object: web) == nil)
    }

    @Test func aWrongKeyOrAChangedBoxFailsCleanly() throws {
        let vector = try Self.vector()
        Self.expectNotForThisDevice { try PushSealingKey().open(vector.sealed) }
        var bytes = try #require(Base64URL.decode(vector.sealed))
        bytes[40] ^= 1
        let device = try Self.key(vector.devicePrivateKey)
        Self.expectNotForThisDevice { try device.open(Base64URL.encode(bytes)) }
        for garbage in ["", "!!", Base64URL.encode(Data(count: 20))] {
            Self.expectNotForThisDevice { try device.open(garbage) }
        }
        #expect(throws: SwitchboardError.self) { try SealedPush.seal(Data("x".utf8), to: "short") }
    }

    /// The largest invitation and missed call still fit once sealed: the fitting leaves out
    /// `userData` first, as for a plain push.
    @Test func sealedPushesFitAPNsLimits() throws {
        let device = PushSealingKey()
        let config = PushConfig(
            title: String(repeating: "t", count: PushConfig.maxTitleBytes), body: String(repeating: "b", count: PushConfig.maxBodyBytes),
            sound: "ring.caf", extra: String(repeating: "e", count: PushConfig.maxExtraBytes))
        let invitation = IncomingCallPush(
            callId: "5c3a8f2e-1b7d-4e0a-9c21-6f4d2b8e7a10", sdkAppID: 1_400_000_001, userId: "bob", callerId: "alice",
            callerName: String(repeating: "n", count: 64), mediaType: .video, callType: .group, inviterId: "alice",
            deadline: 1_767_225_630_000, userData: String(repeating: "\u{1}", count: 4096), pushConfig: config)
        let voip = try VoIPPush.incomingCall(invitation).fittedSealedPayload(for: device.publicKey)
        #expect(voip.count <= VoIPPush.maxPayloadBytes)
        let missed = MissedCallPush(
            callId: invitation.callId, sdkAppID: 1_400_000_001, userId: "bob", callerId: "alice",
            callerName: invitation.callerName, mediaType: .video, callType: .group, reason: .noResponse,
            userData: invitation.userData, pushConfig: config)
        let alert = try missed.fittedSealedPayload(for: device.publicKey)
        #expect(alert.count <= MissedCallPush.maxPayloadBytes)
        // The alert names nobody; the box holds the missed call, which the device's key opens.
        let object = try #require(try JSONSerialization.jsonObject(with: alert) as? [String: Any])
        let aps = try #require(object["aps"] as? [String: Any])
        #expect(aps["mutable-content"] as? Int == 1)
        #expect((aps["alert"] as? [String: Any])?["loc-key"] as? String == MissedCallPush.sealedLocalizationKey)
        #expect(!String(decoding: alert, as: UTF8.self).contains("alice"))
        let opened = try #require(MissedCallPush(json: alert, sealingKey: device))
        #expect(opened.callerId == "alice" && opened.reason == .noResponse && opened.title == config.title)
        #expect(MissedCallPush(json: alert, sealingKey: PushSealingKey()) == nil)

        // The invitation as a sealed alert (no CallKit), and the sealed end of that ringing.
        let ringing = try invitation.fittedSealedAlertPayload(for: device.publicKey)
        #expect(ringing.count <= MissedCallPush.maxPayloadBytes)
        #expect(!String(decoding: ringing, as: UTF8.self).contains("alice"))
        guard case .incomingCall(let opened)? = VoIPPush(json: ringing, sealingKey: device) else {
            Issue.record("the sealed alert does not open")
            return
        }
        #expect(opened.callerId == "alice" && opened.title == config.title)
        let end = CallEndedPush(callId: invitation.callId, sdkAppID: 1_400_000_001, reason: .canceled, mediaType: .video)
        let stop = try end.sealedAlertPayload(for: device.publicKey)
        #expect(VoIPPush(json: stop, sealingKey: device) == .callEnded(end))
        // Web Push and FCM: the sealed object within the room a message leaves
        // (Web Push: 4096 bytes less the aes128gcm header, delimiter and tag).
        for limit in [4096 - 86 - 17, 4096 - 11] {
            for push in [CallPush.incomingCall(invitation), .missedCall(missed), .callEnded(end)] {
                let sealed = try push.fittedObject(limit: limit, sealingKey: device.publicKey)
                #expect(sealed.count <= limit, "\(push.kind) in \(limit)")
                #expect(!String(decoding: sealed, as: UTF8.self).contains("alice"))
                let inside = try #require(CallPush(object: sealed, sealingKey: device))
                #expect(inside.callId == push.callId && inside.kind == push.kind)
            }
        }
    }
}
