#if GStreamer
import CGStreamer
import Foundation
import Logging
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol

/// Playback volume and the connection's statistics.
extension PeerConnection {
    func setOutput(volume: Int, muted: Bool) {
        let tracks = state.withLockedValue { state in
            state.output = (volume, muted)
            return state.tracks.map(\.track)
        }
        for track in tracks { track.setOutput(volume: volume, muted: muted) }
    }

    /// The statistics of this connection, plus the received tracks' own measurements, per member:
    /// the one a mesh connection is with (what it sends counts there too), or each member whose
    /// tracks the SFU's subscribe connection carries. The connection's round trip and candidate
    /// type go to every member it reports.
    func statistics() async -> [UserID: PeerStatistics] {
        let entries = await statsEntries()
        let (tracks, endedFrames) = state.withLockedValue { ($0.tracks.map(\.track), $0.endedFrames) }
        var members = Set(tracks.map(\.peer)).union(endedFrames.keys)
        let sent = role.sendsTo.map { peer in
            members.insert(peer)
            return sentStatistics(entries)
        }
        var results: [UserID: PeerStatistics] = [:]
        for member in members {
            var result = member == role.sendsTo ? sent ?? PeerStatistics() : PeerStatistics()
            for kind in TrackKind.allCases {
                var stats = result[kind]
                stats.framesDecoded += endedFrames[member]?[kind] ?? 0
                for track in tracks where track.kind == kind && track.peer == member {
                    let counters = track.snapshot
                    if let inbound = entries.first(GST_WEBRTC_STATS_INBOUND_RTP, ssrc: track.ssrc) {
                        stats.packetsReceived += inbound.packetsReceived
                        stats.bytesReceived += inbound.bytesReceived
                        stats.packetsLost += inbound.packetsLost
                        stats.jitterMs = max(stats.jitterMs, inbound.jitter * 1000)
                    }
                    stats.framesDecoded += counters.framesDecoded
                    stats.level = max(stats.level, counters.level)
                    stats.playoutLevel = max(stats.playoutLevel, counters.outputLevel)
                    if counters.width > 0 {
                        stats.frameWidth = counters.width
                        stats.frameHeight = counters.height
                    }
                }
                if stats.packetsSent > 0 || stats.packetsReceived > 0 || stats.framesDecoded > 0 {
                    stats.codec = kind == .audio ? "opus" : "VP8"
                }
                result[kind] = stats
            }
            result.roundTripTimeMs = Self.roundTripMs(entries)
            result.localCandidateType = entries.selectedLocalCandidateType
            results[member] = result
        }
        return results
    }

    /// What this connection sends, per kind, with the path's round trip and local candidate type:
    /// the SFU's publish connection's numbers (``MediaStatistics/published``).
    func sentStatistics() async -> PeerStatistics {
        sentStatistics(await statsEntries())
    }

    func sentStatistics(_ entries: [WebRTCStatsEntry]) -> PeerStatistics {
        let senders = state.withLockedValue { $0.senders.mapValues(\.ssrc) }
        var result = PeerStatistics(
            roundTripTimeMs: Self.roundTripMs(entries), localCandidateType: entries.selectedLocalCandidateType)
        for (kind, ssrc) in senders {
            guard let outbound = entries.first(GST_WEBRTC_STATS_OUTBOUND_RTP, ssrc: ssrc) else { continue }
            result[kind].packetsSent = outbound.packetsSent
            result[kind].bytesSent = outbound.bytesSent
            if outbound.packetsSent > 0 { result[kind].codec = kind == .audio ? "opus" : "VP8" }
        }
        return result
    }

    /// The longest round trip (ms) the latest receiver reports of the sent streams gave; nil before any.
    static func roundTripMs(_ entries: [WebRTCStatsEntry]) -> Int? {
        let seconds = entries.filter { $0.type == GST_WEBRTC_STATS_REMOTE_INBOUND_RTP }.compactMap(\.roundTripTime)
            .filter { $0 > 0 }.max()
        return seconds.map { Int(($0 * 1000).rounded()) }
    }

    /// webrtcbin's statistics now (none if it does not answer).
    func statsEntries() async -> [WebRTCStatsEntry] {
        (try? await awaitPromise(
            extract: { WebRTCStatsEntry.parse($0) }, start: { sb_webrtc_get_stats(webrtc.pointer, $0) })) ?? []
    }

    /// The round trip to the peer the latest receiver report gave (the longest of its streams'),
    /// in seconds; nil before any, or when nothing video is sent (the send rate has nothing to adapt).
    /// Whether a local video track (camera or screen) is attached.
    var sendsVideo: Bool { state.withLockedValue { $0.senders.keys.contains { $0.isVideo } } }

    func videoRoundTrip() async -> Double? {
        guard state.withLockedValue({ $0.senders.contains { $0.key.isVideo && $0.value.branch != nil } }) else { return nil }
        let entries = await statsEntries()
        return entries.filter { $0.type == GST_WEBRTC_STATS_REMOTE_INBOUND_RTP }.compactMap(\.roundTripTime).max()
    }

    /// When the first audio frame from the peer was decoded.
    var firstAudioFrame: ContinuousClock.Instant? {
        state.withLockedValue { $0.tracks.map(\.track) }.filter { $0.kind == .audio }.compactMap { $0.snapshot.firstFrame }.min()
    }

    /// Posts an error from inside this connection's webrtcbin, as its transport's elements do
    /// when they fail (for tests of what follows).
    func failForTest() {
        sb_post_error(webrtc.pointer, "the transport failed (a test)")
    }
}
#endif
