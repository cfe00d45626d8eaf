import Foundation
import SwitchboardProtocol

/// Calls: requests become ``CallEvent``s for the call engine, which answers them.
///
/// The session adds the app's settings and the profiles to show; who blocks the inviter, who is
/// online, who can be rung by push and who is in a call's chat group (``CallFacts``) are looked up
/// by the engine, where the decision is made, at the moment it is made, and handed to the state
/// machine beside the request.
extension SignalingSession {
    func command(_ identity: Identity, _ callId: CallID) -> CallCommand {
        CallCommand(user: identity.user, device: identity.device, callId: callId)
    }

    /// The app's settings and the profiles to show, for a new call or an invitation. Nil once the
    /// failure was answered.
    private func invitees(
        _ participantIds: [UserID], inviter: Identity, withInviterProfile: Bool, id: RequestID
    ) async -> (settings: AppSettings, profiles: [UserID: UserProfile])? {
        let app = inviter.user.app
        guard let settings = services.apps.app(app)?.settings else {
            fail(id, SwitchboardError(.unknownApp))
            return nil
        }
        // Only well-formed ids are looked up; the state machine reports the bad ones.
        let invitees = Array(Array(Set(participantIds.filter(\.isValid))).prefix(settings.maxParticipants))
        let profiled = withInviterProfile ? [inviter.user.user] + invitees : invitees
        guard let profiles = await storage(id, { try await self.services.profiles.profiles(app: app, users: profiled) })
        else { return nil }
        return (settings, profiles)
    }

    func startCall(_ request: StartCallRequest, _ identity: Identity, id: RequestID) async {
        guard let found = await invitees(request.participantIds, inviter: identity, withInviterProfile: true, id: id)
        else { return }
        let callId = CallID.random()
        let command = StartCallCommand(
            caller: identity.user, device: identity.device, callId: callId,
            generatedRoomId: RoomID(rawValue: callId.rawValue), request: request, settings: found.settings,
            profiles: found.profiles)
        await call(.start(command), id: id)
    }

    func invite(_ request: InviteToCallRequest, _ identity: Identity, id: RequestID) async {
        guard let found = await invitees(request.participantIds, inviter: identity, withInviterProfile: false, id: id)
        else { return }
        await call(
            .invite(
                InviteCommand(
                    command: command(identity, request.callId), invitees: request.participantIds,
                    settings: found.settings, profiles: found.profiles)),
            id: id)
    }

    func join(_ request: JoinCallRequest, _ identity: Identity, id: RequestID) async {
        let user = identity.user
        guard let settings = services.apps.app(user.app)?.settings else {
            fail(id, SwitchboardError(.unknownApp))
            return
        }
        guard let profiles = await storage(id, { try await self.services.profiles.profiles(app: user.app, users: [user.user]) })
        else { return }
        await call(
            .join(
                JoinCommand(
                    command: command(identity, request.callId), settings: settings, profile: profiles[user.user])),
            id: id)
    }

    func take(_ request: TakeCallRequest, _ identity: Identity, id: RequestID) async {
        guard let settings = services.apps.app(identity.user.app)?.settings else {
            fail(id, SwitchboardError(.unknownApp))
            return
        }
        await call(.take(TakeCommand(command: command(identity, request.callId), settings: settings)), id: id)
    }

    func setRecording(_ callId: CallID, start: Bool, _ identity: Identity, id: RequestID) async {
        guard let settings = services.apps.app(identity.user.app)?.settings else {
            fail(id, SwitchboardError(.unknownApp))
            return
        }
        await call(
            .setRecording(RecordingCommand(command: command(identity, callId), settings: settings, start: start)), id: id)
    }

    func reportStatus(_ request: StatusReportRequest, _ identity: Identity, id: RequestID) async {
        let report = StatusReport(
            packetLoss: request.packetLoss, rtt: request.rtt, bitrate: request.bitrate, audioLevel: request.audioLevel)
        await call(.statusReport(command(identity, request.callId), report), id: id)
    }

    /// Hands an event to the call engine and answers with its reply.
    func call(_ event: CallEvent, id: RequestID) async {
        let connection = self.connection
        let ledger = services.ledger
        let tracked = self.tracked
        self.tracked = nil
        // The engine answers inside its critical section, before the events the request causes.
        let reply = await services.calls.handle(event) { reply in
            let text = Self.encode(reply, id: id)
            if let tracked { ledger.finish(tracked.id, device: tracked.device, answer: text) }
            connection.enqueue(text)
        }
        if reply == nil {
            self.tracked = tracked
            fail(id, SwitchboardError(.internalError, "the call engine gave no answer"))
        }
    }

    static func encode(_ reply: CallReply, id: RequestID) -> String {
        let text: String?
        switch reply {
        case .started(let response):
            text = try? SwitchboardJSON.encodeString(ResponseEnvelope(id: id, outcome: .success(response)))
        case .invited(let response):
            text = try? SwitchboardJSON.encodeString(ResponseEnvelope(id: id, outcome: .success(response)))
        case .call(let info):
            text = try? SwitchboardJSON.encodeString(
                ResponseEnvelope(id: id, outcome: .success(CallSnapshotResponse(call: info))))
        case .mediaChange(let transaction):
            text = try? SwitchboardJSON.encodeString(
                ResponseEnvelope(id: id, outcome: .success(ChangeMediaTypeResponse(transactionId: transaction))))
        case .moveOffered(let response):
            text = try? SwitchboardJSON.encodeString(ResponseEnvelope(id: id, outcome: .success(response)))
        case .ok:
            text = try? SwitchboardJSON.encodeString(ResponseEnvelope(id: id, outcome: .success(Empty())))
        case .failure(let error):
            text = try? SwitchboardJSON.encodeString(ResponseEnvelope<Empty>(id: id, outcome: .failure(error)))
        }
        return text ?? "{}"
    }
}
