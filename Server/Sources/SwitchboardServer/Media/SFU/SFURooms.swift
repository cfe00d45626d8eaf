import Foundation
import Logging
import SwitchboardProtocol

/// The rooms of group calls on the Janus servers (VideoRoom plugin), run for the call state
/// machine: it decides who has which session in which call (``SFUAction``); the rooms make that
/// true on Janus and relay each member's negotiation between the member's device and the
/// member's two handles there (a publisher, which also receives the room's notices, and a
/// multistream subscriber to every other member's tracks).
///
/// - A call's room goes on the Janus server with the fewest members on it among those connected
///   (this node runs every call of its cluster, so the count is the cluster's), and is destroyed
///   when the call ends. Its id in Janus is derived from the call id, so a room a crashed run
///   left behind is found and replaced.
/// - When a server goes down, everything on it is gone (Janus drops a session's handles and
///   PeerConnections with its socket): every call whose room was there is reported lost
///   (``CallEvent/sfuRestart(_:_:)``), the machine starts new sessions for its members, and the
///   first of them places the room again, on another server or on the same one once it is back.
///   A call that finds no server waits, and is reported lost again when one comes up.
/// - Work for one call (the machine's actions and Janus's events about its handles) runs in
///   order, one step at a time; calls run side by side. A call's queue holds at most
///   ``queueLimit`` steps: beyond that a step is dropped and counted (``droppedSteps``); what a
///   member's signals can add is bounded by the relay budget the machine keeps.
actor SFURooms {
    /// Janus's plugin package name.
    static let plugin = "janus.plugin.videoroom"
    /// Most publishers in a room (Janus's default is 3); the apps' limit on members is at most 1000.
    static let publishersPerRoom = 1000
    static let queueLimit = 4096

    enum Role: Sendable {
        case publisher
        case subscriber
    }

    /// Who a handle belongs to.
    struct Owner: Sendable {
        var callId: CallID
        var user: UserID
        var session: Int
        var role: Role
    }

    struct HandleKey: Hashable, Sendable {
        var server: Int
        var handle: UInt64
    }

    /// A member's part of a room, for one session.
    struct Member {
        var key: UserKey
        var device: DeviceID
        var session: Int
        var layers: [UserID: VideoLayer]
        var publisher: UInt64?
        /// The member's publisher id in the room (a "feed" to the others).
        var feed: UInt64?
        /// Whether the member's first offer was published: its later offers renegotiate.
        var publishing = Publishing.notYet
        /// What each section of the member's publish connection sends.
        var tracks: [String: PublishedTrack] = [:]
        var subscriber: UInt64?
        /// What the subscriber receives: each section's mid, by the feed and the feed's mid.
        var subscribed: [FeedStream: String] = [:]
        /// Where the subscription's negotiation with Janus stands, and the news that waits for it.
        var negotiation = SubscriptionNegotiation()
    }

    /// A member's publish connection: its first offer is a `publish`, every later one a `configure`
    /// (a renegotiation); a new session (Janus lost and found again) starts over.
    enum Publishing: Sendable {
        case notYet
        case published

        /// VideoRoom's request for the member's next offer.
        var request: String {
            switch self {
            case .notYet: "publish"
            case .published: "configure"
            }
        }
    }

    struct FeedStream: Hashable, Sendable {
        var feed: UInt64
        var mid: String
    }

    struct Room {
        var number: UInt64
        /// The server it is on; nil while no server could take it.
        var server: Int?
        var members: [UserID: Member] = [:]
        /// The recording take whose files the members' tracks go into; nil: not recorded.
        var take: Int?
    }

    enum Step: Sendable {
        case action(SFUAction)
        case janus(server: Int, JanusMessage, Owner)
        /// The room's server went down: everything on it is gone.
        case serverDown(Int)
        /// A server came up and the room waits for one.
        case serverUp
    }

    let servers: [JanusServer]
    let secret: String?
    /// Where the rooms' recordings go: a folder per call (``RecordingFiles``); nil: no recording.
    let recordings: RecordingFiles?
    let delivery: any CallDelivery
    private let clock: any SwitchboardClock
    let logger: Logger
    /// Tells the engine that a call's (or a member's) media with the SFU is lost.
    let onLost = LockedCallback<@Sendable (CallID, UserID?) async -> Void>({ _, _ in })

    var rooms: [CallID: Room] = [:]
    var handles: [HandleKey: Owner] = [:]
    /// A handle per server for the requests about rooms (create, destroy).
    var control: [Int: UInt64] = [:]
    private var queues: [CallID: AsyncStream<Step>.Continuation] = [:]
    private var watchers: [Task<Void, Never>] = []
    private(set) var droppedSteps = 0
    /// The machine's actions, in the order it gave them, until each goes to its call's queue.
    nonisolated let inbox: AsyncStream<SFUAction>.Continuation
    private let actions: AsyncStream<SFUAction>

    init(
        urls: [String], secret: String?, timing: JanusServer.Timing = JanusServer.Timing(), delivery: any CallDelivery,
        recordings: RecordingFiles? = nil, clock: any SwitchboardClock, logger: Logger
    ) {
        self.recordings = recordings
        self.servers = urls.map { JanusServer(url: $0, secret: secret, timing: timing, clock: clock, logger: logger) }
        self.secret = secret
        self.delivery = delivery
        self.clock = clock
        self.logger = logger
        (actions, inbox) = AsyncStream<SFUAction>.makeStream(bufferingPolicy: .bufferingOldest(100_000))
    }

    /// Connects to every server and follows their events, until ``stop()``.
    func start() async {
        guard watchers.isEmpty else { return }
        let actions = self.actions
        watchers.append(
            Task { [weak self] in
                for await action in actions {
                    await self?.enqueue(action.callId, .action(action))
                }
            })
        for (index, server) in servers.enumerated() {
            await server.start()
            watchers.append(
                Task { [weak self] in
                    for await event in server.events {
                        await self?.serverEvent(index, event)
                    }
                })
        }
    }

    func stop() async {
        watchers.forEach { $0.cancel() }
        watchers = []
        for server in servers { await server.stop() }
        for queue in queues.values { queue.finish() }
        queues = [:]
    }

    /// The servers and how many members each carries (the tests read it; `/health` does not show it yet).
    func load() async -> [(url: String, up: Bool, members: Int)] {
        var result: [(String, Bool, Int)] = []
        for (index, server) in servers.enumerated() {
            result.append((server.url, await server.isUp, members(on: index)))
        }
        return result
    }

    /// The Janus room of a call in progress, and its server (tests).
    func placement(of callId: CallID) async -> (url: String, room: UInt64)? {
        guard let room = rooms[callId], let server = room.server else { return nil }
        return (servers[server].url, room.number)
    }

    /// Carries out the machine's action (in order with the call's other work; never waits).
    nonisolated func perform(_ action: SFUAction) {
        if case .dropped = inbox.yield(action) {
            logger.error("an SFU action was dropped: the rooms fall behind", metadata: ["call": "\(action.callId)"])
        }
    }

    /// Forgets every room (this node no longer runs the calls): they are destroyed on Janus.
    func reset() async {
        let ids = Array(rooms.keys)
        for id in ids { enqueue(id, .action(.end(id))) }
    }

    // MARK: - the queues

    private func enqueue(_ callId: CallID, _ step: Step) {
        let queue: AsyncStream<Step>.Continuation
        if let existing = queues[callId] {
            queue = existing
        } else {
            let (steps, continuation) = AsyncStream<Step>.makeStream(bufferingPolicy: .bufferingOldest(Self.queueLimit))
            queues[callId] = continuation
            queue = continuation
            Task { [weak self] in
                for await step in steps {
                    await self?.run(callId, step)
                }
            }
        }
        if case .dropped = queue.yield(step) {
            droppedSteps += 1
            logger.warning("an SFU step was dropped: the call's queue is full", metadata: ["call": "\(callId)"])
        }
    }

    func run(_ callId: CallID, _ step: Step) async {
        switch step {
        case .action(.join(let session)): await join(session)
        case .action(.leave(_, let user)): await leave(callId, user)
        case .action(.end): await end(callId)
        case .action(.signal(_, let user, let session, let signal)): await relay(callId, user, session, signal)
        case .action(.layer(_, let viewer, let target, let layer)): await setLayer(callId, viewer, target, layer)
        case .action(.record(_, let take)): await record(callId, take: take)
        case .janus(let server, let message, let owner): await janus(server, message, owner)
        case .serverDown(let server): await lost(callId, server: server)
        case .serverUp: await retryPlacement(callId)
        }
    }

    private func serverEvent(_ index: Int, _ event: JanusServer.Event) async {
        switch event {
        case .up:
            for (id, room) in rooms where room.server == nil { enqueue(id, .serverUp) }
        case .down:
            control[index] = nil
            for (id, room) in rooms where room.server == index { enqueue(id, .serverDown(index)) }
        case .message(let message):
            guard let sender = message.sender, let owner = handles[HandleKey(server: index, handle: sender)] else { return }
            enqueue(owner.callId, .janus(server: index, message, owner))
        }
    }

    // MARK: - the machine's actions

    func join(_ session: SFUMemberSession) async {
        let callId = session.callId
        let user = session.member.user
        var room = rooms[callId] ?? Room(number: roomNumber(for: callId))
        room.take = session.recordingTake
        let previous = room.members[user]
        room.members[user] = Member(
            key: session.member, device: session.device, session: session.session, layers: session.layers)
        rooms[callId] = room
        if let previous { await drop(previous, server: room.server) }
        guard let server = await place(callId) else { return }
        do {
            let handle = try await attach(server)
            handles[HandleKey(server: server, handle: handle)] = Owner(
                callId: callId, user: user, session: session.session, role: .publisher)
            guard update(callId, user, session: session.session, { $0.publisher = handle }) else {
                await detach(handle, on: server)
                return
            }
            var join = VideoRoomRequest(request: "join")
            join.room = rooms[callId]?.number
            join.ptype = "publisher"
            join.display = user.rawValue
            let joined = try await servers[server].request("message", handle: handle, body: join, completion: .event)
            guard let feed = joined.plugindata?.data.id,
                update(callId, user, session: session.session, { $0.feed = feed })
            else { return }
            await subscribe(callId, user, to: joined.plugindata?.data.publishers ?? [])
        } catch {
            logger.error(
                "could not join a member to the call's room",
                metadata: ["call": "\(callId)", "user": "\(user)", "error": "\(error)"])
        }
    }

    /// Changes the member's state if the member is still in the room with this session.
    func update(_ callId: CallID, _ user: UserID, session: Int, _ change: (inout Member) -> Void) -> Bool {
        guard var room = rooms[callId], var member = room.members[user], member.session == session else { return false }
        change(&member)
        room.members[user] = member
        rooms[callId] = room
        return true
    }

    private func leave(_ callId: CallID, _ user: UserID) async {
        guard var room = rooms[callId], let member = room.members.removeValue(forKey: user) else { return }
        rooms[callId] = room
        await drop(member, server: room.server)
    }

    func end(_ callId: CallID) async {
        defer {
            queues[callId]?.finish()
            queues[callId] = nil
        }
        guard let room = rooms.removeValue(forKey: callId) else {
            // A call this run never placed (one a crash cut short): a room of it may be left on
            // any server.
            let number = roomNumber(for: callId)
            for index in servers.indices where await servers[index].isUp {
                try? await destroyRoom(number, on: index)
            }
            return
        }
        guard let server = room.server else { return }
        // Destroying the room ends every PeerConnection in it; the handles go with detach.
        do {
            try await destroyRoom(room.number, on: server)
        } catch {
            logger.info("could not destroy a call's room", metadata: ["call": "\(callId)", "error": "\(error)"])
        }
        for member in room.members.values { await drop(member, server: server) }
    }

    private func relay(_ callId: CallID, _ user: UserID, _ session: Int, _ signal: SendSFUSignalRequest) async {
        guard let room = rooms[callId], let server = room.server, let member = room.members[user],
            member.session == session
        else { return }
        do {
            switch (signal.connection, signal.kind) {
            case (.publish, .offer):
                guard let handle = member.publisher, let sdp = signal.sdp else { return }
                let tracks = PublishedTracks.tracks(inOffer: sdp)
                guard update(callId, user, session: session, { $0.tracks = tracks }) else { return }
                var publish = VideoRoomRequest(request: member.publishing.request)
                if member.publishing == .notYet, let take = room.take {
                    publish.record = true
                    publish.filename = RecordingFiles.base(take: take, user: user, session: session)
                }
                let answer = try await servers[server].request(
                    "message", handle: handle, body: publish,
                    jsep: JanusJSEP(type: "offer", sdp: sdp), completion: .event)
                guard let jsep = answer.jsep, update(callId, user, session: session, { $0.publishing = .published })
                else { return }
                send(
                    SFUSignalEvent(callId: callId, session: session, connection: .publish, kind: .answer, sdp: jsep.sdp),
                    to: member)
            case (.subscribe, .answer):
                guard let handle = member.subscriber, let sdp = signal.sdp else { return }
                _ = try await servers[server].request(
                    "message", handle: handle, body: VideoRoomRequest(request: "start"),
                    jsep: JanusJSEP(type: "answer", sdp: sdp), completion: .event)
                var waiting: [VideoRoomEvent.Publisher] = []
                guard update(callId, user, session: session, { waiting = $0.negotiation.answered() }) else { return }
                if !waiting.isEmpty { await subscribe(callId, user, to: waiting) }
            case (.publish, .candidate), (.subscribe, .candidate):
                guard let candidate = signal.candidate,
                    let handle = signal.connection == .publish ? member.publisher : member.subscriber
                else { return }
                _ = try await servers[server].request(
                    "trickle", handle: handle, candidate: JanusCandidate(candidate), completion: .ack)
            default:
                // `restart` is the machine's (a new session); the other kinds are refused before.
                return
            }
        } catch {
            logger.info(
                "the SFU refused a member's signal",
                metadata: ["call": "\(callId)", "user": "\(user)", "kind": "\(signal.kind)", "error": "\(error)"])
        }
    }

    /// Records every published member into the take's files from now on, or stops (nil); members
    /// who publish later are recorded as they publish (``relay(_:_:_:_:)``).
    private func record(_ callId: CallID, take: Int?) async {
        guard var room = rooms[callId] else { return }
        room.take = take
        rooms[callId] = room
        guard let server = room.server else { return }
        for member in room.members.values {
            guard let handle = member.publisher, member.publishing == .published else { continue }
            var configure = VideoRoomRequest(request: "configure")
            configure.record = take != nil
            configure.filename = take.map { RecordingFiles.base(take: $0, user: member.key.user, session: member.session) }
            do {
                _ = try await servers[server].request("message", handle: handle, body: configure, completion: .event)
            } catch {
                logger.error(
                    "the SFU refused to record a member",
                    metadata: ["call": "\(callId)", "user": "\(member.key.user)", "error": "\(error)"])
            }
        }
    }

    private func setLayer(_ callId: CallID, _ viewer: UserID, _ target: UserID, _ layer: VideoLayer) async {
        guard update(callId, viewer, session: rooms[callId]?.members[viewer]?.session ?? -1, { $0.layers[target] = layer })
        else { return }
        await applyLayers(callId, viewer, only: target)
    }

    /// Tells Janus which substream of each camera the member's subscription forwards, as the
    /// member chose (small when it did not): Janus's own default is the highest. Only `target`'s
    /// cameras when given.
    func applyLayers(_ callId: CallID, _ viewer: UserID, only target: UserID? = nil) async {
        guard let room = rooms[callId], let server = room.server, let member = room.members[viewer],
            let handle = member.subscriber
        else { return }
        var streams: [VideoRoomStreamRequest] = []
        for (stream, mid) in member.subscribed.sorted(by: { $0.value < $1.value }) {
            guard let owner = room.members.values.first(where: { $0.feed == stream.feed }),
                target == nil || owner.key.user == target, let track = owner.tracks[stream.mid],
                let substream = Self.substream(member.layers[owner.key.user] ?? .small, of: track)
            else { continue }
            streams.append(VideoRoomStreamRequest(mid: mid, substream: substream))
        }
        guard !streams.isEmpty else { return }
        var configure = VideoRoomRequest(request: "configure")
        configure.streams = streams
        do {
            _ = try await servers[server].request("message", handle: handle, body: configure, completion: .event)
        } catch {
            logger.info("the SFU refused a layer", metadata: ["call": "\(callId)", "error": "\(error)"])
        }
    }

    /// Janus's simulcast substream for a layer of a camera: 0 is the lowest, the highest is one
    /// less than the layers the camera is sent in. Nil without simulcast (one layer is all there is).
    static func substream(_ layer: VideoLayer, of track: PublishedTrack) -> Int? {
        guard track.source == .camera, track.layers > 1 else { return nil }
        return layer == .big ? track.layers - 1 : 0
    }

}

extension SFUAction {
    var callId: CallID {
        switch self {
        case .join(let session): session.callId
        case .leave(let id, _), .end(let id), .signal(let id, _, _, _), .layer(let id, _, _, _), .record(let id, _): id
        }
    }
}
