import Foundation
import SwitchboardProtocol

/// What the admin API is handed: the parts of its node it reads and changes. Calls are ended
/// through ``calls`` like any request, never on the engine directly.
struct AdminServices: Sendable {
    let configuration: ServerConfiguration
    let storage: any SwitchboardStorage
    let apps: AppDirectory
    /// This node's devices (the count on /health).
    let registry: ConnectionRegistry
    let calls: any CallRouter
    /// The node's place in its cluster (``SingleNode`` without one).
    let cluster: any ClusterView
    let metrics: ServerMetrics
    let pushCredentials: PushCredentials
    let webhooks: WebhookDirectory
    let webhookDispatcher: WebhookDispatcher
    let webhookPolicy: WebhookAddressPolicy
    /// The recordings' conversion and files, when the server records calls.
    let recorder: RecordingWorker?
    let clock: any SwitchboardClock

    /// Ends a call with `endByServer` (admin API, operators).
    func endCall(_ callId: CallID) async -> Result<Void, SwitchboardError> {
        switch await calls.handle(.endByServer(callId), reply: nil) {
        case .failure(let error): .failure(error)
        default: .success(())
        }
    }

    /// An endpoint changed here: this node reads them again at once, the other nodes of a cluster
    /// are told to, and the dispatcher looks for work.
    func webhookEndpointsChanged() async {
        if let endpoints = try? await storage.webhookEndpoints(app: nil) { webhooks.replace(with: endpoints) }
        await cluster.appsChanged()
        webhookDispatcher.wake()
    }
}
