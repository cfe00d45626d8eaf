import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import SwitchboardProtocol

/// The dispatcher: what the other nodes send this one, each message to the part that handles it.
extension ClusterNode {
    func received(_ messages: [NodeMessage]) async {
        for message in messages {
            switch message {
            case .command(let token, let from, let event):
                guard isLeader else {
                    links.send(
                        .reply(token: token, reply: .failure(SwitchboardError(.storageUnavailable, "not the leader"))),
                        to: from)
                    continue
                }
                // The answer is queued for the link inside the engine's critical section, before the
                // events the request causes: the requester's node gets them in that order.
                await engine.handle(event) { reply in self.links.send(.reply(token: token, reply: reply), to: from) }
            case .deviceOnline(let token, let user, let device, let node):
                await learn(token, from: node) { await self.connected(user, device, on: node) }
            case .blocks(let token, let user, let node):
                await learn(token, from: node) { self.engine.blockers.insert(user) }
            case .ringsByPush(let token, let user, let device, let node):
                await learn(token, from: node) { self.engine.pushReach.insert(user, device) }
            case .deviceOffline(let user, let device, let node):
                if isLeader, directory.disconnected(user, device, on: node) {
                    logger.debug("device offline", metadata: ["user": "\(user)", "device": "\(device)", "node": "\(node)"])
                    await engine.handle(.deviceOffline(user, device))
                }
            case .logout(let user, let device, let node):
                if isLeader {
                    await engine.handle(.logout(user, device))
                    _ = directory.disconnected(user, device, on: node)
                }
            case .nodeLeaving(let node):
                if isLeader { await dropDevices(on: node) }
            case .leaderLeaving(let node):
                if state.withLockedValue({ $0.leadership.leaderLeft(node) }) { Task { await self.tick() } }
            case .reply(let token, let reply):
                answered(token, reply)
            case .deliver(let frame, let recipient):
                registry.send({ frame }, to: recipient)
            case .replaceDevice(let user, let device):
                registry.sink(user, device)?.close(SwitchboardError(.sessionReplaced))
            case .leaderChanged(let node, let term):
                learnLeader(node, term: term)
            case .profileChanged(let user):
                profiles.forget(user)
            case .appsChanged:
                await reloadApps()
            }
        }
    }

    /// What another node ``tell(_:_:)``s the leader: noted while this node leads, answered `ok`;
    /// otherwise refused. A node that is taking the lead right now (its term is in the table, where
    /// the sender read it, but its takeover runs in the heartbeat) answers once the takeover is
    /// over. Whether it leads is then asked once: a node that began to lead between two looks would
    /// answer yes for what it never noted (a device would miss every event of its calls).
    private func learn(_ token: UInt64, from node: String, _ note: () async -> Void) async {
        if !isLeader { await ticks.run {} }
        let leading = isLeader
        if leading { await note() }
        links.send(
            .reply(token: token, reply: leading ? .ok : .failure(SwitchboardError(.storageUnavailable, "not the leader"))),
            to: node)
    }

    /// A device logged in on `node`: the leader notes it, closes its older connection on another
    /// node, and hands the login to the engine (pending invitations, resumed calls).
    func connected(_ user: UserKey, _ device: DeviceID, on node: String) async {
        let previous = directory.connected(user, device, on: node)
        logger.debug(
            "device noted", metadata: ["user": "\(user)", "device": "\(device)", "node": "\(node)", "previous": "\(previous ?? "-")"])
        if let previous {
            if previous == id {
                registry.sink(user, device)?.close(SwitchboardError(.sessionReplaced))
            } else {
                links.send(.replaceDevice(user: user, device: device), to: previous)
            }
        }
        await engine.handle(.deviceOnline(user, device))
    }

    /// A node died or left: each of its devices counts as dropped; with `grace`, the grace of a
    /// device whose client may not know yet (the node stopped answering).
    func dropDevices(on node: String, grace: Int64? = nil) async {
        for (user, device) in directory.devices(on: node) where directory.disconnected(user, device, on: node) {
            logger.debug("device dropped with its node", metadata: ["user": "\(user)", "device": "\(device)", "node": "\(node)"])
            await engine.handle(grace.map { .deviceLost(user, device, grace: $0) } ?? .deviceOffline(user, device))
        }
    }
}
