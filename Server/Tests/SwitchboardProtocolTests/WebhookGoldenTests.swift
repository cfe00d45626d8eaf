import Foundation
import SwitchboardProtocol
import Testing

/// Every webhook event type has a golden body (Tests/SwitchboardProtocolTests/Golden/webhook.*.json,
/// shown in docs/WEBHOOKS.md), and the signature scheme a vector made with Python's `hmac`.
struct WebhookGoldenTests {
    static let callId = GoldenTests.callId
    static let groupId: CallID = "9e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"
    static let t = GoldenTests.created
    static let app: SdkAppID = 1_400_000_001

    static func event(_ data: WebhookEventData, sequence: Int?, time: Int64) -> WebhookEvent {
        var data = data
        if let sequence { data.setSequence(sequence) }
        let id =
            data.callId.map { "evt_\($0.rawValue)_\(sequence ?? 0)" } ?? "evt_6f1c0d2a-3b4e-4f5a-8b6c-7d8e9f0a1b2c"
        return WebhookEvent(id: id, time: time, sdkAppID: app, data: data)
    }

    static let member = WebhookCallEnded.Member(
        userId: "alice", isCaller: true, result: .answered, reason: .hangup, by: "bob", firstConnectedAt: t + 3000,
        connectedMs: 62_000, leftAt: t + 65_000)

    static let expected: [(String, WebhookEvent)] = [
        (
            "call.created",
            event(
                .callCreated(
                    WebhookCallCreated(
                        callId: callId, roomId: "room-42", callType: .oneToOne, mediaType: .video, callerId: "alice",
                        callerDeviceId: "alice-phone", inviteeIds: ["bob"], userData: #"{"topic":"hello"}"#, timeout: 30,
                        createdAt: t)), sequence: 1, time: t)
        ),
        (
            "call.member.invited",
            event(.memberInvited(WebhookMemberInvited(callId: callId, userId: "bob", inviterId: "alice")), sequence: 2, time: t)
        ),
        (
            "call.member.ringing",
            event(
                .memberRinging(
                    WebhookMemberRinging(callId: callId, userId: "bob", connected: true, pushed: true, ringsUntil: t + 30_000)),
                sequence: 3, time: t)
        ),
        (
            "call.member.answered",
            event(
                .memberAnswered(WebhookMemberEntered(callId: callId, userId: "bob", deviceId: "bob-phone", callStartTime: t + 3000)),
                sequence: 4, time: t + 3000)
        ),
        (
            "call.media_type.changed",
            event(
                .mediaTypeChanged(WebhookMediaTypeChanged(callId: callId, from: .video, to: .audio, requesterId: "bob")),
                sequence: 5, time: t + 20_000)
        ),
        (
            "call.member.left",
            event(
                .memberLeft(
                    WebhookMemberLeft(
                        callId: callId, userId: "bob", deviceId: "bob-phone", result: .answered, reason: .hangup, by: "bob",
                        connectedMs: 62_000)), sequence: 6, time: t + 65_000)
        ),
        (
            "call.member.moved",
            event(
                .memberMoved(
                    WebhookMemberMoved(
                        callId: callId, userId: "bob", fromDeviceId: "bob-phone", toDeviceId: "bob-laptop", offered: true)),
                sequence: 5, time: t + 60_000)
        ),
        (
            "call.ended",
            event(
                .callEnded(
                    WebhookCallEnded(
                        callId: callId, roomId: "room-42", callType: .oneToOne, mediaType: .audio, callerId: "alice",
                        reason: .hangup, by: "bob", createdAt: t, startTime: t + 3000, endTime: t + 65_000, duration: 62,
                        members: [
                            member,
                            WebhookCallEnded.Member(
                                userId: "bob", isCaller: false, inviterId: "alice", result: .answered, reason: .hangup,
                                by: "bob", firstConnectedAt: t + 3000, connectedMs: 62_000, leftAt: t + 65_000),
                        ])), sequence: 8, time: t + 65_000)
        ),
        (
            "call.record.written",
            event(
                .recordWritten(
                    WebhookRecordWritten(
                        userId: "bob",
                        record: CallRecord(
                            callId: callId, roomId: "room-42", callType: .oneToOne, mediaType: .audio, callerId: "alice",
                            inviterId: "alice", participantIds: ["alice", "bob"], direction: .incoming, result: .answered,
                            startTime: t + 3000, endTime: t + 65_000, duration: 62, endReason: .hangup,
                            syncTime: t + 65_000))), sequence: 9, time: t + 65_000)
        ),
        (
            "call.member.joined",
            event(
                .memberJoined(WebhookMemberEntered(callId: groupId, userId: "carol", deviceId: "carol-laptop", callStartTime: t + 2000)),
                sequence: 6, time: t + 40_000)
        ),
        (
            "call.member.rejected",
            event(.memberRejected(WebhookMemberRejected(callId: groupId, userId: "dave", reason: .reject)), sequence: 4, time: t + 5000)
        ),
        (
            "call.member.missed",
            event(
                .memberMissed(
                    WebhookMemberMissed(callId: groupId, userId: "erin", result: .missed, reason: .noResponse, blocksCaller: true)),
                sequence: 5, time: t + 30_000)
        ),
        ("user.blocked", event(.userBlocked(WebhookBlocks(userId: "bob", userIds: ["mallory", "trent"])), sequence: nil, time: t + 90_000)),
        ("user.unblocked", event(.userUnblocked(WebhookBlocks(userId: "bob", userIds: ["trent"])), sequence: nil, time: t + 95_000)),
        ("recording.ready", event(.recordingReady(recording(files: recordedFiles)), sequence: nil, time: t + 80_000)),
        (
            "recording.failed",
            event(.recordingFailed(recording(reason: "no media was recorded", attempts: 3)), sequence: nil, time: t + 80_000)
        ),
        ("recording.deleted", event(.recordingDeleted(recording(reason: "retention")), sequence: nil, time: t + 30 * 86_400_000)),
    ]

