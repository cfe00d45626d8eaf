import Foundation
import SwitchboardProtocol

/// The app's CallKit settings: how the system call UI presents its calls and where its push
/// token belongs.
public struct CallKitSettings: Equatable, Sendable {
    /// The media types the app places and takes; with video, the call screen offers a video button.
    public var mediaTypes: Set<CallMediaType>
    /// Calls appear in the Phone app's recents (and can be called back from there).
    public var includesCallsInRecents: Bool
    /// A sound file in the app bundle, played instead of the system ringtone.
    public var ringtoneSound: String?
    /// An image in the app's assets (a 40-point template) shown on the call screen.
    public var iconTemplateImageName: String?
    /// Which APNs environment this build's push tokens belong to.
    public var pushEnvironment: PushEnvironment
    /// The app's bundle id (VoIP pushes go to topic `<bundleId>.voip`).
    public var bundleId: String
    /// This device's key for sealed pushes (kept by the app, e.g. in the Keychain): registered
    /// with the push tokens, so push services carry no names; the bridge opens each push with it.
    public var pushSealingKey: PushSealingKey?

    public init(
        bundleId: String, pushEnvironment: PushEnvironment, mediaTypes: Set<CallMediaType> = [.audio, .video],
        includesCallsInRecents: Bool = true, ringtoneSound: String? = nil, iconTemplateImageName: String? = nil,
        pushSealingKey: PushSealingKey? = nil
    ) {
        self.pushSealingKey = pushSealingKey
        self.bundleId = bundleId
        self.pushEnvironment = pushEnvironment
        self.mediaTypes = mediaTypes
        self.includesCallsInRecents = includesCallsInRecents
        self.ringtoneSound = ringtoneSound
        self.iconTemplateImageName = iconTemplateImageName
    }

    /// The provider configuration these settings give (`CXProviderConfiguration`).
    public var providerConfiguration: ProviderConfiguration {
        ProviderConfiguration(
            maximumCallGroups: 1, maximumCallsPerCallGroup: 1, supportsVideo: mediaTypes.contains(.video),
            includesCallsInRecents: includesCallsInRecents, ringtoneSound: ringtoneSound,
            iconTemplateImageName: iconTemplateImageName)
    }
}

/// `CXProviderConfiguration`'s fields as Switchboard sets them.
public struct ProviderConfiguration: Equatable, Sendable {
    /// One call group and one call in it: no conference merging, and a second incoming call offers
    /// "end and accept" (Switchboard's call waiting: answering hangs up the current call).
    public var maximumCallGroups: Int
    public var maximumCallsPerCallGroup: Int
    public var supportsVideo: Bool
    public var includesCallsInRecents: Bool
    public var ringtoneSound: String?
    public var iconTemplateImageName: String?
    /// Handles are user ids: generic, never phone numbers or e-mail addresses.
    public var supportedHandleTypes: Set<String> = ["generic"]

    public init(
        maximumCallGroups: Int, maximumCallsPerCallGroup: Int, supportsVideo: Bool, includesCallsInRecents: Bool,
        ringtoneSound: String?, iconTemplateImageName: String?
    ) {
        self.maximumCallGroups = maximumCallGroups
        self.maximumCallsPerCallGroup = maximumCallsPerCallGroup
        self.supportsVideo = supportsVideo
        self.includesCallsInRecents = includesCallsInRecents
        self.ringtoneSound = ringtoneSound
        self.iconTemplateImageName = iconTemplateImageName
    }
}

/// Who is logged in on this device, kept by the app (in the keychain) so that a push that launches
/// the app can log in before the user answers.
public struct CallKitAccount: Equatable, Sendable {
    public var sdkAppID: SdkAppID
    public var userID: String
    public var userSig: String

    public init(sdkAppID: SdkAppID, userID: String, userSig: String) {
        self.sdkAppID = sdkAppID
        self.userID = userID
        self.userSig = userSig
    }
}

extension UUID {
    /// The CallKit UUID of a call: the call id itself when it is a UUID (the server's are), else a
    /// name-based UUID of it, so the same call always gets the same UUID — across duplicate pushes,
    /// the signaling invitation and app launches.
    public init(callId: CallID) {
        self = UUID(uuidString: callId.rawValue) ?? UUID(nameBasedOn: "switchboard.call:\(callId.rawValue)")
    }
}

extension SystemCallEndReason {
    /// The system's reason for a Switchboard end reason, for a call that ended on its own (not by
    /// an action of this device).
    public init(_ reason: CallEndReason) {
        switch reason {
        case .hangup, .canceled, .reject: self = .remoteEnded
        case .noResponse: self = .unanswered
        case .otherDeviceAccepted: self = .answeredElsewhere
        case .otherDeviceReject: self = .declinedElsewhere
        case .offline, .lineBusy, .endByServer, .unknown: self = .failed
        }
    }
}
