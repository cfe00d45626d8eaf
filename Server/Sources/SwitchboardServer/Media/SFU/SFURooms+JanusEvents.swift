import Foundation
import Logging
import SwitchboardProtocol

/// What Janus says: events of the rooms' handles, a server lost, a call placed again.
extension SFURooms {
    func janus(_ server: Int, _ message: JanusMessage, _ owner: Owner) async {
        guard let room = rooms[owner.callId], room.server == server, let member = room.members[owner.user],
            member.session == owner.session
        else { return }
        switch message.janus {
        case "event":
            let data = message.plugindata?.data
            switch owner.role {
            case .publisher:
                if let publishers = data?.publishers, !publishers.isEmpty {
                    await subscribe(owner.callId, owner.user, to: publishers)
                }
            case .subscriber:
                if data?.videoroom == "updated" || data?.videoroom == "attached" {
                    subscriptionChanged(owner.callId, owner.user, session: owner.session, message)
                }
            }
        case "trickle":
            guard let candidate = message.candidate else { return }
            send(
                SFUSignalEvent(
                    callId: owner.callId, session: owner.session,
                    connection: owner.role == .publisher ? .publish : .subscribe, kind: .candidate,
                    candidate: candidate.iceCandidate), to: member)
        case "hangup":
            // Janus closed one of the member's PeerConnections (ICE or DTLS failed): a new session.
            logger.info(
                "the SFU hung up a member's connection",
                metadata: ["call": "\(owner.callId)", "user": "\(owner.user)", "reason": "\(message.reason ?? "")"])
            await onLost.function(owner.callId, owner.user)
        default:
            break
        }
    }

    /// The room's server went down: its handles are gone, and the call's members need new sessions.
    func lost(_ callId: CallID, server: Int) async {
        guard var room = rooms[callId], room.server == server else { return }
        for member in room.members.values {
            for handle in [member.publisher, member.subscriber].compactMap({ $0 }) {
                handles[HandleKey(server: server, handle: handle)] = nil
            }
        }
        room.server = nil
        room.members = room.members.mapValues { member in
            var reset = member
            reset.publisher = nil
            reset.subscriber = nil
            reset.feed = nil
            reset.publishing = .notYet
            reset.subscribed = [:]
            reset.negotiation = SubscriptionNegotiation()
            return reset
        }
        rooms[callId] = room
        logger.error("a call's SFU went down; its members start again", metadata: ["call": "\(callId)"])
        await onLost.function(callId, nil)
    }

    /// A server came up while the room had none: its members start again (and place it).
    func retryPlacement(_ callId: CallID) async {
        guard let room = rooms[callId], room.server == nil else { return }
        await onLost.function(callId, nil)
    }

    func send(_ event: SFUSignalEvent, to member: Member) {
        delivery.send({ CallEngine.frame(.sfuSignal(event)) }, to: .device(member.key, member.device))
    }
}
