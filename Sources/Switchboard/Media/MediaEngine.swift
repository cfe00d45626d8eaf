import SwitchboardProtocol

/// The media side of a call: capture, playback, transport. The SDK drives it; an app plugs in
/// WebRTC or another RTC engine (the Agora article does the same with its engine), and tests plug
/// a deterministic one.
///
/// A room-based engine (an SFU service that joins `roomId`) needs only this protocol. An engine
/// with peer-to-peer connections (WebRTC) also adopts ``PeerMediaEngine``, and the SDK then runs
/// the negotiation between the members for it.
public protocol MediaEngine: Sendable {
    /// This device is now in the connected call: set up its media (capture, join the room).
    /// Audio waits for ``startAudio()``.
    func callConnected(callId: CallID, roomId: RoomID, mediaType: CallMediaType)
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
    /// Capture volume of the microphone, 0–100 (0 sends silence).
    func setMicrophoneVolume(_ volume: Int)
    /// Resolution, frame rate and bitrate of the camera.
    func setVideoQuality(_ quality: VideoQuality)
    /// Where and how loud the other members play (and whether at all).
    func setAudioOutput(_ output: AudioOutput)
    /// Shares a screen as a second video track (nil: stops sharing). A peer-connection engine
    /// adds or removes the track and asks for negotiation.
    func setScreenShare(_ source: ScreenShareSource?)
    /// The connected call switched media type: video adds the camera track, audio removes it.
    func callMediaTypeChanged(callId: CallID, mediaType: CallMediaType)
    /// What the engine measured so far; the SDK asks once a second while a call is connected.
    func statistics() async -> MediaStatistics
}

/// How remote audio plays.
public struct AudioOutput: Equatable, Sendable {
    public var route: AudioRoute
    /// Playback volume, 0–100.
    public var volume: Int
    /// Every other member is silenced (``DeviceStore/muteAllRemoteAudio(_:)``).
    public var remoteAudioMuted: Bool

    public init(route: AudioRoute = .earpiece, volume: Int = 100, remoteAudioMuted: Bool = false) {
        self.route = route
        self.volume = volume
        self.remoteAudioMuted = remoteAudioMuted
    }
}

/// What a shared screen shows.
public enum ScreenShareSource: Equatable, Sendable {
    /// The whole screen: ReplayKit on iOS, the X display in `$DISPLAY` on Linux.
    case screen
    /// One display by name (on Linux an X display such as `:1`).
    case display(String)
    /// A video file shown as the shared screen (kiosks, bots, tests).
    case file(String)
    /// A moving test picture.
    case testPattern
}

/// A WebRTC session description.
public struct SessionDescription: Equatable, Sendable {
    public enum Kind: String, Sendable {
        case offer
        case answer
    }

    public var kind: Kind
    public var sdp: String

    public init(kind: Kind, sdp: String) {
        self.kind = kind
        self.sdp = sdp
    }
}

/// `RTCPeerConnection.signalingState`, as far as negotiation cares.
public enum PeerSignalingState: Sendable, Equatable {
    case stable
    case haveLocalOffer
    case haveRemoteOffer
    case closed
}

/// What a peer connection reports to the SDK (its `onicecandidate`, `onnegotiationneeded` and
/// ICE state).
public struct PeerConnectionEvents: Sendable {
    /// A local ICE candidate to trickle to the peer (an empty candidate ends them).
    public let localCandidate: @Sendable (IceCandidate) -> Void
    /// The connection needs (re)negotiation: tracks were added or changed.
    public let negotiationNeeded: @Sendable () -> Void
    /// ICE failed (`iceConnectionState == "failed"`, or `"disconnected"` with no change for a few
    /// seconds: libwebrtc never leaves that state when every path is dead): the SDK restarts it, a
    /// few times in a row at most (``PeerLink/iceRestartLimit``).
    public let iceFailed: @Sendable () -> Void
    /// ICE connected (`iceConnectionState` became `connected` or `completed`): there is a media
    /// path to the peer, and the SDK's count of restarts in a row starts again.
    public let iceConnected: @Sendable () -> Void

    public init(
        localCandidate: @escaping @Sendable (IceCandidate) -> Void, negotiationNeeded: @escaping @Sendable () -> Void,
        iceFailed: @escaping @Sendable () -> Void, iceConnected: @escaping @Sendable () -> Void
    ) {
        self.localCandidate = localCandidate
        self.negotiationNeeded = negotiationNeeded
        self.iceFailed = iceFailed
        self.iceConnected = iceConnected
    }
}

