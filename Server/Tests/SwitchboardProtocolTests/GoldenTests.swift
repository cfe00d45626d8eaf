import Foundation
import SwitchboardProtocol
import Testing

/// Every wire message has a golden JSON file (Tests/SwitchboardProtocolTests/Golden, also read by
/// the browser tests). Each file must decode to the expected value, and the value must encode to
/// the same JSON, so neither side can drift.
struct GoldenTests {
    static let callId: CallID = "5c3a8f2e-1b7d-4e0a-9c21-6f4d2b8e7a10"
    static let created: Int64 = 1_767_225_600_000

    static let ringing = CallInfo(
        callId: callId, roomId: "room-42", callType: .oneToOne, mediaType: .video, callerId: "alice",
        userData: #"{"topic":"hello"}"#, timeout: 30, createdAt: created,
        participants: [
            CallParticipant(userId: "alice", status: .waiting, cameraOn: true, nickname: "Alice"),
            CallParticipant(userId: "bob", status: .waiting, inviterId: "alice", cameraOn: true),
        ])

    static let connected = CallInfo(
        callId: callId, roomId: "room-42", callType: .oneToOne, mediaType: .video, callerId: "alice", timeout: 30,
        createdAt: created, startTime: created + 3000,
        participants: [
            CallParticipant(userId: "alice", status: .accept, cameraOn: true),
            CallParticipant(userId: "bob", status: .accept, inviterId: "alice", cameraOn: true),
        ])

    static let group = CallInfo(
        callId: "9e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b", roomId: "9e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b",
        callType: .group, mediaType: .audio, callerId: "alice", chatGroupId: "team", timeout: 30, createdAt: created,
        startTime: created + 2000,
        participants: [
            CallParticipant(userId: "alice", status: .accept),
            CallParticipant(userId: "bob", status: .accept, inviterId: "alice", microphoneOn: false, screenSharing: true),
            CallParticipant(userId: "carol", status: .none, inviterId: "alice", endReason: .reject),
        ])

    static let invitedGroup = CallInfo(
        callId: "9e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b", roomId: "9e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b",
        callType: .group, mediaType: .audio, callerId: "alice", chatGroupId: "team", timeout: 30, createdAt: created,
        startTime: created + 2000,
        participants: [
            CallParticipant(userId: "alice", status: .accept, networkQuality: .good, volumeLevel: .medium),
            CallParticipant(userId: "bob", status: .accept, inviterId: "alice", microphoneOn: false),
            CallParticipant(userId: "dave", status: .waiting, inviterId: "alice"),
            CallParticipant(userId: "erin", status: .none, inviterId: "alice", endReason: .lineBusy),
        ])

    static let transaction: TransactionID = "0b7c2d1e-9f3a-4c5b-8d6e-1a2b3c4d5e6f"

    static let answeredRecord = CallRecord(
        callId: callId, roomId: "room-42", callType: .oneToOne, mediaType: .video, callerId: "alice",
        inviterId: "alice", participantIds: ["alice", "bob"], direction: .outgoing, result: .answered,
        startTime: created + 3000, endTime: created + 65_000, duration: 62, endReason: .hangup,
        syncTime: created + 65_000)

    static let missedRecord = CallRecord(
        callId: callId, roomId: "room-42", callType: .oneToOne, mediaType: .video, callerId: "alice",
        inviterId: "alice", participantIds: ["alice", "bob"], direction: .incoming, result: .missed, startTime: nil,
        endTime: created + 30_000, duration: 0, endReason: .noResponse, syncTime: created + 30_000)

