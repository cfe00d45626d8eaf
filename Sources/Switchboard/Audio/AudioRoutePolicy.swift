import SwitchboardProtocol

/// Where call audio plays, the same on every platform: a value that takes what happens in a call
/// and says where the audio goes.
///
/// - By default audio calls use the earpiece and video calls the speaker (CallPlus: 默认音频通话时
///   使用听筒，视频通话时使用扬声器), unless a headset is connected.
/// - A Bluetooth or wired headset is preferred when present; of several, the one connected last
///   (as iOS does): plugging one in during a call moves the audio there, even from a route the
///   user chose.
/// - A route the user chose is kept for the call, across media-type changes, until they choose
///   another, a headset is connected, or the chosen headset goes away. It is forgotten when the
///   call ends. A route that does not exist (Bluetooth with no Bluetooth device) is not taken.
/// - Without a choice, a media-type change moves a built-in route to the new type's default
///   (speaker for video, earpiece for audio); a headset stays.
public struct AudioRoutePolicy: Equatable, Sendable {
    public enum Input: Equatable, Sendable {
        /// A call started for this device (placed or answered), with its media type.
        case callStarted(CallMediaType)
        case mediaTypeChanged(CallMediaType)
        /// The user picked a route (``DeviceStore/setAudioRoute(_:)``).
        case userChose(AudioRoute)
        /// The headsets present now (`.bluetooth`, `.headset`); the built-in routes always are.
        case headsetsChanged(Set<AudioRoute>)
        case callEnded
    }

    /// The call's media type, while there is a call.
    public private(set) var mediaType: CallMediaType?
    /// The user's choice for this call.
    public private(set) var choice: AudioRoute?
    /// The headsets present, oldest connection first.
    public private(set) var headsets: [AudioRoute] = []

    public init() {}

    /// Where audio goes now.
    public var route: AudioRoute {
        if let choice, isAvailable(choice) { return choice }
        if let newest = headsets.last { return newest }
        return mediaType == .video ? .speaker : .earpiece
    }

    /// Applies one input; returns the route when it changed.
    @discardableResult
    public mutating func handle(_ input: Input) -> AudioRoute? {
        let before = route
        switch input {
        case .callStarted(let type):
            mediaType = type
            // A choice made before the call (the speaker button on the calling screen) carries over.
        case .mediaTypeChanged(let type):
            if mediaType != nil { mediaType = type }
        case .userChose(let route):
            if isAvailable(route) { choice = route }
        case .headsetsChanged(let present):
            let present = present.filter(\.isHeadset)
            let added = present.subtracting(headsets)
            headsets.removeAll { !present.contains($0) }
            // Connected together: Bluetooth last, so it wins (it is the one a user puts on on purpose).
            headsets += added.sorted { $0 == .headset && $1 == .bluetooth }
            // A headset put on now wins over an earlier choice; a chosen headset that left is no choice.
            if !added.isEmpty || choice.map({ $0.isHeadset && !present.contains($0) }) == true { choice = nil }
        case .callEnded:
            mediaType = nil
            choice = nil
        }
        return route == before ? nil : route
    }

    private func isAvailable(_ route: AudioRoute) -> Bool {
        !route.isHeadset || headsets.contains(route)
    }
}

extension AudioRoute {
    /// A device the user connects (Bluetooth, wired), not one built into the phone.
    public var isHeadset: Bool { self == .bluetooth || self == .headset }
}
