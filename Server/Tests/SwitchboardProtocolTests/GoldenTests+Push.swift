import Foundation
import SwitchboardProtocol
import Testing

/// The golden files of push: token registration, the push bodies of every kind and their bounds.
extension GoldenTests {
    @Test func pushRegistration() throws {
        try check(
            "request.push.register",
            RequestEnvelope(
                id: "23",
                data: RegisterPushTokenRequest(
                    token: String(repeating: "ab", count: 32), environment: .sandbox, bundleId: "com.example.switchboard",
                    move: true)))
        try check("request.push.unregister", RequestEnvelope(id: "24", data: UnregisterPushTokenRequest()))
        try check(
            "request.push.register.alert",
            RequestEnvelope(
                id: "25",
                data: RegisterPushTokenRequest(
                    token: String(repeating: "cd", count: 32), environment: .production,
                    bundleId: "com.example.switchboard", kind: .alert)))
        try check("request.push.unregister.alert", RequestEnvelope(id: "26", data: UnregisterPushTokenRequest(kind: .alert)))
        // The browser client's Web Push subscription (RFC 8291's example keys), with a sealing key.
        let web = RegisterPushTokenRequest(
            token: "https://push.example.net/wpush/v2/gAAAAABn3xQ1", kind: .web,
            webPush: WebPushKeys(
                p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
                auth: "BTBZMqHH6r4Tts7J_aSIgg"),
            sealingKey: "jn0pOZvLmi7NfOaoN2P-n5YgOa5wy0ZhbhpoD-ZJrls")
        try check("request.push.register.web", RequestEnvelope(id: "27", data: web))
        #expect(web.problem == nil)
        let fcm = RegisterPushTokenRequest(token: "dGVzdC1mY20tdG9rZW4:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx", kind: .fcm)
        try check("request.push.register.fcm", RequestEnvelope(id: "28", data: fcm))
        #expect(fcm.problem == nil)
        let alertRinging = RegisterPushTokenRequest(
            token: String(repeating: "cd", count: 32), environment: .production, bundleId: "com.example.switchboard",
            kind: .alert, alertRinging: true)
        try check("request.push.register.alertRinging", RequestEnvelope(id: "29", data: alertRinging))
        #expect(alertRinging.problem == nil)
    }


