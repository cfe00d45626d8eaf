// The app imports these modules by name; this target only makes them part of its build.
@_exported import Switchboard
@_exported import SwitchboardCallKit
@_exported import SwitchboardProtocol
@_exported import SwitchboardUI
@_exported import SwitchboardWebRTC
