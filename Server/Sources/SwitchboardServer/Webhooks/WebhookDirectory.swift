import NIOConcurrencyHelpers
import SwitchboardProtocol

/// The webhook endpoints as this node last read them: which events each app wants (the call
/// engine asks for every event it makes, so an app without webhooks costs nothing), and what the
/// dispatcher sends to. Read at start and every poll of the dispatcher, and at once when the
/// admin API changes an endpoint here or on another node (`appsChanged`): an endpoint made on
/// another node gets the events from the moment this node hears of it.
final class WebhookDirectory: Sendable {
    private struct State {
        var endpoints: [WebhookEndpoint] = []
        /// Per app, the types some endpoint wants; nil: every type.
        var wanted: [SdkAppID: Set<WebhookEventType>?] = [:]
        var apps: Set<SdkAppID> = []
    }

    private let state = NIOLockedValueBox(State())

    /// Whether an endpoint of `app` wants events of `type` (paused ones too: their events wait).
    func wants(_ app: SdkAppID, _ type: WebhookEventType?) -> Bool {
        guard let type else { return false }
        return state.withLockedValue { state in
            guard let wanted = state.wanted[app] else { return false }
            return wanted?.contains(type) ?? true
        }
    }

    var endpoints: [WebhookEndpoint] { state.withLockedValue { $0.endpoints } }

    /// The apps with an endpoint (the call engine's machine makes events for these only).
    var apps: Set<SdkAppID> { state.withLockedValue { $0.apps } }

    func replace(with endpoints: [WebhookEndpoint]) {
        var wanted: [SdkAppID: Set<WebhookEventType>?] = [:]
        for endpoint in endpoints {
            switch (wanted[endpoint.app], endpoint.events) {
            case (.none, let events): wanted[endpoint.app] = .some(events)
            case (.some(.none), _), (_, .none): wanted[endpoint.app] = .some(nil)
            case (.some(.some(let known)), .some(let events)): wanted[endpoint.app] = .some(known.union(events))
            }
        }
        state.withLockedValue { state in
            state.endpoints = endpoints
            state.wanted = wanted
            state.apps = Set(wanted.keys)
        }
    }
}
