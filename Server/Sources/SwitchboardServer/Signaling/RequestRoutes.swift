import Foundation
import SwitchboardProtocol

/// How one request type is served.
struct RequestRoute: Sendable {
    /// Only a logged-in connection may send it (`notLoggedIn` otherwise).
    let needsSession: Bool
    /// It changes state: a copy resent after a reconnect (same id) gets the first answer again from
    /// the ``RequestLedger`` instead of running twice. Reads, pings and status reports need no such care.
    let oncePerId: Bool
    /// Reads the frame's `data` as this type's request (``RequestFrame``).
    let decode: @Sendable (KeyedDecodingContainer<RequestFrame.Keys>) throws -> any SignalingRequest
    let run: @Sendable (SignalingSession, RequestID, Result<any SignalingRequest, any Error>) async -> Void

    /// A request of a logged-in session, decoded, with its sender.
    static func session<R: SignalingRequest>(
        _ type: R.Type, oncePerId: Bool,
        _ handle: @escaping @Sendable (SignalingSession, R, SignalingSession.Identity, RequestID) async -> Void
    ) -> (RequestType, RequestRoute) {
        (
            R.type,
            RequestRoute(needsSession: true, oncePerId: oncePerId, decode: { try RequestFrame.payload(R.self, in: $0) }) {
                session, id, decoded in
                guard let identity = session.identity, let request = session.request(R.self, id: id, decoded) else {
                    return
                }
                await handle(session, request, identity, id)
            }
        )
    }

    /// A request served before login too (`login`, `ping`).
    static func open<R: SignalingRequest>(
        _ type: R.Type, _ handle: @escaping @Sendable (SignalingSession, R, RequestID) async -> Void
    ) -> (RequestType, RequestRoute) {
        (
            R.type,
            RequestRoute(needsSession: false, oncePerId: false, decode: { try RequestFrame.payload(R.self, in: $0) }) {
                session, id, decoded in
                guard let request = session.request(R.self, id: id, decoded) else { return }
                await handle(session, request, id)
            }
        )
    }
}

