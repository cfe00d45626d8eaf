#if GStreamer
import CGStreamer
import Switchboard
import SwitchboardProtocol

/// Group calls through the server's SFU (docs/IOS.md, "Group calls through the SFU"): the SDK
/// opens a publish and a subscribe connection per session and relays their negotiation; the
/// engine builds them from the same ``PeerConnection`` as the mesh's, told their role
/// (``ConnectionRole``).
///
/// - `publish`: the microphone, the camera and a shared screen, each `sendonly` from the one
///   encoding every connection shares; the microphone and the camera in one stream, the screen in
///   its own (`a=msid`). The camera goes out in one layer: webrtcbin 1.22 cannot send VP8
///   simulcast (it has no `a=rid`/`a=simulcast` sending), so the SFU forwards that layer to every
///   member, whichever layer each asked for.
/// - `subscribe`: a receive-only transceiver per section the SFU offers; each track that arrives
///   is decoded, measured and recorded under the member ``setSFUTracks(_:)`` named for its mid,
///   as a mesh peer's would be. Sections the SFU stops (a member left: port 0 or `inactive`)
///   end their tracks.
///
/// Neither connection restarts ICE (webrtcbin cannot, and the SFU's side is the server's): ICE
/// failing is reported and the SDK starts a new session, whose connections replace these.
extension GStreamerMediaEngine: SFUMediaEngine {
    public func openSFU(_ connection: SFUConnection, iceServers: [IceServer], events: PeerConnectionEvents) {
        run { await $0.openSFU(connection, iceServers: iceServers, events: events) }
    }

    public func closeSFU(_ connection: SFUConnection) {
        run { await $0.media?.closeSFU(connection) }
    }

    public func setLocalDescription(sfu connection: SFUConnection) async throws -> SessionDescription {
        try await perform { try await $0.setLocalDescription(sfu: connection) }
    }

    public func setRemoteDescription(_ description: SessionDescription, sfu connection: SFUConnection) async throws {
        try await perform { try await $0.setRemoteDescription(description, sfu: connection) }
    }

    public func addRemoteCandidate(_ candidate: IceCandidate, sfu connection: SFUConnection) async throws {
        try await perform { try await $0.sfuConnection(connection).addRemoteCandidate(candidate) }
    }

    public func signalingState(sfu connection: SFUConnection) async -> PeerSignalingState {
        (try? await perform { try await $0.sfuConnection(connection).signalingState }) ?? .closed
    }

    /// Taken in order with the negotiation steps: the table changes just before the offer it describes.
    public func setSFUTracks(_ tracks: [SFUTrack]) {
        run { await $0.media?.sfuTracks.set(tracks) }
    }

    /// Makes the transport of an SFU connection fail as webrtcbin's elements do (tests).
    func failTransport(of connection: SFUConnection) async throws {
        try await perform { try await $0.sfuConnection(connection).failForTest() }
    }

    /// The connections open in the current call: mesh peers, SFU connections, and how many SFU
    /// connections the call opened in all (tests).
    func connectionNames() async -> (peers: [UserID], sfu: Set<SFUConnection>, sfuOpened: Int) {
        (try? await perform { core -> (peers: [UserID], sfu: Set<SFUConnection>, sfuOpened: Int) in
            guard let media = await core.media else { return ([], [], 0) }
            return await (Array(media.slots.keys), Set(media.sfu.keys), media.sfuOpened)
        }) ?? ([], [], 0)
    }
}

extension GStreamerMediaEngine.Core {
    func sfuConnection(_ connection: SFUConnection) async throws -> PeerConnection {
        guard let media else { throw GStreamerError("no call") }
        return try await media.sfuConnection(connection)
    }

    func openSFU(_ connection: SFUConnection, iceServers: [IceServer], events: PeerConnectionEvents) async {
        guard let media else {
            logger.warning("an SFU connection outside a call", metadata: ["connection": "\(connection)"])
            return
        }
        // Never on loopback only: Janus does not gather on 127.0.0.1, and a packet from the host's
        // own address to 127.0.0.1 is dropped, so the connections gather on the host's addresses
        // (traffic with a Janus on the same host still stays on it).
        let ice = IcePolicy(servers: iceServers, relayOnly: configuration.relayOnly, loopbackOnly: false)
        do {
            try await media.openSFU(connection, ice: ice, events: events)
        } catch {
            logger.error("could not open an SFU connection", metadata: ["connection": "\(connection)", "error": "\(error)"])
        }
    }

    func setLocalDescription(sfu connection: SFUConnection) async throws -> SessionDescription {
        let peer = try await sfuConnection(connection)
        switch (connection, peer.signalingState) {
        case (.publish, .stable):
            return SessionDescription(kind: .offer, sdp: try await peer.createAndSetLocal(GST_WEBRTC_SDP_TYPE_OFFER))
        case (.publish, .haveLocalOffer):
            return SessionDescription(kind: .offer, sdp: peer.pendingOffer ?? "")
        case (.subscribe, .haveRemoteOffer):
            return SessionDescription(kind: .answer, sdp: try await peer.createAndSetLocal(GST_WEBRTC_SDP_TYPE_ANSWER))
        case (_, let state):
            throw GStreamerError("no local description for the \(connection.rawValue) connection in \(state)")
        }
    }

    func setRemoteDescription(_ description: SessionDescription, sfu connection: SFUConnection) async throws {
        // The SFU answers on publish and offers on subscribe, never the other way round.
        let expected: SessionDescription.Kind = connection == .publish ? .answer : .offer
        guard description.kind == expected else {
            throw GStreamerError("an \(description.kind.rawValue) on the \(connection.rawValue) connection")
        }
        let peer = try await sfuConnection(connection)
        try await peer.setRemote(
            description.kind == .offer ? GST_WEBRTC_SDP_TYPE_OFFER : GST_WEBRTC_SDP_TYPE_ANSWER, description.sdp)
    }
}
#endif
