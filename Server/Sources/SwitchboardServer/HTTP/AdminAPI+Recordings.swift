import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import SwitchboardProtocol

/// The admin API's recordings (docs/RECORDING.md): an app's recordings, one, a file of one (with
/// HTTP ranges, so a browser can seek), deleting one; and signed, expiring links to a file that a
/// backend hands to its users (served without the admin secret).
extension AdminAPI {
    /// Most recordings one listing returns.
    static let maxRecordingsListed = 500
    /// The longest a signed link may stay valid (seconds).
    static let maxLinkLifetime = 7 * 86_400

    /// A recording as the admin API shows it.
    struct RecordingBody: Codable, Sendable, Equatable {
        var recordingId: String
        var callId: CallID
        var take: Int
        var state: String
        var startedBy: UserID?
        var startedAt: Int64
        var stoppedAt: Int64
        var duration: Int64
        var members: [UserID]
        var files: [RecordedFile]
        var attempts: Int
        var failure: String?

        init(_ recording: StoredRecording) {
            let take = recording.take
            recordingId = take.id
            callId = take.callId
            self.take = take.take
            state = recording.state.rawValue
            startedBy = take.startedBy
            startedAt = take.startedAt
            stoppedAt = take.stoppedAt
            duration = take.stoppedAt - take.startedAt
            members = take.members
            files = recording.files
            attempts = recording.attempts
            failure = recording.failure
        }
    }

    struct RecordingList: Codable, Sendable, Equatable {
        var recordings: [RecordingBody]
    }

    struct LinkRequest: Codable, Sendable, Equatable {
        /// Seconds the link stays valid (default one hour).
        var expiresIn: Int?
    }

    struct LinkBody: Codable, Sendable, Equatable {
        /// The path (on this server) of the file, with its expiry and signature.
        var url: String
        var expiresAt: Int64
    }

