import Logging
import SwitchboardProtocol

/// The negotiation of one SFU session's two connections (docs/PROTOCOL.md, "Group calls through
/// the SFU"). Nothing can collide: this side always offers on `publish`, the SFU always offers on
/// `subscribe`.
///
/// - The publish connection offers when the session starts and whenever the engine needs
///   negotiation (a screen shared or stopped); a need that comes while an offer waits for its
///   answer waits too: WebRTC asks again once the connection is stable.
/// - The SFU's subscribe offers come with what each section carries (handed to the engine first);
///   each is answered.
/// - ICE failing on either connection asks the server for a new session (`restart`): the SFU's
///   side of a connection cannot be restarted by the client alone.
/// - So does a publish offer with more sections than the SFU takes
///   (``SFULimits/maxPublishedSections``): an engine that cannot send a new track in a section an
///   old one left (webrtcbin) adds one per screen shared; the new session's connection has a
///   section per current track only.
actor SFULink {
    nonisolated let session: Int
    private let callId: CallID
    private let engine: any SFUMediaEngine
    private let send: @Sendable (SendSFUSignalRequest) async -> Void
    private let logger: Logger
    private var closed = false
    private var restartAsked = false

    init(
        callId: CallID, session: Int, engine: any SFUMediaEngine, logger: Logger,
        send: @escaping @Sendable (SendSFUSignalRequest) async -> Void
    ) {
        self.callId = callId
        self.session = session
        self.engine = engine
        self.send = send
        self.logger = logger
    }

    func close() {
        closed = true
    }

    /// The session starts: the publish connection offers.
    func start() async {
        await negotiate()
    }

    /// Offers on the publish connection when it is stable.
    func negotiate() async {
        guard !closed, await engine.signalingState(sfu: .publish) == .stable else { return }
        do {
            let offer = try await engine.setLocalDescription(sfu: .publish)
            guard offer.kind == .offer, !closed else { return }
            if let error = SFULimits.descriptionError(offer.sdp, connection: .publish), error.code == .tooManyPublishedTracks {
                logger.info("the publish connection ran out of sections: a new session", metadata: ["callId": "\(callId)"])
                await askForNewSession(.publish)
                return
            }
            await send(signal(.publish, .offer, sdp: offer.sdp))
        } catch {
            logger.info("the publish offer failed", metadata: ["callId": "\(callId)", "error": "\(error)"])
        }
    }

    /// A signal of this session from the SFU.
    func receive(_ event: SFUSignalEvent) async {
        guard !closed, event.session == session else { return }
        do {
            switch (event.connection, event.kind) {
            case (.publish, .answer):
                guard let sdp = event.sdp, await engine.signalingState(sfu: .publish) == .haveLocalOffer else { return }
                try await engine.setRemoteDescription(SessionDescription(kind: .answer, sdp: sdp), sfu: .publish)
            case (.subscribe, .offer):
                guard let sdp = event.sdp else { return }
                engine.setSFUTracks(event.tracks ?? [])
                try await engine.setRemoteDescription(SessionDescription(kind: .offer, sdp: sdp), sfu: .subscribe)
                let answer = try await engine.setLocalDescription(sfu: .subscribe)
                guard !closed else { return }
                await send(signal(.subscribe, .answer, sdp: answer.sdp))
            case (let connection, .candidate):
                guard let candidate = event.candidate else { return }
                try await engine.addRemoteCandidate(candidate, sfu: connection)
            default:
                return
            }
        } catch {
            logger.info(
                "an SFU signal failed",
                metadata: ["callId": "\(callId)", "kind": "\(event.kind)", "connection": "\(event.connection)", "error": "\(error)"])
        }
    }

    /// Sends a local candidate of one of the connections.
    func trickle(_ connection: SFUConnection, _ candidate: IceCandidate) async {
        guard !closed else { return }
        await send(signal(connection, .candidate, candidate: candidate))
    }

    /// ICE failed on a connection: a new session.
    func iceFailed(_ connection: SFUConnection) async {
        await askForNewSession(connection)
    }

    /// Asks the server for a new session, once per session.
    private func askForNewSession(_ connection: SFUConnection) async {
        guard !closed, !restartAsked else { return }
        restartAsked = true
        await send(signal(connection, .restart))
    }

    private func signal(
        _ connection: SFUConnection, _ kind: MediaSignalKind, sdp: String? = nil, candidate: IceCandidate? = nil
    ) -> SendSFUSignalRequest {
        SendSFUSignalRequest(
            callId: callId, session: session, connection: connection, kind: kind, sdp: sdp, candidate: candidate)
    }
}
