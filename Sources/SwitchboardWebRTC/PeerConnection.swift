#if canImport(WebRTC) && canImport(UIKit)
import Foundation
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol
@preconcurrency import WebRTC

/// One `RTCPeerConnection`, with its delegate: to one member (a mesh), or one of the two of a
/// session with the SFU. Its ``Role`` says what it sends and whose what it receives is. Its
/// methods run on the engine's queue; the delegate callbacks come on WebRTC's signaling thread
/// and only report (they never wait for the queue, which may itself be waiting for that thread).
final class PeerConnection: NSObject, RTCPeerConnectionDelegate, @unchecked Sendable {
    /// What a connection is for.
    enum Role: Hashable, Sendable, CustomStringConvertible {
        /// The connection to one other member: it sends the local tracks (each sent and received
        /// in one section, `addTrack`), and all it receives is that member's.
        case peer(UserID)
        /// One of a session's connections with the SFU: `publish` sends the local tracks, each
        /// send-only, the camera in the layers of ``SFUCameraLayers``; `subscribe` sends nothing
        /// and receives the other members' tracks, each section the member's that
        /// ``PeerConnection/sections`` names.
        case sfu(SFUConnection)

        /// The role's connection sends the local tracks.
        var sends: Bool { self != .sfu(.subscribe) }

        var description: String {
            switch self {
            case .peer(let peer): "connection to \(peer)"
            case .sfu(let connection): "SFU \(connection) connection"
            }
        }
    }

    let role: Role
    private let connection: RTCPeerConnection
    private let events: PeerConnectionEvents
    private let onRemoteVideo: @Sendable ([UserID: [ReceivedVideoRole: RTCVideoTrack]]) -> Void
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
    /// How remote audio plays: every received audio track, also one that comes later.
    private let output = NIOLockedValueBox(AudioOutput())
    /// Set by ``close()``: nothing is reported after it (a report under way finishes first).
    private let closed = NIOLockedValueBox(false)
    /// `subscribe`: whose each section is, as the SFU's last offer said (set before the offer).
    private let sectionsBox = NIOLockedValueBox(SFUSections())

    init?(
        role: Role, factory: RTCPeerConnectionFactory, configuration: RTCConfiguration, events: PeerConnectionEvents,
        onRemoteVideo: @escaping @Sendable ([UserID: [ReceivedVideoRole: RTCVideoTrack]]) -> Void
    ) {
        self.role = role
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
        microphone = send(track, layers: nil)
    }

    /// The camera; to the SFU in its simulcast layers, highest first (the order Janus reads).
    func sendCamera(_ track: RTCVideoTrack, quality: VideoQuality) {
        guard camera == nil else { return }
        camera = send(track, layers: SFUCameraLayers.layers)
        applyQuality(quality)
    }

