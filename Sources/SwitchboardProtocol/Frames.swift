import Foundation

/// A request frame: `{"id": "7", "type": "call.accept", "data": {...}}`.
public struct RequestEnvelope<Request: SignalingRequest>: Codable, Equatable, Sendable {
    public var id: RequestID
    public var data: Request

    public init(id: RequestID, data: Request) {
        self.id = id
        self.data = data
    }

    private enum CodingKeys: String, CodingKey { case id, type, data }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.id = try container.decode(RequestID.self, forKey: .id)
        if container.contains(.data) {
            self.data = try container.decode(Request.self, forKey: .data)
        } else {
            // Requests without parameters may leave `data` out; decoding an empty object gives
            // a precise "missing field" error for the requests that do need some.
            self.data = try SwitchboardJSON.decode(Request.self, from: Data("{}".utf8))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(Request.type, forKey: .type)
        try container.encode(data, forKey: .data)
    }
}

/// The `id` and `type` of a request frame, read leniently so that a bad frame still gets an
/// answer addressed to its id.
public struct RequestHeader: Decodable, Sendable {
    public var id: String?
    public var type: String?

    private enum CodingKeys: String, CodingKey { case id, type }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.id = try? container.decodeIfPresent(String.self, forKey: .id)
        self.type = try? container.decodeIfPresent(String.self, forKey: .type)
    }
}

/// A response frame: `{"id": "7", "result": {...}}` or `{"id": "7", "error": {"code": 3001, "message": "…"}}`.
/// `id` is null only when the request's id could not be read.
public struct ResponseEnvelope<Result: Codable & Sendable & Equatable>: Codable, Equatable, Sendable {
    public var id: RequestID?
    public var outcome: Swift.Result<Result, SwitchboardError>

    public init(id: RequestID?, outcome: Swift.Result<Result, SwitchboardError>) {
        self.id = id
        self.outcome = outcome
    }

    private enum CodingKeys: String, CodingKey { case id, result, error }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.id = try container.decodeIfPresent(RequestID.self, forKey: .id)
        if let error = try container.decodeIfPresent(SwitchboardError.self, forKey: .error) {
            self.outcome = .failure(error)
        } else {
            self.outcome = .success(try container.decode(Result.self, forKey: .result))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if let id {
            try container.encode(id, forKey: .id)
        } else {
            try container.encodeNil(forKey: .id)
        }
        switch outcome {
        case .success(let result): try container.encode(result, forKey: .result)
        case .failure(let error): try container.encode(error, forKey: .error)
        }
    }
}

/// What a client reads first from any server frame, to tell a response from an event.
public struct ServerFrameHeader: Decodable, Sendable {
    public var id: RequestID?
    public var event: String?

    private enum CodingKeys: String, CodingKey { case id, event }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.id = try? container.decodeIfPresent(RequestID.self, forKey: .id)
        self.event = try? container.decodeIfPresent(String.self, forKey: .event)
    }
}

/// The one JSON configuration used on the wire.
public enum SwitchboardJSON {
    /// Encodes a wire value (with ``WireEncoder``: one pass, no intermediate tree).
    public static func encode(_ value: some Encodable) throws -> Data {
        Data(try WireEncoder.encode(value))
    }

    /// Encodes a wire value as a UTF-8 string (a WebSocket text message).
    public static func encodeString(_ value: some Encodable) throws -> String {
        String(decoding: try WireEncoder.encode(value), as: UTF8.self)
    }

    /// Decodes a wire value.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try JSONDecoder().decode(type, from: data)
    }

    /// A short, payload-free explanation of why decoding failed, naming the field path,
    /// e.g. `data.participantIds: expected Array, found String`.
    public static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "invalid JSON" }
        func path(_ codingPath: [any CodingKey]) -> String {
            let parts = codingPath.map { key in key.intValue.map { "[\($0)]" } ?? key.stringValue }
            return parts.isEmpty ? "(root)" : parts.joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])): missing"
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)): expected \(type)"
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath)): expected \(type), found null"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty
                ? "invalid JSON" : "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "invalid JSON"
        }
    }
}
