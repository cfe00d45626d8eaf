import Foundation
import SwitchboardProtocol

/// A request frame, parsed once: its ``RequestHeader`` (`id` and `type`, read leniently so that a
/// bad frame is still answered at its id) and its `data` decoded, from the same parse, as the
/// request its type names when the server serves that type (``RequestRoute/decode``).
struct RequestFrame: Decodable {
    enum Keys: String, CodingKey { case data }

    var header: RequestHeader
    /// The request, or why `data` is not one; nil when the type is missing or not served.
    var request: Result<any SignalingRequest, any Error>?

    init(from decoder: any Decoder) throws {
        header = try RequestHeader(from: decoder)
        let container = try decoder.container(keyedBy: Keys.self)
        if let type = header.type, let route = SignalingSession.routes[RequestType(rawValue: type)] {
            request = Result { try route.decode(container) }
        }
    }

    /// `data` as an `R`. A request without parameters may leave `data` out: decoding an empty
    /// object instead gives a precise "missing field" error for the requests that need some.
    static func payload<R: SignalingRequest>(
        _ type: R.Type, in container: KeyedDecodingContainer<Keys>
    ) throws -> any SignalingRequest {
        if container.contains(.data) { return try container.decode(R.self, forKey: .data) }
        return try SwitchboardJSON.decode(R.self, from: Data("{}".utf8))
    }
}
