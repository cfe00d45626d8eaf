#if GStreamer
import CGStreamer
import Foundation
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Converts a `level` element's RMS (dBFS) to the 0–100 scale of the status reports (linear
/// amplitude, as WebRTC's `audioLevel`: a full-scale sine reads 71).
func levelPercent(rmsDecibels: Double) -> Int {
    guard rmsDecibels.isFinite, rmsDecibels > -100 else { return 0 }
    return min(100, max(0, Int((pow(10, rmsDecibels / 20) * 100).rounded())))
}

/// Routes the `level` messages of the bus to whoever owns each `level` element, by name.
final class LevelRouter: Sendable {
    private let routes = NIOLockedValueBox<[String: @Sendable (Int) -> Void]>([:])

    func route(_ name: String, to body: @escaping @Sendable (Int) -> Void) {
        routes.withLockedValue { $0[name] = body }
    }

    func remove(_ name: String) {
        routes.withLockedValue { $0[name] = nil }
    }

    func deliver(source: String, rms: Double) {
        routes.withLockedValue { $0[source] }?(levelPercent(rmsDecibels: rms))
    }
}

/// One track received from a member: depayload, decode, measure (level, frames, size), play or
/// drop, and record when asked. Its counters are updated from GStreamer's threads.
final class ReceivedTrack: Sendable {
    struct Counters: Sendable {
        var framesDecoded = 0
        var level = 0
        /// The level after playback volume and muting: what the speaker plays.
        var outputLevel = 0
        var width = 0
        var height = 0
        var firstFrame: ContinuousClock.Instant?
    }

