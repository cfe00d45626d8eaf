#if canImport(WebRTC) && canImport(UIKit)
import Foundation
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol
@preconcurrency import WebRTC

/// One `RTCPeerConnection` to one member, with its delegate. Its methods run on the engine's
/// queue; the delegate callbacks come on WebRTC's signaling thread and only report (they never
/// wait for the queue, which may itself be waiting for that thread).
final class PeerConnection: NSObject, RTCPeerConnectionDelegate, @unchecked Sendable {
    let peer: UserID
    private let connection: RTCPeerConnection
    private let events: PeerConnectionEvents
    private let onRemoteVideo: @Sendable ([ReceivedVideoRole: RTCVideoTrack]) -> Void
    // Queue-confined.
    private var microphone: RTCRtpSender?
    private var camera: RTCRtpSender?
    private var screen: RTCRtpTransceiver?
    /// Reported once per failure: a failed connection stays failed until the SDK restarts ICE.
    private let failed = NIOLockedValueBox(false)
    /// ICE state changes so far: a `disconnected` that outlives ``disconnectedLimit`` with no
    /// change after it counts as failed.
    private let iceChanges = NIOLockedValueBox(0)
    /// libwebrtc leaves a connection whose every path is dead in `disconnected` for good, never
    /// `failed` (Chromium does, measured with pages in network namespaces: 18 s after the answer
    /// with no path at all, 5 s after a working path died), so without this limit a dead path
    /// would never be restarted. The browser client uses the same limit.
    static let disconnectedLimit: TimeInterval = 5
    /// Each receiver's stream id (`a=msid`), as `didAdd rtpReceiver:streams:` tells it.
    private let receiverStreams = NIOLockedValueBox<[String: String]>([:])

    init?(
        peer: UserID, factory: RTCPeerConnectionFactory, configuration: RTCConfiguration, events: PeerConnectionEvents,
        onRemoteVideo: @escaping @Sendable ([ReceivedVideoRole: RTCVideoTrack]) -> Void
    ) {
        self.peer = peer
        self.events = events
        self.onRemoteVideo = onRemoteVideo
        let constraints = RTCMediaConstraints(mandatoryConstraints: nil, optionalConstraints: nil)
        // The delegate is set right after: nothing is reported before a track or a description.
        guard let connection = factory.peerConnection(with: configuration, constraints: constraints, delegate: nil) else {
            return nil
        }
        self.connection = connection
        super.init()
        connection.delegate = self
    }

    // MARK: - tracks

    func sendMicrophone(_ track: RTCAudioTrack) {
        guard microphone == nil else { return }
        microphone = connection.add(track, streamIds: [WebRTCEngine.streamId])
    }

    func sendCamera(_ track: RTCVideoTrack, quality: VideoQuality) {
        guard camera == nil else { return }
        camera = connection.add(track, streamIds: [WebRTCEngine.streamId])
        applyQuality(quality)
    }

    func stopCamera() {
        guard let sender = camera else { return }
        connection.removeTrack(sender)
        camera = nil
    }

    /// The screen goes in a section of its own, send-only, in its own stream.
    func sendScreen(_ track: RTCVideoTrack) {
        guard screen == nil else { return }
        let initial = RTCRtpTransceiverInit()
        initial.direction = .sendOnly
        initial.streamIds = [WebRTCEngine.screenStreamId]
        screen = connection.addTransceiver(with: track, init: initial)
    }

    /// Stops the screen's section for good: a later share gets a new one, since engines that
    /// cannot reactivate a section refuse a reused one (docs/IOS.md, section 8).
    func stopScreen() {
        guard let transceiver = screen else { return }
        transceiver.sender.track = nil
        transceiver.stopInternal()
        screen = nil
    }

    /// The camera sender's bitrate and frame rate for `quality`.
    func applyQuality(_ quality: VideoQuality) {
        guard let sender = camera else { return }
        let parameters = sender.parameters
        for encoding in parameters.encodings {
            encoding.maxBitrateBps = NSNumber(value: quality.bitrateKbps * 1000)
            encoding.maxFramerate = NSNumber(value: quality.frameRate)
        }
        sender.parameters = parameters
    }

    /// Remote audio at the playback volume, or silenced.
    func applyOutput(_ output: AudioOutput) {
        for receiver in connection.receivers {
            guard let track = receiver.track as? RTCAudioTrack else { continue }
            track.isEnabled = !output.remoteAudioMuted
            // RTCAudioSource.volume is a gain from 0 to 10; 100 % is 1.
            track.source.volume = Double(min(100, max(0, output.volume))) / 100
        }
    }

    // MARK: - negotiation

    func setLocalDescription(iceRestart: Bool, _ done: @escaping @Sendable (Result<SessionDescription, any Error>) -> Void) {
        if iceRestart {
            failed.withLockedValue { $0 = false }
            connection.restartIce()
        }
        connection.setLocalDescriptionWithCompletionHandler { [connection] error in
            if let error { return done(.failure(error)) }
            guard let local = connection.localDescription, let kind = Self.kind(local.type) else {
                return done(.failure(WebRTCEngineError(description: "no local offer or answer after setLocalDescription")))
            }
            done(.success(SessionDescription(kind: kind, sdp: local.sdp)))
        }
    }

    func setRemoteDescription(_ description: SessionDescription, _ done: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        let type: RTCSdpType = description.kind == .offer ? .offer : .answer
        connection.setRemoteDescription(RTCSessionDescription(type: type, sdp: description.sdp)) { error in
            done(error.map { .failure($0) } ?? .success(()))
        }
    }

