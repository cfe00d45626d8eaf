import ArgumentParser
import Foundation

/// `switchboard call`: the terminal client (SPEC §1) on the Swift SDK and the GStreamer engine,
/// for bots, kiosks, monitoring probes and load tests with media.
struct CallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Place or answer a call with real media (Opus, VP8) from the terminal.",
        discussion: """
            Place a call with --to, wait for one and accept it with --answer, or wait for one of your other \
            devices to offer you its call and take it with --take. While the call runs it shows \
            the timer, each member's network quality and volume, and the events; at the end a summary (with \
            --json, one JSON object on the last line of stdout). Exits 0 when the call connected and ended \
            normally. Lines on stdin control it: mute, unmute, camera on|off, quality p360|p540|p720|p1080, \
            share [pattern|display[:NAME]|FILE], unshare, switch audio|video, hangup, move [DEVICE] (offer the \
            call to another of your devices, or to all of them), take (take your call from another device, where \
            the app allows it without an offer). A call moved away ends the run as a normal end.

            Needs a build with the GStreamer trait (README, "Media on Linux"), from the repository's root:
              swift build --package-path Server --traits GStreamer
            """)

    @Option(help: "The server's WebSocket URL.")
    var server = "ws://127.0.0.1:8080/v1/ws"

    @Option(name: .customLong("app-id"), help: "The app's sdkAppID.")
    var appID: Int64

    @Option(help: "The app's secretKey (a UserSig is made from it).")
    var secret: String?

    @Option(name: .customLong("user-sig"), help: "A UserSig for --user (instead of --secret).")
    var userSig: String?

    @Option(help: "Who you are.")
    var user: String

    @Option(help: "Call these users (comma-separated; several make a group call).")
    var to: String?

    @Flag(help: "Wait for a call and accept it.")
    var answer = false

    @Flag(help: "Wait for another of your devices to offer its call here (`move` there), and take it.")
    var take = false

    @Option(name: .customLong("device-id"), help: "This device's id (another device offers a call to it by this id).")
    var deviceId: String?

    @Flag(help: "A video call (with --to).")
    var video = false

    @Option(name: .customLong("audio-source"), help: "tone, silence, mic[:DEVICE], or an audio file.")
    var audioSource = "tone"

    @Option(name: .customLong("video-source"), help: "pattern[:NAME], camera[:DEVICE], display[:NAME], or a video file.")
    var videoSource = "pattern"

    @Option(help: "Camera quality: p360, p540, p720, p1080.")
    var quality = "p360"

    @Option(help: "Record each member's audio (WAV) and video (WebM) into this directory.")
    var record: String?

    @Option(name: .customLong("hangup-after"), help: "Hang up this many seconds after the call connects.")
    var hangupAfter: Double?

    @Option(help: "Seconds a placed call rings (with --to); seconds to wait for one (with --answer or --take).")
    var timeout = 30

    @Option(name: .customLong("media-change"), help: "Answer to the other member's media-type change: agree or decline.")
    var mediaChange = "agree"

    @Flag(help: "Use only relayed (TURN) candidates.")
    var relay = false

    @Flag(help: "Keep ICE on 127.0.0.1 (tests).")
    var loopback = false

    @Flag(
        name: .customLong("ignore-path-changes"),
        help: "Do not follow the network path (netlink): only the heartbeat notices a dead connection.")
    var ignorePathChanges = false

    @Option(name: .customLong("status-interval"), help: "Seconds between status lines (0.1…60).")
    var statusInterval = 1.0

    @Flag(help: "Events as JSON lines, and the summary as one JSON object on the last line of stdout.")
    var json = false

    @Option(name: .customLong("log-level"), help: "SDK and engine logs on stderr: trace, debug, info, warning, error.")
    var logLevel = "error"

    func validate() throws {
        if [to != nil, answer, take].filter({ $0 }).count != 1 {
            throw ValidationError("give one of --to ID[,ID…], --answer or --take")
        }
        if (secret == nil) == (userSig == nil) { throw ValidationError("give either --secret or --user-sig") }
        if !["agree", "decline"].contains(mediaChange) { throw ValidationError("--media-change is agree or decline") }
        if let hangupAfter, !(hangupAfter >= 0 && hangupAfter <= 86_400) {
            throw ValidationError("--hangup-after is 0…86400 seconds")
        }
        if !(statusInterval >= 0.1 && statusInterval <= 60) { throw ValidationError("--status-interval is 0.1…60 seconds") }
        if !(1...600).contains(timeout) { throw ValidationError("--timeout is 1…600 seconds") }
        if !["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(logLevel) {
            throw ValidationError("--log-level is trace, debug, info, warning or error")
        }
        guard URL(string: server)?.scheme.map({ ["ws", "wss"].contains($0) }) == true else {
            throw ValidationError("--server is a ws:// or wss:// URL")
        }
    }

    func run() async throws {
        #if GStreamer
        let status = try await TerminalCall(self).run()
        if status != 0 { throw ExitCode(status) }
        #else
        FileHandle.standardError.write(Data(Self.withoutMedia.utf8))
        throw ExitCode(3)
        #endif
    }

    /// What a build without the GStreamer trait says instead of calling.
    static let withoutMedia = """
        switchboard call needs media, and this build has none (it was built without the GStreamer trait).
        Install GStreamer's development packages and build with the trait:

            sudo apt-get install libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev \\
                libgstreamer-plugins-bad1.0-dev libnice-dev gstreamer1.0-plugins-good \\
                gstreamer1.0-plugins-bad gstreamer1.0-nice
            swift build --package-path Server --traits GStreamer
            Server/.build/debug/switchboard call --help

        """
}
