import Foundation
import SwitchboardProtocol

/// What the nodes of a cluster tell each other over their links (``NodeLinks``).
enum NodeMessage: Codable, Equatable, Sendable {
    // MARK: to the leader

    /// A session's request for the call engine; the answer goes back to `from` as ``reply``.
    case command(token: UInt64, from: String, event: CallEvent)
    /// A device logged in on node `node`; the leader answers ``reply`` (`ok`) once it handled it,
    /// and the node answers the login then.
    case deviceOnline(token: UInt64, user: UserKey, device: DeviceID, node: String)
    /// `user` blocks someone now (node `node` wrote the rows); the leader answers ``reply`` (`ok`)
    /// once its ``BlockerIndex`` has them, and the node answers the block then.
    case blocks(token: UInt64, user: UserKey, node: String)
    /// `device` of `user` registered a token that rings (node `node` wrote the row); the leader
    /// answers ``reply`` (`ok`) once its ``PushReachIndex`` has it, and the node answers the
    /// registration then.
    case ringsByPush(token: UInt64, user: UserKey, device: DeviceID, node: String)
    /// A device's connection on node `node` closed (not a logout).
    case deviceOffline(user: UserKey, device: DeviceID, node: String)
    /// A device logged out on node `node`: its calls are left.
    case logout(user: UserKey, device: DeviceID, node: String)
    /// Node `node` is shutting down: its devices count as dropped.
    case nodeLeaving(node: String)

    // MARK: from the leader

    /// The engine's answer to ``command``.
    case reply(token: UInt64, reply: CallReply)
    /// An event (already encoded) for the devices of this node that `recipient` names.
    case deliver(frame: String, recipient: Recipient)
    /// This device logged in on another node: close its connection here (`sessionReplaced`).
    case replaceDevice(user: UserKey, device: DeviceID)
    /// A new leader, in a new term.
    case leaderChanged(node: String, term: Int64)
    /// The leader stepped down (it is shutting down): whoever takes the lock first leads.
    case leaderLeaving(node: String)

    // MARK: to every node

    /// A user's profile changed: forget the cached one.
    case profileChanged(UserKey)
    /// The apps or their settings changed: read them again.
    case appsChanged
}

extension NodeMessage {
    /// How a message is written on a link. A ``deliver(frame:recipient:)``, the most
    /// frequent message, carries a frame that is JSON already: it is written as `D`, its
    /// recipient's JSON, a newline and the frame as it goes to the sockets, so the frame is neither
    /// escaped into a JSON string by the leader nor parsed back by the node that hands it over (that
    /// parse was a tenth of such a node's CPU). Every other message is its JSON. JSON as
    /// `WireEncoder` writes it holds no raw newline, so the first one ends the recipient.
    func body() throws -> String {
        guard case .deliver(let frame, let recipient) = self else { return try SwitchboardJSON.encodeString(self) }
        return "D" + (try SwitchboardJSON.encodeString(recipient)) + "\n" + frame
    }

    init(body: String) throws {
        let utf8 = body.utf8
        guard utf8.first == UInt8(ascii: "D") else {
            self = try SwitchboardJSON.decode(NodeMessage.self, from: Data(utf8))
            return
        }
        guard let newline = utf8.firstIndex(of: UInt8(ascii: "\n")) else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "a delivery without its frame"))
        }
        let recipient = try SwitchboardJSON.decode(Recipient.self, from: Data(utf8[utf8.index(after: utf8.startIndex)..<newline]))
        self = .deliver(frame: String(body[utf8.index(after: newline)...]), recipient: recipient)
    }
}
