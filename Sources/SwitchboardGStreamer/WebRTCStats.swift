#if GStreamer
import CGStreamer

/// One object of webrtcbin's `get-stats` reply (W3C's RTCStats, as GStreamer 1.22 names them),
/// with the fields the engine reads.
struct WebRTCStatsEntry: Sendable {
    var id: String
    var type: GstWebRTCStatsType
    var ssrc: UInt32?
    var packetsSent = 0
    var bytesSent = 0
    var packetsReceived = 0
    var bytesReceived = 0
    var packetsLost = 0
    /// Seconds.
    var jitter = 0.0
    /// Seconds; remote-inbound-rtp only.
    var roundTripTime: Double?
    var candidateType: String?
    var localCandidateId: String?
    var selectedCandidatePairId: String?

    /// Reads every stats object of a reply (called while the promise is alive).
    static func parse(_ reply: UnsafePointer<GstStructure>?) -> [WebRTCStatsEntry] {
        guard let reply else { return [] }
        var entries: [WebRTCStatsEntry] = []
        for index in 0..<gst_structure_n_fields(reply) {
            guard let object = sb_structure_nth_structure(reply, guint(index)) else { continue }
            let type = sb_stats_type(object)
            guard type > 0 else { continue }
            func number(_ field: String) -> Double? {
                let value = sb_structure_number(object, field, .nan)
                return value.isNaN ? nil : value
            }
            func count(_ field: String) -> Int {
                guard let value = number(field), value.isFinite, value >= 0, value < 1e15 else { return 0 }
                return Int(value)
            }
            func string(_ field: String) -> String? { sb_structure_string(object, field).map { String(cString: $0) } }
            var entry = WebRTCStatsEntry(
                id: string("id") ?? "", type: GstWebRTCStatsType(rawValue: UInt32(type)),
                ssrc: number("ssrc").flatMap { $0 >= 0 && $0 <= Double(UInt32.max) ? UInt32($0) : nil })
            entry.packetsSent = count("packets-sent")
            entry.bytesSent = count("bytes-sent")
            entry.packetsReceived = count("packets-received")
            entry.bytesReceived = count("bytes-received")
            entry.packetsLost = count("packets-lost")
            entry.jitter = number("jitter") ?? 0
            entry.roundTripTime = number("round-trip-time")
            entry.candidateType = string("candidate-type")
            entry.localCandidateId = string("local-candidate-id")
            entry.selectedCandidatePairId = string("selected-candidate-pair-id")
            entries.append(entry)
        }
        return entries
    }
}

extension Array where Element == WebRTCStatsEntry {
    func first(_ type: GstWebRTCStatsType, ssrc: UInt32?) -> WebRTCStatsEntry? {
        guard let ssrc else { return nil }
        return first { $0.type == type && $0.ssrc == ssrc }
    }

    /// The type of the local candidate of the selected pair (`host`, `srflx`, `relay`…).
    var selectedLocalCandidateType: String? {
        let pairId = first { $0.type == GST_WEBRTC_STATS_TRANSPORT && $0.selectedCandidatePairId != nil }?
            .selectedCandidatePairId
        let pair = pairId.flatMap { id in first { $0.id == id } }
            ?? first { $0.type == GST_WEBRTC_STATS_CANDIDATE_PAIR && $0.localCandidateId != nil }
        guard let localId = pair?.localCandidateId else { return nil }
        return first { $0.id == localId }?.candidateType
    }
}
#endif
