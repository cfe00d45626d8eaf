#if GStreamer
import CGStreamer
import Foundation
import Logging
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol

extension GStreamerMediaEngine {
    /// The engine's state; reached only through the job queue, one job at a time.
    actor Core {
        let configuration: Configuration
        let logger: Logger
        private(set) var settings = Settings()
        private var callId: CallID?
        private(set) var media: CallMedia?
        private let emit: @Sendable (MediaEvent) -> Void
        /// The send rate towards each member sent video, following the round trip to it.
        private var rates: [UserID: SendRateController] = [:]
        /// The rate each video track's encoder was last given by ``adaptSendRates()``.
        private var sentKbps: [TrackKind: Int] = [:]
        /// Whether video may go to each member sent it (``VideoGate``).
        private var gates: [UserID: VideoGate] = [:]
        /// The call's audio goes out thinned (``AudioThinning``).
        private var audioThin = false
        /// Ticks of ``adaptSendRates()`` in this call: the gates' seconds.
        private var second = 0

        init(configuration: Configuration, logger: Logger, emit: @escaping @Sendable (MediaEvent) -> Void) {
            self.configuration = configuration
            self.logger = logger
            self.emit = emit
        }

        func start(callId: CallID) async {
            if let media { await media.close() }
            self.callId = callId
            resetAdaptation()
            do {
                let media = try CallMedia(configuration: configuration, logger: logger, emit: emit)
                self.media = media
                try await media.addTrack(.audio, description: CaptureChain.audio(configuration.audioSource))
                try await apply(to: media, previous: nil)
            } catch {
                logger.error("could not start the call's media", metadata: ["callId": "\(callId)", "error": "\(error)"])
            }
        }

        func stop(callId: CallID) async {
            guard self.callId == callId else { return }
            self.callId = nil
            resetAdaptation()
            await media?.close()
            media = nil
        }

        /// Takes the app's latest settings and applies what changed to the running call.
        func use(_ new: Settings) async {
            let previous = settings
            settings = new
            guard let media else { return }
            do {
                try await apply(to: media, previous: previous)
            } catch {
                logger.error("could not apply a media setting", metadata: ["error": "\(error)"])
            }
            // A new quality or a new chain starts the encoder at the full bitrate: set it again.
            for key in rates.keys { rates[key]?.setMaximum(new.quality.bitrateKbps) }
            sentKbps = [:]
            await applySendRate()
        }

        /// Brings the pipeline in line with the settings (all of them when `previous` is nil).
        private func apply(to media: CallMedia, previous: Settings?) async throws {
            let settings = self.settings
            if let audio = await media.chain(.audio) {
                audio.child("volume")?.set("volume", Double(max(0, min(100, settings.microphoneVolume))) / 100)
                audio.child("volume")?.set("mute", !settings.microphoneOn)
                audio.child("gate")?.set("drop", !settings.audioRunning)
            }
            await media.setOutput(
                volume: settings.output.volume, muted: settings.output.remoteAudioMuted || !settings.audioRunning)

            // The camera track exists in video calls; the camera switch only gates it.
            let camera = cameraDescription(settings)
            let video = await media.chain(.video)
            if settings.mediaType == .video {
                if video == nil {
                    try await media.addTrack(.video, description: camera)
                } else if let previous {
                    if previous.frontCamera != settings.frontCamera, configuration.backCameraSource != nil {
                        try video?.replace(with: camera, in: media.pipeline)
                    } else if previous.quality != settings.quality {
                        setQuality(settings.quality, on: video)
                    }
                }
                let wasOn = previous.map { $0.cameraOn && $0.mediaType == .video } ?? false
                let chain = await media.chain(.video)
                chain?.child("gate")?.set("drop", !settings.cameraOn)
                if settings.cameraOn && !wasOn { chain?.requestKeyFrame() }
            } else if video != nil {
                await media.removeTrack(.video)
            }

            if settings.screen != previous?.screen || previous == nil {
                if await media.chain(.screen) != nil { await media.removeTrack(.screen) }
                if let screen = settings.screen {
                    let quality = configuration.screenQuality
                    try await media.addTrack(
                        .screen,
                        description: CaptureChain.video(
                            VideoSource(screen), width: quality.width, height: quality.height,
                            frameRate: quality.frameRate,
                            bitrateKbps: SendRateController.startKbps(maximum: quality.bitrateKbps)))
                }
            }
        }

        private func cameraDescription(_ settings: Settings) -> String {
            let source = settings.frontCamera ? configuration.videoSource : configuration.backCameraSource ?? configuration.videoSource
            let quality = settings.quality
            return CaptureChain.video(
                source, width: quality.width, height: quality.height, frameRate: quality.frameRate,
                bitrateKbps: SendRateController.startKbps(maximum: quality.bitrateKbps))
        }

        /// A new size and rate through the caps filter (the encoder follows) and a new bitrate: the
        /// start rate, until ``applySendRate()`` gives what the links allow.
        private func setQuality(_ quality: VideoQuality, on chain: CaptureChain?) {
            chain?.child("caps")?.set(
                "caps",
                caps: CaptureChain.rawVideoCaps(width: quality.width, height: quality.height, frameRate: quality.frameRate))
            chain?.child("encoder")?.set("target-bitrate", Int32(SendRateController.startKbps(maximum: quality.bitrateKbps) * 1000))
        }

        private func resetAdaptation() {
            rates = [:]
            sentKbps = [:]
            gates = [:]
            audioThin = false
            second = 0
        }

        /// One second passed: the rate towards each member follows the round trip its latest
        /// receiver report gave (``SendRateController``), video to a member whose link cannot
        /// carry it even at the lowest rate pauses and is tried again (``VideoGate``), and the
        /// audio thins while a link is that narrow (``AudioThinning``).
        func adaptSendRates() async {
            guard let media else { return }
            second += 1
            let trips = await media.videoRoundTrips()
            rates = rates.filter { trips[$0.key] != nil }
            for (peer, gate) in gates where trips[peer] == nil {
                // Nothing more to gate (video removed, the member gone): what comes later starts sent.
                if !gate.isOpen { await media.sendVideo(to: peer, true) }
                gates[peer] = nil
            }
            // A member's rate and gate outlive a connection that replaced theirs (an ICE restart,
            // a reconnect): the link is the same, and a new controller's first report, taken on a
            // link that is still full, would hide the queue from every later one.
            for (peer, trip) in trips {
                var controller = rates[peer] ?? SendRateController(maximumKbps: settings.quality.bitrateKbps)
                controller.setMaximum(settings.quality.bitrateKbps)
                let starved = trip.flatMap { controller.observe(roundTrip: $0) ?? controller.observeSilence() }
                var gate = gates[peer] ?? VideoGate()
                // The report first: one made while paused is the audio's alone, and the tick may
                // begin a trial.
                let reported = starved.flatMap { gate.report(starved: $0, now: second) }
                let ticked = gate.tick(now: second)
                for change in [reported, ticked].compactMap({ $0 }) {
                    logger.info("video gate", metadata: ["peer": "\(peer)", "change": "\(change)"])
                    switch change {
                    case .pause: emit(.videoSending(peer, .paused))
                    case .trial:
                        controller.restartAtFloor()
                        await media.sendVideo(to: peer, true)
                        emit(.videoSending(peer, .trial))
                    case .open: emit(.videoSending(peer, .on))
                    }
                }
                rates[peer] = controller
                gates[peer] = gate
                // Every second while paused, so that a connection that replaced the member's (an
                // ICE restart) is paused too; a no-op when nothing changed.
                if gate.paused { await media.sendVideo(to: peer, false) }
            }
            await applySendRate()
            await applyAudioThinning()
        }

        /// The audio encoder thinned or full again, as ``AudioThinning`` says.
        private func applyAudioThinning() async {
            let thin = AudioThinning.thin(
                was: audioThin, anyGateShut: gates.values.contains { !$0.isOpen }, lowestKbps: lowestSendKbps)
            guard thin != audioThin, let audio = await media?.chain(.audio), audio.encodeAudio(thin: thin) else { return }
            audioThin = thin
            emit(.sendRate(.audio, kbps: AudioThinning.encoding(thin: thin).kbps))
        }

        /// The lowest rate a member whose video is not paused allows (nil: none gets video).
        private var lowestSendKbps: Int? {
            rates.filter { gates[$0.key]?.paused != true }.values.map(\.kbps).min()
        }

        /// Gives each video encoder the lowest rate the connected members allow (its own ceiling
        /// at most; members whose video is paused allow any), and says so when it changes.
        private func applySendRate() async {
            guard let media else { return }
            let kbps = lowestSendKbps
            // Video paused to every member: nothing goes out, the encoders keep their rate.
            if kbps == nil, !rates.isEmpty { return }
            for kind in [TrackKind.video, .screen] {
                guard let chain = await media.chain(kind) else {
                    sentKbps[kind] = nil
                    continue
                }
                let maximum = kind == .video ? settings.quality.bitrateKbps : configuration.screenQuality.bitrateKbps
                let rate = min(maximum, kbps ?? SendRateController.startKbps(maximum: maximum))
                guard sentKbps[kind] != rate, kbps != nil || sentKbps[kind] != nil else { continue }
                logger.debug("video send rate", metadata: ["kind": "\(kind)", "kbps": "\(rate)"])
                emit(.sendRate(kind, kbps: rate))
                sentKbps[kind] = rate
                chain.child("encoder")?.set("target-bitrate", Int32(rate * 1000))
            }
        }

        func statistics() async -> MediaStatistics {
            guard let media else { return MediaStatistics() }
            var statistics = await media.statistics()
            if !settings.microphoneOn || !settings.audioRunning { statistics.localAudioLevel = 0 }
            return statistics
        }

        func failTransport(of peer: UserID) async throws {
            guard let media else { throw GStreamerError("no call") }
            try await media.failTransport(of: peer)
        }

        func sendVideo(to peer: UserID, _ on: Bool) async throws {
            guard let media else { throw GStreamerError("no call") }
            await media.sendVideo(to: peer, on)
        }

        func thinAudio(_ thin: Bool) async throws {
            guard let audio = await media?.chain(.audio), audio.encodeAudio(thin: thin) else {
                throw GStreamerError("no audio encoder")
            }
        }

        func firstAudioFrame(from peer: UserID) async -> ContinuousClock.Instant? {
            try? await media?.connection(peer).firstAudioFrame
        }

        func openPeer(_ peer: UserID, iceServers: [IceServer], events: PeerConnectionEvents) async {
            guard let media else {
                logger.warning("a peer connection outside a call", metadata: ["peer": "\(peer)"])
                return
            }
            let ice = IcePolicy(servers: iceServers, relayOnly: configuration.relayOnly, loopbackOnly: configuration.loopbackOnly)
            do {
                try await media.openPeer(peer, ice: ice, events: events)
            } catch {
                logger.error("could not open a peer connection", metadata: ["peer": "\(peer)", "error": "\(error)"])
            }
        }

        func closePeer(_ peer: UserID) async {
            await media?.closePeer(peer)
            // The member who left no longer holds the rate down.
            if rates.removeValue(forKey: peer) != nil { await applySendRate() }
        }

        func setLocalDescription(peer: UserID, iceRestart: Bool) async throws -> SessionDescription {
            guard let media else { throw GStreamerError("no call") }
            var connection = try await media.connection(peer)
            if iceRestart, connection.signalingState != .haveRemoteOffer {
                connection = try await media.replaceConnection(peer)
            }
            switch connection.signalingState {
            case .haveRemoteOffer:
                return SessionDescription(kind: .answer, sdp: try await connection.createAndSetLocal(GST_WEBRTC_SDP_TYPE_ANSWER))
            case .stable:
                return SessionDescription(kind: .offer, sdp: try await connection.createAndSetLocal(GST_WEBRTC_SDP_TYPE_OFFER))
            case .haveLocalOffer:
                return SessionDescription(kind: .offer, sdp: connection.pendingOffer ?? "")
            case .closed:
                throw GStreamerError("the connection to \(peer) is closed")
            }
        }

        func setRemoteDescription(_ description: SessionDescription, peer: UserID) async throws {
            guard let media else { throw GStreamerError("no call") }
            var connection = try await media.connection(peer)
            guard description.kind == .offer else {
                try await connection.setRemote(GST_WEBRTC_SDP_TYPE_ANSWER, description.sdp)
                return
            }
            // Offers crossed and this side is polite: WebRTC rolls its own offer back, which
            // webrtcbin cannot (no version accepts a rollback description); a fresh connection
            // answers instead and then asks for an ICE restart, which renews both ends.
            if connection.signalingState == .haveLocalOffer {
                logger.info("offers crossed: a new connection answers", metadata: ["peer": "\(peer)"])
                connection = try await media.replaceConnection(peer)
                connection.answerInPlaceOfRolledBackOffer()
            }
            // New ICE credentials in the offer: the peer restarts ICE, which webrtcbin cannot
            // follow on its connection; a fresh one answers.
            let offered = SessionDescriptionText(description.sdp).ufrag
            if let current = connection.remoteUfrag, let offered, current != offered {
                connection = try await media.replaceConnection(peer)
            }
            try await connection.setRemote(GST_WEBRTC_SDP_TYPE_OFFER, description.sdp)
        }

        func addRemoteCandidate(_ candidate: IceCandidate, peer: UserID) async throws {
            guard let media else { throw GStreamerError("no call") }
            try await media.connection(peer).addRemoteCandidate(candidate)
        }

        func signalingState(peer: UserID) async -> PeerSignalingState {
            (try? await media?.connection(peer).signalingState) ?? .closed
        }
    }
}
#endif
