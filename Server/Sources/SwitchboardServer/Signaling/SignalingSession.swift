import Foundation
import Logging
import SwitchboardProtocol

/// Reads one connection's requests in order and answers each exactly once.
///
/// This file parses a frame once (``RequestFrame``), checks its id, rate limit and login, and dispatches by its type
/// through ``routes`` (one table says, for every request type, whether it needs a session, whether
/// a resent copy is answered from the ledger, and which handler runs it). The handlers live in the
/// `SignalingSession+*.swift` files, one domain each: the session itself, calls, records, blocks,
/// push tokens.
///
/// Before login only `login` and `ping` are served. Bad frames get an error response addressed
/// to their id when it can be read (`id: null` otherwise) and the connection stays open. Frames
/// above the 64 KiB message limit get `messageTooLarge`; only frames above the transport's hard
/// limit (1 MiB) close the connection.
///
/// Unchecked `Sendable`: its state is touched only by its ``SessionRunner``, which runs one task
/// at a time for it, each starting after the previous one ended.
final class SignalingSession: @unchecked Sendable {
    /// The logged-in user and device.
    struct Identity {
        var user: UserKey
        var device: DeviceID
    }

    let services: SessionServices
    let connection: Connection
    /// The peer's IP address, for per-IP limits.
    var remoteAddress: String { connection.remoteAddress }
    var identity: Identity?
    /// The state-changing request being handled, whose answer the ledger keeps.
    var tracked: (id: RequestID, device: RequestLedger.DeviceKey)?
    let logger: Logger

    init(services: SessionServices, connection: Connection, logger: Logger) {
        self.services = services
        self.connection = connection
        self.logger = logger
    }

    var limits: RateLimits { services.configuration.rateLimits }

    // MARK: - frames

    func receive(_ data: Data) async {
        guard !connection.isClosing else { return }
        if data.count > CallLimits.maxMessageBytes {
            // Only the id is read, to address the refusal.
            let header = try? SwitchboardJSON.decode(RequestHeader.self, from: data)
            fail(Self.requestID(header?.id), SwitchboardError(.messageTooLarge, "messages are limited to \(CallLimits.maxMessageBytes) bytes"))
            return
        }
        guard let frame = try? SwitchboardJSON.decode(RequestFrame.self, from: data) else {
            fail(nil, SwitchboardError(.malformedMessage, "not a JSON object"))
            return
        }
        guard let rawID = frame.header.id else {
            fail(nil, SwitchboardError(.malformedMessage, "id: missing or not a string"))
            return
        }
        guard let id = Self.requestID(rawID) else {
            fail(nil, SwitchboardError(.invalidRequestID, "id '\(rawID.prefix(16))…' must be 1-64 characters"))
            return
        }
        if let limited = services.limiter.take(
            limits.requestsPerConnection, "connection", String(connection.id), now: services.clock.now())
        {
            fail(id, limited)
            return
        }
        guard let type = frame.header.type else {
            fail(id, SwitchboardError(.malformedMessage, "type: missing or not a string"))
            return
        }
        await dispatch(RequestType(rawValue: type), id: id, request: frame.request)
    }

    /// A request id as sent, when it is one (1-64 characters).
    private static func requestID(_ raw: String?) -> RequestID? {
        raw.flatMap { $0.isEmpty || $0.utf8.count > RequestID.maxLength ? nil : RequestID(rawValue: $0) }
    }

    private func dispatch(_ type: RequestType, id: RequestID, request: Result<any SignalingRequest, any Error>?) async {
        guard let route = Self.routes[type], let request else {
            fail(id, SwitchboardError(.unknownType, "unknown request type '\(type.rawValue.prefix(40))'"))
            return
        }
        guard let identity else {
            if route.needsSession {
                fail(id, SwitchboardError(.notLoggedIn))
            } else {
                await route.run(self, id, request)
            }
            return
        }
        if route.oncePerId {
            let device = RequestLedger.DeviceKey(user: identity.user, device: identity.device)
            if let answer = await services.ledger.begin(id, device: device, now: services.clock.now()) {
                // Empty: the device logged out while this duplicate waited for the original's answer.
                if answer.isEmpty { fail(id, SwitchboardError(.notLoggedIn)) } else { connection.enqueue(answer) }
                return
            }
            tracked = (id, device)
        }
        defer {
            // Every tracked request is answered on every path; this only guards against a path
            // that forgot, so a duplicate never waits forever.
            if let tracked {
                fail(tracked.id, SwitchboardError(.internalError, "no answer"))
            }
        }
        await route.run(self, id, request)
    }

    // MARK: - answers

    /// The request a route was given, or nil once its failure is answered (`invalidParams` with
    /// what was wrong in `data`).
    func request<R: SignalingRequest>(_ type: R.Type, id: RequestID, _ decoded: Result<any SignalingRequest, any Error>) -> R? {
        switch decoded {
        case .success(let request as R):
            return request
        case .success:
            fail(id, SwitchboardError(.internalError, "a request of another type"))
            return nil
        case .failure(let error):
            fail(id, SwitchboardError(.invalidParams, SwitchboardJSON.describe(error)))
            return nil
        }
    }

    /// Runs a storage operation; a failure answers `storageUnavailable` and returns nil. On a
    /// cluster node cut off from its database the answer comes at once, instead of after the cut.
    func storage<T>(_ id: RequestID, _ operation: () async throws -> T) async -> T? {
        if services.cluster.isCutOff {
            fail(id, ClusterNode.cutOffRefusal)
            return nil
        }
        do {
            return try await operation()
        } catch let error as SwitchboardError {
            fail(id, error)
            return nil
        } catch {
            logger.error("storage failed", metadata: ["error": "\(error)"])
            fail(id, SwitchboardError(.storageUnavailable))
            return nil
        }
    }

    func succeed<R: Codable & Sendable & Equatable>(_ id: RequestID, _ result: R) {
        answer(id, try? SwitchboardJSON.encodeString(ResponseEnvelope(id: id, outcome: .success(result))))
    }

    func fail(_ id: RequestID?, _ error: SwitchboardError) {
        answer(id, try? SwitchboardJSON.encodeString(ResponseEnvelope<Empty>(id: id, outcome: .failure(error))))
    }

    /// Sends an answer, and keeps it in the ledger when it answers the tracked request.
    func answer(_ id: RequestID?, _ text: String?) {
        let text = text ?? #"{"id":null,"error":{"code":5001,"message":"could not encode the answer"}}"#
        if let tracked, tracked.id == id {
            services.ledger.finish(tracked.id, device: tracked.device, answer: text)
            self.tracked = nil
        }
        connection.enqueue(text)
    }
}
