import SwitchboardProtocol

/// One object of a W3C `RTCStatsReport` (what `getStats()` returns in a browser and
/// `statistics(completionHandler:)` in Google's WebRTC framework): its id, type and members.
/// Engines built on such a report (``StandardStatsReport``) share this reading of it, which is
/// tested on every platform.
public struct StandardStats: Equatable, Sendable {
    /// A member's value: the report holds numbers, strings and booleans.
    public enum Value: Equatable, Sendable {
        case number(Double)
        case string(String)
        case bool(Bool)
    }

    public var id: String
    /// `inbound-rtp`, `outbound-rtp`, `remote-inbound-rtp`, `media-source`, `candidate-pair`,
    /// `local-candidate`, `transport`, `codec`…
    public var type: String
    public var values: [String: Value]

    public init(id: String, type: String, values: [String: Value]) {
        self.id = id
        self.type = type
        self.values = values
    }

    func number(_ key: String) -> Double? {
        if case .number(let value)? = values[key], value.isFinite { return value }
        return nil
    }

    /// A counter: a finite number from 0 up, else 0.
    func count(_ key: String) -> Int {
        guard let value = number(key), value >= 0, value < 1e15 else { return 0 }
        return Int(value)
    }

    func string(_ key: String) -> String? {
        if case .string(let value)? = values[key] { return value }
        return nil
    }

    func bool(_ key: String) -> Bool? {
        if case .bool(let value)? = values[key] { return value }
        return nil
    }
}

/// A connection's W3C statistics report read into ``PeerStatistics`` (and the microphone's
/// level): RTP counters per kind of media, the round trip, the candidate in use.
public struct StandardStatsReport: Sendable {
    public var stats: [StandardStats]
    private let byId: [String: StandardStats]

    public init(_ stats: [StandardStats]) {
        self.stats = stats
        self.byId = Dictionary(stats.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The media exchanged with the connection's member. Video RTP streams whose track (inbound:
    /// `trackIdentifier`; outbound: its `media-source`'s) is in `screenTrackIds` count as the
    /// shared screen, the others as the camera. Audio `framesDecoded` counts the packets played
    /// (received less discarded); `level` is the received audio level (`audioLevel`, 0–1) × 100,
    /// `playoutLevel` the same at `playoutVolume` (0–100, 0 when the member is silenced here).
    public func peerStatistics(screenTrackIds: Set<String>, playoutVolume: Int = 100) -> PeerStatistics {
        peerStatistics(playoutVolume: playoutVolume) { _, track in track.map { screenTrackIds.contains($0) } == true }
    }

    /// The same, with the video RTP streams `isScreen` picks (given the stream and its track's
    /// id) counted as the shared screen.
    func peerStatistics(playoutVolume: Int, isScreen: (StandardStats, String?) -> Bool) -> PeerStatistics {
        var result = PeerStatistics()
        for entry in stats {
            switch entry.type {
            case "inbound-rtp":
                let kind = self.kind(of: entry, track: entry.string("trackIdentifier"), isScreen: isScreen)
                var track = result[keyPath: kind]
                track.packetsReceived += entry.count("packetsReceived")
                track.bytesReceived += entry.count("bytesReceived")
                track.packetsLost += entry.count("packetsLost")
                track.jitterMs = max(track.jitterMs, (entry.number("jitter") ?? 0) * 1000)
                track.codec = track.codec ?? codec(of: entry)
                if kind == \PeerStatistics.audio {
                    track.framesDecoded += max(0, entry.count("packetsReceived") - entry.count("packetsDiscarded"))
                    let level = Self.level(entry.number("audioLevel"))
                    track.level = max(track.level, level)
                    track.playoutLevel = max(track.playoutLevel, level * min(100, max(0, playoutVolume)) / 100)
                } else {
                    track.framesDecoded += entry.count("framesDecoded")
                    if entry.count("frameWidth") > 0 {
                        track.frameWidth = entry.count("frameWidth")
                        track.frameHeight = entry.count("frameHeight")
                    }
                }
                result[keyPath: kind] = track
            case "outbound-rtp":
                let source = entry.string("mediaSourceId").flatMap { byId[$0] }
                let kind = self.kind(of: entry, track: source?.string("trackIdentifier"), isScreen: isScreen)
                result[keyPath: kind].packetsSent += entry.count("packetsSent")
                result[keyPath: kind].bytesSent += entry.count("bytesSent")
                if result[keyPath: kind].codec == nil { result[keyPath: kind].codec = codec(of: entry) }
            case "remote-inbound-rtp":
                if let rtt = entry.number("roundTripTime"), rtt >= 0 {
                    result.roundTripTimeMs = max(result.roundTripTimeMs ?? 0, Int((rtt * 1000).rounded()))
                }
            default:
                break
            }
        }
        if let pair = selectedPair() {
            if result.roundTripTimeMs == nil, let rtt = pair.number("currentRoundTripTime"), rtt >= 0 {
                result.roundTripTimeMs = Int((rtt * 1000).rounded())
            }
            result.localCandidateType = pair.string("localCandidateId").flatMap { byId[$0] }?.string("candidateType")
        }
        return result
    }

    /// The microphone's level as sent, 0–100: the audio `media-source`'s `audioLevel` (0–1).
    public var localAudioLevel: Int {
        stats.filter { $0.type == "media-source" && $0.string("kind") == "audio" }.map { Self.level($0.number("audioLevel")) }
            .max() ?? 0
    }

    /// The candidate pair in use: the transport's selected one, else a nominated pair that succeeded.
    func selectedPair() -> StandardStats? {
        if let id = stats.first(where: { $0.type == "transport" })?.string("selectedCandidatePairId"), let pair = byId[id] {
            return pair
        }
        return stats.first { $0.type == "candidate-pair" && $0.bool("nominated") == true && $0.string("state") == "succeeded" }
    }

    private func kind(
        of entry: StandardStats, track: String?, isScreen: (StandardStats, String?) -> Bool
    ) -> WritableKeyPath<PeerStatistics, TrackStatistics> {
        guard entry.string("kind") == "video" else { return \.audio }
        return isScreen(entry, track) ? \.screen : \.video
    }

    /// `audio/opus` → `opus`, `video/VP8` → `VP8`.
    private func codec(of entry: StandardStats) -> String? {
        guard let mime = entry.string("codecId").flatMap({ byId[$0] })?.string("mimeType") else { return nil }
        return mime.split(separator: "/").last.map(String.init)
    }

    private static func level(_ value: Double?) -> Int {
        Int((min(1, max(0, value ?? 0)) * 100).rounded())
    }
}
