import SwitchboardProtocol

/// A button of the call view (TUICallKit's controls).
public enum CallControl: String, Sendable, CaseIterable {
    case accept
    case reject
    case hangup
    case microphone
    case speaker
    case camera
    case switchCamera
    case screenShare
    /// Starts or stops the server's recording of the call (shown where the app asks for it:
    /// ``CallControls/items(for:devices:recordingControl:)``).
    case record
    /// Offers the call to your other devices ("continue there"; docs/IOS.md).
    case moveToAnotherDevice
    case minimize
}

/// One button as drawn: what it does, whether it shows as on, whether it can be pressed.
public struct CallControlItem: Equatable, Sendable {
    public var control: CallControl
    public var isOn: Bool
    public var isEnabled: Bool

    public init(_ control: CallControl, isOn: Bool = false, isEnabled: Bool = true) {
        self.control = control
        self.isOn = isOn
        self.isEnabled = isEnabled
    }
}

/// Which buttons the call view shows for a state, and in which order (device toggles first, the
/// call's own actions last). The views draw these and call ``action``'s answer on a press.
public enum CallControls {
    /// The buttons: a ringing call has decline and answer; a call being placed the microphone,
    /// the speaker (and the camera in a video call) and hang up; a connected call adds minimise,
    /// and in a video call switching cameras (while the camera is on) and screen sharing, and
    /// moving the call to another of your devices. With `recordingControl` (an app whose
    /// recording policy records calls on request) a connected call has record too: on while the
    /// call is recorded, and disabled while the app records every call (nobody can stop that).
    public static func items(
        for call: CallStore.State, devices: DeviceStore.State, recordingControl: Bool = false
    ) -> [CallControlItem] {
        guard let active = call.activeCall, call.selfInfo.status != .none else { return [] }
        if active.direction == .incoming && call.selfInfo.status == .waiting {
            return [CallControlItem(.reject), CallControlItem(.accept)]
        }
        let video = active.mediaType == .video
        let connected = call.selfInfo.status == .accept
        let camera = devices.cameraStatus == .on
        var items = [
            CallControlItem(.microphone, isOn: devices.microphoneStatus == .on),
            CallControlItem(.speaker, isOn: devices.audioRoute == .speaker),
        ]
        if video { items.append(CallControlItem(.camera, isOn: camera)) }
        if video && connected {
            items.append(CallControlItem(.switchCamera, isOn: !devices.isFrontCamera, isEnabled: camera))
            items.append(CallControlItem(.screenShare, isOn: devices.screenShare != nil))
        }
        if connected && recordingControl {
            let recording = active.recording
            items.append(CallControlItem(.record, isOn: recording != nil, isEnabled: recording == nil || recording?.startedBy != nil))
        }
        if connected { items += [CallControlItem(.moveToAnotherDevice), CallControlItem(.minimize)] }
        items.append(CallControlItem(.hangup))
        return items
    }

    /// What a press does, as a call on the SDK.
    public enum Action: Equatable, Sendable {
        case accept
        case reject
        case hangup
        case setMicrophone(on: Bool)
        case setAudioRoute(AudioRoute)
        case setCamera(on: Bool, front: Bool)
        case setScreenShare(on: Bool)
        /// ``CallStore/startRecording(callId:)`` (on) or ``CallStore/stopRecording(callId:)``.
        case setRecording(on: Bool)
        /// ``CallStore/offerMove(callId:to:)`` to all your other devices.
        case offerMove
        case minimize
    }

    /// The action of pressing `item` in this state: toggles flip what the button shows; the
    /// speaker goes back to the earpiece (a headset, when connected, takes over by itself).
    public static func action(for item: CallControlItem, devices: DeviceStore.State) -> Action? {
        guard item.isEnabled else { return nil }
        switch item.control {
        case .accept: return .accept
        case .reject: return .reject
        case .hangup: return .hangup
        case .microphone: return .setMicrophone(on: !item.isOn)
        case .speaker: return .setAudioRoute(item.isOn ? .earpiece : .speaker)
        case .camera: return .setCamera(on: !item.isOn, front: devices.isFrontCamera)
        case .switchCamera: return .setCamera(on: true, front: !devices.isFrontCamera)
        case .screenShare: return .setScreenShare(on: !item.isOn)
        case .record: return .setRecording(on: !item.isOn)
        case .moveToAnotherDevice: return .offerMove
        case .minimize: return .minimize
        }
    }
}
