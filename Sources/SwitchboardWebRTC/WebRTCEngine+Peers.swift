#if canImport(WebRTC) && canImport(UIKit)
import Foundation
import Switchboard
import SwitchboardProtocol
@preconcurrency import WebRTC

/// Why a connection step failed.
public struct WebRTCEngineError: Error, CustomStringConvertible, Equatable {
    public var description: String

    static func noConnection(_ role: PeerConnection.Role) -> Self { Self(description: "no \(role)") }
}

extension WebRTCEngine {
    public func openPeer(_ peer: UserID, iceServers: [IceServer], events: PeerConnectionEvents) {
        queue.async { [self] in open(.peer(peer), iceServers: iceServers, events: events) }
    }

    public func closePeer(_ peer: UserID) {
        queue.async { [self] in close(.peer(peer)) }
    }

    public func setLocalDescription(peer: UserID, iceRestart: Bool) async throws -> SessionDescription {
        try await setLocalDescription(.peer(peer), iceRestart: iceRestart)
    }

    public func setRemoteDescription(_ description: SessionDescription, peer: UserID) async throws {
        try await setRemoteDescription(description, .peer(peer))
    }

    public func addRemoteCandidate(_ candidate: IceCandidate, peer: UserID) async throws {
        try await addRemoteCandidate(candidate, .peer(peer))
    }

    public func signalingState(peer: UserID) async -> PeerSignalingState {
        await signalingState(.peer(peer))
    }

    // MARK: - every connection, by role

    /// Opens the connection for `role` with the local tracks it sends (queue). The SDK opens a
    /// connection only after closing the one before it in that role; a stray second open
    /// replaces it rather than leaking it.
    func open(_ role: PeerConnection.Role, iceServers: [IceServer], events: PeerConnectionEvents) {
        close(role)
        let configuration = RTCConfiguration()
        configuration.iceServers = iceServers.map {
            RTCIceServer(urlStrings: $0.urls, username: $0.username, credential: $0.credential)
        }
        configuration.sdpSemantics = .unifiedPlan
        configuration.bundlePolicy = .maxBundle
        configuration.rtcpMuxPolicy = .require
        // An offer that crosses ours rolls ours back, as the SDK's perfect negotiation expects.
        configuration.enableImplicitRollback = true
        configuration.continualGatheringPolicy = .gatherContinually
        guard
            let connection = PeerConnection(
                role: role, factory: factory, configuration: configuration, events: events,
                onRemoteVideo: { [videoTracks] tracks in videoTracks.setRemote(role, tracks) })
        else {
            // WebRTC refused the configuration (a malformed ICE server URL): as a failed
            // connection, the SDK restarts it.
            events.iceFailed()
            return
        }
        connections[role] = connection
        if role.sends {
            if let track = media.microphoneTrack { connection.sendMicrophone(track) }
            if let track = media.cameraTrack, callMediaType == .video { connection.sendCamera(track, quality: settings.quality) }
            if let track = media.screenTrack, settings.screenShare != nil { connection.sendScreen(track) }
        }
        connection.applyOutput(settings.output)
    }

    /// Closes the connection for `role` and forgets what it received (queue).
    func close(_ role: PeerConnection.Role) {
        connections.removeValue(forKey: role)?.close()
        videoTracks.setRemote(role, [:])
    }

    func setLocalDescription(_ role: PeerConnection.Role, iceRestart: Bool) async throws -> SessionDescription {
        try await onQueue { [self] done in
            guard let connection = connections[role] else { return done(.failure(WebRTCEngineError.noConnection(role))) }
            connection.setLocalDescription(iceRestart: iceRestart, done)
        }
    }

    func setRemoteDescription(_ description: SessionDescription, _ role: PeerConnection.Role) async throws {
        try await onQueue { [self] (done: @escaping @Sendable (Result<Void, any Error>) -> Void) in
            guard let connection = connections[role] else { return done(.failure(WebRTCEngineError.noConnection(role))) }
            connection.setRemoteDescription(description, done)
        }
    }

    func addRemoteCandidate(_ candidate: IceCandidate, _ role: PeerConnection.Role) async throws {
        try await onQueue { [self] (done: @escaping @Sendable (Result<Void, any Error>) -> Void) in
            guard let connection = connections[role] else { return done(.failure(WebRTCEngineError.noConnection(role))) }
            connection.addRemoteCandidate(candidate, done)
        }
    }

    func signalingState(_ role: PeerConnection.Role) async -> PeerSignalingState {
        await onQueue { [self] in connections[role]?.signalingState ?? .closed }
    }
}
#endif
