#if GStreamer
import Foundation
import Switchboard
import SwitchboardGStreamer
import SwitchboardProtocol
import SwitchboardTools

/// What `switchboard call --json` prints last: the call and what each other member's media did.
struct CallSummary: Encodable {
    struct Track: Encodable {
        var packetsReceived: Int
        var bytesReceived: Int
        var packetsSent: Int
        var bytesSent: Int
        var packetsLost: Int
        var framesDecoded: Int
        var codec: String?
        /// Audio: the loudest tenth of a second received, 0–100.
        var level: Int?
        /// Audio: ms from answering (or the call connecting, for the caller) to the first decoded frame.
        var firstFrameMs: Int?
        /// Video: the last decoded frame's size.
        var frameWidth: Int?
        var frameHeight: Int?
    }

    struct Member: Encodable {
        var audio: Track
        var video: Track
        var screen: Track
        var roundTripTimeMs: Int?
        var candidateType: String?

        init(_ statistics: PeerStatistics, loudest: Int, firstAudioMs: Int?) {
            func track(_ value: TrackStatistics, video: Bool) -> Track {
                Track(
                    packetsReceived: value.packetsReceived, bytesReceived: value.bytesReceived,
                    packetsSent: value.packetsSent, bytesSent: value.bytesSent, packetsLost: value.packetsLost,
                    framesDecoded: value.framesDecoded, codec: value.codec, level: video ? nil : max(loudest, value.level),
                    firstFrameMs: video ? nil : firstAudioMs, frameWidth: video ? value.frameWidth : nil,
                    frameHeight: video ? value.frameHeight : nil)
            }
            audio = track(statistics.audio, video: false)
            video = track(statistics.video, video: true)
            screen = track(statistics.screen, video: true)
            roundTripTimeMs = statistics.roundTripTimeMs
            candidateType = statistics.localCandidateType
        }
    }

    var callId: String?
    var connected: Bool
    var endReason: String?
    var endedBy: String?
    /// The device the call moved to from here (it went on there).
    var movedTo: String?
    var durationSeconds: Int
    /// Per other member, by user id.
    var members: [String: Member]
}

/// What the run prints: lines for people, or JSON lines with `--json` (each with `ms`, the
/// milliseconds since the run started).
struct Output: Sendable {
    let json: Bool
    private let start = ContinuousClock.now

    func line(_ text: String, _ object: [String: String]) {
        write(json ? encode(object) : text)
    }

    func error(_ text: String) {
        if json { write(encode(["event": "error", "message": text])) }
        FileHandle.standardError.write(Data("switchboard call: \(text)\n".utf8))
    }

    func event(_ event: CallStoreEvent) {
        if json {
            write(encode(["event": "call", "summary": event.summary]))
        } else {
            write(event.summary)
        }
    }

    func media(_ event: MediaEvent) {
        let text: String
        switch event {
        case .trackStarted(let peer, let kind): text = "receiving \(peer)'s \(kind.rawValue)"
        case .trackEnded(let peer, let kind): text = "\(peer)'s \(kind.rawValue) ended"
        case .frameSize(let peer, let kind, let width, let height): text = "\(peer)'s \(kind.rawValue) is \(width)×\(height)"
        case .connectionState(let peer, let state): text = "connection to \(peer): \(state)"
        case .teardownStalled(let peer, let part):
            text = "closing \(peer.map { "the connection to \($0)" } ?? "the call's media") stalled: \(part) left behind"
        case .sendRate(let kind, let kbps): text = "sending \(kind.rawValue) at \(kbps) kbps"
        case .videoSending(let peer, .paused): text = "video to \(peer) paused: the network is too weak for video"
        case .videoSending(let peer, .trial): text = "trying video to \(peer) again"
        case .videoSending(let peer, .on): text = "sending video to \(peer) again"
        case .audioLevel: return
        }
        write(json ? encode(["event": "media", "summary": text]) : text)
    }

    /// The once-a-second line: timer, and per member quality, volume and what arrives.
    func status(_ state: CallStore.State, statistics: MediaStatistics) {
        let timer = CallDurationText.format(seconds: state.activeCall?.duration ?? 0)
        let others = state.allParticipants.filter { $0.userId != state.selfInfo.userId && $0.status == .accept }
        if json {
            var members: [String: [String: String]] = [:]
            for member in others {
                let peer = statistics.peers[member.userId]
                members[member.userId.rawValue] = [
                    "quality": member.networkQuality.rawValue, "volume": member.volumeLevel.rawValue,
                    "audioLevel": "\(peer?.audio.level ?? 0)", "audioFrames": "\(peer?.audio.framesDecoded ?? 0)",
                    "videoFrames": "\(peer?.video.framesDecoded ?? 0)", "screenFrames": "\(peer?.screen.framesDecoded ?? 0)",
                ]
            }
            let data = (try? JSONSerialization.data(
                withJSONObject: [
                    "event": "status", "time": timer, "members": members,
                    "ms": (ContinuousClock.now - start) / .milliseconds(1),
                ], options: [.sortedKeys])) ?? Data()
            write(String(decoding: data, as: UTF8.self))
            return
        }
        let parts = others.map { member -> String in
            let peer = statistics.peers[member.userId]
            var text = "\(member.userId) \(member.networkQuality.rawValue)/\(member.volumeLevel.rawValue)"
            if let peer {
                text += " audio \(peer.audio.framesDecoded) level \(peer.audio.level)"
                if peer.video.framesDecoded > 0 {
                    text += " video \(peer.video.framesDecoded) \(peer.video.frameWidth)×\(peer.video.frameHeight)"
                }
                if peer.screen.framesDecoded > 0 { text += " screen \(peer.screen.framesDecoded)" }
            }
            return text
        }
        write("[\(timer)] " + (parts.isEmpty ? "waiting for the others" : parts.joined(separator: " | ")))
    }

    func summary(_ summary: CallSummary) {
        if !json {
            // `offline` names the callee, who did nothing: say what it means instead of "by".
            let ended =
                if let device = summary.movedTo {
                    "moved to your device \(device) (the call goes on there)"
                } else if summary.endReason == CallEndReason.offline.rawValue {
                    "offline (no device of \(summary.endedBy ?? "the callee") is known)"
                } else {
                    "\(summary.endReason ?? "-") by \(summary.endedBy ?? "server")"
                }
            write(
                "call \(summary.callId ?? "-"): \(summary.connected ? "connected" : "not connected"), "
                    + "ended: \(ended), \(summary.durationSeconds) s")
            for (user, member) in summary.members.sorted(by: { $0.key < $1.key }) {
                write(
                    "  \(user): audio \(member.audio.packetsReceived) packets, \(member.audio.framesDecoded) frames, "
                        + "loudest \(member.audio.level ?? 0); video \(member.video.framesDecoded) frames; "
                        + "screen \(member.screen.framesDecoded) frames")
            }
        }
        // Always last on stdout with --json: one object, sorted keys.
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let data = (try? encoder.encode(summary)) ?? Data("{}".utf8)
            write(String(decoding: data, as: UTF8.self))
        }
    }

    private func write(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    private func encode(_ object: [String: String]) -> String {
        var object: [String: Any] = object
        object["ms"] = (ContinuousClock.now - start) / .milliseconds(1)
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
#endif
