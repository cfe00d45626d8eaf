import SwitchboardProtocol
import SwitchboardTesting
import Testing

@testable import Switchboard

/// ``PeerEngineContract`` against the fake engine (its signaling checks; the fake carries no
/// media). `SwitchboardGStreamerTests` runs every check against the GStreamer engine, and an iOS
/// app runs them against `WebRTCEngine` (docs/IOS.md, section 8).
struct PeerEngineContractTests {
    @Test(arguments: PeerEngineContract.signalingChecks)
    func theFakeEngineKeepsTheContract(_ check: PeerEngineContract.Check) async throws {
        try await PeerEngineContract(carriesMedia: false) { FakeMediaEngine(name: $0.rawValue) }.run(check)
    }

    /// The contract catches an engine that breaks it: one that ignores `iceRestart`, one that
    /// refuses an offer crossing its own, and a media check on an engine without media.
    @Test func anEngineThatBreaksTheContractFailsIt() async throws {
        await #expect(throws: ContractViolation.self) {
            try await PeerEngineContract(carriesMedia: false) { NoRestartEngine(FakeMediaEngine(name: $0.rawValue)) }
                .run(.iceRestart)
        }
        await #expect(throws: (any Error).self) {
            try await PeerEngineContract(carriesMedia: false) { NoRollbackEngine(FakeMediaEngine(name: $0.rawValue)) }
                .run(.crossingOffers)
        }
        await #expect(throws: ContractViolation.self) {
            try await PeerEngineContract(carriesMedia: false) { FakeMediaEngine(name: $0.rawValue) }.run(.screenShareNegotiates)
        }
    }
}

/// A peer engine that passes everything to another, for engines broken on purpose.
class ForwardingEngine: PeerMediaEngine, @unchecked Sendable {
    let inner: FakeMediaEngine
    init(_ inner: FakeMediaEngine) { self.inner = inner }

    func callConnected(callId: CallID, roomId: RoomID, mediaType: CallMediaType) {
        inner.callConnected(callId: callId, roomId: roomId, mediaType: mediaType)
    }
    func callEnded(callId: CallID) { inner.callEnded(callId: callId) }
    func startAudio() { inner.startAudio() }
    func stopAudio() { inner.stopAudio() }
    func setMicrophone(on: Bool) { inner.setMicrophone(on: on) }
    func setCamera(on: Bool, front: Bool) { inner.setCamera(on: on, front: front) }
    func setMicrophoneVolume(_ volume: Int) { inner.setMicrophoneVolume(volume) }
    func setVideoQuality(_ quality: VideoQuality) { inner.setVideoQuality(quality) }
    func setAudioOutput(_ output: AudioOutput) { inner.setAudioOutput(output) }
    func setScreenShare(_ source: ScreenShareSource?) { inner.setScreenShare(source) }
    func callMediaTypeChanged(callId: CallID, mediaType: CallMediaType) { inner.callMediaTypeChanged(callId: callId, mediaType: mediaType) }
    func statistics() async -> MediaStatistics { await inner.statistics() }
    func openPeer(_ peer: UserID, iceServers: [IceServer], events: PeerConnectionEvents) {
        inner.openPeer(peer, iceServers: iceServers, events: events)
    }
    func closePeer(_ peer: UserID) { inner.closePeer(peer) }
    func setLocalDescription(peer: UserID, iceRestart: Bool) async throws -> SessionDescription {
        try await inner.setLocalDescription(peer: peer, iceRestart: iceRestart)
    }
    func setRemoteDescription(_ description: SessionDescription, peer: UserID) async throws {
        try await inner.setRemoteDescription(description, peer: peer)
    }
    func addRemoteCandidate(_ candidate: IceCandidate, peer: UserID) async throws {
        try await inner.addRemoteCandidate(candidate, peer: peer)
    }
    func signalingState(peer: UserID) async -> PeerSignalingState { await inner.signalingState(peer: peer) }
}

/// Keeps its ICE credentials when asked to restart.
final class NoRestartEngine: ForwardingEngine, @unchecked Sendable {
    override func setLocalDescription(peer: UserID, iceRestart: Bool) async throws -> SessionDescription {
        try await inner.setLocalDescription(peer: peer, iceRestart: false)
    }
}

/// Refuses an offer while its own is open, instead of rolling its own back.
final class NoRollbackEngine: ForwardingEngine, @unchecked Sendable {
    override func setRemoteDescription(_ description: SessionDescription, peer: UserID) async throws {
        if description.kind == .offer, await inner.signalingState(peer: peer) == .haveLocalOffer {
            throw ContractViolation("an offer in have-local-offer")
        }
        try await inner.setRemoteDescription(description, peer: peer)
    }
}
