import Foundation
import Switchboard
import SwitchboardProtocol

/// A bare WebSocket connection that sends any text, for testing what the server does with bad input.
public final class RawClient: Sendable {
    private let connection: any SignalingConnection
    /// Every frame the server sent.
    public let frames: Recorder<String>

    public init(url: URL) async throws {
        connection = try await WebSocketTransport().connect(to: url)
        frames = Recorder(connection.incoming)
    }

    public func send(_ text: String) { connection.send(text) }

    public func close() { connection.close() }

    /// Sends a frame and returns the response whose `id` is `id` (JSON null when nil).
    public func request(_ text: String, id: String?) async throws -> [String: Any] {
        let start = frames.values.count
        send(text)
        let frame = try await frames.first(from: start) { frame in
            guard let object = Self.object(frame), object["event"] == nil else { return false }
            if let id { return object["id"] as? String == id }
            return object["id"] is NSNull
        }
        return Self.object(frame) ?? [:]
    }

    /// Sends a typed request and returns the raw response object.
    public func request<R: SignalingRequest>(_ request: R, id: String) async throws -> [String: Any] {
        try await self.request(SwitchboardJSON.encodeString(RequestEnvelope(id: RequestID(rawValue: id), data: request)), id: id)
    }

    /// The error code of a response object, if it is an error.
    public static func errorCode(_ response: [String: Any]) -> Int? {
        (response["error"] as? [String: Any])?["code"] as? Int
    }

    static func object(_ frame: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(frame.utf8))) as? [String: Any]
    }
}
