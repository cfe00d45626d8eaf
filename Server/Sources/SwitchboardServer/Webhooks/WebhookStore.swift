import Foundation
import SwitchboardProtocol

/// One endpoint of an app's webhooks, as the admin API configures it.
struct WebhookEndpoint: Equatable, Sendable {
    /// `ep_` and 16 hex digits.
    var id: String
    var app: SdkAppID
    var url: String
    /// The events it gets; nil: all, including types added by later versions.
    var events: Set<WebhookEventType>?
    var description: String?
    /// The signing secret (`whsec_…`).
    var secret: String
    /// The secret before the last rotation, still signing until ``previousSecretUntil``.
    var previousSecret: String?
    var previousSecretUntil: Int64?
    /// Nothing is sent while paused; events still queue up (to the bound).
    var paused: Bool
    /// Why it was paused: `operator`, or `gone` when the receiver answered 410 Gone.
    var pausedReason: String?
    /// Set while the endpoint is at its bound (``WebhookConfiguration/maxBacklog``): new events
    /// are not queued for it meanwhile. Kept by the housekeeper, never by the admin API.
    var fullSince: Int64?
    /// The last stretches of time whose events were not queued for it because it was full
    /// (newest last, at most ``maxGaps``): what an operator replays once it drains.
    var gaps: [WebhookGap]
    var createdAt: Int64
    var updatedAt: Int64

    static let maxGaps = 20

    /// The secrets that sign a delivery at `now`: the current one, and the previous one during a
    /// rotation.
    func signingSecrets(now: Int64) -> [String] {
        guard let previousSecret, let until = previousSecretUntil, now < until else { return [secret] }
        return [secret, previousSecret]
    }

    func wants(_ type: WebhookEventType) -> Bool { events?.contains(type) ?? true }
}

/// A stretch of time whose events were not queued for an endpoint (it was at its bound).
struct WebhookGap: Codable, Equatable, Sendable {
    var from: Int64
    var to: Int64
}

/// A delivery a node claimed: the event, and where its attempts stand.
struct ClaimedDelivery: Equatable, Sendable {
    var endpointId: String
    var eventSeq: Int64
    var eventId: String
    var type: WebhookEventType?
    var orderingKey: String
    var eventTime: Int64
    var payload: Data
    /// Attempts before this one.
    var attempts: Int
    var firstAttemptAt: Int64?
}

/// What became of an attempt.
struct DeliveryResult: Equatable, Sendable {
    enum Next: Equatable, Sendable {
        case delivered
        /// Not delivered; try again at this time (the event's later deliveries to the endpoint
        /// wait behind it).
        case retry(at: Int64)
        /// Not delivered, and no more attempts (the retry bound passed).
        case failed
    }

    var endpointId: String
    var eventSeq: Int64
    var orderingKey: String
    /// The node that claimed it: a result from a node whose claim lapsed is ignored.
    var node: String
    var at: Int64
    /// The HTTP status, if the receiver answered.
    var status: Int?
    /// Why it failed, short and without the receiver's body.
    var error: String?
    var next: Next
}

/// A delivery as the admin API lists it.
struct DeliveryInfo: Equatable, Sendable, Codable {
    enum State: String, Codable, Sendable, CaseIterable {
        case pending, delivered, failed
    }

    var eventId: String
    var type: String
    /// The call the event is about (`user:` and a user's id for user events).
    var orderingKey: String
    var eventTime: Int64
    var state: State
    var attempts: Int
    var firstAttemptAt: Int64?
    var lastAttemptAt: Int64?
    var lastStatus: Int?
    var lastError: String?
    /// For a pending delivery: when it is tried next.
    var nextAttemptAt: Int64?
    /// For a pending delivery held back by an earlier one of its call (a call's events go out one
    /// at a time): that one, with its attempts and last failure, which say why this one waits.
    var waitingFor: Blocker?
    /// The cursor of the listing (`before`).
    var seq: Int64

    /// The delivery that holds a call's later ones back.
    struct Blocker: Equatable, Sendable, Codable {
        var eventId: String
        var attempts: Int
        var lastStatus: Int?
        var lastError: String?
        var nextAttemptAt: Int64
    }
}

/// What is waiting for one endpoint.
struct WebhookBacklog: Equatable, Sendable {
    var pending: Int
    /// When the oldest pending event happened.
    var oldestEventTime: Int64?
}

/// A page of an app's call records (the admin API's query), newest first.
struct AppRecordPage: Equatable, Sendable {
    var records: [StoredRecord]
    /// Where the next page starts; nil on the last one.
    var next: AppRecordCursor?
}

/// The position after a record in the admin API's order (end time descending, then owner and call).
struct AppRecordCursor: Equatable, Sendable {
    var endTime: Int64
    var user: String
    var call: String

