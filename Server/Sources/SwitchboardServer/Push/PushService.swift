import Logging
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Delivers the pushes the call engine asks for, through the push services (``PushTransport``:
/// APNs, Web Push, FCM), to every token of the user that the push is for (``CallPush/isFor(_:)``)
/// whose device has no live connection, in the background: the call flow never waits for a push
/// service.
///
/// Per device, not per user: a device that is connected gets its invitation over its socket, so
/// its token is skipped, at the first attempt and at every retry (a device that connects while its
/// push is still being retried is not pushed again; one that connects after the push went out
/// rings once, as the SDK pairs the push and the invitation by call id).
///
/// Per token, whatever the service: a delivery is done; a dead token (APNs 410, BadDeviceToken,
/// DeviceTokenNotForTopic; Web Push 404 and 410; FCM `UNREGISTERED`) is removed; an expired
/// credential (APNs provider token, FCM access token) is replaced once and the push sent again;
/// 429, 5xx and transport errors are retried with backoff (0.5 s, doubling), or after the
/// service's `Retry-After` when that is later, as long as the next attempt falls before the
/// push's expiration (the end of the ringing); other refusals are given up. An invitation is sent only while the user rings: once the engine says the ringing stopped
/// (``PushMessage/Content/ringStopped(_:)``, or a missed call), no attempt of it starts any more
/// (`withdrawn`), and the end of the ringing (or the missed call) goes out only after the
/// invitation's attempts under way have ended, so a device never hears of the end before the
/// invitation.
///
/// Bounded: at most ``maxInFlight`` pushes are being delivered (or waiting to be retried) at once;
/// a push beyond that is dropped and counted (`dropped_overload`): a ringing call still rings on
/// the callee's connected devices and its pending invitation waits for the callee's next login.
final class PushService: Sendable {
    /// How one delivery to one token ended, for metrics and tests.
    struct Delivery: Equatable, Sendable {
        var callId: CallID
        var token: String
        var outcome: String
        /// The push service: `apns`, `web`, `fcm`.
        var service: String = ""
        /// `incomingCall`, `callEnded` or `missedCall`.
        var kind: String = ""
        /// `retrying`: when the next attempt is made (Unix ms, the service's clock).
        var retryAt: Int64? = nil
    }

    private let store: any PushTokenStore
    private let presence: any CallDelivery
    /// The service of each token kind.
    private let transports: [PushTokenKind: any PushTransport]
    private let clock: any SwitchboardClock
    private let metrics: ServerMetrics
    private let logger: Logger
    private let broadcaster = NIOLockedValueBox<[UInt64: AsyncStream<Delivery>.Continuation]>([:])
    private let counter = NIOLockedValueBox<UInt64>(0)
    private let inFlight = NIOLockedValueBox(0)
    /// Invitations being delivered, per call and user, those whose ringing stopped meanwhile, and
    /// the ends of ringing waiting for them. All hold only what is in flight, so ``maxInFlight``
    /// bounds them.
    private let invitations = NIOLockedValueBox(Invitations())
    static let retryBase: Duration = .milliseconds(500)
    let maxInFlight: Int

    private struct Invitations {
        var delivering: [RingKey: Int] = [:]
        var withdrawn: Set<RingKey> = []
        var waiting: [RingKey: [CheckedContinuation<Void, Never>]] = [:]
    }

    init(
        store: any PushTokenStore, presence: any CallDelivery, transports: [any PushTransport],
        clock: any SwitchboardClock, metrics: ServerMetrics, maxInFlight: Int = 10_000, logger: Logger
    ) {
        self.store = store
        self.presence = presence
        var byKind: [PushTokenKind: any PushTransport] = [:]
        for transport in transports {
            for kind in transport.kinds { byKind[kind] = transport }
        }
        self.transports = byKind
        self.clock = clock
        self.metrics = metrics
        self.maxInFlight = maxInFlight
        self.logger = logger
    }

    /// Every delivery outcome from now on (tests watch it).
    var deliveries: AsyncStream<Delivery> {
        let (stream, continuation) = AsyncStream<Delivery>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        let id = counter.withLockedValue { counter in
            counter += 1
            return counter
        }
        broadcaster.withLockedValue { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.broadcaster.withLockedValue { $0[id] = nil } }
        return stream
    }

    private struct RingKey: Hashable {
        var callId: CallID
        var user: UserKey
    }

    /// Whether a push to `token` can reach its device: its service is configured for its app.
    func reaches(_ token: PushToken) -> Bool {
        transports[token.kind]?.isConfigured(for: token.user.app) ?? false
    }

    /// Sends a push in the background; the end of a ringing (told as such or as a missed call)
    /// also withdraws its invitation where it is still being delivered.
    func send(_ message: PushMessage) {
        let push: CallPush
        switch message.content {
        case .ring(let invitation): push = .incomingCall(invitation)
        case .ringStopped(let end): push = .callEnded(end)
        case .missedCall(let missed): push = .missedCall(missed)
        }
        let ring = RingKey(callId: push.callId, user: message.user)
        if push.endsRinging {
            invitations.withLockedValue { state in
                if state.delivering[ring] != nil { state.withdrawn.insert(ring) }
            }
        }
        let services = Set(transports.values.filter { $0.isConfigured(for: message.user.app) }.map(\.name))
        guard !services.isEmpty else {
            metrics.push("not_configured", service: "none")
            logger.debug("no push service configured: push not sent", metadata: ["user": "\(message.user)"])
            return
        }
        let admitted = inFlight.withLockedValue { count -> Bool in
            guard count < maxInFlight else { return false }
            count += 1
            return true
        }
        guard admitted else {
            metrics.push("dropped_overload", service: "none")
            logger.warning("push dropped: too many in flight", metadata: ["user": "\(message.user)"])
            return
        }
        if case .incomingCall = push {
            invitations.withLockedValue { $0.delivering[ring, default: 0] += 1 }
        }
        Task {
            if push.endsRinging { await invitationsDelivered(ring) }
            await deliver(message, push)
            inFlight.withLockedValue { $0 -= 1 }
            guard case .incomingCall = push else { return }
            let waiters = invitations.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
                let left = (state.delivering[ring] ?? 1) - 1
                state.delivering[ring] = left > 0 ? left : nil
                guard left <= 0 else { return [] }
                state.withdrawn.remove(ring)
                return state.waiting.removeValue(forKey: ring) ?? []
            }
            waiters.forEach { $0.resume() }
        }
    }

    /// Returns once no invitation push of this call for this user is being delivered.
    private func invitationsDelivered(_ ring: RingKey) async {
        await withCheckedContinuation { continuation in
            let now = invitations.withLockedValue { state -> Bool in
                guard state.delivering[ring] != nil else { return true }
                state.waiting[ring, default: []].append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    private func withdrawn(_ message: PushMessage, _ push: CallPush) -> Bool {
        guard case .incomingCall = push else { return false }
        let key = RingKey(callId: push.callId, user: message.user)
        return invitations.withLockedValue { $0.withdrawn.contains(key) }
    }

    func shutdown() async {
        var seen = Set<String>()
        for transport in transports.values where seen.insert(transport.name).inserted {
            await transport.shutdown()
        }
    }

    /// How many APNs provider tokens were signed so far.
    var signedTokens: Int {
        get async { await (transports[.voip] as? APNsTransport)?.signedTokens ?? 0 }
    }

    private func deliver(_ message: PushMessage, _ push: CallPush) async {
        let tokens: [PushToken]
        do {
            if let known = message.tokens {
                tokens = known
            } else {
                tokens = try await store.pushTokens(app: message.user.app, users: [message.user.user])[message.user.user] ?? []
            }
        } catch {
            metrics.push("storage_failed", service: "none")
            logger.error("push tokens unreadable", metadata: ["error": "\(error)"])
            return
        }
        await withTaskGroup(of: Void.self) { group in
            for token in tokens where push.isFor(token) {
                guard let transport = transports[token.kind] else { continue }
                group.addTask { await self.deliver(message, push, to: token, transport) }
            }
        }
    }

    private func deliver(
        _ message: PushMessage, _ push: CallPush, to token: PushToken, _ transport: any PushTransport
    ) async {
        var attempt = 0
        var refreshed = false
        func record(_ outcome: String, retryAt: Int64? = nil) {
            self.record(push, token, transport.name, outcome, retryAt: retryAt)
        }
        while true {
            // Every attempt, the first included: an invitation goes out only while the user rings,
            // and no push goes to a device that is connected (it has the event already).
            if withdrawn(message, push) {
                record("withdrawn")
                return
            }
            if presence.connectedDevices(message.user).contains(token.device) {
                record("connected")
                return
            }
            switch await transport.send(push, to: token, expiration: message.expiration) {
            case .delivered:
                record("delivered")
                return
            case .tokenInvalid(let reason):
                try? await store.removePushToken(token.token)
                logger.info(
                    "push token removed", metadata: ["reason": "\(reason)", "user": "\(token.user)", "service": "\(transport.name)"])
                record("token_removed")
                return
            case .credentialExpired(let rejected) where !refreshed:
                refreshed = true
                guard await transport.refresh(app: token.user.app, after: rejected) else {
                    record("signing_failed")
                    return
                }
                record("credential_refreshed")
            case .retryable(let reason, let retryAfter):
                // The backoff, or the service's Retry-After when it asks for longer (FCM: "wait
                // at least that long"; retrying sooner only earns another 429).
                let backoff = (Self.retryBase * (1 << min(attempt, 10))).milliseconds
                let next = clock.now() + max(backoff, retryAfter ?? 0)
                attempt += 1
                guard next < message.expiration else {
                    record("gave_up")
                    return
                }
                // The next attempt's time is fixed before anyone hears of this one.
                record("retrying", retryAt: next)
                logger.debug("push retried", metadata: ["reason": "\(reason)", "service": "\(transport.name)"])
                guard (try? await clock.sleep(until: next)) != nil else { return }
            case .credentialExpired:
                record("rejected")
                return
            case .rejected(let status, let reason):
                logger.warning(
                    "push refused", metadata: ["status": "\(status)", "reason": "\(reason)", "service": "\(transport.name)"])
                record("rejected")
                return
            case .notSent(let reason):
                record(reason)
                return
            }
        }
    }

    private func record(_ push: CallPush, _ token: PushToken, _ service: String, _ outcome: String, retryAt: Int64? = nil) {
        metrics.push(outcome, service: service)
        let delivery = Delivery(
            callId: push.callId, token: token.token, outcome: outcome, service: service, kind: push.kind, retryAt: retryAt)
        for continuation in broadcaster.withLockedValue({ Array($0.values) }) { continuation.yield(delivery) }
    }
}

extension CallPush {
    /// Whether the push tells that a ringing ended: its end, or the missed call that replaces it.
    var endsRinging: Bool {
        switch self {
        case .incomingCall: false
        case .callEnded, .missedCall: true
        }
    }
}