    static let invitation = IncomingCallPush(
        callId: callId, sdkAppID: 1_400_000_001, userId: "bob", callerId: "alice", callerName: "Alice", mediaType: .video,
        callType: .oneToOne, inviterId: "alice", deadline: created + 30_000, userData: #"{"topic":"hello"}"#,
        pushConfig: PushConfig(title: "Alice", body: "Video call", sound: "ring.caf", extra: #"{"conversation":"c-17"}"#))

    /// The push bodies: what the server sends matches the files byte for byte in meaning.
    @Test func pushPayloads() throws {
        let end = VoIPPush.callEnded(
            CallEndedPush(callId: Self.callId, sdkAppID: 1_400_000_001, reason: .canceled, mediaType: .video))
        let missed = MissedCallPush(
            callId: Self.callId, sdkAppID: 1_400_000_001, userId: "bob", callerId: "alice", callerName: "Alice",
            mediaType: .video, callType: .oneToOne, reason: .noResponse, pushConfig: Self.pushConfig)
        // Without the caller's texts: the localizable alert, the default sound.
        let localized = MissedCallPush(
            callId: Self.callId, sdkAppID: 1_400_000_001, userId: "bob", callerId: "alice", callerName: "Alice",
            mediaType: .audio, callType: .oneToOne, reason: .canceled)
        let payloads = [
            ("push.incomingCall", try VoIPPush.incomingCall(Self.invitation).payload()),
            ("push.callEnded", try end.payload()),
            ("push.missedCall", try missed.payload()),
            ("push.missedCall.localized", try localized.payload()),
            // A device that rings without CallKit: the invitation as an alert, and its end.
            ("push.alert.incomingCall", try Self.invitation.fittedAlertPayload()),
            ("push.alert.callEnded", try CallEndedPush(callId: Self.callId, sdkAppID: 1_400_000_001, reason: .canceled, mediaType: .video).alertPayload()),
        ]
        for (name, payload) in payloads {
            let golden = try Data(contentsOf: Self.goldenDirectory.appendingPathComponent("\(name).json"))
            let expected = try JSONSerialization.jsonObject(with: golden) as? NSDictionary
            let produced = try JSONSerialization.jsonObject(with: payload) as? NSDictionary
            #expect(expected == produced, "\(name)")
        }
        // The SDK reads back what the server writes.
        let golden = try Data(contentsOf: Self.goldenDirectory.appendingPathComponent("push.missedCall.json"))
        #expect(MissedCallPush(json: golden) == missed)
        #expect(MissedCallPush(json: try VoIPPush.incomingCall(Self.invitation).payload()) == nil)
    }

    /// What Web Push messages carry (decrypted) and what FCM data messages carry under
    /// `switchboard`: the object APNs pushes carry under their `switchboard` key.
    @Test func webAndFCMPushObjects() throws {
        let end = CallEndedPush(callId: Self.callId, sdkAppID: 1_400_000_001, reason: .canceled, mediaType: .video)
        let missed = MissedCallPush(
            callId: Self.callId, sdkAppID: 1_400_000_001, userId: "bob", callerId: "alice", callerName: "Alice",
            mediaType: .video, callType: .oneToOne, reason: .noResponse, pushConfig: Self.pushConfig)
        for (name, push) in [
            ("push.web.incomingCall", CallPush.incomingCall(Self.invitation)), ("push.web.callEnded", .callEnded(end)),
            ("push.web.missedCall", .missedCall(missed)),
        ] {
            let golden = try Data(contentsOf: Self.goldenDirectory.appendingPathComponent("\(name).json"))
            let expected = try JSONSerialization.jsonObject(with: golden) as? NSDictionary
            let produced = try JSONSerialization.jsonObject(with: try push.object()) as? NSDictionary
            #expect(expected == produced, "\(name)")
            #expect(CallPush(object: golden) == push, "\(name)")
        }
        // The same object as an APNs push's `switchboard`.
        let apns = try JSONSerialization.jsonObject(with: try VoIPPush.incomingCall(Self.invitation).payload()) as? [String: Any]
        let object = try JSONSerialization.jsonObject(with: try CallPush.incomingCall(Self.invitation).object()) as? NSDictionary
        #expect(apns?["switchboard"] as? NSDictionary == object)
        #expect(CallPush(object: Data(#"{"v":1,"kind":"somethingNew","callId":"c"}"#.utf8)) == nil)
    }

    /// Every push fits APNs' limit whatever the caller chose: `userData`, then the push texts, then
    /// the caller's name are left out, as far as needed, before APNs would refuse the whole push.
    @Test func everyPushFitsWhateverTheCallerChose() throws {
        // The worst a caller can do within the limits: control characters escape to six bytes each.
        let userData = String(repeating: "\u{1}", count: CallLimits.maxUserDataBytes)
        let config = PushConfig(
            title: String(repeating: "\"", count: 64), body: String(repeating: "\\", count: 256),
            sound: String(repeating: "s", count: PushConfig.maxSoundBytes),
            extra: String(repeating: "\u{1}", count: 200))
        #expect(config.problem == nil)
        let name = String(repeating: "\"", count: UserProfile.maxNicknameBytes)
        var invitation = Self.invitation
        invitation.userData = userData
        invitation = IncomingCallPush(
            callId: Self.callId, sdkAppID: 1_400_000_001, userId: "bob", callerId: "alice", callerName: name,
            mediaType: .video, callType: .oneToOne, inviterId: "alice", deadline: Self.created + 30_000,
            userData: userData, pushConfig: config)
        #expect(try VoIPPush.incomingCall(invitation).payload().count > VoIPPush.maxPayloadBytes)
        let fitted = try VoIPPush.incomingCall(invitation).fittedPayload()
        #expect(fitted.count <= VoIPPush.maxPayloadBytes)
        let content = try #require(
            (try JSONSerialization.jsonObject(with: fitted) as? [String: Any])?["switchboard"] as? [String: Any])
        // Only userData had to go: the bounds on the config leave room for the rest.
        #expect(content["userData"] == nil && content["extra"] as? String == config.extra && content["callerName"] as? String == name)

        let missed = MissedCallPush(
            callId: Self.callId, sdkAppID: 1_400_000_001, userId: "bob", callerId: "alice", callerName: name,
            mediaType: .video, callType: .oneToOne, reason: .noResponse, userData: userData, pushConfig: config)
        #expect(try missed.payload().count > MissedCallPush.maxPayloadBytes)
        #expect(try missed.fittedPayload().count <= MissedCallPush.maxPayloadBytes)
    }

    /// The fields go in order, and only as far as needed.
    @Test func aPushLosesItsOptionalTextsInOrder() throws {
        let name = String(repeating: "\"", count: 4_000)
        var push = Self.invitation
        push.callerName = name
        let fitted = try VoIPPush.incomingCall(push).fittedPayload()
        #expect(fitted.count <= VoIPPush.maxPayloadBytes)
        let content = try #require(
            (try JSONSerialization.jsonObject(with: fitted) as? [String: Any])?["switchboard"] as? [String: Any])
        #expect(content["userData"] == nil && content["extra"] == nil && content["body"] == nil && content["title"] == nil)
        #expect(content["callerName"] == nil && content["callId"] as? String == Self.callId.rawValue)
        #expect(content["sound"] as? String == "ring.caf")
    }