    /// `endTime.user.call`, base64url: opaque to clients.
    var token: String {
        Data("\(endTime)\n\(user)\n\(call)".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    init(endTime: Int64, user: String, call: String) {
        self.endTime = endTime
        self.user = user
        self.call = call
    }

    init?(token: String) {
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard token.count <= 200, let data = Data(base64Encoded: base64) else { return nil }
        let parts = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard parts.count == 3, let endTime = Int64(parts[0]) else { return nil }
        self.init(endTime: endTime, user: String(parts[1]), call: String(parts[2]))
    }
}

/// Which of an app's records a query wants.
struct AppRecordFilter: Equatable, Sendable {
    var user: UserID?
    /// End time at or after (Unix ms).
    var from: Int64?
    /// End time before (Unix ms).
    var to: Int64?
    var result: CallRecordResult?
    var mediaType: CallMediaType?
}

/// Webhook endpoints, the outbox's deliveries, and the records the admin API queries and sweeps.
/// The events themselves are written by ``CallRecordStore/commit(_:)`` and by the block changes,
/// in the transactions of the changes they report.
protocol WebhookStore: Sendable {
    /// Inserts or replaces an endpoint's configuration (not its bound state: ``setWebhookFull``).
    func saveWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws
    /// The endpoints of `app`, or of every app.
    func webhookEndpoints(app: SdkAppID?) async throws -> [WebhookEndpoint]
    /// Deletes an endpoint of `app` and its deliveries; false if it has none by that id.
    func deleteWebhookEndpoint(app: SdkAppID, id: String) async throws -> Bool
    /// Marks an endpoint as at its bound (new events are not queued for it) or, when `full` is
    /// false, no longer: the time since it filled is noted as a gap.
    func setWebhookFull(endpoint: String, full: Bool, now: Int64) async throws
    /// The bound of every endpoint's backlog (``WebhookConfiguration/maxBacklog``), kept in the
    /// database: the transaction that writes an event leaves it out for an endpoint with that many
    /// deliveries waiting and marks the endpoint full (``WebhookEndpoint/fullSince``), so the bound
    /// holds at every write, not only at the housekeeper's rounds.
    func setWebhookMaxBacklog(_ bound: Int) async throws

    /// Claims up to `limit` deliveries of `endpoint` that are due, each the first of its ordering
    /// key still pending (so one call's events go out one at a time, in order), and not claimed by
    /// a node whose claim runs: claimed by `node` until `leaseUntil`. Two nodes never get the same.
    func claimWebhookDeliveries(endpoint: String, node: String, now: Int64, leaseUntil: Int64, limit: Int) async throws
        -> [ClaimedDelivery]
    /// Records attempts' outcomes, in order, in one transaction (each ignored if its node's claim
    /// lapsed and another took it).
    func finishWebhookDeliveries(_ results: [DeliveryResult]) async throws
    /// When the next pending delivery of `endpoint` falls due after `now`; nil if none waits.
    func nextWebhookDue(endpoint: String, after now: Int64) async throws -> Int64?
    /// Lets go of every claim (a single node's start: nobody else could hold them).
    func releaseWebhookClaims() async throws
    /// What waits for each endpoint that has anything pending.
    func webhookBacklogs() async throws -> [String: WebhookBacklog]
    /// An endpoint's deliveries, newest first, before the cursor `before` (a ``DeliveryInfo/seq``).
    func webhookDeliveries(endpoint: String, state: DeliveryInfo.State?, before: Int64?, limit: Int) async throws
        -> [DeliveryInfo]
    /// Queues one event of the endpoint's app for it again, due now; false if there is no such event.
    func replayWebhookEvent(endpoint: String, eventId: String, now: Int64) async throws -> Bool
    /// Queues again the events of the endpoint's app that it wants, of `from ..< to`, oldest
    /// first, at most `limit`; returns how many, and the time to continue from when more remain.
    func replayWebhookEvents(endpoint: String, from: Int64, to: Int64, limit: Int, now: Int64) async throws
        -> (queued: Int, continueFrom: Int64?)
    /// Deletes at most `limit` of the oldest events that happened before `cutoff`, with their
    /// deliveries; returns how many.
    func sweepWebhookEvents(before cutoff: Int64, limit: Int) async throws -> Int

    /// A page of an app's call records (every owner), newest first.
    func queryAppRecords(app: SdkAppID, filter: AppRecordFilter, after: AppRecordCursor?, limit: Int) async throws
        -> AppRecordPage
    /// Deletes at most `limit` of the app's records that ended before `cutoff`; returns how many.
    func sweepRecords(app: SdkAppID, before cutoff: Int64, limit: Int) async throws -> Int
}
