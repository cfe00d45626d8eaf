import SwitchboardProtocol

/// What a media engine measured since the call's media started: counters only grow, levels and
/// sizes are the latest. ``MediaCoordinator`` turns two samples a second apart into the status
/// report (loss, bitrate) the server derives network quality and volume from.
public struct MediaStatistics: Equatable, Sendable {
    /// The local microphone's level, 0–100, as sent: 0 while muted.
    public var localAudioLevel: Int
    /// One entry per other member with a connection (a room engine may report one entry for the
    /// room); in a call through the SFU, what came from each member.
    public var peers: [UserID: PeerStatistics]
    /// In a call through the SFU, what this device sent on its publish connection: sent once for
    /// all members, so in no member's entry. Nil otherwise.
    public var published: PeerStatistics?

    public init(localAudioLevel: Int = 0, peers: [UserID: PeerStatistics] = [:], published: PeerStatistics? = nil) {
        self.localAudioLevel = localAudioLevel
        self.peers = peers
        self.published = published
    }
}

/// The media exchanged with one other member.
public struct PeerStatistics: Equatable, Sendable {
    /// Microphone audio, both directions.
    public var audio: TrackStatistics
    /// Camera video, both directions.
    public var video: TrackStatistics
    /// The shared screen, both directions.
    public var screen: TrackStatistics
    /// Round-trip time in ms from RTCP; nil before the first report.
    public var roundTripTimeMs: Int?
    /// The kind of the local candidate in use: `host`, `srflx`, `prflx` or `relay`; nil before ICE connects.
    public var localCandidateType: String?

    public init(
        audio: TrackStatistics = TrackStatistics(), video: TrackStatistics = TrackStatistics(),
        screen: TrackStatistics = TrackStatistics(), roundTripTimeMs: Int? = nil, localCandidateType: String? = nil
    ) {
        self.audio = audio
        self.video = video
        self.screen = screen
        self.roundTripTimeMs = roundTripTimeMs
        self.localCandidateType = localCandidateType
    
    }

    /// Every packet received from the member so far: audio, video and screen.
    public var packetsReceived: Int { audio.packetsReceived + video.packetsReceived + screen.packetsReceived }
}

/// One kind of media with one member: RTP counters both ways and what the decoder made of it.
public struct TrackStatistics: Equatable, Sendable {
    public var packetsSent: Int
    public var bytesSent: Int
    public var packetsReceived: Int
    public var bytesReceived: Int
    /// Received packets that never arrived (RTP sequence gaps).
    public var packetsLost: Int
    /// Interarrival jitter of received packets, ms.
    public var jitterMs: Double
    /// The codec received (or else sent), e.g. `opus`, `VP8`.
    public var codec: String?
    /// Received audio level 0–100 over the last tenth of a second (audio only).
    public var level: Int
    /// The same after playback volume and ``DeviceStore/muteAllRemoteAudio(_:)``: what plays.
    public var playoutLevel: Int
    /// Decoded audio buffers or video frames.
    public var framesDecoded: Int
    /// Size of the last decoded video frame; 0 before the first.
    public var frameWidth: Int
    public var frameHeight: Int

    /// Received packets lost, % of those expected, since the connection opened.
    public var lossPercent: Double {
        packetsReceived + packetsLost > 0 ? Double(packetsLost) * 100 / Double(packetsReceived + packetsLost) : 0
    }

    public init(
        packetsSent: Int = 0, bytesSent: Int = 0, packetsReceived: Int = 0, bytesReceived: Int = 0, packetsLost: Int = 0,
        jitterMs: Double = 0, codec: String? = nil, level: Int = 0, playoutLevel: Int = 0, framesDecoded: Int = 0,
        frameWidth: Int = 0, frameHeight: Int = 0
    ) {
        self.packetsSent = packetsSent
        self.bytesSent = bytesSent
        self.packetsReceived = packetsReceived
        self.bytesReceived = bytesReceived
        self.packetsLost = packetsLost
        self.jitterMs = jitterMs
        self.codec = codec
        self.level = level
        self.playoutLevel = playoutLevel
        self.framesDecoded = framesDecoded
        self.frameWidth = frameWidth
        self.frameHeight = frameHeight
    }
}

extension PeerStatistics {
    /// What went each way between two samples `milliseconds` apart, kbps (a counter that went
    /// backwards, the connection replaced, counts from zero).
    public func bitrate(since previous: PeerStatistics?, milliseconds: Int64) -> (sent: Int, received: Int) {
        guard milliseconds > 0 else { return (0, 0) }
        func delta(_ now: Int, _ before: Int?) -> Int64 { Int64(before.map { now >= $0 ? now - $0 : now } ?? now) }
        let tracks = [(audio, previous?.audio), (video, previous?.video), (screen, previous?.screen)]
        let sent = tracks.reduce(Int64(0)) { $0 + delta($1.0.bytesSent, $1.1?.bytesSent) }
        let received = tracks.reduce(Int64(0)) { $0 + delta($1.0.bytesReceived, $1.1?.bytesReceived) }
        // bits per millisecond is kbit per second
        return (Int(sent * 8 / milliseconds), Int(received * 8 / milliseconds))
    }
}

/// The numbers of one status report (`call.statusReport`), from two statistics samples.
public struct StatusSample: Equatable, Sendable {
    /// Received packets lost between the samples, % of those expected, the worst member's.
    public var packetLoss: Double
    /// The longest round trip to any member (or to the SFU), ms.
    public var rtt: Int
    /// Everything sent between the samples, kbps.
    public var bitrate: Int
    /// The local microphone's level, 0–100.
    public var audioLevel: Int

    /// The report for the interval from `previous` to `current`, `milliseconds` long. Counters that
    /// went backwards (a connection was replaced) count from zero. What went to the SFU
    /// (``MediaStatistics/published``) counts as sent, once.
    public init(from previous: MediaStatistics?, to current: MediaStatistics, milliseconds: Int64) {
        var worstLoss = 0.0
        var sentBytes = 0
        var rtt = 0
        var samples = current.peers.map { (now: $0.value, before: previous?.peers[$0.key]) }
        if let published = current.published { samples.append((published, previous?.published)) }
        for (now, before) in samples {
            var received = 0
            var lost = 0
            for kind in [\PeerStatistics.audio, \PeerStatistics.video, \PeerStatistics.screen] {
                let (a, b) = (now[keyPath: kind], before?[keyPath: kind])
                received += Self.delta(a.packetsReceived, b?.packetsReceived)
                lost += Self.delta(a.packetsLost, b?.packetsLost)
                sentBytes += Self.delta(a.bytesSent, b?.bytesSent)
            }
            if received + lost > 0 { worstLoss = max(worstLoss, Double(lost) * 100 / Double(received + lost)) }
            rtt = max(rtt, now.roundTripTimeMs ?? 0)
        }
        self.packetLoss = (worstLoss * 10).rounded() / 10
        self.rtt = rtt
        // bits per millisecond is kbit per second
        self.bitrate = milliseconds > 0 ? Int(Int64(sentBytes) * 8 / milliseconds) : 0
        self.audioLevel = min(100, max(0, current.localAudioLevel))
    }

    private static func delta(_ now: Int, _ before: Int?) -> Int {
        guard let before, now >= before else { return max(0, now) }
        return now - before
    }
}
