#if GStreamer
import CGStreamer
import Foundation
import Logging
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol

/// The tracks the peer sends: a receiving chain for each (decoded, measured, recorded), replaced when the sender stops it.
extension PeerConnection {
    /// A track arrives: decode it, measure it, record it. Runs on webrtcbin's thread, and links
    /// before returning so no data meets an unlinked pad.
    func padAdded(_ raw: UnsafeMutablePointer<GstPad>) {
        guard gst_pad_get_direction(raw) == GST_PAD_SRC else { return }
        let pad = Pad(adopting: UnsafeMutablePointer(OpaquePointer(gst_object_ref(UnsafeMutableRawPointer(raw)))))
        let transceiver = sb_get_object(pad.raw, "transceiver").map(OpaqueObject.init(adopting:))
        let mid = transceiver?.string("mid")
        let (remote, count, output) = state.withLockedValue { ($0.remoteSDP, $0.takeTrackNumber(), $0.output) }
        // The transceiver knows audio from video (its codec preferences say); the peer's
        // description tells a screen from the camera. (webrtcbin may add the pads of an offer's
        // own transceivers before the answer came: then it is the camera, as a screen always
        // comes in a section of its own.)
        let transceiverKind = transceiver.map { GstWebRTCKind(rawValue: UInt32($0.enumValue("kind"))) }
        let section = mid.flatMap { remote?.media(mid: $0) }
        var kind: TrackKind =
            transceiverKind == GST_WEBRTC_KIND_AUDIO || (transceiverKind != GST_WEBRTC_KIND_VIDEO && section?.kind == "audio")
            ? .audio : .video
        if kind == .video, let mid, remote?.isScreen(mid: mid) == true { kind = .screen }
        do {
            guard let (owner, named) = role.name(mid: mid, detected: kind) else {
                logger.warning("a track nobody was named for: dropped", metadata: ["peer": "\(peer)", "mid": "\(mid ?? "?")"])
                try discard(pad, number: count)
                return
            }
            let track = try receiver(named, from: owner, pad: pad, mid: mid, number: count, output: output)
            try pad.link(to: try input(of: track))
            state.withLockedValue { $0.tracks.append((Int(bitPattern: raw), track)) }
            logger.debug(
                "receiving", metadata: ["peer": "\(peer)", "from": "\(owner)", "kind": "\(named)", "mid": "\(mid ?? "?")"])
        } catch {
            logger.error("could not receive a track", metadata: ["peer": "\(peer)", "error": "\(error)"])
        }
    }

    /// A receiving chain for `pad` carrying `owner`'s track, in the pipeline and started, not yet linked.
    func receiver(
        _ kind: TrackKind, from owner: UserID, pad: Pad, mid: String?, number: Int, output: (volume: Int, muted: Bool)
    ) throws -> ReceivedTrack {
        let recording = recordDirectory.map { RecordingFile(directory: $0, peer: owner, kind: kind) }
        let track = try ReceivedTrack(
            peer: owner, kind: kind, source: pad, mid: mid, name: "\(name)-in\(number)", recording: recording,
            playback: playback, router: router, emit: emit)
        track.setOutput(volume: output.volume, muted: output.muted)
        try pipeline.add(track.bin)
        track.bin.syncStateWithParent()
        track.whenEnded { [weak self, weak track] in
            guard let self, let track else { return }
            Task { await self.replaceEnded(track) }
        }
        return track
    }

    /// A pad whose track nobody owns still needs a sink (data on an unlinked pad stops webrtcbin's
    /// whole stream): it drains into a fakesink, counted by nothing. Its pad's removal or the
    /// connection's end stops it with the pipeline.
    func discard(_ pad: Pad, number: Int) throws {
        let bin = try Element.bin("queue leaky=downstream ! fakesink name=\(name)-drop\(number) sync=false async=false")
        try pipeline.add(bin)
        bin.syncStateWithParent()
        guard let input = bin.staticPad("sink") else { throw GStreamerError("a drain without input") }
        try pad.link(to: input)
    }

    func input(of track: ReceivedTrack) throws -> Pad {
        guard let input = track.bin.staticPad("sink") else { throw GStreamerError("a receiving chain without input") }
        return input
    }

