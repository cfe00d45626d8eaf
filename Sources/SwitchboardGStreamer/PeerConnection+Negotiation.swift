#if GStreamer
import CGStreamer
import Foundation
import Logging
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol

/// Negotiation: offers and answers as webrtcbin makes and takes them, and the peer's candidates.
extension PeerConnection {
    var signalingState: PeerSignalingState {
        switch GstWebRTCSignalingState(rawValue: UInt32(webrtc.enumValue("signaling-state"))) {
        case GST_WEBRTC_SIGNALING_STATE_STABLE: .stable
        case GST_WEBRTC_SIGNALING_STATE_HAVE_LOCAL_OFFER: .haveLocalOffer
        case GST_WEBRTC_SIGNALING_STATE_HAVE_REMOTE_OFFER: .haveRemoteOffer
        default: .closed
        }
    }

    /// The local offer in effect (have-local-offer), as sent.
    var pendingOffer: String? { state.withLockedValue { $0.localText } }

    /// Marks this fresh connection as the one that answers the peer's offer in place of a
    /// connection whose own offer crossed it (webrtcbin cannot roll an offer back). Its answer
    /// then reports ICE failed, which makes the SDK restart ICE from the offerer's side: the
    /// peer keeps its connection, whose DTLS session, once set up, never starts again, so
    /// without a restart of both ends no media would flow between this connection and it.
    func answerInPlaceOfRolledBackOffer() {
        state.withLockedValue { $0.standsInForRollback = true }
    }

    /// The peer's ICE username fragment of the current remote description.
    var remoteUfrag: String? { state.withLockedValue { $0.remoteSDP?.ufrag } }

    /// Creates an offer (or the answer to the remote offer), applies it and returns its text
    /// with `a=msid` lines added for browsers.
    func createAndSetLocal(_ type: GstWebRTCSDPType) async throws -> String {
        let field = type == GST_WEBRTC_SDP_TYPE_OFFER ? "offer" : "answer"
        if type == GST_WEBRTC_SDP_TYPE_OFFER { try connectSenders() }
        var text = try await awaitPromise(
            extract: { reply in
                if let error = replyError(reply) { throw error }
                guard let description = sb_reply_description(reply, field) else {
                    throw GStreamerError("webrtcbin made no \(field)")
                }
                defer { gst_webrtc_session_description_free(description) }
                return GStreamer.text(of: description)
            },
            start: { promise in
                if type == GST_WEBRTC_SDP_TYPE_OFFER {
                    sb_webrtc_create_offer(webrtc.pointer, promise)
                } else {
                    sb_webrtc_create_answer(webrtc.pointer, promise)
                }
            })
        // Answering an offer that leaves the DTLS role open, be the server: the offerer then
        // starts the handshake, which it can only once it has the answer, when this side is
        // ready for it. (An answering DTLS client may send its first message to an offerer that
        // still drops it, and wait a second or more to resend.) Later offers name the roles taken.
        if type == GST_WEBRTC_SDP_TYPE_ANSWER, state.withLockedValue({ $0.remoteSDP?.offersEitherDTLSRole }) == true {
            text = text.replacingOccurrences(of: "a=setup:active", with: "a=setup:passive")
        }
        // An offer after the first names the role negotiated then: browsers refuse anything else,
        // and webrtcbin copies a role from an earlier description (its own unchanged answer).
        if type == GST_WEBRTC_SDP_TYPE_OFFER, let role = state.withLockedValue({ $0.dtlsRole }) {
            for other in ["actpass", "active", "passive"] where other != role {
                text = text.replacingOccurrences(of: "a=setup:\(other)", with: "a=setup:\(role)")
            }
        }
        // Known before gathering starts, so that candidates carry their mid and ufrag.
        state.withLockedValue { $0.localSDP = SessionDescriptionText(text) }
        try await apply(type, text, local: true)
        if type == GST_WEBRTC_SDP_TYPE_ANSWER {
            let role = SessionDescriptionText(text).media.first?.setup
            let restart = state.withLockedValue { state in
                state.dtlsRole = role
                defer { state.standsInForRollback = false }
                return state.standsInForRollback
            }
            try connectSenders()
            if restart {
                logger.info("answered in place of a rolled-back offer: asking for an ICE restart", metadata: ["peer": "\(peer)"])
                events.iceFailed()
            }
        }
        // The camera and microphone share a stream, a screen has its own: how receivers tell
        // them apart.
        let streams = state.withLockedValue { state in
            state.senders.reduce(into: [UInt32: (stream: String, track: String)]()) { streams, sender in
                streams[sender.value.ssrc] = (
                    sender.key == .screen ? "switchboard-screen" : "switchboard", sender.key.rawValue
                )
            }
        }
        var sent = SessionDescriptionText.addingMsid(streams, to: text)
        if type == GST_WEBRTC_SDP_TYPE_ANSWER { sent = answeringInactive(sent) }
        logger.trace("local description", metadata: ["peer": "\(peer)", "sdp": "\(sent)"])
        state.withLockedValue { $0.localText = type == GST_WEBRTC_SDP_TYPE_OFFER ? sent : nil }
        return sent
    }

