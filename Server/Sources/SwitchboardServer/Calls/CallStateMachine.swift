import SwitchboardProtocol

/// Every call rule of SPEC §3 in one value: events in, the answer and the actions out, no I/O.
///
/// The machine holds all calls of this node, because several rules look across calls (busy, call
/// waiting, one call per device). Its owner, ``CallEngine``, feeds it events with the current time,
/// delivers the answer, then performs the actions in order (events, timers, record writes, pushes).
/// Tests feed events and compare the output.
///
/// Its parts, one idea each: ``Call`` and ``Member`` (one call and its members' phases),
/// ``CallRoster`` (who is in which call), ``EndedCalls`` (the memory of ended calls), and the
/// handlers in `CallStateMachine+*.swift`: validation, inviting, answering, ending, devices, moving,
/// relays (device state, media signals, status) and media-type changes. ``handle(_:now:)`` routes.
struct CallStateMachine: Sendable {
    struct Configuration: Sendable {
        /// How long a member's dropped device may take to come back before the server ends the
        /// member's part (`endByServer`).
        var reconnectGrace: Int64 = 15_000
        /// How long the peer has to answer a media-type change.
        var mediaChangeTimeout = Int64(CallLimits.mediaChangeTimeoutSeconds) * 1000
        /// How long an ended call is remembered, to answer `callAlreadyEnded` instead of `callNotFound`.
        var endedCallRetention: Int64 = 10 * 60_000
        /// The most ended calls remembered at once.
        var maxEndedCalls = 100_000
        /// The bytes of media signals (their `sdp` and `candidate` fields) one member may relay in
        /// one call: a token bucket per member, on the machine's time; nil: unbounded. A signal
        /// over the budget is not relayed and is answered `rateLimited` with the wait.
        var relayBytes: RateLimit? = RateLimits().relayBytesPerMember
        /// How long a screened member rings before declining (ms): the engine draws each from
        /// this range, like a person who looks at the phone and declines.
        var declineDelays: ClosedRange<Int64> = 3_000...12_000
        /// Group calls' media goes through an SFU (the server has one); otherwise they are a mesh.
        var sfu = false
        /// How long an offer to move a call to another device stands (ms).
        var moveOfferTimeout: Int64 = 30_000
        /// The server can record calls: it has an SFU and a recordings directory.
        var recording = false

        init(reconnectGrace: Int64 = 15_000) {
            self.reconnectGrace = reconnectGrace
        }
    }

    let configuration: Configuration
    /// The calls in progress.
    var calls: [CallID: Call] = [:]
    var roster = CallRoster()
    var ended: EndedCalls
    /// The apps that have a webhook endpoint now (the owner keeps it up to date): the events of
    /// other apps' calls are numbered but not made (``notify(of:now:out:_:)``).
    var webhookApps: Set<SdkAppID> = []
    /// Calls whose membership changed since the owner last journaled them.
    private var journalPending: [CallID] = []
    private var journalPendingSet: Set<CallID> = []

