import NIOWebSocket

/// How a connection ends, as its user asks for it (the transport picks the close code).
enum CloseReason: Equatable, Sendable {
    /// 1000.
    case normal
    /// 1012 (RFC 6455's Service Restart): come back, to this node or another.
    case comeBack
    /// 1008: the peer broke a rule (it did not log in in time).
    case policyViolation
}

/// The close codes of RFC 6455 the server sends: 1002 for protocol violations (unmasked or
/// reserved-bit frames, bad fragments, unknown opcodes), 1007 for text that is not UTF-8, 1009 for
/// a message above the hard limit or in more than ``WebSocketConnectionHandler/maxFragments``
/// fragments, 1008 for a peer that did not log in in time, 1012 (service restart: come back) when
/// the server shuts down, the peer's own code echoed in the close handshake, 1000 otherwise.
enum CloseCodes {
    static func code(for reason: CloseReason) -> WebSocketErrorCode {
        switch reason {
        case .normal: .normalClosure
        case .comeBack: .unknown(1012)
        case .policyViolation: .policyViolation
        }
    }

    /// The code for what the handlers before found wrong; nil: not the peer's fault (the
    /// connection just closes).
    static func code(for error: any Error) -> WebSocketErrorCode? {
        switch error {
        case NIOWebSocketError.invalidFrameLength,
            NIOWebSocketFrameAggregator.Error.accumulatedFrameSizeIsTooLarge,
            NIOWebSocketFrameAggregator.Error.tooManyFragments:
            .messageTooLarge
        case is NIOWebSocketError, is NIOWebSocketFrameAggregator.Error, is ClientFrameError:
            .protocolError
        default:
            nil
        }
    }

    /// The code to answer a peer's close frame with: its own (RFC 6455 §5.5.1) when a peer may
    /// send it, 1000 otherwise (1005, 1006 and 1015 never go on the wire; 1000-2999 are the
    /// protocol's, 3000-4999 the applications').
    static func echo(_ code: WebSocketErrorCode?) -> WebSocketErrorCode {
        guard let code else { return .normalClosure }
        switch code {
        case .unknown(let value): return (3000...4999).contains(value) ? code : .normalClosure
        default: return code
        }
    }
}
