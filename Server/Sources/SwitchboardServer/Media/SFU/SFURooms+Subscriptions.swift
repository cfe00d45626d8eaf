import Foundation
import Logging
import SwitchboardProtocol

/// Subscriptions: each member's subscribe connection to the others' published streams.
extension SFURooms {
    /// Subscribes the member to the streams of these feeds it does not receive yet (its own left
    /// out), and takes out of its subscription the streams these feeds no longer send (a screen
    /// its publisher stopped: Janus marks the stream `disabled` in its news to the room but leaves
    /// it in every subscription, with no new offer; taken out, the member's next offer has its
    /// section inactive, which is how the member's device learns that the track ended).
    func subscribe(_ callId: CallID, _ user: UserID, to publishers: [VideoRoomEvent.Publisher]) async {
        guard let room = rooms[callId], let server = room.server, let member = room.members[user] else { return }
        // While Janus's last offer waits for the device's answer, the news waits too.
        let feeds = Set(room.members.values.compactMap(\.feed))
        var now: [VideoRoomEvent.Publisher] = []
        guard update(callId, user, session: member.session, { now = $0.negotiation.news(publishers, liveFeeds: feeds, own: $0.feed) }),
            !now.isEmpty
        else { return }
        var streams: [VideoRoomStreamRequest] = []
        var stopped: [VideoRoomStreamRequest] = []
        for publisher in now {
            // A feed nobody in the room owns now is a session's that is being dropped.
            guard let owner = room.members.values.first(where: { $0.feed == publisher.id }) else { continue }
            for stream in publisher.streams ?? [] where stream.type != "data" {
                guard let mid = stream.mid else { continue }
                let subscribed = member.subscribed[FeedStream(feed: publisher.id, mid: mid)] != nil
                if stream.disabled == true {
                    if subscribed { stopped.append(VideoRoomStreamRequest(feed: publisher.id, mid: mid)) }
                    continue
                }
                guard !subscribed else { continue }
                let layer = member.layers[owner.key.user] ?? .small
                streams.append(
                    VideoRoomStreamRequest(
                        feed: publisher.id, mid: mid, substream: owner.tracks[mid].flatMap { Self.substream(layer, of: $0) }))
            }
        }
        guard !streams.isEmpty || !stopped.isEmpty else { return }
        do {
            let answer: JanusMessage
            if let handle = member.subscriber {
                var change = VideoRoomRequest(request: stopped.isEmpty ? "subscribe" : "update")
                if stopped.isEmpty {
                    change.streams = streams
                } else {
                    change.subscribe = streams.isEmpty ? nil : streams
                    change.unsubscribe = stopped
                }
                answer = try await servers[server].request("message", handle: handle, body: change, completion: .event)
            } else {
                // Nothing subscribed yet, so nothing to take out.
                guard !streams.isEmpty else { return }
                let handle = try await attach(server)
                handles[HandleKey(server: server, handle: handle)] = Owner(
                    callId: callId, user: user, session: member.session, role: .subscriber)
                guard update(callId, user, session: member.session, { $0.subscriber = handle }) else {
                    await detach(handle, on: server)
                    return
                }
                var join = VideoRoomRequest(request: "join")
                join.room = room.number
                join.ptype = "subscriber"
                join.streams = streams
                join.private_id = nil
                answer = try await servers[server].request("message", handle: handle, body: join, completion: .event)
            }
            subscriptionChanged(callId, user, session: member.session, answer)
            await applyLayers(callId, user)
        } catch {
            logger.error(
                "could not subscribe a member to the room's tracks",
                metadata: ["call": "\(callId)", "user": "\(user)", "error": "\(error)"])
        }
    }

    /// What the subscription now receives (Janus's `attached` and `updated`), and the offer that
    /// carries it, for the member's device with what each section is.
    func subscriptionChanged(_ callId: CallID, _ user: UserID, session: Int, _ message: JanusMessage) {
        guard let streams = message.plugindata?.data.streams, let room = rooms[callId] else { return }
        var subscribed: [FeedStream: String] = [:]
        var tracks: [SFUTrack] = []
        for stream in streams where stream.active != false {
            guard let feed = stream.feed_id, let feedMid = stream.feed_mid,
                let owner = room.members.values.first(where: { $0.feed == feed }),
                stream.mid.utf8.count <= SFULimits.maxMidLength
            else { continue }
            subscribed[FeedStream(feed: feed, mid: feedMid)] = stream.mid
            let source = owner.tracks[feedMid]?.source ?? (stream.type == "audio" ? .microphone : .camera)
            tracks.append(SFUTrack(mid: stream.mid, userId: owner.key.user, source: source))
        }
        let offer = message.jsep.flatMap { $0.type == "offer" ? $0 : nil }
        guard update(callId, user, session: session, { member in
            member.subscribed = subscribed
            if offer != nil { member.negotiation.offerSent() }
        }),
            let member = rooms[callId]?.members[user], let jsep = offer
        else { return }
        send(
            SFUSignalEvent(
                callId: callId, session: session, connection: .subscribe, kind: .offer, sdp: jsep.sdp, tracks: tracks),
            to: member)
    }
}
