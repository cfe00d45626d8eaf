#if GStreamer
import Switchboard
import SwitchboardProtocol

/// One connection of the current SFU session.
struct SFUSlot {
    var connection: PeerConnection
    var events: PeerConnectionEvents
}

/// The call's two connections with the SFU (docs/IOS.md, "Group calls through the SFU"): the
/// publish connection sends every local track once, the subscribe connection receives the other
/// members' tracks and names each after the member ``sfuTracks`` says.
extension CallMedia {
    /// The name a connection with the SFU goes by in logs and events (`connection to sfu-publish: connected`).
    static func name(of connection: SFUConnection) -> UserID { UserID(rawValue: "sfu-\(connection.rawValue)") }

    func sfuConnection(_ connection: SFUConnection) throws -> PeerConnection {
        guard let slot = sfu[connection] else { throw GStreamerError("no \(connection.rawValue) connection with the SFU") }
        return slot.connection
    }

    /// Opens `connection`; one of an older session still open closes first (a new session replaces it).
    func openSFU(_ connection: SFUConnection, ice: IcePolicy, events: PeerConnectionEvents) async throws {
        await closeSFU(connection)
        sfuOpened += 1
        let role: ConnectionRole = connection == .publish ? .sfuPublish : .sfuSubscribe(sfuTracks)
        let name = Self.name(of: connection)
        sfu[connection] = SFUSlot(
            connection: try makeConnection(name, role: role, name: "\(name.rawValue)-\(sfuOpened)", ice: ice, events: events),
            events: events)
    }

    /// Closes `connection`; what it sent or received carries on into the next session's numbers.
    func closeSFU(_ connection: SFUConnection) async {
        guard let slot = sfu.removeValue(forKey: connection) else { return }
        switch connection {
        case .publish:
            sfuPublishedCarried = (sfuPublishedCarried ?? PeerStatistics()).adding(await slot.connection.sentStatistics())
        case .subscribe:
            for (member, statistics) in await slot.connection.statistics() {
                sfuCarried[member] = (sfuCarried[member] ?? PeerStatistics()).adding(statistics)
            }
        }
        await slot.connection.close()
    }

    /// What the publish connections of this call sent, the current one's added to the closed
    /// ones'; nil in a call that never went through the SFU.
    func sfuPublished() async -> PeerStatistics? {
        guard let publish = sfu[.publish]?.connection else { return sfuPublishedCarried }
        return (sfuPublishedCarried ?? PeerStatistics()).adding(await publish.sentStatistics())
    }

    /// Per member: what the subscribe connections received, with the path's round trip and
    /// candidate type from `published` (the publish connection's numbers) where the subscribe
    /// connection has none (it sends nothing, so no receiver report tells it a round trip).
    func sfuStatistics(published: PeerStatistics?) async -> [UserID: PeerStatistics] {
        var members = sfuCarried
        if let subscribe = sfu[.subscribe]?.connection {
            for (member, statistics) in await subscribe.statistics() {
                members[member] = (sfuCarried[member] ?? PeerStatistics()).adding(statistics)
            }
        }
        guard let published, sfu[.publish] != nil else { return members }
        return members.mapValues { statistics in
            var statistics = statistics
            statistics.roundTripTimeMs = statistics.roundTripTimeMs ?? published.roundTripTimeMs
            statistics.localCandidateType = statistics.localCandidateType ?? published.localCandidateType
            return statistics
        }
    }
}
#endif