    /// Received tracks that the peer's new description no longer sends (its section `recvonly`,
    /// `inactive` or rejected: a shared screen it stopped, a member who left the SFU) end now, and
    /// so do tracks whose section the role now names for someone else (the SFU gave a member's
    /// old section to another). webrtcbin also ends their stream when their transceiver goes
    /// inactive, but not always: a browser's stopped screen was seen to go on as a track that
    /// decoded nothing. A track that never decoded a frame is left as it is (nothing of it was
    /// shown, and its chain is already a fresh one).
    func endTracksThePeerStopped(_ sdp: SessionDescriptionText) {
        let role = self.role
        let stopped = state.withLockedValue { state in
            state.tracks.compactMap { entry -> ReceivedTrack? in
                guard let mid = entry.track.mid, let section = sdp.media(mid: mid) else { return nil }
                let named = role.name(mid: mid, detected: entry.track.kind)
                let stopped =
                    section.rejected || section.direction == "recvonly" || section.direction == "inactive" || named == nil
                // A chain named for someone else is replaced even if it decoded nothing yet: what
                // it decodes next is the new member's.
                let renamed = named.map { $0.owner != entry.track.peer || $0.kind != entry.track.kind } ?? false
                return (stopped && entry.track.snapshot.firstFrame != nil) || renamed ? entry.track : nil
            }
        }
        for track in stopped { Task { await self.replaceEnded(track) } }
    }

    /// The sender stopped a track (webrtcbin ended its stream, or its description says so): it
    /// ends here (its recording is complete), and a fresh chain takes the pad, so that the track
    /// may come back on the same transceiver and no data ever meets an unlinked pad.
    func replaceEnded(_ ended: ReceivedTrack) async {
        let current = state.withLockedValue { state -> (Int, (volume: Int, muted: Bool))? in
            guard !state.closed, state.tracks.contains(where: { $0.track === ended }),
                state.ending.insert(ObjectIdentifier(ended)).inserted
            else { return nil }
            return (state.takeTrackNumber(), state.output)
        }
        guard let (count, output) = current else { return }
        // Whether this call ends `ended`: not when its pad's removal or the close took it out
        // meanwhile (they end it themselves).
        var ours = true
        do {
            // The fresh chain is named as the role names the section now; a section named for
            // nobody any more keeps the old name until it carries something again.
            let (owner, kind) = role.name(mid: ended.mid, detected: ended.kind) ?? (ended.peer, ended.kind)
            let next = try receiver(kind, from: owner, pad: ended.source, mid: ended.mid, number: count, output: output)
            let (oldInput, newInput) = (try input(of: ended), try input(of: next))
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                ended.source.whenIdle {
                    ended.source.unlink(from: oldInput)
                    try? ended.source.link(to: newInput)
                    continuation.resume()
                }
            }
            ours = state.withLockedValue { state in
                guard !state.closed, let index = state.tracks.firstIndex(where: { $0.track === ended }) else { return false }
                state.tracks[index].track = next
                return true
            }
            // Nobody else knows the fresh chain of a pad that went away or a connection that closed.
            if !ours {
                await next.finish()
                pipeline.remove(next.bin)
            }
        } catch {
            logger.error("could not renew a receiving chain", metadata: ["peer": "\(peer)", "error": "\(error)"])
        }
        state.withLockedValue { _ = $0.ending.remove(ObjectIdentifier(ended)) }
        guard ours else { return }
        let frames = ended.snapshot.framesDecoded
        state.withLockedValue { $0.endedFrames[ended.peer, default: [:]][ended.kind, default: 0] += frames }
        await ended.finish()
        pipeline.remove(ended.bin)
    }

    /// The peer stopped sending a track (a shared screen ended): its chain ends.
    func padRemoved(_ raw: UnsafeMutablePointer<GstPad>) {
        let key = Int(bitPattern: raw)
        let removed = state.withLockedValue { state -> ReceivedTrack? in
            guard let index = state.tracks.firstIndex(where: { $0.pad == key }) else { return nil }
            return state.tracks.remove(at: index).track
        }
        guard let removed else { return }
        let pipeline = self.pipeline
        Task {
            await removed.finish()
            pipeline.remove(removed.bin)
        }
    }
}
#endif