    let peer: UserID
    let kind: TrackKind
    let bin: Element
    let mid: String?
    private let emit: @Sendable (MediaEvent) -> Void
    let recording: RecordingFile?
    /// The webrtcbin pad the track comes from.
    let source: Pad
    private let counters = NIOLockedValueBox(Counters())
    private let decoderOutput: Pad?
    private let levelNames: [String]
    private let router: LevelRouter
    private let recordingEnded = NIOLockedValueBox<(ended: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// Builds the receiving chain for `pad` (not yet linked or added).
    init(
        peer: UserID, kind: TrackKind, source: Pad, mid: String?, name: String, recording: RecordingFile?, playback: String?,
        router: LevelRouter, emit: @escaping @Sendable (MediaEvent) -> Void
    ) throws {
        self.peer = peer
        self.emit = emit
        self.kind = kind
        self.source = source
        self.mid = mid
        self.recording = recording
        self.router = router
        let record = recording.map { AudioSource.quoted($0.location.path) }
        // The recorder's file sink writes each buffer as it comes (`unbuffered`), not in 64 KiB
        // blocks: a track's recording is on disk as far as it went however its end goes. With the
        // default buffering, a small video layer's whole recording (5 s at 100 kbit/s) sat in the
        // sink's block and was lost when the teardown's stall limit cut its end short (a 0-byte
        // `.webm` in a loaded fresh-clone run).
        let recordingSink = "filesink name=recording async=false buffer-mode=unbuffered"
        let description: String
        if kind == .audio {
            let sink = playback ?? "fakesink sync=false async=false"
            description =
                "queue ! rtpopusdepay ! opusdec name=decoder plc=true ! audioconvert ! audioresample ! "
                + "audio/x-raw,rate=48000 ! level name=\(name)-level interval=100000000 post-messages=true ! "
                + "tee name=split split. ! queue ! volume name=output ! "
                + "level name=\(name)-output interval=100000000 post-messages=true ! \(sink)"
                + (record.map { " split. ! queue name=recorder ! audioconvert ! wavenc ! \(recordingSink) location=\($0)" } ?? "")
            levelNames = ["\(name)-level", "\(name)-output"]
        } else {
            description =
                "queue ! rtpvp8depay ! tee name=split split. ! queue ! vp8dec name=decoder ! fakesink sync=false async=false"
                + (record.map { " split. ! queue name=recorder ! webmmux streamable=true ! \(recordingSink) location=\($0)" } ?? "")
            levelNames = []
        }
        bin = try Element.bin(description)
        let decoderOutput = bin.child("decoder")?.staticPad("src")
        self.decoderOutput = decoderOutput
        decoderOutput?.onBuffer { [counters, emit] in
            let first = counters.withLockedValue { counters in
                counters.framesDecoded += 1
                guard counters.firstFrame == nil else { return false }
                counters.firstFrame = .now
                return true
            }
            if first { emit(.trackStarted(peer, kind)) }
            guard kind.isVideo, let size = decoderOutput?.videoSize else { return }
            let changed = counters.withLockedValue { counters in
                defer { (counters.width, counters.height) = size }
                return (counters.width, counters.height) != size
            }
            if changed { emit(.frameSize(peer, kind, width: size.width, height: size.height)) }
        }
        if kind == .audio {
            router.route(levelNames[0]) { [counters, emit] level in
                let playout = counters.withLockedValue { counters in
                    counters.level = level
                    return counters.outputLevel
                }
                emit(.audioLevel(peer, level: level, playout: playout))
            }
            router.route(levelNames[1]) { [counters] level in counters.withLockedValue { $0.outputLevel = level } }
        }
        if let recording, let input = bin.child("recorder")?.staticPad("sink") {
            // Named at its first media (a chain that never carries anything leaves no file);
            // later buffers find it named.
            input.onBuffer { recording.claim() }
        }
        if recording != nil, let sinkPad = bin.child("recording")?.staticPad("sink") {
            sinkPad.onEndOfStream { [recordingEnded] in
                let waiters = recordingEnded.withLockedValue { state in
                    state.ended = true
                    defer { state.waiters = [] }
                    return state.waiters
                }
                waiters.forEach { $0.resume() }
            }
        }
    }

    /// The SSRC of the RTP stream (in the pad's caps once data flows), to find its statistics.
    var ssrc: UInt32? {
        var value: guint = 0
        return sb_pad_caps_uint(source.pointer, "ssrc", &value) != 0 ? value : nil
    }

    var snapshot: Counters { counters.withLockedValue { $0 } }

    /// Calls `body` (on a streaming thread) when the stream ends: webrtcbin sends the end of the
    /// stream down when the track's transceiver goes inactive (the sender stopped it).
    func whenEnded(_ body: @escaping @Sendable () -> Void) {
        decoderOutput?.onEndOfStream(body)
    }

    /// Sets playback volume (0–100; 0 or muted: silence).
    func setOutput(volume: Int, muted: Bool) {
        guard let output = bin.child("output") else { return }
        output.set("volume", Double(max(0, min(100, volume))) / 100)
        output.set("mute", muted)
    }

    /// Ends the track: the recording gets its end (a WAV header, WebM's last cluster) within
    /// `grace`, then the chain stops. The caller removes the bin.
    func finish(grace: Duration = .seconds(2)) async {
        for name in levelNames { router.remove(name) }
        if recording != nil, let input = bin.staticPad("sink") {
            _ = input.send(gst_event_new_eos())
            await withTaskGroup(of: Void.self) { group in
                group.addTask { [recordingEnded] in
                    await withCheckedContinuation { continuation in
                        let ended = recordingEnded.withLockedValue { state in
                            if !state.ended { state.waiters.append(continuation) }
                            return state.ended
                        }
                        if ended { continuation.resume() }
                    }
                }
                group.addTask { try? await Task.sleep(for: grace) }
                await group.next()
                group.cancelAll()
                // If the time ran out, the waiter (registered or about to be) must end too.
                let waiters = recordingEnded.withLockedValue { state in
                    state.ended = true
                    defer { state.waiters = [] }
                    return state.waiters
                }
                waiters.forEach { $0.resume() }
            }
        }
        bin.setState(GST_STATE_NULL)
        recording?.discard()
        // Told once the recording is complete.
        if snapshot.firstFrame != nil { emit(.trackEnded(peer, kind)) }
    }
}

extension Pad {
    /// Calls `body` once when the end of the stream reaches this pad.
    func onEndOfStream(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Callback(body)).toOpaque()
        gst_pad_add_probe(
            pointer, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM,
            { _, info, data in
                guard let info, sb_probe_is_eos(info) != 0 else { return GST_PAD_PROBE_OK }
                Unmanaged<Callback>.fromOpaque(data!).takeUnretainedValue().body()
                return GST_PAD_PROBE_REMOVE
            }, box, { data in Unmanaged<Callback>.fromOpaque(data!).release() })
    }
}
#endif
