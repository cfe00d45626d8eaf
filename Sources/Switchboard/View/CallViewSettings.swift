import SwitchboardProtocol

/// What the call view draws for each member besides video: avatars, the waiting animation, and
/// the icons for volume levels and network quality (the TRTC `CallCoreView` settings). Icon values
/// are whatever the views resolve: an SF Symbol name by default, or an image path the app sets.
public struct CallViewSettings: Equatable, Sendable {
    /// An icon per volume level; a level without one shows nothing.
    public var volumeLevelIcons: [VolumeLevel: String]
    /// An icon per network quality; a quality without one shows nothing.
    public var networkQualityIcons: [NetworkQuality: String]
    /// Avatars the app sets per member; they win over the members' profile avatars.
    public var avatars: [UserID: String] = [:]
    /// The avatar of members with neither an app-set nor a profile avatar.
    public var defaultAvatar: String?
    /// The animation (a GIF path) drawn on members who are being called.
    public var waitingAnimationPath: String?

    /// The default volume icons: a crossed microphone when muted, then one to three waves.
    public static let defaultVolumeLevelIcons: [VolumeLevel: String] = [
        .mute: "mic.slash.fill", .low: "speaker.wave.1.fill", .medium: "speaker.wave.2.fill",
        .high: "speaker.wave.3.fill", .peak: "speaker.wave.3.fill",
    ]

    /// The default network icons: nothing while the network is fine, a warning when it is bad,
    /// a crossed one when the member's connection is down (as TRTC shows its poor-network icon).
    public static let defaultNetworkQualityIcons: [NetworkQuality: String] = [
        .bad: "wifi.exclamationmark", .veryBad: "wifi.exclamationmark", .down: "wifi.slash",
    ]

    public init(
        volumeLevelIcons: [VolumeLevel: String] = CallViewSettings.defaultVolumeLevelIcons,
        networkQualityIcons: [NetworkQuality: String] = CallViewSettings.defaultNetworkQualityIcons,
        defaultAvatar: String? = nil, waitingAnimationPath: String? = nil
    ) {
        self.volumeLevelIcons = volumeLevelIcons
        self.networkQualityIcons = networkQualityIcons
        self.defaultAvatar = defaultAvatar
        self.waitingAnimationPath = waitingAnimationPath
    }

    /// Sets the icons of these volume levels, keeping the others.
    public mutating func setVolumeLevelIcons(_ icons: [VolumeLevel: String]) {
        volumeLevelIcons.merge(icons) { $1 }
    }

    /// Sets the icons of these network qualities, keeping the others.
    public mutating func setNetworkQualityIcons(_ icons: [NetworkQuality: String]) {
        networkQualityIcons.merge(icons) { $1 }
    }

    /// Sets avatars by user id, keeping the others.
    public mutating func setParticipantAvatars(_ avatars: [String: String]) {
        for (user, path) in avatars { self.avatars[UserID(rawValue: user)] = path }
    }

    public mutating func setWaitingAnimation(path: String?) {
        waitingAnimationPath = path
    }

    public func volumeIcon(for level: VolumeLevel) -> String? {
        volumeLevelIcons[level]
    }

    public func networkQualityIcon(for quality: NetworkQuality) -> String? {
        networkQualityIcons[quality]
    }

    /// The app-set avatar, else the member's profile avatar, else the default.
    public func avatar(for member: CallParticipantInfo) -> String? {
        avatars[member.userId] ?? member.avatarURL.flatMap { $0.isEmpty ? nil : $0 } ?? defaultAvatar
    }
}

/// The call timer's text.
public enum CallDurationText {
    /// `mm:ss` under an hour, `h:mm:ss` from an hour on; negative durations read `00:00`.
    public static func format(seconds: Int) -> String {
        let total = max(0, seconds)
        let (hours, minutes, secs) = (total / 3600, total / 60 % 60, total % 60)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "\(hours):\(two(minutes)):\(two(secs))" : "\(two(minutes)):\(two(secs))"
    }
}

extension ActiveCall {
    /// The live duration as the timer shows it (`mm:ss`, `h:mm:ss` from an hour).
    public var durationText: String { CallDurationText.format(seconds: duration) }
}
