import SwitchboardProtocol

/// What the sections of an SFU subscribe connection carry, as the SFU's last offer said
/// (``SFUMediaEngine/setSFUTracks(_:)``): each `a=mid`'s member and track. An engine names what it
/// receives with it: the videos to show per member (``videos(_:)``) and the statistics per member
/// (``StandardStatsReport/memberStatistics(_:playoutVolume:)``).
public struct SFUSections: Equatable, Sendable {
    /// Most sections kept. A server sends one per published track of every other member (16
    /// members with 4 sections each: 60); a longer list keeps its first ones, and what the rest
    /// carry is named nowhere (received, not shown).
    public static let limit = 256

    private var byMid: [String: SFUTrack] = [:]

    /// The sections of `tracks`; of two that name one `mid`, the first counts.
    public init(_ tracks: [SFUTrack] = []) {
        for track in tracks.prefix(Self.limit) where byMid[track.mid] == nil {
            byMid[track.mid] = track
        }
    }

    /// What the section `mid` carries; nil for a section the list does not name (or no mid).
    public subscript(mid mid: String?) -> SFUTrack? {
        mid.flatMap { byMid[$0] }
    }

    /// The received videos by member and what they show: each (section, track) whose section
    /// carries a member's camera or screen. Sections the list does not name and microphones are
    /// left out; of two videos with one member and role (which no server sends), the first counts.
    public func videos<Track>(_ received: [(mid: String?, track: Track)]) -> [UserID: [ReceivedVideoRole: Track]] {
        var result: [UserID: [ReceivedVideoRole: Track]] = [:]
        for (mid, track) in received {
            guard let section = self[mid: mid], let role = ReceivedVideoRole(source: section.source) else { continue }
            if result[section.userId]?[role] == nil { result[section.userId, default: [:]][role] = track }
        }
        return result
    }
}

extension ReceivedVideoRole {
    /// The role of a video that carries `source`; nil for the microphone (not a video).
    public init?(source: TrackSource) {
        switch source {
        case .microphone: return nil
        case .camera: self = .camera
        case .screen: self = .screen
        }
    }
}

extension StandardStatsReport {
    /// RTP stream types, each the member's whose stream it is; the rest of a report (the
    /// transport, candidates, codecs) is the connection's.
    private static let streamTypes: Set<String> = ["inbound-rtp", "outbound-rtp", "remote-inbound-rtp", "remote-outbound-rtp"]

    /// A subscribe connection's report split by member (a call through the SFU): each received
    /// RTP stream (`inbound-rtp`) is the member's whose section (its `mid`) carries it, and counts
    /// as their screen when that section carries a screen. Streams of sections `sections` does
    /// not name are left out. Every member gets the connection's round trip and candidate type
    /// (one path, to the SFU); members with no stream in the report have no entry.
    public func memberStatistics(_ sections: SFUSections, playoutVolume: Int = 100) -> [UserID: PeerStatistics] {
        var streams: [UserID: [StandardStats]] = [:]
        var shared: [StandardStats] = []
        for entry in stats {
            if entry.type == "inbound-rtp" {
                guard let section = sections[mid: entry.string("mid")] else { continue }
                streams[section.userId, default: []].append(entry)
            } else if !Self.streamTypes.contains(entry.type) {
                shared.append(entry)
            }
        }
        return streams.mapValues { entries in
            StandardStatsReport(shared + entries).peerStatistics(playoutVolume: playoutVolume) { entry, _ in
                sections[mid: entry.string("mid")]?.source == .screen
            }
        }
    }
}