    static let recordedFiles = [
        RecordedFile(
            name: "member-616c696365.webm", kind: .member, userId: "alice", contentType: "audio/webm", size: 251_904,
            duration: 62_000, video: false),
        RecordedFile(
            name: "member-626f62.webm", kind: .member, userId: "bob", contentType: "audio/webm", size: 248_832,
            duration: 62_000, video: false),
        RecordedFile(
            name: "mixed.webm", kind: .mixed, userId: nil, contentType: "video/webm", size: 4_718_592, duration: 62_000,
            video: true),
    ]

    static func recording(files: [RecordedFile]? = nil, reason: String? = nil, attempts: Int? = nil) -> WebhookRecording {
        WebhookRecording(
            recordingId: "\(callId.rawValue)-1", callId: callId, take: 1, startedBy: "alice", startedAt: t + 3000,
            stoppedAt: t + 65_000, members: ["alice", "bob"], files: files, reason: reason, attempts: attempts)
    }

    @Test func everyEventTypeHasAGoldenBody() throws {
        #expect(Set(Self.expected.map(\.0)) == Set(WebhookEventType.allCases.map(\.rawValue)))
        for (name, event) in Self.expected {
            #expect(event.type?.rawValue == name)
            try GoldenTests().check("webhook.\(name)", event)
        }
    }

    @Test func timestampIsISO8601InUTC() {
        #expect(WebhookEvent.isoTimestamp(1_767_225_600_000) == "2026-01-01T00:00:00.000Z")
        #expect(WebhookEvent.isoTimestamp(951_825_723_004) == "2000-02-29T12:02:03.004Z")
        #expect(WebhookEvent.isoTimestamp(0) == "1970-01-01T00:00:00.000Z")
        #expect(WebhookEvent.isoTimestamp(-1) == "1969-12-31T23:59:59.999Z")
    }