    static let pushConfig = PushConfig(
        title: "Alice", body: "Missed video call", sound: "ring.caf", extra: #"{"conversation":"c-17"}"#, missedCallAlert: true)

    static let noAnswerRecord = CallRecord(
        callId: callId, roomId: "room-42", callType: .oneToOne, mediaType: .video, callerId: "alice",
        inviterId: "alice", participantIds: ["alice", "bob"], direction: .outgoing, result: .noAnswer, startTime: nil,
        endTime: created + 30_000, duration: 0, endReason: .noResponse, syncTime: created + 30_000)

    static let profile = UserProfile(userId: "alice", nickname: "Alice", avatarURL: "https://example.com/alice.png")

    // MARK: requests

    @Test func login() throws {
        try check(
            "request.login",
            RequestEnvelope(
                id: "1",
                data: LoginRequest(
                    sdkAppID: 1_400_000_001, userID: "alice",
                    userSig: "eJyrVgrxCdYrSy1SslIy0jNQ0gHzM1NS80oyM0vBfAMDCAAyVQ-q", deviceId: "alice-iphone",
                    platform: "ios")))
    }

    @Test func sessionRequests() throws {
        try check("request.logout", RequestEnvelope(id: "9", data: LogoutRequest()))
        try check("request.ping", RequestEnvelope(id: "2", data: PingRequest()))
        try check(
            "request.profile.set",
            RequestEnvelope(id: "3", data: SetProfileRequest(nickname: "Alice", avatarURL: "https://example.com/alice.png")))
    }

    @Test func callRequests() throws {
        try check(
            "request.call.start",
            RequestEnvelope(
                id: "4",
                data: StartCallRequest(
                    participantIds: ["bob"], mediaType: .video,
                    params: CallParams(
                        roomId: "room-42", timeout: 30, userData: #"{"topic":"hello"}"#, isEphemeralCall: false))))
        try check(
            "request.call.start.pushConfig",
            RequestEnvelope(
                id: "34",
                data: StartCallRequest(
                    participantIds: ["bob"], mediaType: .video,
                    params: CallParams(userData: #"{"topic":"hello"}"#, pushConfig: Self.pushConfig))))
        try check("request.call.accept", RequestEnvelope(id: "5", data: AcceptCallRequest(callId: Self.callId)))
        try check("request.call.reject", RequestEnvelope(id: "6", data: RejectCallRequest(callId: Self.callId)))
        try check("request.call.hangup", RequestEnvelope(id: "7", data: HangupCallRequest(callId: Self.callId)))
        try check(
            "request.call.deviceState",
            RequestEnvelope(
                id: "8", data: UpdateDeviceStateRequest(callId: Self.callId, microphoneOn: false, cameraOn: true)))
        try check(
            "request.call.deviceState.screen",
            RequestEnvelope(id: "9", data: UpdateDeviceStateRequest(callId: Self.callId, screenSharing: true)))
    }

    @Test func groupAndMediaRequests() throws {
        let group: CallID = "9e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"
        try check(
            "request.call.invite",
            RequestEnvelope(id: "13", data: InviteToCallRequest(callId: group, participantIds: ["dave", "erin"])))
        try check("request.call.join", RequestEnvelope(id: "14", data: JoinCallRequest(callId: group)))
        try check(
            "request.call.changeMediaType",
            RequestEnvelope(id: "15", data: ChangeMediaTypeRequest(callId: Self.callId, mediaType: .video)))
        try check(
            "request.call.replyMediaType",
            RequestEnvelope(
                id: "16", data: ReplyMediaTypeChangeRequest(callId: Self.callId, transactionId: Self.transaction, agree: true)))
        try check(
            "request.call.cancelMediaType",
            RequestEnvelope(
                id: "17", data: CancelMediaTypeChangeRequest(callId: Self.callId, transactionId: Self.transaction)))
        try check(
            "request.call.statusReport",
            RequestEnvelope(
                id: "18",
                data: StatusReportRequest(callId: group, packetLoss: 1.5, rtt: 120, bitrate: 850, audioLevel: 42)))
        try check(
            "response.call.invite",
            ResponseEnvelope(id: "13", outcome: .success(InviteToCallResponse(busyUserIds: ["erin"], call: Self.invitedGroup))))
        try check(
            "response.call.changeMediaType",
            ResponseEnvelope(id: "15", outcome: .success(ChangeMediaTypeResponse(transactionId: Self.transaction))))
    }

    @Test func groupAndMediaEvents() throws {
        try check(
            "event.mediaTypeChangeRequested",
            ServerEvent.mediaTypeChangeRequested(
                MediaTypeChangeRequestedEvent(
                    callId: Self.callId, transactionId: Self.transaction, mediaType: .video, userId: "alice")))
        try check(
            "event.mediaTypeChangeResult",
            ServerEvent.mediaTypeChangeResult(
                MediaTypeChangeResultEvent(
                    callId: Self.callId, transactionId: Self.transaction, mediaType: .video, userId: "alice",
                    result: .agreed)))
        try check(
            "event.memberStatus",
            ServerEvent.memberStatus(
                MemberStatusEvent(
                    callId: "9e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b", userId: "bob", networkQuality: .poor,
                    volumeLevel: .high)))
        try check(
            "event.memberStats",
            ServerEvent.memberStats(
                MemberStatsEvent(
                    callId: "9e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b", userId: "bob", packetLoss: 1.5, rtt: 120, bitrate: 850,
                    audioLevel: 42)))
        try check(
            "event.callElsewhere",
            ServerEvent.callElsewhere(CallElsewhereEvent(call: Self.connected, deviceId: "alice-iphone", active: true)))
    }

    @Test func blockingAndLimits() throws {
        try check("request.user.block", RequestEnvelope(id: "19", data: BlockUsersRequest(userIds: ["mallory"])))
        try check("request.user.unblock", RequestEnvelope(id: "20", data: UnblockUsersRequest(userIds: ["mallory"])))
        try check("request.user.blocked", RequestEnvelope(id: "21", data: BlockedUsersRequest()))
        try check(
            "response.user.blocked",
            ResponseEnvelope(id: "19", outcome: .success(BlockedUsersResponse(userIds: ["mallory", "trent"]))))
        try check(
            "response.error.rateLimited",
            ResponseEnvelope<Empty>(
                id: "22",
                outcome: .failure(SwitchboardError(.rateLimited, "too many requests; retry in 20000 ms", retryAfter: 20_000))))
        try check("event.callsSynced", ServerEvent.callsSynced(CallsSyncedEvent(callIds: [Self.callId])))
        // A media signal over the member's relay budget, and a request from another device of a
        // member in the call (issue 28): the server's own messages (RelayBudgetTests, DeviceScopeTests).
        try check(
            "response.error.mediaRelay",
            ResponseEnvelope<Empty>(
                id: "36",
                outcome: .failure(
                    SwitchboardError(
                        .rateLimited, "media signals are limited to 65536 bytes a second (bursts of 524288); retry in 500 ms",
                        retryAfter: 500))))
        try check(
            "response.error.otherDevice",
            ResponseEnvelope<Empty>(
                id: "37", outcome: .failure(SwitchboardError(.notInCall, "this device is not the one in the call"))))
    }

    static let offer =
        "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n"
        + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\na=sendrecv\r\na=rtpmap:111 opus/48000/2\r\n"

    @Test func mediaNegotiation() throws {
        try check(
            "request.call.media.offer",
            RequestEnvelope(id: "30", data: SendMediaSignalRequest(callId: Self.callId, to: "bob", kind: .offer, sdp: Self.offer)))
        try check(
            "request.call.media.candidate",
            RequestEnvelope(
                id: "31",
                data: SendMediaSignalRequest(
                    callId: Self.callId, to: "alice", kind: .candidate,
                    candidate: IceCandidate(
                        candidate:
                            "candidate:842163049 1 udp 1677729535 127.0.0.1 51234 typ srflx raddr 0.0.0.0 rport 0 generation 0",
                        sdpMid: "0", sdpMLineIndex: 0, usernameFragment: "Xq3e"))))
        try check(
            "request.call.media.restart",
            RequestEnvelope(id: "32", data: SendMediaSignalRequest(callId: Self.callId, to: "alice", kind: .restart)))
        try check(
            "event.mediaSignal",
            ServerEvent.mediaSignal(
                MediaSignalEvent(
                    callId: Self.callId, from: "alice", kind: .answer,
                    sdp: Self.offer.replacingOccurrences(of: "4611731400430051336", with: "8236520361209437510"))))
        try check("request.media.iceServers", RequestEnvelope(id: "33", data: IceServersRequest()))
        try check(
            "response.media.iceServers",
            ResponseEnvelope(
                id: "33",
                outcome: .success(
                    IceServersResponse(
                        iceServers: [
                            IceServer(urls: ["stun:127.0.0.1:3478"]),
                            IceServer(
                                urls: ["turn:127.0.0.1:3478?transport=udp", "turn:127.0.0.1:3478?transport=tcp"],
                                username: "1767312000:1400000001:alice", credential: "HMACsha1BASE64EXAMPLE0000000="),
                        ], expiresAt: 1_767_312_000_000))))
    }

    @Test func recordRequests() throws {
        try check(
            "request.records.query",
            RequestEnvelope(id: "10", data: QueryRecordsRequest(syncTime: -1, count: 30, order: .descending)))
        try check("request.records.delete", RequestEnvelope(id: "11", data: DeleteRecordsRequest(callIds: [Self.callId])))
        try check("request.records.deleteAll", RequestEnvelope(id: "12", data: DeleteAllRecordsRequest()))
    }

    @Test func requestWithoutDataDecodes() throws {
        let decoded = try SwitchboardJSON.decode(
            RequestEnvelope<PingRequest>.self, from: Data(#"{"id":"2","type":"ping"}"#.utf8))
        #expect(decoded == RequestEnvelope(id: "2", data: PingRequest()))
    }

    // MARK: responses

    @Test func responses() throws {
        try check(
            "response.login",
            ResponseEnvelope(
                id: "1",
                outcome: .success(
                    LoginResponse(
                        userID: "alice", deviceId: "alice-iphone", protocolVersion: 1, serverTime: Self.created,
                        heartbeatInterval: 10, profile: Self.profile))))
        try check("response.ping", ResponseEnvelope(id: "2", outcome: .success(PingResponse(serverTime: Self.created + 1000))))
        try check("response.profile.set", ResponseEnvelope(id: "3", outcome: .success(Self.profile)))
        try check(
            "response.call.start",
            ResponseEnvelope(
                id: "4",
                outcome: .success(
                    StartCallResponse(callId: Self.callId, roomId: "room-42", busyUserIds: [], call: Self.ringing))))
        try check(
            "response.call.accept",
            ResponseEnvelope(id: "5", outcome: .success(CallSnapshotResponse(call: Self.connected))))
        try check("response.empty", ResponseEnvelope(id: "7", outcome: .success(Empty())))
        try check(
            "response.records.query",
            ResponseEnvelope(
                id: "10",
                outcome: .success(
                    QueryRecordsResponse(records: [Self.answeredRecord], hasMore: false, syncTime: Self.created + 65_000))))
        try check("response.records.delete", ResponseEnvelope(id: "11", outcome: .success(DeleteRecordsResponse(deleted: 1))))
        try check(
            "response.error",
            ResponseEnvelope<Empty>(
                id: "5", outcome: .failure(SwitchboardError(.notInCall, "you are not a member of this call"))))
        try check(
            "response.error.noid",
            ResponseEnvelope<Empty>(id: nil, outcome: .failure(SwitchboardError(.malformedMessage, "not a JSON object"))))
    }

    // MARK: events

    @Test func events() throws {
        try check("event.callReceived", ServerEvent.callReceived(CallReceivedEvent(call: Self.ringing, inviterId: "alice")))
        try check("event.callStarted", ServerEvent.callStarted(CallStartedEvent(call: Self.connected)))
        try check("event.callUpdated", ServerEvent.callUpdated(CallUpdatedEvent(call: Self.group)))
        try check(
            "event.callEnded",
            ServerEvent.callEnded(CallEndedEvent(callId: Self.callId, mediaType: .video, reason: .hangup, userId: "alice")))
        try check(
            "event.callEnded.server",
            ServerEvent.callEnded(CallEndedEvent(callId: Self.callId, mediaType: .audio, reason: .endByServer, userId: nil)))
        try check("event.callRecord", ServerEvent.callRecord(CallRecordEvent(record: Self.missedRecord)))
        try check("event.callRecord.noAnswer", ServerEvent.callRecord(CallRecordEvent(record: Self.noAnswerRecord)))
        try check(
            "event.deviceChanged",
            ServerEvent.deviceChanged(
                DeviceChangedEvent(callId: Self.callId, userId: "bob", microphoneOn: false, cameraOn: true)))
        try check(
            "event.deviceChanged.screen",
            ServerEvent.deviceChanged(
                DeviceChangedEvent(
                    callId: Self.callId, userId: "bob", microphoneOn: true, cameraOn: true, screenSharing: true)))
        try check(
            "event.sessionEnded",
            ServerEvent.sessionEnded(
                SessionEndedEvent(error: SwitchboardError(.sessionReplaced, "this device logged in on another connection"))))
        try check(
            "event.sessionEnded.shuttingDown",
            ServerEvent.sessionEnded(
                SessionEndedEvent(
                    error: SwitchboardError(.shuttingDown, "the server is restarting: reconnect, your calls go on"))))
    }

    static let groupId: CallID = "9e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"
    static let publishOffer =
        "v=0\r\no=- 7461129930187261000 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
        + "a=group:BUNDLE 0 1\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\n"
        + "a=sendonly\r\na=msid:local mic\r\na=rtpmap:111 opus/48000/2\r\n"
        + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=sendonly\r\n"
        + "a=msid:local camera\r\na=rtpmap:96 VP8/90000\r\na=rid:h send\r\na=rid:l send\r\n"
        + "a=simulcast:send h;l\r\n"
    static let publishAnswer =
        "v=0\r\no=- 3394611202961557000 2 IN IP4 127.0.0.1\r\ns=VideoRoom 4315809187254637\r\n"
        + "t=0 0\r\na=group:BUNDLE 0 1\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 127.0.0.1\r\n"
        + "a=mid:0\r\na=recvonly\r\na=rtpmap:111 opus/48000/2\r\n"
        + "a=candidate:1 1 udp 2015363327 127.0.0.1 40123 typ host\r\na=end-of-candidates\r\n"
        + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 127.0.0.1\r\na=mid:1\r\na=recvonly\r\n"
        + "a=rtpmap:96 VP8/90000\r\na=rid:h recv\r\na=rid:l recv\r\na=simulcast:recv h;l\r\n"
    static let subscribeOffer =
        "v=0\r\no=- 1767225605000000 1 IN IP4 127.0.0.1\r\ns=VideoRoom 4315809187254637\r\n"
        + "t=0 0\r\na=group:BUNDLE 0 1 2\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 127.0.0.1\r\n"
        + "a=mid:0\r\na=sendonly\r\na=rtpmap:111 opus/48000/2\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n"
        + "c=IN IP4 127.0.0.1\r\na=mid:1\r\na=sendonly\r\na=rtpmap:96 VP8/90000\r\n"
        + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 127.0.0.1\r\na=mid:2\r\na=sendonly\r\n"
        + "a=rtpmap:96 VP8/90000\r\n"
    static let subscribeAnswer =
        "v=0\r\no=- 5023719436514238000 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
        + "a=group:BUNDLE 0 1 2\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\n"
        + "a=recvonly\r\na=rtpmap:111 opus/48000/2\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n"
        + "c=IN IP4 0.0.0.0\r\na=mid:1\r\na=recvonly\r\na=rtpmap:96 VP8/90000\r\n"
        + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\na=mid:2\r\na=recvonly\r\n"
        + "a=rtpmap:96 VP8/90000\r\n"

    @Test func sfuNegotiation() throws {
        try check(
            "request.call.sfu.offer",
            RequestEnvelope(
                id: "40",
                data: SendSFUSignalRequest(
                    callId: Self.groupId, session: 1, connection: .publish, kind: .offer, sdp: Self.publishOffer)))
        try check(
            "request.call.sfu.answer",
            RequestEnvelope(
                id: "41",
                data: SendSFUSignalRequest(
                    callId: Self.groupId, session: 1, connection: .subscribe, kind: .answer, sdp: Self.subscribeAnswer)))
        try check(
            "request.call.sfu.candidate",
            RequestEnvelope(
                id: "42",
                data: SendSFUSignalRequest(
                    callId: Self.groupId, session: 1, connection: .publish, kind: .candidate,
                    candidate: IceCandidate(
                        candidate: "candidate:1467250027 1 udp 2122260223 127.0.0.1 46243 typ host generation 0",
                        sdpMid: "0", sdpMLineIndex: 0, usernameFragment: "f9Zq"))))
        try check(
            "request.call.sfu.restart",
            RequestEnvelope(
                id: "43",
                data: SendSFUSignalRequest(callId: Self.groupId, session: 1, connection: .subscribe, kind: .restart)))
        try check(
            "request.call.videoLayer",
            RequestEnvelope(id: "44", data: SetVideoLayerRequest(callId: Self.groupId, userId: "bob", layer: .big)))
        try check("event.sfuSession", ServerEvent.sfuSession(SFUSessionEvent(callId: Self.groupId, session: 1)))
        try check(
            "event.sfuSignal.answer",
            ServerEvent.sfuSignal(
                SFUSignalEvent(
                    callId: Self.groupId, session: 1, connection: .publish, kind: .answer, sdp: Self.publishAnswer)))
        try check(
            "event.sfuSignal.offer",
            ServerEvent.sfuSignal(
                SFUSignalEvent(
                    callId: Self.groupId, session: 1, connection: .subscribe, kind: .offer, sdp: Self.subscribeOffer,
                    tracks: [
                        SFUTrack(mid: "0", userId: "bob", source: .microphone),
                        SFUTrack(mid: "1", userId: "bob", source: .camera),
                        SFUTrack(mid: "2", userId: "carol", source: .screen),
                    ])))
        try check(
            "response.error.sfuSession",
            ResponseEnvelope<Empty>(
                id: "43",
                outcome: .failure(
                    SwitchboardError(.sfuSessionMismatch, "session 1 is not your current SFU session (2)"))))
        try check(
            "event.callStarted.sfu",
            ServerEvent.callStarted(
                CallStartedEvent(
                    call: CallInfo(
                        callId: Self.groupId, roomId: RoomID(rawValue: Self.groupId.rawValue), callType: .group,
                        mediaType: .video, callerId: "alice", timeout: 30, createdAt: Self.created,
                        startTime: Self.created + 2000,
                        participants: [
                            CallParticipant(userId: "alice", status: .accept, cameraOn: true),
                            CallParticipant(userId: "bob", status: .accept, inviterId: "alice", cameraOn: true),
                            CallParticipant(
                                userId: "carol", status: .accept, inviterId: "alice", cameraOn: false, screenSharing: true),
                        ], media: .sfu))))
    }

    /// What each kind of connection takes: the publish connection's answers and the subscribe
    /// connection's offers come from the SFU, never from a client.
    @Test(arguments: [
        (SFUConnection.publish, MediaSignalKind.answer, false), (.publish, .offer, true), (.publish, .candidate, true),
        (.publish, .restart, true), (.subscribe, .offer, false), (.subscribe, .answer, true),
        (.subscribe, .candidate, true), (.subscribe, .restart, true),
    ])
    func sfuSignalKinds(connection: SFUConnection, kind: MediaSignalKind, valid: Bool) {
        let signal = SendSFUSignalRequest(
            callId: Self.groupId, session: 1, connection: connection, kind: kind,
            sdp: kind == .offer || kind == .answer ? "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:0\r\n" : nil,
            candidate: kind == .candidate ? IceCandidate(candidate: "") : nil)
        #expect((signal.validationError() == nil) == valid)
        var stale = signal
        stale.session = 0
        #expect(stale.validationError()?.code == .invalidParams)
    }

    @Test func unknownEndReasonDecodesAsUnknown() throws {
        let data = Data(#"{"callId":"c","mediaType":"audio","reason":"somethingNew"}"#.utf8)
        #expect(try SwitchboardJSON.decode(CallEndedEvent.self, from: data).reason == .unknown)
    }

    @Test func everyGoldenFileIsChecked() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.goldenDirectory.path)
            .filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }
        let checked: Set<String> = [
            "request.login", "request.logout", "request.ping", "request.profile.set", "request.call.start",
            "request.call.accept", "request.call.reject", "request.call.hangup", "request.call.deviceState",
            "request.call.deviceState.screen", "event.deviceChanged.screen",
            "request.records.query", "request.records.delete", "request.records.deleteAll", "response.login",
            "response.ping", "response.profile.set", "response.call.start", "response.call.accept", "response.empty",
            "response.records.query", "response.records.delete", "response.error", "response.error.noid",
            "event.callReceived", "event.callStarted", "event.callUpdated", "event.callEnded",
            "event.callEnded.server", "event.callRecord", "event.deviceChanged", "event.sessionEnded",
            "event.sessionEnded.shuttingDown",
            "request.call.invite", "request.call.join", "request.call.changeMediaType", "request.call.replyMediaType",
            "request.call.cancelMediaType", "request.call.statusReport", "response.call.invite",
            "response.call.changeMediaType", "event.mediaTypeChangeRequested", "event.mediaTypeChangeResult",
            "event.memberStatus", "event.callElsewhere", "request.user.block", "request.user.unblock",
            "request.user.blocked", "response.user.blocked", "response.error.rateLimited", "event.callsSynced",
            "request.push.register", "request.push.unregister", "push.incomingCall", "push.callEnded",
            "request.call.media.offer", "request.call.media.candidate", "request.call.media.restart", "event.mediaSignal",
            "request.media.iceServers", "response.media.iceServers", "request.call.start.pushConfig", "event.memberStats",
            "request.push.register.alert", "request.push.unregister.alert", "push.missedCall", "push.missedCall.localized",
            "event.callRecord.noAnswer", "response.error.mediaRelay", "response.error.otherDevice",
            "request.push.register.web", "request.push.register.fcm", "request.push.register.alertRinging",
            "request.call.sfu.offer", "request.call.sfu.answer", "request.call.sfu.candidate", "request.call.sfu.restart",
            "request.call.videoLayer", "event.sfuSession", "event.sfuSignal.answer", "event.sfuSignal.offer",
            "response.error.sfuSession", "event.callStarted.sfu",
            // GoldenTests+Move.swift.
            "request.call.offerMove", "request.call.offerMove.anyDevice", "response.call.offerMove", "request.call.take",
            "response.call.take", "response.error.moveNotOffered", "event.callMoveOffered", "event.callMoveOfferEnded",
            "event.callMoved", "event.memberMoved",
            // GoldenTests+Recording.swift.
            "request.call.startRecording", "request.call.stopRecording", "response.call.startRecording",
            "response.error.recordingNotAllowed", "response.error.recordingUnavailable", "request.call.start.record",
            "event.recordingStarted", "event.recordingStarted.policy", "event.recordingStopped", "event.callUpdated.recording",
            "event.callReceived.recorded",
            "push.web.incomingCall", "push.web.callEnded", "push.web.missedCall", "push.alert.incomingCall",
            "push.alert.callEnded",
            // Checked by SealedPushTests.
            "push.sealed.vector", "push.incomingCall.sealed", "push.web.sealed",
            // Checked by FCMTests (SwitchboardServerTests).
            "push.fcm.incomingCall", "push.fcm.callEnded",
            // Checked by WebhookGoldenTests.
            "webhook.call.created", "webhook.call.member.invited", "webhook.call.member.ringing",
            "webhook.call.member.answered", "webhook.call.member.joined", "webhook.call.member.rejected",
            "webhook.call.member.missed", "webhook.call.member.left", "webhook.call.member.moved",
            "webhook.call.media_type.changed",
            "webhook.call.ended", "webhook.call.record.written", "webhook.user.blocked", "webhook.user.unblocked",
            "webhook.recording.ready", "webhook.recording.failed", "webhook.recording.deleted",
            "webhook.signature.vector",
        ]
        #expect(Set(files) == checked)
    }

    // MARK: helpers

    static var goldenDirectory: URL {
        Bundle.module.resourceURL!.appendingPathComponent("Golden")
    }

    /// Decodes the file to `expected`'s type and compares; encodes `expected` and compares the JSON.
    func check<T: Codable & Equatable>(_ name: String, _ expected: T, sourceLocation: SourceLocation = #_sourceLocation)
        throws
    {
        let data = try Data(contentsOf: Self.goldenDirectory.appendingPathComponent("\(name).json"))
        let decoded = try SwitchboardJSON.decode(T.self, from: data)
        #expect(decoded == expected, "\(name) decodes to a different value", sourceLocation: sourceLocation)
        let encoded = try SwitchboardJSON.encode(expected)
        let golden = try JSONSerialization.jsonObject(with: data) as? NSDictionary
        let produced = try JSONSerialization.jsonObject(with: encoded) as? NSDictionary
        #expect(
            golden == produced,
            "\(name) encodes differently:\n\(String(decoding: encoded, as: UTF8.self))", sourceLocation: sourceLocation)
    }
}