    @Test func pushConfigBounds() {
        #expect(Self.pushConfig.problem == nil)
        let refused = [
            PushConfig(title: String(repeating: "t", count: PushConfig.maxTitleBytes + 1)),
            PushConfig(body: "line\nbreak"),
            PushConfig(sound: ""),
            PushConfig(sound: "ring tone.caf"),
            PushConfig(extra: String(repeating: "x", count: PushConfig.maxExtraBytes + 1)),
            PushConfig(extra: String(repeating: "\u{1}", count: 400)),
        ]
        for config in refused { #expect(config.problem?.code == .invalidPushConfig, "\(config)") }
    }

    /// A push always fits APNs' limit: the caller's chosen text is left out before the push is refused.
    @Test func aPushAlwaysFits() throws {
        // Quotes and backslashes double when escaped: the worst a nickname can do per byte.
        let name = String(repeating: "\"", count: 4_000)
        let push = VoIPPush.incomingCall(
            IncomingCallPush(
                callId: Self.callId, sdkAppID: 1_400_000_001, userId: "bob", callerId: "alice", callerName: name,
                mediaType: .video, callType: .oneToOne, inviterId: "alice", deadline: Self.created + 30_000))
        #expect(try push.payload().count > VoIPPush.maxPayloadBytes)
        let fitted = try push.fittedPayload()
        #expect(fitted.count <= VoIPPush.maxPayloadBytes)
        let object = try #require(try JSONSerialization.jsonObject(with: fitted) as? [String: Any])
        let content = try #require(object["switchboard"] as? [String: Any])
        #expect(content["callerName"] == nil)
        #expect(content["callId"] as? String == Self.callId.rawValue)
        // A push that fits is left as it is.
        let small = VoIPPush.incomingCall(
            IncomingCallPush(callId: Self.callId, callerId: "alice", callerName: "Alice", mediaType: .audio, callType: .oneToOne))
        #expect(try small.fittedPayload() == small.payload())
    }
}