    @Test func anUnknownTypeDecodesAndIsKept() throws {
        let data = Data(#"{"id":"evt_1","type":"call.future","time":1,"timestamp":"x","sdkAppID":1,"data":{"a":1}}"#.utf8)
        let event = try SwitchboardJSON.decode(WebhookEvent.self, from: data)
        #expect(event.type == nil)
        #expect(event.data == .unknown(type: "call.future"))
    }

    struct Vector: Decodable {
        var secret: String
        var previousSecret: String
        var id: String
        var timestamp: String
        var body: String
        var header: String
        var signature: String

        enum CodingKeys: String, CodingKey {
            case secret, previousSecret, body, signature
            case id = "webhook-id"
            case timestamp = "webhook-timestamp"
            case header = "webhook-signature"
        }
    }

    /// The vector was made with Python's `hmac` and `hashlib` (docs/WEBHOOKS.md shows the code).
    @Test func signatureMatchesTheVector() throws {
        let file = GoldenTests.goldenDirectory.appendingPathComponent("webhook.signature.vector.json")
        let vector = try JSONDecoder().decode(Vector.self, from: Data(contentsOf: file))
        let key = try #require(WebhookSignature.key(vector.secret))
        let previous = try #require(WebhookSignature.key(vector.previousSecret))
        let timestamp = try #require(Int64(vector.timestamp))
        let body = Data(vector.body.utf8)
        #expect(WebhookSignature.sign(id: vector.id, timestamp: timestamp, body: body, key: key) == vector.signature)
        #expect(WebhookSignature.header(id: vector.id, timestamp: timestamp, body: body, keys: [key, previous]) == vector.header)
        // The body is the golden `call.created` body, byte for byte as sent.
        let golden = try Data(contentsOf: GoldenTests.goldenDirectory.appendingPathComponent("webhook.call.created.json"))
        #expect(String(decoding: golden, as: UTF8.self).trimmingCharacters(in: .newlines) == vector.body)
        let sent = try SwitchboardJSON.encode(try #require(Self.expected.first?.1))
        #expect(String(decoding: sent, as: UTF8.self) == vector.body)
    }

    @Test func verificationAcceptsEitherSecretDuringARotation() throws {
        let file = GoldenTests.goldenDirectory.appendingPathComponent("webhook.signature.vector.json")
        let vector = try JSONDecoder().decode(Vector.self, from: Data(contentsOf: file))
        let body = Data(vector.body.utf8)
        let now = try #require(Int64(vector.timestamp)) + 10
        for secrets in [[vector.secret], [vector.previousSecret], [WebhookSignature.newSecret(), vector.secret]] {
            try WebhookSignature.verify(
                id: vector.id, timestamp: vector.timestamp, signature: vector.header, body: body, secrets: secrets, now: now)
        }
        #expect(throws: WebhookSignature.Failure.noValidSignature) {
            try WebhookSignature.verify(
                id: vector.id, timestamp: vector.timestamp, signature: vector.header, body: body,
                secrets: [WebhookSignature.newSecret()], now: now)
        }
        // A changed body, id or timestamp fails; so does a stale timestamp (a replayed delivery).
        #expect(throws: WebhookSignature.Failure.noValidSignature) {
            try WebhookSignature.verify(
                id: vector.id, timestamp: vector.timestamp, signature: vector.header, body: body + Data(" ".utf8),
                secrets: [vector.secret], now: now)
        }
        #expect(throws: WebhookSignature.Failure.noValidSignature) {
            try WebhookSignature.verify(
                id: vector.id + "x", timestamp: vector.timestamp, signature: vector.header, body: body,
                secrets: [vector.secret], now: now)
        }
        #expect(throws: WebhookSignature.Failure.timestampOutOfTolerance) {
            try WebhookSignature.verify(
                id: vector.id, timestamp: vector.timestamp, signature: vector.header, body: body,
                secrets: [vector.secret], now: now + 600)
        }
        #expect(throws: WebhookSignature.Failure.missingHeader(WebhookSignature.signatureHeader)) {
            try WebhookSignature.verify(
                id: vector.id, timestamp: vector.timestamp, signature: nil, body: body, secrets: [vector.secret], now: now)
        }
    }
}
