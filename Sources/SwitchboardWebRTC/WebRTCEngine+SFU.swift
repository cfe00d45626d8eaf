#if canImport(WebRTC) && canImport(UIKit)
import Foundation
import Switchboard
import SwitchboardProtocol
@preconcurrency import WebRTC

/// A group call through the server's SFU (docs/IOS.md, "Group calls through the SFU"): the same
/// connections as a mesh's, in the roles ``PeerConnection/Role/sfu(_:)``. `publish` sends the
/// microphone and camera in one stream, the camera in the simulcast layers of ``SFUCameraLayers``
/// (VP8: the only video codec the server's Janus rooms take), and a shared screen in a stream of
/// its own, all send-only; `subscribe` answers the SFU's offers and shows each section under the
/// member ``setSFUTracks(_:)`` named. Settings reach `publish` as they reach a member's
/// connection; ICE failing on either is reported as on any connection.
extension WebRTCEngine: SFUMediaEngine {
    public func openSFU(_ connection: SFUConnection, iceServers: [IceServer], events: PeerConnectionEvents) {
        queue.async { [self] in open(.sfu(connection), iceServers: iceServers, events: events) }
    }

    public func closeSFU(_ connection: SFUConnection) {
        queue.async { [self] in close(.sfu(connection)) }
    }

    public func setLocalDescription(sfu connection: SFUConnection) async throws -> SessionDescription {
        // The SFU's side of a connection cannot restart ICE: the SDK asks for a new session instead.
        try await setLocalDescription(.sfu(connection), iceRestart: false)
    }

    public func setRemoteDescription(_ description: SessionDescription, sfu connection: SFUConnection) async throws {
        try await setRemoteDescription(description, .sfu(connection))
    }

    public func addRemoteCandidate(_ candidate: IceCandidate, sfu connection: SFUConnection) async throws {
        try await addRemoteCandidate(candidate, .sfu(connection))
    }

    public func signalingState(sfu connection: SFUConnection) async -> PeerSignalingState {
        await signalingState(.sfu(connection))
    }

    /// Queued before the offer it comes with (the SDK calls it first), so the offer's sections are
    /// named when its tracks are reported.
    public func setSFUTracks(_ tracks: [SFUTrack]) {
        let sections = SFUSections(tracks)
        queue.async { [self] in connections[.sfu(.subscribe)]?.sections = sections }
    }
}
#endif
