/// Whether the peer is still there, as a value: at every heartbeat a connection that heard
/// nothing since the last ping (no frame of any kind, pongs included) is closed; otherwise it is
/// pinged again.
struct Liveness: Equatable {
    enum Tick: Equatable {
        case ping
        case close
    }

    private(set) var heardSincePing = true

    /// A frame came in.
    mutating func heard() { heardSincePing = true }

    /// The heartbeat.
    mutating func tick() -> Tick {
        guard heardSincePing else { return .close }
        heardSincePing = false
        return .ping
    }
}
