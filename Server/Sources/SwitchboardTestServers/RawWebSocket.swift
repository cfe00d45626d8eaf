import Foundation
import NIOCore
import SwitchboardProtocol

/// A WebSocket client written byte by byte over a ``RawTCPClient``, for what a well-behaved client
/// library never sends: unmasked frames, invalid UTF-8, endless fragments, a socket never read.
public final class RawWebSocket: Sendable {
    public let tcp: RawTCPClient

    private init(tcp: RawTCPClient) {
        self.tcp = tcp
    }

    /// Opens a TCP connection and upgrades it at `path`; throws unless the server answers 101.
    public static func connect(port: Int, path: String = "/v1/ws", sourceAddress: String? = nil) async throws
        -> RawWebSocket
    {
        let tcp = try await RawTCPClient.connect(port: port, sourceAddress: sourceAddress)
        try await tcp.send(
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        try await tcp.wait(for: "\r\n\r\n")
        let head = String(decoding: tcp.received, as: UTF8.self)
        guard head.hasPrefix("HTTP/1.1 101") else {
            await tcp.close()
            throw UpgradeRefused(response: String(head.prefix(200)))
        }
        return RawWebSocket(tcp: tcp)
    }

    public struct UpgradeRefused: Error, CustomStringConvertible {
        public var response: String
        public var description: String { "upgrade refused: \(response)" }
    }

    public enum Opcode: UInt8, Sendable {
        case continuation = 0, text = 1, binary = 2, close = 8, ping = 9, pong = 10
    }

    /// A frame as the server sent it.
    public struct Frame: Sendable, Equatable {
        public var opcode: UInt8
        public var fin: Bool
        public var payload: [UInt8]
        public var text: String { String(decoding: payload, as: UTF8.self) }
    }

    /// Sends one frame; clients mask (RFC 6455 §5.3) unless told not to.
    public func send(
        _ opcode: Opcode, _ payload: [UInt8], fin: Bool = true, masked: Bool = true, rsv1: Bool = false
    ) async throws {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode.rawValue]
        let mask: UInt8 = masked ? 0x80 : 0
        switch payload.count {
        case ..<126: frame.append(mask | UInt8(payload.count))
        case ..<65536: frame += [mask | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default: frame += [mask | 127] + (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
        }
        if masked {
            let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
            frame += key
            frame += payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
        } else {
            frame += payload
        }
        try await tcp.send(frame)
    }

    public func send(text: String) async throws {
        try await send(.text, Array(text.utf8))
    }

    /// Sends a request and returns its answer (the first text frame that is a response with this id).
    public func request<R: SignalingRequest>(_ request: R, id: String) async throws -> [String: Any] {
        let start = frames.count
        try await send(text: try SwitchboardJSON.encodeString(RequestEnvelope(id: RequestID(rawValue: id), data: request)))
        try await tcp.wait { received, closed in
            closed || Self.parse(received).dropFirst(start).contains { Self.isAnswer($0, id: id) }
        }
        let answer = frames.dropFirst(start).first { Self.isAnswer($0, id: id) }
        return answer.flatMap { RawClient.object($0.text) } ?? [:]
    }

    private static func isAnswer(_ frame: Frame, id: String) -> Bool {
        frame.opcode == Opcode.text.rawValue && (RawClient.object(frame.text)?["id"] as? String) == id
    }

    /// Every frame the server sent so far.
    public var frames: [Frame] { Self.parse(tcp.received) }

    /// The code of the server's close frame, once one arrived.
    public var closeCode: UInt16? {
        frames.first { $0.opcode == Opcode.close.rawValue }.flatMap { frame in
            frame.payload.count >= 2 ? UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]) : nil
        }
    }

    /// Waits until the server sends a close frame or closes the connection; returns the close code.
    @discardableResult
    public func waitForClose() async throws -> UInt16? {
        try await tcp.wait { received, closed in
            closed || Self.parse(received).contains { $0.opcode == Opcode.close.rawValue }
        }
        return closeCode
    }

    /// Waits for a text frame that satisfies `predicate`.
    public func waitForText(where predicate: @escaping @Sendable (String) -> Bool) async throws -> String? {
        try await tcp.wait { received, closed in
            closed || Self.parse(received).contains { $0.opcode == Opcode.text.rawValue && predicate($0.text) }
        }
        return frames.first { $0.opcode == Opcode.text.rawValue && predicate($0.text) }?.text
    }

    /// Stops reading the socket: what the server sends piles up in the kernel, then in the server.
    public func stopReading() async {
        await tcp.stopReading()
    }

    /// The frames in `bytes` after the HTTP response head.
    static func parse(_ bytes: [UInt8]) -> [Frame] {
        guard let head = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { return [] }
        var index = head.upperBound
        var frames: [Frame] = []
        while index + 2 <= bytes.count {
            let first = bytes[index]
            let second = bytes[index + 1]
            var length = Int(second & 0x7F)
            var offset = index + 2
            if length == 126 {
                guard offset + 2 <= bytes.count else { break }
                length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
                offset += 2
            } else if length == 127 {
                guard offset + 8 <= bytes.count else { break }
                length = bytes[offset..<offset + 8].reduce(0) { $0 << 8 | Int($1) }
                offset += 8
            }
            guard offset + length <= bytes.count else { break }
            frames.append(Frame(opcode: first & 0x0F, fin: first & 0x80 != 0, payload: Array(bytes[offset..<offset + length])))
            index = offset + length
        }
        return frames
    }
}