    /// Applies the peer's description. Before an offer, the transceivers are made to fit it: our
    /// tracks take the payload types it uses, and each section nothing of ours sends on gets a
    /// receive-only transceiver limited to Opus or VP8.
    func setRemote(_ type: GstWebRTCSDPType, _ text: String) async throws {
        // webrtcbin also takes the candidates written in a description: keep those on loopback only.
        let text = ice.loopbackOnly ? SessionDescriptionText.keepingLoopbackCandidates(text) : text
        let sdp = SessionDescriptionText(text)
        logger.trace("remote description", metadata: ["peer": "\(peer)", "sdp": "\(text)"])
        if type == GST_WEBRTC_SDP_TYPE_OFFER { prepare(for: sdp) }
        state.withLockedValue { $0.remoteSDP = sdp }
        try await apply(type, type == GST_WEBRTC_SDP_TYPE_OFFER ? keepingReceiving(text, sdp) : text, local: false)
        endTracksThePeerStopped(sdp)
        if type == GST_WEBRTC_SDP_TYPE_ANSWER {
            // The answerer took one role; this side has the other.
            let role = sdp.media.first?.setup.map { $0 == "active" ? "passive" : "active" }
            state.withLockedValue { state in
                state.localText = nil
                state.dtlsRole = role ?? state.dtlsRole
            }
        }
    }

    /// The SFU's offer as webrtcbin gets it on the subscribe connection: its inactive sections
    /// (a member who left, a screen stopped) are read as sending. webrtcbin 1.22 refuses any
    /// change of a negotiated transceiver's direction but to inactive ("transceiver direction
    /// changes are not implemented"), and Janus gives an inactive section to the next track of
    /// its kind (a member who comes back, a screen shared again): so its transceivers stay
    /// `recvonly` for good. The track's end is the engine's own, from the offer as sent
    /// (``endTracksThePeerStopped(_:)``), and the answer says `inactive` where the offer did
    /// (``answeringInactive(_:)``).
    func keepingReceiving(_ text: String, _ sdp: SessionDescriptionText) -> String {
        guard role.receivesOnly else { return text }
        return SessionDescriptionText.settingDirection("sendonly", ofSections: Self.inactiveMids(sdp), in: text)
    }

    /// The answer as sent to the SFU: `inactive` for each section its offer made inactive
    /// (webrtcbin answered `recvonly`, see ``keepingReceiving(_:_:)``).
    func answeringInactive(_ answer: String) -> String {
        guard role.receivesOnly, let offer = state.withLockedValue({ $0.remoteSDP }) else { return answer }
        return SessionDescriptionText.settingDirection("inactive", ofSections: Self.inactiveMids(offer), in: answer)
    }

    static func inactiveMids(_ sdp: SessionDescriptionText) -> Set<String> {
        Set(sdp.media.filter { !$0.rejected && $0.direction == "inactive" }.compactMap(\.mid))
    }

    func apply(_ type: GstWebRTCSDPType, _ text: String, local: Bool) async throws {
        let description = try GStreamer.description(type, sdp: text)
        defer { gst_webrtc_session_description_free(description) }
        try await awaitPromise(
            extract: { reply in if let error = replyError(reply) { throw error } },
            start: { sb_webrtc_set_description(webrtc.pointer, local ? 1 : 0, description, $0) })
        // Receiver reports every second instead of RTP's five (AVPF allows it; browsers report
        // as often): the send rate follows the round trip they carry (``SendRateController``).
        // The sessions exist once a description made them.
        _ = sb_webrtc_set_rtcp_interval(webrtc.pointer, 8, Self.rtcpInterval)
    }

    /// The shortest interval between RTCP reports, ns.
    static let rtcpInterval: guint64 = 1_000_000_000

    func prepare(for offer: SessionDescriptionText) {
        let senders = state.withLockedValue { $0.senders }
        var claimed = Set(senders.values.compactMap { $0.transceiver.string("mid") })
        var unassigned = senders.filter { $0.value.transceiver.string("mid") == nil && $0.value.branch == nil }
        // Existing transceivers of ours that were made for receiving keep their sections too.
        claimed.formUnion(state.withLockedValue { $0.receivingMids.union($0.tracks.compactMap(\.track.mid)) })
        for section in offer.media where !section.rejected {
            guard let mid = section.mid, !claimed.contains(mid), section.kind == "audio" || section.kind == "video" else {
                continue
            }
            let encoding = section.kind == "audio" ? "OPUS" : "VP8"
            guard let payloadType = section.payloadTypes[encoding] else { continue }
            let wanted: [TrackKind] = section.kind == "audio" ? [.audio] : [.video, .screen]
            let canSend = section.direction == "sendrecv" || section.direction == "recvonly"
            if canSend, let kind = wanted.first(where: { unassigned[$0] != nil }), var sender = unassigned[kind] {
                // Our track answers this section, with its payload type (its pad carries
                // nothing yet: it is connected after the answer).
                unassigned[kind] = nil
                sender.payloadType = payloadType
                sender.transceiver.set("codec-preferences", caps: Self.caps(kind, payloadType: payloadType, ssrc: sender.ssrc))
                state.withLockedValue { $0.senders[kind] = sender }
            } else {
                let kind: TrackKind = section.kind == "audio" ? .audio : .video
                let caps = gst_caps_from_string(Self.caps(kind, payloadType: payloadType))
                if let transceiver = sb_webrtc_add_transceiver(
                    webrtc.pointer, GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_RECVONLY, caps)
                {
                    gst_object_unref(UnsafeMutableRawPointer(transceiver))
                }
                if let caps { gst_caps_unref(caps) }
                state.withLockedValue { _ = $0.receivingMids.insert(mid) }
            }
            claimed.insert(mid)
        }
    }

    func addRemoteCandidate(_ candidate: IceCandidate) {
        guard !candidate.candidate.isEmpty else { return }
        if ice.loopbackOnly, CandidateLine(candidate.candidate)?.isLoopback != true { return }
        let mline =
            candidate.sdpMLineIndex
            ?? candidate.sdpMid.flatMap { mid in
                state.withLockedValue { $0.remoteSDP?.media.firstIndex { $0.mid == mid } }
            } ?? 0
        sb_webrtc_add_ice_candidate(webrtc.pointer, guint(max(0, mline)), candidate.candidate)
    }
}
#endif