extension SignalingSession {
    /// Every request type the server serves, with what it needs: the one place that says so.
    static let routes: [RequestType: RequestRoute] = Dictionary(
        uniqueKeysWithValues: [
            // The session (SignalingSession+Login.swift).
            RequestRoute.open(LoginRequest.self) { session, request, id in await session.login(request, id: id) },
            RequestRoute.open(PingRequest.self) { session, _, id in
                session.succeed(id, PingResponse(serverTime: session.services.clock.now()))
            },
            RequestRoute.session(LogoutRequest.self, oncePerId: true) { session, _, identity, id in
                await session.logout(identity, id: id)
            },
            RequestRoute.session(SetProfileRequest.self, oncePerId: true) { session, request, identity, id in
                await session.setProfile(request, identity, id: id)
            },

            // Calls (SignalingSession+Calls.swift).
            RequestRoute.session(StartCallRequest.self, oncePerId: true) { session, request, identity, id in
                await session.startCall(request, identity, id: id)
            },
            RequestRoute.session(InviteToCallRequest.self, oncePerId: true) { session, request, identity, id in
                await session.invite(request, identity, id: id)
            },
            RequestRoute.session(JoinCallRequest.self, oncePerId: true) { session, request, identity, id in
                await session.join(request, identity, id: id)
            },
            RequestRoute.session(AcceptCallRequest.self, oncePerId: true) { session, request, identity, id in
                await session.call(.accept(session.command(identity, request.callId)), id: id)
            },
            RequestRoute.session(RejectCallRequest.self, oncePerId: true) { session, request, identity, id in
                await session.call(.reject(session.command(identity, request.callId)), id: id)
            },
            RequestRoute.session(HangupCallRequest.self, oncePerId: true) { session, request, identity, id in
                await session.call(.hangup(session.command(identity, request.callId)), id: id)
            },
            RequestRoute.session(UpdateDeviceStateRequest.self, oncePerId: true) { session, request, identity, id in
                await session.call(
                    .updateDevice(
                        session.command(identity, request.callId), microphoneOn: request.microphoneOn,
                        cameraOn: request.cameraOn, screenSharing: request.screenSharing), id: id)
            },
            RequestRoute.session(ChangeMediaTypeRequest.self, oncePerId: true) { session, request, identity, id in
                await session.call(
                    .changeMediaType(session.command(identity, request.callId), request.mediaType, .random()), id: id)
            },
            RequestRoute.session(ReplyMediaTypeChangeRequest.self, oncePerId: true) { session, request, identity, id in
                await session.call(
                    .replyMediaType(session.command(identity, request.callId), request.transactionId, agree: request.agree),
                    id: id)
            },
            RequestRoute.session(CancelMediaTypeChangeRequest.self, oncePerId: true) { session, request, identity, id in
                await session.call(
                    .cancelMediaType(session.command(identity, request.callId), request.transactionId), id: id)
            },
            RequestRoute.session(StatusReportRequest.self, oncePerId: false) { session, request, identity, id in
                await session.reportStatus(request, identity, id: id)
            },
            RequestRoute.session(SendMediaSignalRequest.self, oncePerId: false) { session, request, identity, id in
                if let error = request.validationError() {
                    session.fail(id, error)
                } else {
                    await session.call(.mediaSignal(session.command(identity, request.callId), request), id: id)
                }
            },
            RequestRoute.session(SendSFUSignalRequest.self, oncePerId: false) { session, request, identity, id in
                if let error = request.validationError() {
                    session.fail(id, error)
                } else {
                    await session.call(.sfuSignal(session.command(identity, request.callId), request), id: id)
                }
            },
            RequestRoute.session(SetVideoLayerRequest.self, oncePerId: true) { session, request, identity, id in
                await session.call(.videoLayer(session.command(identity, request.callId), request), id: id)
            },
            RequestRoute.session(OfferCallMoveRequest.self, oncePerId: true) { session, request, identity, id in
                await session.call(.offerMove(session.command(identity, request.callId), to: request.deviceId), id: id)
            },
            RequestRoute.session(TakeCallRequest.self, oncePerId: true) { session, request, identity, id in
                await session.take(request, identity, id: id)
            },
            RequestRoute.session(StartRecordingRequest.self, oncePerId: true) { session, request, identity, id in
                await session.setRecording(request.callId, start: true, identity, id: id)
            },
            RequestRoute.session(StopRecordingRequest.self, oncePerId: true) { session, request, identity, id in
                await session.setRecording(request.callId, start: false, identity, id: id)
            },
            RequestRoute.session(IceServersRequest.self, oncePerId: false) { session, _, identity, id in
                session.succeed(id, session.services.configuration.ice.iceServers(for: identity.user, now: session.services.clock.now()))
            },

            // Records (SignalingSession+Records.swift).
            RequestRoute.session(QueryRecordsRequest.self, oncePerId: false) { session, request, identity, id in
                await session.queryRecords(request, identity, id: id)
            },
            RequestRoute.session(DeleteRecordsRequest.self, oncePerId: true) { session, request, identity, id in
                await session.deleteRecords(request, identity, id: id)
            },
            RequestRoute.session(DeleteAllRecordsRequest.self, oncePerId: true) { session, _, identity, id in
                await session.deleteAllRecords(identity, id: id)
            },

            // Blocking (SignalingSession+Blocks.swift).
            RequestRoute.session(BlockUsersRequest.self, oncePerId: true) { session, request, identity, id in
                await session.changeBlocks(request.userIds, block: true, identity, id: id)
            },
            RequestRoute.session(UnblockUsersRequest.self, oncePerId: true) { session, request, identity, id in
                await session.changeBlocks(request.userIds, block: false, identity, id: id)
            },
            RequestRoute.session(BlockedUsersRequest.self, oncePerId: false) { session, _, identity, id in
                await session.blockedUsers(identity, id: id)
            },

            // Push tokens (SignalingSession+PushTokens.swift).
            RequestRoute.session(RegisterPushTokenRequest.self, oncePerId: true) { session, request, identity, id in
                await session.registerPushToken(request, identity, id: id)
            },
            RequestRoute.session(UnregisterPushTokenRequest.self, oncePerId: true) { session, request, identity, id in
                await session.unregisterPushToken(request, identity, id: id)
            },
        ])
}
