#if canImport(WebRTC) && canImport(UIKit)
import Foundation
import Switchboard
import SwitchboardProtocol
@preconcurrency import WebRTC

/// Why a connection step failed.
public struct WebRTCEngineError: Error, CustomStringConvertible, Equatable {
    public var description: String

    static func noConnection(_ peer: UserID) -> Self { Self(description: "no connection to \(peer)") }
}

extension WebRTCEngine {
    public func openPeer(_ peer: UserID, iceServers: [IceServer], events: PeerConnectionEvents) {
        queue.async { [self] in
            // The SDK opens a member's new connection only after closing the old one; a stray
            // second open replaces it rather than leaking it.
            connections.removeValue(forKey: peer)?.close()
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
                    peer: peer, factory: factory, configuration: configuration, events: events,
                    onRemoteVideo: { [videoTracks] tracks in videoTracks.setRemote(peer, tracks) })
            else {
                // WebRTC refused the configuration (a malformed ICE server URL): as a failed
                // connection, the SDK restarts it.
                events.iceFailed()
                return
            }
            connections[peer] = connection
            if let track = media.microphoneTrack { connection.sendMicrophone(track) }
            if let track = media.cameraTrack, callMediaType == .video { connection.sendCamera(track, quality: settings.quality) }
            if let track = media.screenTrack, settings.screenShare != nil { connection.sendScreen(track) }
            connection.applyOutput(settings.output)
        }
    }

    public func closePeer(_ peer: UserID) {
        queue.async { [self] in
            connections.removeValue(forKey: peer)?.close()
            videoTracks.setRemote(peer, [:])
        }
    }

    public func setLocalDescription(peer: UserID, iceRestart: Bool) async throws -> SessionDescription {
        try await onQueue { [self] done in
            guard let connection = connections[peer] else { return done(.failure(WebRTCEngineError.noConnection(peer))) }
            connection.setLocalDescription(iceRestart: iceRestart, done)
        }
    }

    public func setRemoteDescription(_ description: SessionDescription, peer: UserID) async throws {
        try await onQueue { [self] (done: @escaping @Sendable (Result<Void, any Error>) -> Void) in
            guard let connection = connections[peer] else { return done(.failure(WebRTCEngineError.noConnection(peer))) }
            connection.setRemoteDescription(description, done)
        }
    }

    public func addRemoteCandidate(_ candidate: IceCandidate, peer: UserID) async throws {
        try await onQueue { [self] (done: @escaping @Sendable (Result<Void, any Error>) -> Void) in
            guard let connection = connections[peer] else { return done(.failure(WebRTCEngineError.noConnection(peer))) }
            connection.addRemoteCandidate(candidate, done)
        }
    }

    public func signalingState(peer: UserID) async -> PeerSignalingState {
        await onQueue { [self] in connections[peer]?.signalingState ?? .closed }
    }
}
#endif