    /// The signature of a link: HMAC-SHA256 with the app's secret key over
    /// `<sdkAppID>/<recordingId>/<file>/<expires>`, hex.
    static func linkSignature(app: SdkAppID, id: String, file: String, expires: Int64, secret: String) -> String {
        let message = "\(app.rawValue)/\(id)/\(file)/\(expires)"
        let code = HMAC<SHA256>.authenticationCode(for: Data(message.utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return code.map { String(format: "%02x", $0) }.joined()
    }

    static func registerRecordings(
        on admin: RouterGroup<SwitchboardRequestContext>, router: Router<SwitchboardRequestContext>,
        services: AdminServices
    ) {

        admin.get("/apps/:app/recordings") { request, context in
            guard let app = knownApp(try context.parameters.require("app"), services) else {
                return Self.error(SwitchboardError(.unknownApp))
            }
            let query = request.uri.queryParameters
            let callId = query["callId"].map { CallID(rawValue: String($0)) }
            let limit = query["limit"].flatMap { Int(String($0)) } ?? 100
            guard (1...maxRecordingsListed).contains(limit) else {
                return Self.error(SwitchboardError(.invalidParams, "limit must be 1-\(maxRecordingsListed)"))
            }
            do {
                let found = try await services.storage.recordings(app: app, callId: callId, limit: limit)
                return encoded(RecordingList(recordings: found.map(RecordingBody.init)))
            } catch {
                return Self.error(SwitchboardError(.storageUnavailable))
            }
        }

        admin.get("/apps/:app/recordings/:id") { _, context in
            guard let app = knownApp(try context.parameters.require("app"), services) else {
                return Self.error(SwitchboardError(.unknownApp))
            }
            switch await recording(app, try context.parameters.require("id"), services) {
            case .failure(let error): return Self.error(error)
            case .success(let recording): return encoded(RecordingBody(recording))
            }
        }

        admin.delete("/apps/:app/recordings/:id") { _, context in
            guard let app = knownApp(try context.parameters.require("app"), services) else {
                return Self.error(SwitchboardError(.unknownApp))
            }
            guard let recorder = services.recorder else {
                return Self.error(SwitchboardError(.recordingUnavailable, "this server does not record calls (--recordings-dir)"))
            }
            let id = try context.parameters.require("id")
            do {
                guard try await recorder.delete(app: app, id: id, reason: "deleted") != nil else {
                    return Self.error(SwitchboardError(.notFound, "no such recording"))
                }
                return json(["recordingId": id, "deleted": true] as [String: any Sendable])
            } catch let error as SwitchboardError {
                return Self.error(error)
            } catch {
                return Self.error(SwitchboardError(.storageUnavailable))
            }
        }

        admin.get("/apps/:app/recordings/:id/files/:name") { request, context in
            guard let app = knownApp(try context.parameters.require("app"), services) else {
                return Self.error(SwitchboardError(.unknownApp))
            }
            return await file(
                app, try context.parameters.require("id"), try context.parameters.require("name"), request, context, services)
        }

        admin.post("/apps/:app/recordings/:id/files/:name/link") { request, context in
            guard let app = knownApp(try context.parameters.require("app"), services),
                let secret = services.apps.app(app)?.secretKey
            else {
                return Self.error(SwitchboardError(.unknownApp))
            }
            let id = try context.parameters.require("id")
            let name = try context.parameters.require("name")
            var lifetime = 3600
            if let length = request.headers[.contentLength], length != "0" {
                switch await body(LinkRequest.self, request) {
                case .failure(let error): return Self.error(error)
                case .success(let asked): lifetime = asked.expiresIn ?? lifetime
                }
            }
            guard (1...maxLinkLifetime).contains(lifetime) else {
                return Self.error(SwitchboardError(.invalidParams, "expiresIn must be 1-\(maxLinkLifetime) seconds"))
            }
            switch await recording(app, id, services) {
            case .failure(let error):
                return Self.error(error)
            case .success(let recording):
                guard recording.files.contains(where: { $0.name == name }) else {
                    return Self.error(SwitchboardError(.notFound, "no such file in the recording"))
                }
                let expires = services.clock.now() / 1000 + Int64(lifetime)
                let signature = linkSignature(app: app, id: id, file: name, expires: expires, secret: secret)
                return encoded(
                    LinkBody(
                        url: "/recordings/\(app.rawValue)/\(id)/\(name)?expires=\(expires)&signature=\(signature)",
                        expiresAt: expires * 1000))
            }
        }

        // A signed link: no admin secret, only a signature that has not expired.
        router.get("/recordings/:app/:id/:name") { request, context in
            let appText = try context.parameters.require("app")
            let id = try context.parameters.require("id")
            let name = try context.parameters.require("name")
            let query = request.uri.queryParameters
            guard let app = knownApp(appText, services), let secret = services.apps.app(app)?.secretKey,
                let expires = query["expires"].flatMap({ Int64(String($0)) }), let signature = query["signature"]
            else {
                return Self.error(SwitchboardError(.unauthorized, "a signed link needs expires and signature"))
            }
            let expected = linkSignature(app: app, id: id, file: name, expires: expires, secret: secret)
            guard constantTimeEqual(expected, String(signature)) else {
                return Self.error(SwitchboardError(.unauthorized, "the link's signature is wrong"))
            }
            guard services.clock.now() / 1000 <= expires else {
                return Self.error(SwitchboardError(.unauthorized, "the link has expired"))
            }
            return await file(app, id, name, request, context, services)
        }
    }

    private static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    private static func recording(_ app: SdkAppID, _ id: String, _ services: AdminServices) async
        -> Result<StoredRecording, SwitchboardError>
    {
        do {
            guard let found = try await services.storage.recording(app: app, id: id) else {
                return .failure(SwitchboardError(.notFound, "no such recording"))
            }
            return .success(found)
        } catch {
            return .failure(SwitchboardError(.storageUnavailable))
        }
    }

    /// A recording's file, whole or the byte range asked for (`Range: bytes=a-b`, `a-`, `-n`).
    private static func file(
        _ app: SdkAppID, _ id: String, _ name: String, _ request: Request, _ context: SwitchboardRequestContext,
        _ services: AdminServices
    ) async -> Response {
        guard let files = services.recorder?.files else {
            return Self.error(SwitchboardError(.recordingUnavailable, "this server does not record calls"))
        }
        let recording: StoredRecording
        switch await Self.recording(app, id, services) {
        case .failure(let error): return Self.error(error)
        case .success(let found): recording = found
        }
        guard recording.state == .ready, let path = files.path(of: name, in: recording),
            let info = recording.files.first(where: { $0.name == name }),
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        else {
            return Self.error(SwitchboardError(.notFound, "no such file in the recording"))
        }
        var headers = HTTPFields()
        headers[.contentType] = info.contentType
        headers[.acceptRanges] = "bytes"
        headers[.cacheControl] = "private, no-store"
        let fileIO = FileIO()
        do {
            if let rangeHeader = request.headers[.range] {
                guard let range = byteRange(rangeHeader, size: size) else {
                    headers[.contentRange] = "bytes */\(size)"
                    return Response(status: .rangeNotSatisfiable, headers: headers)
                }
                headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"
                headers[.contentLength] = "\(range.count)"
                let body = try await fileIO.loadFile(path: path, range: range, context: context)
                return Response(status: .partialContent, headers: headers, body: body)
            }
            headers[.contentLength] = "\(size)"
            return Response(status: .ok, headers: headers, body: try await fileIO.loadFile(path: path, context: context))
        } catch {
            return Self.error(SwitchboardError(.notFound, "the file cannot be read"))
        }
    }

    /// The one byte range of a `Range` header (a list of several is not served), within `size`.
    static func byteRange(_ header: String, size: Int) -> ClosedRange<Int>? {
        guard size > 0, header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
        guard spec.count == 2 else { return nil }
        let first = spec[0].trimmingCharacters(in: .whitespaces)
        let last = spec[1].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            guard let suffix = Int(last), suffix > 0 else { return nil }
            return max(0, size - suffix)...(size - 1)
        }
        guard let start = Int(first), start >= 0, start < size else { return nil }
        if last.isEmpty { return start...(size - 1) }
        guard let end = Int(last), end >= start else { return nil }
        return start...min(end, size - 1)
    }
}
