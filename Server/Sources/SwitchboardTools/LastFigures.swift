import Switchboard

/// A call's media figures as a summary reports them (`switchboard call`): each member's as last
/// read while the member was there. A reading made after the call's media closed (a status tick
/// between a hang-up and the call's end event) has no members, and must not wipe the figures read
/// before it: it did, and summaries listed no member and "0 bytes sent to 0 peers" (issue 52).
public struct LastFigures: Equatable, Sendable {
    public private(set) var statistics = MediaStatistics()

    public init() {}

    /// Takes a reading: the members in it replace their last figures, the others keep theirs;
    /// what was published is replaced when the reading has it.
    public mutating func note(_ reading: MediaStatistics) {
        statistics.localAudioLevel = reading.localAudioLevel
        statistics.peers.merge(reading.peers) { _, new in new }
        if let published = reading.published { statistics.published = published }
    }
}
