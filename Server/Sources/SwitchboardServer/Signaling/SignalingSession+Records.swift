import Foundation
import SwitchboardProtocol

/// Call records: a user pages through and deletes their own, never anyone else's.
extension SignalingSession {
    func queryRecords(_ request: QueryRecordsRequest, _ identity: Identity, id: RequestID) async {
        guard (1...CallLimits.maxRecordCount).contains(request.count) else {
            fail(id, SwitchboardError(.invalidRecordCount))
            return
        }
        guard request.syncTime >= -1 else {
            fail(id, SwitchboardError(.invalidSyncTime))
            return
        }
        if let page = await storage(
            id,
            {
                try await self.services.storage.queryRecords(
                    owner: identity.user, syncTime: request.syncTime, count: request.count, order: request.order)
            })
        {
            succeed(id, page)
        }
    }

    func deleteRecords(_ request: DeleteRecordsRequest, _ identity: Identity, id: RequestID) async {
        guard request.callIds.count <= CallLimits.maxDeleteCallIDs else {
            fail(id, SwitchboardError(.tooManyCallIDs, "at most \(CallLimits.maxDeleteCallIDs) callIds per request"))
            return
        }
        if let deleted = await storage(
            id, { try await self.services.storage.deleteRecords(owner: identity.user, callIds: request.callIds) })
        {
            succeed(id, DeleteRecordsResponse(deleted: deleted))
        }
    }

    func deleteAllRecords(_ identity: Identity, id: RequestID) async {
        if let deleted = await storage(id, { try await self.services.storage.deleteAllRecords(owner: identity.user) }) {
            succeed(id, DeleteRecordsResponse(deleted: deleted))
        }
    }
}
