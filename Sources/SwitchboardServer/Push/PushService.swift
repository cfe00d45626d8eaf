import Logging
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Delivers the pushes the call engine asks for, to every token of the user of the kind the push
/// needs (invitations to VoIP tokens, missed-call alerts to alert tokens) whose device has no live
/// connection, in the background: the call flow never waits for APNs.
///
/// Per device, not per user: a device that is connected gets its invitation over its socket, so
/// its token is skipped, at the first attempt and at every retry (a device that connects while its
/// push is still being retried is not pushed again; one that connects after the push went out
/// rings once, as the SDK pairs the push and the invitation by call id).
///
/// Per token: a delivery is done; a dead token (410, BadDeviceToken, DeviceTokenNotForTopic) is
/// removed; an expired provider token is replaced once and the push sent again; 429, 5xx and
/// transport errors are retried with backoff (0.5 s, doubling) as long as the next attempt falls
/// before the push's expiration (the end of the ringing); other refusals are given up. An
/// invitation is sent only while the user rings: once the engine says the ringing stopped
/// (``PushMessage/Content/ringStopped(_:)``), no attempt of it starts any more (`withdrawn`).
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
    }

    private let store: any PushTokenStore
    private let presence: any CallDelivery
    private let apns: APNsClient?
    private let clock: any SwitchboardClock
    private let metrics: ServerMetrics
    private let logger: Logger
    private let broadcaster = NIOLockedValueBox<[UInt64: AsyncStream<Delivery>.Continuation]>([:])
    private let counter = NIOLockedValueBox<UInt64>(0)
    private let inFlight = NIOLockedValueBox(0)
    /// Invitations being delivered, per call and user, and those whose ringing stopped meanwhile.
    /// Both hold only what is in flight, so ``maxInFlight`` bounds them.
    private let invitations = NIOLockedValueBox<(delivering: [RingKey: Int], withdrawn: Set<RingKey>)>(([:], []))
    static let retryBase: Duration = .milliseconds(500)
    let maxInFlight: Int

    init(
        store: any PushTokenStore, presence: any CallDelivery, apns: APNsClient?, clock: any SwitchboardClock,
        metrics: ServerMetrics, maxInFlight: Int = 10_000, logger: Logger
    ) {
        self.store = store
        self.presence = presence
        self.apns = apns
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

    /// Sends a push in the background, or withdraws an invitation still being delivered.
    func send(_ message: PushMessage) {
        let notification: APNsNotification
        switch message.content {
        case .ringStopped(let callId):
            let key = RingKey(callId: callId, user: message.user)
            invitations.withLockedValue { state in
                if state.delivering[key] != nil { state.withdrawn.insert(key) }
            }
            return
        case .ring(let push):
            guard let made = make({ try .ring(push) }) else { return }
            notification = made
        case .missedCall(let push):
            guard let made = make({ try .missedCall(push) }) else { return }
            notification = made
        }
        guard let apns else {
            metrics.push("not_configured")
            logger.debug("no APNs configured: push not sent", metadata: ["user": "\(message.user)"])
            return
        }
        let admitted = inFlight.withLockedValue { count -> Bool in
            guard count < maxInFlight else { return false }
            count += 1
            return true
        }
        guard admitted else {
            metrics.push("dropped_overload")
            logger.warning("push dropped: too many in flight", metadata: ["user": "\(message.user)"])
            return
        }
        let ring = RingKey(callId: notification.callId, user: message.user)
        if notification.kind == .voip {
            invitations.withLockedValue { $0.delivering[ring, default: 0] += 1 }
        }
        Task {
            await deliver(message, notification, apns)
            inFlight.withLockedValue { $0 -= 1 }
            guard notification.kind == .voip else { return }
            invitations.withLockedValue { state in
                let left = (state.delivering[ring] ?? 1) - 1
                state.delivering[ring] = left > 0 ? left : nil
                if left <= 0 { state.withdrawn.remove(ring) }
            }
        }
    }

    /// The body of a push; one that cannot be encoded (never expected) is counted and dropped.
    private func make(_ notification: () throws -> APNsNotification) -> APNsNotification? {
        do {
            return try notification()
        } catch {
            metrics.push("encoding_failed")
            logger.error("push not encoded", metadata: ["error": "\(error)"])
            return nil
        }
    }

    private func withdrawn(_ message: PushMessage, _ notification: APNsNotification) -> Bool {
        guard notification.kind == .voip else { return false }
        let key = RingKey(callId: notification.callId, user: message.user)
        return invitations.withLockedValue { $0.withdrawn.contains(key) }
    }

    func shutdown() async {
        await apns?.shutdown()
    }

    /// How many provider tokens were signed so far.
    var signedTokens: Int {
        get async { await apns?.signer.signedCount ?? 0 }
    }

    private func deliver(_ message: PushMessage, _ notification: APNsNotification, _ apns: APNsClient) async {
        let tokens: [PushToken]
        do {
            if let known = message.tokens {
                tokens = known
            } else {
                tokens = try await store.pushTokens(app: message.user.app, users: [message.user.user])[message.user.user] ?? []
            }
        } catch {
            metrics.push("storage_failed")
            logger.error("push tokens unreadable", metadata: ["error": "\(error)"])
            return
        }
        await withTaskGroup(of: Void.self) { group in
            for token in tokens where token.kind == notification.kind {
                group.addTask { await self.deliver(message, notification, to: token, apns) }
            }
        }
    }

    private func deliver(
        _ message: PushMessage, _ notification: APNsNotification, to token: PushToken, _ apns: APNsClient
    ) async {
        var attempt = 0
        var refreshed = false
        guard var providerToken = try? await apns.signer.token() else {
            finish(notification, token, "signing_failed")
            return
        }
        while true {
            // Every attempt, the first included: an invitation goes out only while the user rings,
            // and no push goes to a device that is connected (it has the event already).
            if withdrawn(message, notification) {
                finish(notification, token, "withdrawn")
                return
            }
            if presence.connectedDevices(message.user).contains(token.device) {
                finish(notification, token, "connected")
                return
            }
            switch await apns.send(notification, to: token, expiration: message.expiration, providerToken: providerToken) {
            case .delivered:
                finish(notification, token, "delivered")
                return
            case .tokenInvalid(let reason):
                try? await store.removePushToken(token.token)
                logger.info("push token removed", metadata: ["reason": "\(reason)", "user": "\(token.user)"])
                finish(notification, token, "token_removed")
                return
            case .providerTokenExpired where !refreshed:
                refreshed = true
                guard let fresh = try? await apns.signer.refresh(after: providerToken) else {
                    finish(notification, token, "signing_failed")
                    return
                }
                providerToken = fresh
                record(notification, token, "provider_token_refreshed")
            case .retryable(let reason):
                let next = clock.now() + (Self.retryBase * (1 << min(attempt, 10))).milliseconds
                attempt += 1
                guard next < message.expiration else {
                    finish(notification, token, "gave_up")
                    return
                }
                // The next attempt's time is fixed before anyone hears of this one.
                record(notification, token, "retrying")
                logger.debug("push retried", metadata: ["reason": "\(reason)"])
                guard (try? await clock.sleep(until: next)) != nil else { return }
            case .providerTokenExpired, .rejected:
                finish(notification, token, "rejected")
                return
            }
        }
    }

    private func finish(_ notification: APNsNotification, _ token: PushToken, _ outcome: String) {
        record(notification, token, outcome)
    }

    private func record(_ notification: APNsNotification, _ token: PushToken, _ outcome: String) {
        metrics.push(outcome)
        let delivery = Delivery(callId: notification.callId, token: token.token, outcome: outcome)
        for continuation in broadcaster.withLockedValue({ Array($0.values) }) { continuation.yield(delivery) }
    }
}
