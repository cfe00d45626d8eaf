import Switchboard
import SwitchboardProtocol

/// A media engine that only records what the SDK asks of it, in order.
public final class RecordingMediaEngine: MediaEngine {
    public enum Call: Equatable, Sendable {
        case callConnected(CallID, CallMediaType)
        case callEnded(CallID)
        case startAudio
        case stopAudio
        case microphone(on: Bool)
        case camera(on: Bool, front: Bool)
    }

    private let continuation: AsyncStream<Call>.Continuation
    /// Everything asked so far.
    public let calls: Recorder<Call>

    public init() {
        let (stream, continuation) = AsyncStream<Call>.makeStream()
        self.continuation = continuation
        self.calls = Recorder(stream)
    }

    public func callConnected(callId: CallID, mediaType: CallMediaType) {
        continuation.yield(.callConnected(callId, mediaType))
    }

    public func callEnded(callId: CallID) { continuation.yield(.callEnded(callId)) }
    public func startAudio() { continuation.yield(.startAudio) }
    public func stopAudio() { continuation.yield(.stopAudio) }
    public func setMicrophone(on: Bool) { continuation.yield(.microphone(on: on)) }
    public func setCamera(on: Bool, front: Bool) { continuation.yield(.camera(on: on, front: front)) }
}