    func addRemoteCandidate(_ candidate: IceCandidate, _ done: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        // An empty candidate ends the peer's candidates: nothing to add.
        guard !candidate.candidate.isEmpty else { return done(.success(())) }
        let rtcCandidate = RTCIceCandidate(
            sdp: candidate.candidate, sdpMLineIndex: Int32(clamping: candidate.sdpMLineIndex ?? 0), sdpMid: candidate.sdpMid)
        connection.add(rtcCandidate) { error in done(error.map { .failure($0) } ?? .success(())) }
    }

    var signalingState: PeerSignalingState {
        switch connection.signalingState {
        case .stable: .stable
        case .haveLocalOffer, .haveLocalPrAnswer: .haveLocalOffer
        case .haveRemoteOffer, .haveRemotePrAnswer: .haveRemoteOffer
        case .closed: .closed
        @unknown default: .closed
        }
    }

    /// Closes the connection; WebRTC's close stops its transports without waiting for the peer.
    func close() {
        connection.delegate = nil
        connection.close()
    }

    static func kind(_ type: RTCSdpType) -> SessionDescription.Kind? {
        switch type {
        case .offer: .offer
        case .answer: .answer
        default: nil
        }
    }

    // MARK: - statistics and received tracks

    func statistics() async -> StandardStatsReport {
        await withCheckedContinuation { continuation in
            connection.statistics { report in continuation.resume(returning: Self.read(report)) }
        }
    }

    static func read(_ report: RTCStatisticsReport) -> StandardStatsReport {
        StandardStatsReport(
            report.statistics.values.map { stats in
                StandardStats(
                    id: stats.id, type: stats.type,
                    values: stats.values.compactMapValues { value -> StandardStats.Value? in
                        switch value {
                        case let string as NSString: .string(string as String)
                        case let number as NSNumber:
                            // NSNumber's booleans are CFBoolean.
                            CFGetTypeID(number) == CFBooleanGetTypeID() ? .bool(number.boolValue) : .number(number.doubleValue)
                        default: nil
                        }
                    })
            })
    }

    /// The received video tracks by what they show (queue).
    func remoteVideo() -> [ReceivedVideoRole: RTCVideoTrack] {
        let receivers = connection.transceivers.filter { !$0.isStopped }.map(\.receiver)
        let streams = receiverStreams.withLockedValue { $0 }
        let audioStream = receivers.first { $0.track?.kind == kRTCMediaStreamTrackKindAudio }.flatMap { streams[$0.receiverId] }
        var result: [ReceivedVideoRole: RTCVideoTrack] = [:]
        for receiver in receivers {
            guard let track = receiver.track as? RTCVideoTrack else { continue }
            let role = ReceivedVideoRole.of(streamId: streams[receiver.receiverId], audioStreamId: audioStream)
            if result[role] == nil { result[role] = track }
        }
        return result
    }

    /// Track ids of the shared screens received (queue).
    func remoteScreenTrackIds() -> Set<String> {
        remoteVideo()[.screen].map { [$0.trackId] } ?? []
    }

    // MARK: - RTCPeerConnectionDelegate (WebRTC's signaling thread)

    func peerConnection(_ peerConnection: RTCPeerConnection, didChange stateChanged: RTCSignalingState) {}
    func peerConnection(_ peerConnection: RTCPeerConnection, didAdd stream: RTCMediaStream) {}
    func peerConnection(_ peerConnection: RTCPeerConnection, didRemove stream: RTCMediaStream) {}

    func peerConnectionShouldNegotiate(_ peerConnection: RTCPeerConnection) {
        events.negotiationNeeded()
    }

    func peerConnection(_ peerConnection: RTCPeerConnection, didChange newState: RTCIceConnectionState) {
        let change = iceChanges.withLockedValue { count in
            count += 1
            return count
        }
        switch newState {
        case .failed: reportFailure()
        case .connected, .completed: events.iceConnected()
        case .disconnected:
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.disconnectedLimit) { [weak self] in
                guard let self, self.iceChanges.withLockedValue({ $0 }) == change else { return }
                self.reportFailure()
            }
        default: break
        }
    }

    func peerConnection(_ peerConnection: RTCPeerConnection, didChange newState: RTCPeerConnectionState) {
        // A connection whose DTLS or transport failed cannot carry media either (section 8).
        if newState == .failed { reportFailure() }
    }

    private func reportFailure() {
        let first = failed.withLockedValue { failed in
            defer { failed = true }
            return !failed
        }
        if first { events.iceFailed() }
    }

    func peerConnection(_ peerConnection: RTCPeerConnection, didChange newState: RTCIceGatheringState) {}

    func peerConnection(_ peerConnection: RTCPeerConnection, didGenerate candidate: RTCIceCandidate) {
        events.localCandidate(
            IceCandidate(candidate: candidate.sdp, sdpMid: candidate.sdpMid, sdpMLineIndex: Int(candidate.sdpMLineIndex)))
    }

    func peerConnection(_ peerConnection: RTCPeerConnection, didRemove candidates: [RTCIceCandidate]) {}
    func peerConnection(_ peerConnection: RTCPeerConnection, didOpen dataChannel: RTCDataChannel) {}

    func peerConnection(_ peerConnection: RTCPeerConnection, didAdd rtpReceiver: RTCRtpReceiver, streams: [RTCMediaStream]) {
        let (receiver, stream) = (rtpReceiver.receiverId, streams.first?.streamId)
        receiverStreams.withLockedValue { $0[receiver] = stream }
        reportRemoteVideo()
    }

    func peerConnection(_ peerConnection: RTCPeerConnection, didRemove rtpReceiver: RTCRtpReceiver) {
        reportRemoteVideo()
    }

    private func reportRemoteVideo() {
        onRemoteVideo(remoteVideo())
    }
}

#endif