    /// Adds a local track in the stream of the microphone and camera: to a member in a section
    /// that also receives theirs (`addTrack`, one layer: the member's engine takes no simulcast);
    /// to the SFU send-only, in `layers` where given.
    private func send(_ track: RTCMediaStreamTrack, layers: [(rid: String, scaleDown: Int)]?) -> RTCRtpSender? {
        guard case .sfu = role else { return connection.add(track, streamIds: [WebRTCEngine.streamId]) }
        let initial = RTCRtpTransceiverInit()
        initial.direction = .sendOnly
        initial.streamIds = [WebRTCEngine.streamId]
        if let layers {
            initial.sendEncodings = layers.map { layer in
                let encoding = RTCRtpEncodingParameters()
                encoding.rid = layer.rid
                encoding.isActive = true
                encoding.scaleResolutionDownBy = NSNumber(value: Double(layer.scaleDown))
                return encoding
            }
        }
        return connection.addTransceiver(with: track, init: initial)?.sender
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

    /// The camera sender's bitrate and frame rate for `quality`: each layer's bitrate in
    /// proportion to its pixels (one unscaled layer in a mesh: the quality's bitrate).
    func applyQuality(_ quality: VideoQuality) {
        guard let sender = camera else { return }
        let parameters = sender.parameters
        for encoding in parameters.encodings {
            let scaleDown = Int(exactly: (encoding.scaleResolutionDownBy?.doubleValue ?? 1).rounded()) ?? 1
            encoding.maxBitrateBps = NSNumber(value: SFUCameraLayers.bitrateKbps(quality, scaleDown: scaleDown) * 1000)
            encoding.maxFramerate = NSNumber(value: quality.frameRate)
        }
        sender.parameters = parameters
    }

    /// Remote audio at the playback volume, or silenced; tracks received later play the same.
    func applyOutput(_ output: AudioOutput) {
        self.output.withLockedValue { $0 = output }
        for receiver in connection.receivers {
            Self.play(receiver, output)
        }
    }

    private static func play(_ receiver: RTCRtpReceiver, _ output: AudioOutput) {
        guard let track = receiver.track as? RTCAudioTrack else { return }
        track.isEnabled = !output.remoteAudioMuted
        // RTCAudioSource.volume is a gain from 0 to 10; 100 % is 1.
        track.source.volume = Double(min(100, max(0, output.volume))) / 100
    }

    /// `subscribe`: whose each section is; what the next offer's sections carry.
    var sections: SFUSections {
        get { sectionsBox.withLockedValue { $0 } }
        set { sectionsBox.withLockedValue { $0 = newValue } }
    }

    // MARK: - negotiation

    func setLocalDescription(iceRestart: Bool, _ done: @escaping @Sendable (Result<SessionDescription, any Error>) -> Void) {
        if iceRestart {
            failed.withLockedValue { $0 = false }
            connection.restartIce()
        }
        connection.setLocalDescriptionWithCompletionHandler { [self] error in
            if let error { return done(.failure(error)) }
            guard let local = connection.localDescription, let kind = Self.kind(local.type) else {
                return done(.failure(WebRTCEngineError(description: "no local offer or answer after setLocalDescription")))
            }
            // An answer settles which sections receive.
            reportRemoteVideo()
            done(.success(SessionDescription(kind: kind, sdp: local.sdp)))
        }
    }

    func setRemoteDescription(_ description: SessionDescription, _ done: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        let type: RTCSdpType = description.kind == .offer ? .offer : .answer
        connection.setRemoteDescription(RTCSessionDescription(type: type, sdp: description.sdp)) { [self] error in
            // The sections may have changed hands (`subscribe`) or directions without a receiver
            // coming or going.
            if error == nil { reportRemoteVideo() }
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
    /// Nothing it received is reported after it returns.
    func close() {
        closed.withLockedValue { $0 = true }
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

    /// The received video tracks by member and what they show: a member's own connection tells
    /// the screen by its stream (``ReceivedVideoRole/of(streamId:audioStreamId:)``), the SFU's
    /// subscribe connection by its section (``sections``).
    func remoteVideo() -> [UserID: [ReceivedVideoRole: RTCVideoTrack]] {
        let receiving = connection.transceivers.filter(Self.receives)
        switch role {
        case .peer(let peer):
            let receivers = receiving.map(\.receiver)
            let streams = receiverStreams.withLockedValue { $0 }
            let audioStream = receivers.first { $0.track?.kind == kRTCMediaStreamTrackKindAudio }.flatMap { streams[$0.receiverId] }
            var result: [ReceivedVideoRole: RTCVideoTrack] = [:]
            for receiver in receivers {
                guard let track = receiver.track as? RTCVideoTrack else { continue }
                let role = ReceivedVideoRole.of(streamId: streams[receiver.receiverId], audioStreamId: audioStream)
                if result[role] == nil { result[role] = track }
            }
            return result.isEmpty ? [:] : [peer: result]
        case .sfu(.subscribe):
            // `mid` is nil (bridged as "") until the section is negotiated.
            let videos = receiving.compactMap { transceiver in
                (transceiver.receiver.track as? RTCVideoTrack).map { (mid: transceiver.mid.isEmpty ? nil : transceiver.mid, track: $0) }
            }
            return sections.videos(videos)
        case .sfu(.publish):
            return [:]
        }
    }

    /// A section receives once negotiated to (`sendrecv`, `recvonly`), until it stops.
    private static func receives(_ transceiver: RTCRtpTransceiver) -> Bool {
        var direction = RTCRtpTransceiverDirection.inactive
        guard !transceiver.isStopped, transceiver.currentDirection(&direction) else { return false }
        return direction == .sendRecv || direction == .recvOnly
    }

    /// Track ids of the shared screens received (queue).
    func remoteScreenTrackIds() -> Set<String> {
        Set(remoteVideo().values.compactMap { $0[.screen]?.trackId })
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
        // WebRTC is not called under a lock: a change of output that crosses this one is
        // applied again until the track plays the latest (``applyOutput(_:)`` sets it first).
        var played = output.withLockedValue { $0 }
        while true {
            Self.play(rtpReceiver, played)
            let latest = output.withLockedValue { $0 }
            if latest == played { break }
            played = latest
        }
        reportRemoteVideo()
    }

    func peerConnection(_ peerConnection: RTCPeerConnection, didRemove rtpReceiver: RTCRtpReceiver) {
        reportRemoteVideo()
    }

    /// Reports what is received now, unless closed: ``close()`` waits for a report under way, so
    /// the engine's clearing after it comes last.
    private func reportRemoteVideo() {
        let videos = remoteVideo()
        closed.withLockedValue { closed in
            if !closed { onRemoteVideo(videos) }
        }
    }
}

#endif
