import Foundation
import Logging
import SwitchboardProtocol

/// Runs the ``CallStateMachine``: feeds it events with the clock's time, performs its actions in
/// order (replies, events to devices, timers, record writes) and turns due timers into events.
///
/// Actor isolation gives the machine one event at a time. The machine's answer (``CallOutput/reply``)
/// goes through the `reply` closure before any of its actions, inside the same critical section, so
/// a client always receives the answer to its request before the events that request caused.
actor CallEngine {
    private var machine: CallStateMachine
    private var timers = TimerQueue<TimerKey>()
    private var sleeper: Task<Void, Never>?
    private var sleeperDeadline: Int64?
    private var sleeperGeneration = 0
    /// Set by ``suspend()``: the node is shutting down and its calls are journaled.
    private var suspended = false
    private let delivery: any CallDelivery
    private let storage: any SwitchboardStorage
    /// Who blocks anyone: read by every new call and invitation (``resolve(_:)``).
    let blockers = BlockerIndex()
    /// Which devices may ring by push: read by every new call and invitation (``resolve(_:)``).
    let pushReach = PushReachIndex()
    private let limiter: RateLimiter
    private let limits: RateLimits
    private let writer: PersistenceWriter
    private let push: PushService
    /// Which apps want which webhook events: the others' events are not written at all.
    private let webhooks: WebhookDirectory
    private let metrics: ServerMetrics
    private let clock: any SwitchboardClock
    private let logger: Logger
    /// The SFU's rooms, when group calls go through one.
    private let sfu: SFURooms?

    /// Whether so many recordings wait for conversion that new ones are refused (``RecordingWorker/isBacklogged``).
    let recordingBacklogged = LockedCallback<@Sendable () -> Bool>({ false })

    init(
        configuration: CallStateMachine.Configuration, delivery: any CallDelivery, storage: any SwitchboardStorage,
        limiter: RateLimiter, limits: RateLimits, writer: PersistenceWriter,
        push: PushService, webhooks: WebhookDirectory = WebhookDirectory(), metrics: ServerMetrics,
        sfu: SFURooms? = nil, clock: any SwitchboardClock, logger: Logger
    ) {
        self.sfu = sfu
        self.machine = CallStateMachine(configuration: configuration)
        self.delivery = delivery
        self.storage = storage
        self.limiter = limiter
        self.limits = limits
        self.writer = writer
        self.push = push
        self.webhooks = webhooks
        self.metrics = metrics
        self.clock = clock
        self.logger = logger
    }

    /// Applies one event and performs its actions.
    ///
    /// - Parameter reply: called (synchronously, before any event is sent) with the answer for
    ///   the request that caused the event.
    /// - Returns: the reply, when the event produced one.
    @discardableResult
    func handle(_ event: CallEvent, reply: (@Sendable (CallReply) -> Void)? = nil) async -> CallReply? {
        let resolved: Resolved
        switch await resolve(event) {
        case .success(let found): resolved = found
        case .failure(let error):
            let refusal = CallReply.failure(error)
            reply?(refusal)
            return refusal
        }
        guard !suspended else {
            // The calls are in the journal as they were: nothing may change them any more.
            guard event.isRequest else { return nil }
            let refusal = CallReply.failure(SwitchboardError(.shuttingDown, "the server is restarting: reconnect"))
            reply?(refusal)
            return refusal
        }
        machine.webhookApps = webhooks.apps
        let output = machine.handle(resolved.event, facts: resolved.facts, now: clock.now())
        return perform(output, reply: reply, tokens: resolved.tokens)
    }

    /// An event with what the engine looked up for it.
    private struct Resolved {
        var event: CallEvent
        var facts = CallFacts()
        /// The push tokens read to decide who can be rung by push, handed to the pushes that follow.
        var tokens: [UserID: [PushToken]] = [:]
    }

    /// Looks up what only the engine can know at the moment of the decision (``CallFacts``): which
    /// invitees block the inviter, which have a connected device (read last, after any wait), which
    /// of the others can be rung through a push token, and whether a user joining a call is in its
    /// chat group; and refuses what the limits kept here refuse.
    private func resolve(_ event: CallEvent) async -> Result<Resolved, SwitchboardError> {
        // Per-user limits are kept here, where every call request of the cluster passes.
        let now = clock.now()
        switch event {
        case .start(let command)
        where (command.request.params?.record == true || command.settings.recording.policy == .always)
            && recordingBacklogged.function():
            return .failure(SwitchboardError(.recordingUnavailable, "too many recordings wait for conversion"))
        case .setRecording(let command) where command.start && recordingBacklogged.function():
            return .failure(SwitchboardError(.recordingUnavailable, "too many recordings wait for conversion"))
        case .start(let command):
            // The database is behind: a new call would only add records it cannot take yet. Here,
            // where the writer is (the leader's, in a cluster), not on the node the caller reached.
            if writer.isBacklogged {
                return .failure(SwitchboardError(.storageUnavailable, "records cannot be written now; try again shortly"))
            }
            if let limited = limiter.take(limits.invitationsPerUser, "invitations", command.caller.description, now: now) {
                return .failure(limited)
            }
        case .invite(let command):
            if let limited = limiter.take(
                limits.invitationsPerUser, "invitations", command.command.user.description, now: now)
            {
                return .failure(limited)
            }
        case .statusReport(let command, _):
            if let limited = limiter.take(limits.statusReportsPerUser, "status", command.user.description, now: now) {
                return .failure(limited)
            }
        default:
            break
        }
        do {
            switch event {
            case .start(let command):
                let app = command.caller.app
                let invitees = Set(command.request.participantIds.filter(\.isValid))
                let (facts, tokens) = try await inviteeFacts(invitees, inviter: command.caller.user, app: app, now: now)
                return .success(Resolved(event: event, facts: facts, tokens: tokens))
            case .invite(let command):
                let app = command.command.user.app
                let invitees = Set(command.invitees.filter(\.isValid))
                let (facts, tokens) = try await inviteeFacts(invitees, inviter: command.command.user.user, app: app, now: now)
                return .success(Resolved(event: event, facts: facts, tokens: tokens))
            case .join(let join):
                let user = join.command.user
                var facts = CallFacts()
                if let group = machine.chatGroup(of: join.command.callId, app: user.app) {
                    facts.isChatGroupMember = try await storage.isChatGroupMember(app: user.app, group: group, user: user.user)
                }
                return .success(Resolved(event: event, facts: facts))
            default:
                return .success(Resolved(event: event))
            }
        } catch let error as SwitchboardError {
            return .failure(error)
        } catch {
            logger.error("storage failed", metadata: ["error": "\(error)"])
            return .failure(SwitchboardError(.storageUnavailable))
        }
    }

    /// Of `invitees`, those with no invitation left to receive for now
    /// (``RateLimits/invitationsPerCallee``), looked at without taking one: the machine decides
    /// who rings (after its checks, the busy policy and blocks) and counts those
    /// (``CallAction/countInvitation(_:)``), in the same turn of this actor as this look.
    private func overBudget(_ invitees: Set<UserID>, app: SdkAppID, now: Int64) -> Set<UserID> {
        invitees.filter { invitee in
            limiter.check(limits.invitationsPerCallee, Self.invitationsReceived, UserKey(app: app, user: invitee).description, now: now)
                != nil
        }
    }

    /// The limiter's name for the invitations a user received.
    private static let invitationsReceived = "invitations-received"

    /// How long each invitee who blocks the caller seems to ring before declining, drawn from the
    /// configured range (see ``CallStateMachine/Member/Phase/screened(declineAt:deadline:)``).
    private func declineDelays(_ blockers: Set<UserID>) -> [UserID: Int64] {
        let range = machine.configuration.declineDelays
        return Dictionary(uniqueKeysWithValues: blockers.map { ($0, Int64.random(in: range)) })
    }

    /// The users a push can ring: those with a device that has no live connection and a token
    /// that rings (``PushToken/rings``) through a push service the app has credentials for. Push
    /// is decided per device: a user with a browser tab open and a backgrounded iPhone rings on
    /// both, the tab over its socket, the iPhone by push.
    private func ringable(_ tokens: [UserID: [PushToken]], app: SdkAppID) -> Set<UserID> {
        Set(
            tokens.filter { user, tokens in
                let connected = delivery.connectedDevices(UserKey(app: app, user: user))
                return tokens.contains { $0.rings && !connected.contains($0.device) && push.reaches($0) }
            }.keys)
    }

    /// Who among `invitees` blocks the inviter, is online, can be rung by push (with the tokens
    /// read to decide it), has no invitation left to receive; presence and budgets are read last,
    /// after the waits. Tokens are read only for the invitees with a device that may ring by push
    /// and is not connected (``PushReachIndex``).
    private func inviteeFacts(
        _ invitees: Set<UserID>, inviter: UserID, app: SdkAppID, now: Int64
    ) async throws -> (CallFacts, tokens: [UserID: [PushToken]]) {
        var facts = CallFacts()
        facts.blockedBy = try await usersBlocking(inviter, among: invitees, app: app)
        let delivery = self.delivery
        let unconnected = pushReach.unconnected(among: invitees, app: app) { delivery.connectedDevices($0) }
        let tokens = try await pushTokens(app: app, of: unconnected)
        facts.online = invitees.filter { delivery.isOnline(UserKey(app: app, user: $0)) }
        facts.pushable = ringable(tokens, app: app)
        facts.declineDelays = declineDelays(facts.blockedBy)
        facts.overBudget = overBudget(invitees, app: app, now: now)
        return (facts, tokens)
    }

    /// Which of `invitees` block `caller`: the database is asked about those in ``blockers`` only.
    private func usersBlocking(_ caller: UserID, among invitees: Set<UserID>, app: SdkAppID) async throws -> Set<UserID> {
        let candidates = blockers.blockers(among: invitees, app: app)
        guard !candidates.isEmpty else { return [] }
        return try await storage.usersBlocking(caller, among: candidates, app: app)
    }

    private func pushTokens(app: SdkAppID, of users: Set<UserID>) async throws -> [UserID: [PushToken]] {
        guard !users.isEmpty else { return [:] }
        return try await storage.pushTokens(app: app, users: users.sorted())
    }

    /// Number of calls in progress.
    var activeCallCount: Int { machine.calls.count }

    /// Drops every call and timer, who blocks anyone and which devices may ring by push, and takes
    /// requests again: this node no longer leads its cluster (the calls are in the journal, the
    /// blocks and push tokens in their tables, for the node that leads next).
    func reset() {
        if let sfu { Task { await sfu.reset() } }
        blockers.replace(with: [])
        pushReach.replace(with: [])
        machine = CallStateMachine(configuration: machine.configuration)
        timers = TimerQueue()
        sleeper?.cancel()
        sleeper = nil
        sleeperDeadline = nil
        suspended = false
    }

    /// The users who are in (or rung by) a call in progress.
    var usersInCalls: Set<UserKey> { Set(machine.roster.callsByUser.keys) }

    /// Stops changing calls, for a graceful shutdown: timers stop, every call in progress is
    /// journaled as it is now, and from then on requests are refused (`shuttingDown`). The next
    /// start (this node again, or another node of the cluster) restores the calls from the journal.
    func suspend() {
        suspended = true
        sleeper?.cancel()
        sleeper = nil
        sleeperDeadline = nil
        for call in machine.calls.values { journal(call) }
    }

    @discardableResult
    private func perform(
        _ output: CallOutput, reply: (@Sendable (CallReply) -> Void)?, tokens: [UserID: [PushToken]] = [:]
    ) -> CallReply? {
        if let answer = output.reply {
            reply?(answer)
            if case .started = answer { metrics.callsStarted.increment() }
        }
        var timersChanged = false
        // Each call's webhook events go with the write that stores its change: its end, or its
        // journal save (the machine journals every call it reports on).
        var notices: [CallID: [WebhookNotice]] = [:]
        // Consecutive sends of the same event (a broadcast) are encoded once, and only for a
        // recipient who is connected.
        var lastEvent: ServerEvent?
        var lastFrame: String?
        for action in output.actions {
            switch action {
            case .send(let event, let recipient):
                if event != lastEvent {
                    lastEvent = event
                    lastFrame = nil
                }
                delivery.send(
                    {
                        let frame = lastFrame ?? Self.frame(event)
                        lastFrame = frame
                        return frame
                    }, to: recipient)
            case .setTimer(let key, let deadline):
                timers.set(key, at: deadline)
                timersChanged = true
            case .cancelTimer(let key):
                timers.cancel(key)
                timersChanged = true
            case .writeRecords(let callId, let drafts):
                writer.submit(ended: callId, records: drafts, events: notices.removeValue(forKey: callId) ?? [])
                metrics.callsEnded.increment()
            case .countInvitation(let key):
                _ = limiter.take(limits.invitationsPerCallee, Self.invitationsReceived, key.description, now: clock.now())
            case .notify(let notice):
                if let callId = notice.callId, webhooks.wants(notice.app, notice.data.type) {
                    notices[callId, default: []].append(notice)
                }
            case .push(var message):
                message.tokens = message.tokens ?? tokens[message.user.user]
                push.send(message)
            case .sfu(let action):
                sfu?.perform(action)
            case .saveRecording(let take):
                writer.submit(recording: take)
            }
        }
        for call in machine.takeJournalChanges() {
            journal(call, events: notices.removeValue(forKey: call.id) ?? [])
        }
        for events in notices.values {
            logger.error("webhook events of a call neither saved nor ended", metadata: ["events": "\(events.count)"])
            writer.submit(events: events)
        }
        if timersChanged { scheduleSleeper() }
        return output.reply
    }

    /// Saves a call in progress to the journal (encoded by the writer, if it still matters then),
    /// with the webhook events of its change.
    private func journal(_ call: CallStateMachine.Call, events: [WebhookNotice] = []) {
        writer.submit(journal: call.id, app: call.app, updatedAt: clock.now(), events: events) { Self.journalEntry(call) }
    }

    /// A call as the journal stores it (JSON, written by ``WireEncoder``).
    static func journalEntry(_ call: CallStateMachine.Call) -> Data? {
        try? SwitchboardJSON.encode(call)
    }

    /// A call read back from the journal.
    static func journaledCall(_ entry: Data) throws -> CallStateMachine.Call {
        try SwitchboardJSON.decode(CallStateMachine.Call.self, from: entry)
    }

    /// Takes back the calls the journal holds after a restart (a deploy, a crash). A node that was
    /// down no longer than the reconnect grace restores them: devices that come back resume their
    /// calls (``CallStateMachine/restore(_:now:)``). After a longer outage the calls are ended with
    /// `endByServer` as of when the node stopped (``CallStateMachine/recover(_:endTime:)``).
    ///
    /// - Parameter lastAlive: when the node was last known alive (it notes that every few seconds,
    ///   and once more at the end of a graceful shutdown).
    func recover(_ entries: [JournalEntry], lastAlive: Int64?, grace: Int64) {
        let now = clock.now()
        for entry in entries {
            guard let call = try? Self.journaledCall(entry.state) else {
                logger.error("unreadable journal entry, dropped", metadata: ["call": "\(entry.callId)"])
                writer.submit(ended: entry.callId, records: [])
                continue
            }
            let stoppedAt = min(now, max(entry.updatedAt, lastAlive ?? entry.updatedAt))
            if now - stoppedAt <= grace {
                machine.webhookApps = webhooks.apps
                perform(machine.restore(call, now: now), reply: nil)
                logger.notice("restored a call from the journal", metadata: ["call": "\(call.id)"])
            } else {
                machine.webhookApps = webhooks.apps
                perform(machine.recover(call, endTime: stoppedAt), reply: nil)
                logger.notice("ended a call the last run left open", metadata: ["call": "\(call.id)"])
            }
        }
    }

    static func frame(_ event: ServerEvent) -> String {
        // Encoding wire types made of strings, numbers and arrays cannot fail.
        (try? SwitchboardJSON.encodeString(event)) ?? "{}"
    }

    // MARK: timers

    /// When the sleeper wakes next (nil: none is armed).
    var wakeDeadline: Int64? { sleeperDeadline }

    /// Keeps one task sleeping until the earliest deadline, or earlier: a sleeper whose timers went
    /// away (a call answered before its ring timeout) is left to wake, find nothing due and arm the
    /// next, instead of a task and a system timer made and cancelled for every call.
    private func scheduleSleeper() {
        guard let next = timers.earliestDeadline() else { return }
        if let current = sleeperDeadline, current <= next { return }
        sleeper?.cancel()
        sleeperGeneration += 1
        let generation = sleeperGeneration
        sleeperDeadline = next
        let clock = self.clock
        sleeper = Task {
            do {
                try await clock.sleep(until: next)
            } catch {
                return
            }
            self.timersDue(generation: generation)
        }
    }

    private func timersDue(generation: Int) {
        guard generation == sleeperGeneration else { return }
        sleeper = nil
        sleeperDeadline = nil
        let now = clock.now()
        machine.webhookApps = webhooks.apps
        for key in timers.popDue(now: now) {
            perform(machine.handle(.timerFired(key), now: now), reply: nil)
        }
        scheduleSleeper()
    }
}
