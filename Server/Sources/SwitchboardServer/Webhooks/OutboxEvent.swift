import Foundation
import SwitchboardProtocol

/// An event on its way to the webhook outbox, written in the same transaction as the change it
/// reports (the call's journal save or end, a user's blocks), so a crash never loses one and never
/// leaves one for a change that was not stored.
struct OutboxEvent: Equatable, Sendable {
    var id: String
    var app: SdkAppID
    var type: WebhookEventType
    /// An endpoint gets the events of one key one at a time, in the order they were written: the
    /// call's id, or `user:` and the user's id for a user's events.
    var orderingKey: String
    var time: Int64
    /// The body exactly as it is sent and signed.
    var payload: Data

    init(id: String, app: SdkAppID, type: WebhookEventType, orderingKey: String, time: Int64, payload: Data) {
        self.id = id
        self.app = app
        self.type = type
        self.orderingKey = orderingKey
        self.time = time
        self.payload = payload
    }

    /// The body of an event of a call (nil when it cannot be encoded, which wire types made of
    /// strings, numbers and arrays never are).
    init?(_ notice: WebhookNotice) {
        guard let type = notice.data.type,
            let payload = try? SwitchboardJSON.encode(
                WebhookEvent(id: notice.id, time: notice.time, sdkAppID: notice.app, data: notice.data))
        else { return nil }
        self.init(
            id: notice.id, app: notice.app, type: type, orderingKey: notice.callId?.rawValue ?? "", time: notice.time,
            payload: payload)
    }

    /// `user.blocked` or `user.unblocked`, with the users the change really added or removed.
    static func blocks(_ user: UserKey, changed: [UserID], blocked: Bool, time: Int64) -> OutboxEvent? {
        guard !changed.isEmpty else { return nil }
        let id = "evt_" + UUID.random().lowercasedString
        let blocks = WebhookBlocks(userId: user.user, userIds: changed.sorted())
        let data: WebhookEventData = blocked ? .userBlocked(blocks) : .userUnblocked(blocks)
        guard let type = data.type,
            let payload = try? SwitchboardJSON.encode(WebhookEvent(id: id, time: time, sdkAppID: user.app, data: data))
        else { return nil }
        return OutboxEvent(
            id: id, app: user.app, type: type, orderingKey: "user:" + user.user.rawValue, time: time, payload: payload)
    }
}
