import SwitchboardProtocol

/// The media side of a call: capture, playback, the peer connection. The SDK drives it; an app plugs
/// WebRTC or another RTC engine in (the Agora article does the same with its engine), and tests plug
/// a deterministic one.
public protocol MediaEngine: Sendable {
    /// This device is now in the connected call: set up its media (capture, the peer
    /// connection). Audio waits for ``startAudio()``.
    func callConnected(callId: CallID, mediaType: CallMediaType)
    /// This device left the call (or it ended): tear its media down.
    func callEnded(callId: CallID)
    /// Audio may flow now: the system activated the audio session (CallKit), or no one manages it.
    func startAudio()
    /// Stop audio: the audio session was deactivated, or the call ended.
    func stopAudio()
    /// The local microphone is on or off.
    func setMicrophone(on: Bool)
    /// The local camera is on or off, and which one.
    func setCamera(on: Bool, front: Bool)
}

/// Who decides when call audio may start.
public enum AudioSessionControl: Sendable, Equatable {
    /// The SDK starts audio as soon as the call connects (platforms without CallKit).
    case automatic
    /// Audio starts only when told that the system activated the audio session (CallKit's
    /// `provider(_:didActivate:)`), and stops when it is deactivated.
    case external
}
