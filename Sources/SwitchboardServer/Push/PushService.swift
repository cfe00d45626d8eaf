import Logging
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Delivers the VoIP pushes the call engine asks for, to every token of the user (but the excepted
/// device's), in the background: the call flow never waits for APNs.
///
/// Per token: a delivery is done; a dead token (410, BadDeviceToken, DeviceTokenNotForTopic) is
/// removed; an expired provider token is replaced once and the push sent again; 429, 5xx and
/// transport errors are retried with backoff (0.5 s, doubling) as long as the next attempt falls
/// before the push's expiration (the end of the ringing); other refusals are given up.
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
    private let apns: APNsClient?
    private let clock: any SwitchboardClock
    private let metrics: ServerMetrics
    private let logger: Logger
    private let broadcaster = NIOLockedValueBox<[UInt64: AsyncStream<Delivery>.Continuation]>([:])
    private let counter = NIOLockedValueBox<UInt64>(0)
    private let inFlight = NIOLockedValueBox(0)
    static let retryBase: Duration = .milliseconds(500)
    let maxInFlight: Int

    init(
        store: any PushTokenStore, apns: APNsClient?, clock: any SwitchboardClock, metrics: ServerMetrics,
        maxInFlight: Int = 10_000, logger: Logger
    ) {
        self.store = store
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

    /// Sends a push in the background.
    func send(_ message: PushMessage) {
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
        Task {
            await deliver(message, apns)
            inFlight.withLockedValue { $0 -= 1 }
        }
    }

    func shutdown() async {
        await apns?.shutdown()
    }

    /// How many provider tokens were signed so far.
    var signedTokens: Int {
        get async { await apns?.signer.signedCount ?? 0 }
    }

    private func deliver(_ message: PushMessage, _ apns: APNsClient) async {
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
            for token in tokens where token.device != message.exceptDevice {
                group.addTask { await self.deliver(message, to: token, apns) }
            }
        }
    }

    private func deliver(_ message: PushMessage, to token: PushToken, _ apns: APNsClient) async {
        var attempt = 0
        var refreshed = false
        guard var providerToken = try? await apns.signer.token() else {
            finish(message, token, "signing_failed")
            return
        }
        while true {
            switch await apns.send(message.push, to: token, expiration: message.expiration, providerToken: providerToken) {
            case .delivered:
                finish(message, token, "delivered")
                return
            case .tokenInvalid(let reason):
                try? await store.removePushToken(token.token)
                logger.info("push token removed", metadata: ["reason": "\(reason)", "user": "\(token.user)"])
                finish(message, token, "token_removed")
                return
            case .providerTokenExpired where !refreshed:
                refreshed = true
                guard let fresh = try? await apns.signer.refresh(after: providerToken) else {
                    finish(message, token, "signing_failed")
                    return
                }
                providerToken = fresh
                record(message, token, "provider_token_refreshed")
            case .retryable(let reason):
                let next = clock.now() + (Self.retryBase * (1 << min(attempt, 10))).milliseconds
                attempt += 1
                guard next < message.expiration else {
                    finish(message, token, "gave_up")
                    return
                }
                // The next attempt's time is fixed before anyone hears of this one.
                record(message, token, "retrying")
                logger.debug("push retried", metadata: ["reason": "\(reason)"])
                guard (try? await clock.sleep(until: next)) != nil else { return }
            case .providerTokenExpired, .rejected:
                finish(message, token, "rejected")
                return
            }
        }
    }

    private func finish(_ message: PushMessage, _ token: PushToken, _ outcome: String) {
        record(message, token, outcome)
    }

    private func record(_ message: PushMessage, _ token: PushToken, _ outcome: String) {
        metrics.push(outcome)
        let delivery = Delivery(callId: message.push.callId, token: token.token, outcome: outcome)
        for continuation in broadcaster.withLockedValue({ Array($0.values) }) { continuation.yield(delivery) }
    }
}
