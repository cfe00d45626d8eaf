import Foundation
import Switchboard
import SwitchboardProtocol

/// What the engine sends as the microphone.
public enum AudioSource: Equatable, Sendable {
    /// A sine tone (bots, probes, tests).
    case tone(frequency: Double = 440)
    /// An audio file in any format GStreamer decodes, played once in real time, then silence.
    case file(String)
    /// A capture device: a PulseAudio source name, or the system's default microphone when nil.
    case microphone(device: String? = nil)
    /// Nothing audible.
    case silence

    /// `tone`, `silence`, `mic`, `mic:DEVICE`, or a file path.
    public init(argument: String) {
        switch argument {
        case "tone": self = .tone()
        case "silence": self = .silence
        case "mic", "microphone": self = .microphone()
        default:
            if argument.hasPrefix("mic:") {
                self = .microphone(device: String(argument.dropFirst(4)))
            } else {
                self = .file(argument)
            }
        }
    }

    /// The gst-launch description of the raw audio this source makes.
    var launchDescription: String {
        switch self {
        case .tone(let frequency): "audiotestsrc is-live=true wave=sine freq=\(frequency) volume=0.4"
        case .silence: "audiotestsrc is-live=true wave=silence"
        case .microphone(nil): "autoaudiosrc"
        case .microphone(let device?): "pulsesrc device=\(Self.quoted(device))"
        case .file(let path):
            "filesrc location=\(Self.quoted(path)) ! decodebin ! audioconvert ! audioresample ! identity sync=true"
        }
    }

    static func quoted(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

/// What the engine sends as the camera (and, for ``ScreenShareSource``, as the screen).
public enum VideoSource: Equatable, Sendable {
    /// A GStreamer test pattern (`smpte`, `ball`, `snow`…; see `gst-inspect-1.0 videotestsrc`).
    case pattern(String = "smpte")
    /// A video file in any format GStreamer decodes, played once in real time.
    case file(String)
    /// A V4L2 camera (`/dev/video0`…), the first one when nil.
    case camera(device: String? = nil)
    /// An X display (`:0`…), the one in `$DISPLAY` when nil.
    case display(String? = nil)

    /// `pattern`, `pattern:NAME`, `camera`, `camera:DEVICE`, `display`, `display:NAME`, or a file path.
    public init(argument: String) {
        let (kind, value) = Self.split(argument)
        switch kind {
        case "pattern": self = .pattern(value ?? "smpte")
        case "camera": self = .camera(device: value)
        case "display", "screen": self = .display(value)
        default: self = .file(argument)
        }
    }

    /// The source a shared screen uses.
    init(_ screen: ScreenShareSource) {
        switch screen {
        case .screen: self = .display(nil)
        case .display(let name): self = .display(name)
        case .file(let path): self = .file(path)
        case .testPattern: self = .pattern("ball")
        }
    }

    /// The gst-launch description of the raw video this source makes.
    var launchDescription: String {
        switch self {
        case .pattern(let name): "videotestsrc is-live=true pattern=\(AudioSource.quoted(name))"
        case .camera(nil): "v4l2src"
        case .camera(let device?): "v4l2src device=\(AudioSource.quoted(device))"
        case .display(nil): "ximagesrc use-damage=false"
        case .display(let name?): "ximagesrc use-damage=false display-name=\(AudioSource.quoted(name))"
        case .file(let path):
            "filesrc location=\(AudioSource.quoted(path)) ! decodebin ! videoconvert ! identity sync=true"
        }
    }

    private static func split(_ argument: String) -> (String, String?) {
        guard let colon = argument.firstIndex(of: ":"), !argument.hasPrefix("/"), !argument.hasPrefix(".") else {
            return (argument, nil)
        }
        return (String(argument[..<colon]), String(argument[argument.index(after: colon)...]))
    }
}

/// A kind of track a member sends.
public enum TrackKind: String, Sendable, CaseIterable {
    /// The microphone.
    case audio
    /// The camera.
    case video
    /// A shared screen.
    case screen

    var isVideo: Bool { self != .audio }
}

/// What the engine observes in the media it receives, as it happens (the statistics give the
/// totals): the CLI shows these, tests and benchmarks wait for them.
public enum MediaEvent: Equatable, Sendable {
    /// The first frame of a member's track was decoded (again after the track was replaced).
    case trackStarted(UserID, TrackKind)
    /// A member's track ended (they stopped sharing, the connection closed).
    case trackEnded(UserID, TrackKind)
    /// A member's video or screen is decoded at a new size.
    case frameSize(UserID, TrackKind, width: Int, height: Int)
    /// A member's audio over the last tenth of a second: as received, and as played (after
    /// playback volume and muting), 0–100.
    case audioLevel(UserID, level: Int, playout: Int)
    /// The ICE connection to a member changed state (`checking`, `connected`, `failed`…).
    case connectionState(UserID, String)
    /// Tearing down the connection to a member did not finish within the engine's limit
    /// (``GStreamerMediaEngine/Configuration/stallLimit``): the named part (`webrtcbin`, a
    /// sending branch) was left to stop on its own thread, and the engine went on.
    case teardownStalled(UserID?, String)
    /// A local track's encoder was set to a new bitrate: video following the round trips its
    /// receivers report (the lowest any peer allows; ``SendRateController``), audio thinned on a
    /// narrow link or full again (``AudioThinning``).
    case sendRate(TrackKind, kbps: Int)
    /// Video to a member stopped, was tried again, or goes on again after a trial: the link to
    /// them was too narrow for it (``VideoGate``). Audio goes on.
    case videoSending(UserID, VideoSending)
}

/// Whether this side sends video to a member, as its link to them allows (``VideoGate``).
public enum VideoSending: String, Equatable, Sendable {
    /// Stopped: the link is too narrow for video.
    case paused
    /// Sent again for a few seconds, to see whether the link carries it now.
    case trial
    /// Sent: the trial passed.
    case on
}