/// A media engine with one WebRTC-style peer connection per other member (a mesh). The SDK opens
/// and closes the connections as members come and go, relays the offers, answers and candidates
/// through the server, and decides who offers and how collisions resolve (``PeerLink``).
public protocol PeerMediaEngine: MediaEngine {
    /// Opens the connection to `peer` with these ICE servers, with the local tracks; reports
    /// through `events`.
    func openPeer(_ peer: UserID, iceServers: [IceServer], events: PeerConnectionEvents)
    /// Closes the connection to `peer`.
    func closePeer(_ peer: UserID)
    /// `setLocalDescription()` with no argument: creates the offer (with fresh ICE credentials
    /// when `iceRestart`) or the answer that the connection's state calls for, applies it and
    /// returns it.
    func setLocalDescription(peer: UserID, iceRestart: Bool) async throws -> SessionDescription
    /// `setRemoteDescription(_:)`; an offer that arrives in `haveLocalOffer` rolls the local offer
    /// back first (implicit rollback), as WebRTC does.
    func setRemoteDescription(_ description: SessionDescription, peer: UserID) async throws
    /// `addIceCandidate(_:)`.
    func addRemoteCandidate(_ candidate: IceCandidate, peer: UserID) async throws
    /// The connection's signaling state.
    func signalingState(peer: UserID) async -> PeerSignalingState
}

/// A peer-connection engine that can also carry a group call through the server's SFU (docs/IOS.md,
/// "Group calls through the SFU"). In such a call the SDK opens no connection per member: it
/// opens two connections with the SFU for each session the server starts, relays their
/// negotiation, and tells the engine whose each received section is.
///
/// - `publish` sends the local tracks, each once whatever the number of members: the microphone,
///   the camera (in simulcast layers where the engine can: ``SFUCameraLayers``, highest first) and
///   a shared screen in a stream of its own (the microphone and the camera share one: receivers
///   tell the screen by its `a=msid`). It receives nothing. The engine offers; the SFU answers.
/// - `subscribe` sends nothing and receives the other members' tracks. The SFU offers (every time
///   members or their tracks come and go), and ``setSFUTracks(_:)`` comes first with what each
///   section (by `a=mid`) carries: the engine reports what it receives under that member's name
///   (``SFUSections`` names them), its statistics too: each member's in
///   ``MediaStatistics/peers``, the publish connection's in ``MediaStatistics/published``.
///
/// A new session closes both connections of the old one first (``closeSFU(_:)``); ICE failing on
/// either is reported through the connection's ``PeerConnectionEvents/iceFailed`` and the SDK
/// asks the server for a new session.
public protocol SFUMediaEngine: PeerMediaEngine {
    /// Opens the connection with these ICE servers, with the local tracks for `publish`; reports
    /// through `events` (`negotiationNeeded` on `publish` when a track is added or removed).
    func openSFU(_ connection: SFUConnection, iceServers: [IceServer], events: PeerConnectionEvents)
    func closeSFU(_ connection: SFUConnection)
    /// `setLocalDescription()` with no argument: the publish offer, or the answer to the SFU's
    /// offer on `subscribe`; applied and returned.
    func setLocalDescription(sfu connection: SFUConnection) async throws -> SessionDescription
    func setRemoteDescription(_ description: SessionDescription, sfu connection: SFUConnection) async throws
    func addRemoteCandidate(_ candidate: IceCandidate, sfu connection: SFUConnection) async throws
    func signalingState(sfu connection: SFUConnection) async -> PeerSignalingState
    /// What each section of the subscribe connection carries, for the offer that follows.
    func setSFUTracks(_ tracks: [SFUTrack])
}

/// The simulcast layers an engine sends the camera in through the SFU, highest first (the order
/// Janus expects): the whole picture, and one at half its width and height.
public enum SFUCameraLayers {
    /// RTP stream ids and how much each layer is scaled down.
    public static let layers: [(rid: String, scaleDown: Int)] = [("h", 1), ("l", 2)]
}

/// Who decides when call audio may start.
public enum AudioSessionControl: Sendable, Equatable {
    /// The SDK starts audio as soon as the call connects (platforms without CallKit).
    case automatic
    /// Audio starts only when told that the system activated the audio session (CallKit's
    /// `provider(_:didActivate:)`), and stops when it is deactivated.
    case external
}