    init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        ended = EndedCalls(retention: configuration.endedCallRetention, limit: configuration.maxEndedCalls)
    }

    /// Applies one event at time `now` (Unix ms), decided on what the engine looked up for it
    /// (`facts`: placing a call, inviting and joining need them), and returns the answer and what
    /// to do, in order.
    mutating func handle(_ event: CallEvent, facts: CallFacts = CallFacts(), now: Int64) -> CallOutput {
        ended.forget(now: now)
        var out = CallOutput()
        switch event {
        case .start(let command):
            start(command, facts, now: now, out: &out)
        case .invite(let command):
            invite(command, facts, now: now, out: &out)
        case .join(let command):
            join(command, facts, now: now, out: &out)
        case .accept(let command):
            accept(command, now: now, out: &out)
        case .reject(let command):
            reject(command, now: now, out: &out)
        case .hangup(let command):
            hangup(command, now: now, out: &out)
        case .updateDevice(let command, let microphoneOn, let cameraOn, let screenSharing):
            updateDevice(command, microphoneOn: microphoneOn, cameraOn: cameraOn, screenSharing: screenSharing, out: &out)
        case .changeMediaType(let command, let mediaType, let transaction):
            changeMediaType(command, mediaType, transaction, now: now, out: &out)
        case .replyMediaType(let command, let transaction, let agree):
            replyMediaType(command, transaction, agree: agree, now: now, out: &out)
        case .cancelMediaType(let command, let transaction):
            cancelMediaType(command, transaction, now: now, out: &out)
        case .statusReport(let command, let report):
            statusReport(command, report, now: now, out: &out)
        case .mediaSignal(let command, let signal):
            mediaSignal(command, signal, now: now, out: &out)
        case .timerFired(let key):
            timerFired(key, now: now, out: &out)
        case .endByServer(let callId):
            endByServer(callId, now: now, out: &out)
        case .deviceOnline(let user, let device):
            deviceOnline(user, device, now: now, out: &out)
        case .deviceOffline(let user, let device):
            deviceOffline(user, device, now: now, grace: configuration.reconnectGrace, out: &out)
        case .deviceLost(let user, let device, let grace):
            deviceOffline(user, device, now: now, grace: grace, out: &out)
        case .logout(let user, let device):
            logout(user, device, now: now, out: &out)
        case .sfuSignal(let command, let signal):
            sfuSignal(command, signal, now: now, out: &out)
        case .videoLayer(let command, let request):
            videoLayer(command, request, now: now, out: &out)
        case .sfuRestart(let callId, let user):
            sfuRestart(callId, user, now: now, out: &out)
        case .offerMove(let command, let target):
            offerMove(command, to: target, now: now, out: &out)
        case .take(let command):
            take(command, now: now, out: &out)
        case .setRecording(let command):
            setRecording(command, now: now, out: &out)
        }
        return out
    }

    /// The calls in progress whose membership changed since the last call, for the journal.
    mutating func takeJournalChanges() -> [Call] {
        defer {
            journalPending = []
            journalPendingSet = []
        }
        return journalPending.compactMap { calls[$0] }
    }

    /// Takes back a call the journal kept across a restart (a deploy, a crash, another node taking
    /// over): members stay where they were; each joined member's device counts as dropped, with
    /// the reconnect grace from `now` (its owner comes back and resumes, as after any drop); ringing
    /// members ring until their original deadline; an open media-type change is dropped (nobody
    /// could answer it meanwhile; its requester asks again).
    mutating func restore(_ journaled: Call, now: Int64) -> CallOutput {
        guard calls[journaled.id] == nil, ended[journaled.id] == nil else { return CallOutput() }
        var call = journaled
        var out = CallOutput()
        call.mediaChange = nil
        for index in call.members.indices {
            let member = call.members[index]
            switch member.phase {
            case .ringing(_, let deadline):
                roster.add(call.key(member), to: call.id)
                out.append(.setTimer(.ring(call.id, member.userId), at: deadline))
            case .screened(let declineAt, let deadline):
                out.append(.setTimer(.ring(call.id, member.userId), at: min(declineAt, deadline)))
            case .joined(let presence):
                roster.add(call.key(member), to: call.id)
                if let offer = presence.moveOffer {
                    out.append(.setTimer(.moveOffer(call.id, member.userId), at: offer.expiresAt))
                }
                call.members[index].updatePresence {
                    $0.isDown = true
                    $0.quality = .down
                }
                out.append(.setTimer(.reconnectGrace(call.id, member.userId), at: now + configuration.reconnectGrace))
            case .left:
                break
            }
        }
        calls[call.id] = call
        return out
    }

    /// Ends a call found in the journal after a restart that took longer than the reconnect grace:
    /// with `endByServer` at `endTime` (about when the server stopped), records for every member,
    /// and remembered so that its members' devices hear how it ended when they come back.
    mutating func recover(_ journaled: Call, endTime: Int64) -> CallOutput {
        guard calls[journaled.id] == nil, ended[journaled.id] == nil else { return CallOutput() }
        var call = journaled
        for member in call.members where member.isReached {
            roster.add(call.key(member), to: call.id)
        }
        var out = CallOutput()
        endCall(&call, reason: .endByServer, by: nil, now: endTime, out: &out)
        store(call, now: endTime, out: &out)
        // Its room may outlive the run that made it (a crash): the rooms drop whatever is left.
        if call.media == .sfu { out.append(.sfu(.end(call.id))) }
        // Nobody is connected yet: only the timers to cancel and the records remain.
        out.actions.removeAll { if case .send = $0 { true } else { false } }
        return out
    }

    /// The chat group of a call in progress in `app`.
    func chatGroup(of callId: CallID, app: SdkAppID) -> ChatGroupID? {
        calls[callId].flatMap { $0.app == app ? $0.chatGroupId : nil }
    }

    /// Broken rules, for tests and the fuzzer; empty when the state is consistent. (What the types
    /// rule out, such as a joined member without a device, is not checked.)
    func invariantViolations() -> [String] {
        var problems: [String] = []
        var expected: [UserKey: Set<CallID>] = [:]
        for (id, call) in calls {
            if call.isEnded { problems.append("\(id) is ended but still stored") }
            if call.isOver {
                problems.append("\(id) should have ended: \(call.joinedCount) joined, \(call.ringingCount) ringing")
            }
            if call.startTime == nil && !call.members.contains(where: { $0.isCaller && $0.isJoined }) {
                problems.append("\(id) is not connected and its caller is gone")
            }
            if let change = call.mediaChange, call.type != .oneToOne || call.index(of: change.requester) == nil {
                problems.append("\(id) has a media change it cannot have")
            }
            for member in call.members where member.isReached {
                expected[call.key(member), default: []].insert(id)
            }
        }
        for (user, ids) in expected {
            let joined = ids.filter { calls[$0]?.members.first { $0.userId == user.user }?.isJoined == true }
            if joined.count > 1 { problems.append("\(user) is joined in \(joined.count) calls") }
        }
        if expected != roster.callsByUser {
            problems.append("the user index does not match the calls")
        }
        return problems
    }

    // MARK: - shared by the handlers

    func findCall(_ callId: CallID, app: SdkAppID, user: UserID) -> Result<Call, SwitchboardError> {
        guard let call = calls[callId], call.app == app else {
            if let ended = ended[callId], ended.app == app {
                return .failure(SwitchboardError(ended.members[user] != nil ? .callAlreadyEnded : .notInCall))
            }
            return .failure(SwitchboardError(.callNotFound))
        }
        return .success(call)
    }

    /// The calls other than `callId` in which `user` is joined, in id order.
    func joinedCalls(of user: UserKey, except callId: CallID) -> [CallID] {
        roster.calls(of: user).sorted().filter { id in
            id != callId && calls[id].flatMap { call in call.index(of: user.user).map { call.members[$0].isJoined } } == true
        }
    }

    /// Saves a changed call; an ended one is forgotten (but remembered as ended) and its records written.
    mutating func store(_ changed: Call, now: Int64, out: inout CallOutput) {
        var call = changed
        reconcileRecording(&call, now: now, out: &out)
        reconcileSFU(&call, previous: calls[call.id], out: &out)
        guard call.isEnded else {
            calls[call.id] = call
            markForJournal(call.id)
            return
        }
        calls[call.id] = nil
        ended.remember(call, at: now)
        // Also for ephemeral calls (without records): the end removes the call from the journal.
        let records = call.isEphemeral ? [] : call.records(now: now)
        var reported = call
        for draft in records {
            notify(of: &reported, now: now, out: &out) { _ in
                .recordWritten(WebhookRecordWritten(userId: draft.owner.user, record: draft.record))
            }
        }
        out.append(.writeRecords(call.id, records))
    }

    mutating func markForJournal(_ callId: CallID) {
        if journalPendingSet.insert(callId).inserted { journalPending.append(callId) }
    }
}
