/// The rule of the signaling heartbeat, as a value: every interval a tick; a tick with no frame
/// from the server since the one before is silent; two silent ticks in a row mean the connection
/// is dead even if the socket looks open. Counting ticks rather than elapsed time (each tick is
/// scheduled from the one before) keeps a clock that jumps far ahead from declaring a healthy
/// connection dead.
struct HeartbeatWatch: Sendable, Equatable {
    /// What a tick calls for.
    enum Outcome: Sendable, Equatable {
        /// Send the next ping; `notice` is what changed for the app, if anything.
        case ping(notice: Notice?)
        /// Two silent ticks: the connection counts as lost.
        case lost
    }

    enum Notice: Sendable, Equatable {
        /// The first silent tick: one more and the connection is lost.
        case missed
        /// A frame came after a silent tick.
        case answered
    }

    /// Whether a frame came since the last tick. A new connection counts as heard.
    private(set) var heardSinceTick = true
    /// Silent ticks in a row.
    private(set) var silentTicks = 0

    /// A frame arrived from the server.
    mutating func heard() {
        heardSinceTick = true
    }

    /// The interval is over.
    mutating func tick() -> Outcome {
        let wasSilent = silentTicks > 0
        silentTicks = heardSinceTick ? 0 : silentTicks + 1
        heardSinceTick = false
        switch silentTicks {
        case 2...: return .lost
        case 1: return .ping(notice: .missed)
        default: return .ping(notice: wasSilent ? .answered : nil)
        }
    }
}
