#if GStreamer
import Foundation
import Logging
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardGStreamer
import SwitchboardProtocol
import SwitchboardTools

/// One run of `switchboard call`: log in, place or answer one call, show it, control it from
/// stdin, and summarise it.
struct TerminalCall {
    /// What the run waits for next, merged from the SDK, the engine, stdin and a one-second tick.
    enum Input: Sendable {
        case call(CallStoreEvent)
        case media(MediaEvent)
        /// The signaling connection's state changed (reconnecting after a drop, logged in again).
        case connection(LoginStore.LoginStatus)
        case command(String)
        case tick
        case hangupTime
        case noCallInTime
    }

    let options: CallCommand
    let output: Output

    init(_ options: CallCommand) {
        self.options = options
        self.output = Output(json: options.json)
    }

    func run() async throws -> Int32 {
        let missing = GStreamerMediaEngine.missingElements()
        guard missing.isEmpty else {
            output.error("GStreamer lacks \(missing.joined(separator: ", ")): install gstreamer1.0-plugins-good, -bad and gstreamer1.0-nice")
            return 3
        }
        guard let quality = VideoQuality(rawValue: options.quality) else {
            output.error("unknown quality \(options.quality) (p360, p540, p720, p1080)")
            return 2
        }
        var logger = Logger(label: "switchboard.call")
        logger.logLevel = Logger.Level(rawValue: options.logLevel) ?? .error
        let engine = GStreamerMediaEngine(
            configuration: .init(
                audioSource: AudioSource(argument: options.audioSource),
                videoSource: VideoSource(argument: options.videoSource),
                recordDirectory: try options.record.map(Self.directory), relayOnly: options.relay,
                loopbackOnly: options.loopback),
            logger: logger)
        let client = SwitchboardClient(
            configuration: SwitchboardConfiguration(
                serverURL: URL(string: options.server)!, platform: "cli", mediaEngine: engine,
                networkPathMonitor: options.ignorePathChanges ? nil : SystemNetworkPathMonitor(), logger: logger))

        // Bounded as the engine's own events are: a terminal that cannot keep up loses the oldest.
        let (inputs, feed) = AsyncStream<Input>.makeStream(bufferingPolicy: .bufferingNewest(observingBufferLimit))
        let sources = startSources(client: client, engine: engine, feed: feed)
        var run = RunState()
        let status = await call(quality: quality, client: client, engine: engine, inputs: inputs, feed: feed, &run)

        // Every way out ends the same way, before the process exits: nothing of the run may still
        // be working then (a plugin loading in the background crashed in libcrypto's exit handlers
        // after a refused call; issue 48).
        sources.forEach { $0.cancel() }
        run.timers.forEach { $0.cancel() }
        // The recordings are complete before the process exits.
        if let callId = run.callId { await engine.endCall(callId) }
        try? await client.loginStore.logout()
        await engine.shutdown()
        if status == nil { output.summary(run.summary(user: options.user)) }
        return status ?? (run.connected && run.endReason == .hangup ? 0 : 1)
    }

    /// Logs in, places or waits for the call, and handles what comes until the call ends: nil
    /// then (the summary says how it went), or the exit status of a run that failed before it had
    /// a call, once its sentence is printed.
    private func call(
        quality: VideoQuality, client: SwitchboardClient, engine: GStreamerMediaEngine, inputs: AsyncStream<Input>,
        feed: AsyncStream<Input>.Continuation, _ run: inout RunState
    ) async -> Int32? {
        let sig = options.userSig ?? UserSig.generate(
            sdkAppID: SdkAppID(options.appID), secretKey: options.secret ?? "", userID: options.user, expire: 86_400,
            time: Int64(Date().timeIntervalSince1970))
        do {
            try await client.loginStore.login(sdkAppID: SdkAppID(options.appID), userID: options.user, userSig: sig)
        } catch {
            output.error(Self.loginFailure(error, server: options.server, appID: options.appID))
            return 1
        }
        output.line("logged in as \(options.user) on \(options.server)", ["event": "loggedIn", "userId": options.user])
        client.deviceStore.openLocalMicrophone()
        client.deviceStore.setVideoQuality(quality)

        if let to = options.to {
            let callees = to.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
            if options.video { client.deviceStore.openLocalCamera() }
            do {
                let result = try await client.callStore.calls(
                    participantIds: callees, mediaType: options.video ? .video : .audio,
                    params: CallParams(timeout: options.timeout))
                run.callId = result.callId
                run.callees = callees
                output.line(
                    "calling \(callees.joined(separator: ", ")) (\(options.video ? "video" : "audio")), call \(result.callId)",
                    ["event": "calling", "callId": result.callId.rawValue])
            } catch {
                output.error(Self.callFailure(error, user: options.user, callees: callees))
                return 1
            }
        } else {
            output.line("waiting for a call (\(options.timeout) s)", ["event": "waiting"])
            Self.after(seconds: Double(options.timeout), feed: feed, .noCallInTime, into: &run.timers)
        }

        for await input in inputs {
            if await handle(input, &run, client: client, engine: engine, feed: feed) { break }
        }
        return nil
    }

    /// The sentence for a login that failed: the cause and what to do.
    static func loginFailure(_ error: any Error, server: String, appID: Int64) -> String {
        guard let error = error as? SwitchboardError else { return "logging in failed: \(error)" }
        switch error.code {
        case .connectionFailed:
            return "no server at \(server) — start `switchboard serve` or pass `--server`"
        case .unknownApp:
            return "the server at \(server) serves no app \(appID) — pass the sdkAppID `switchboard serve` printed with --app-id"
        case .userSigBadSignature:
            return "the server refused the UserSig (\(error.code.name) \(error.code.rawValue)): pass the app's secretKey with --secret, as `switchboard serve` printed it"
        case .userSigMalformed, .userSigExpired, .userSigNotYetValid, .userSigWrongApp, .userSigWrongUser:
            return "the server refused the UserSig: \(error.message) (\(error.code.name) \(error.code.rawValue)); make a new one for --user with `switchboard usersig gen`, or pass --secret"
        case .invalidUserID:
            return "--user is not a user id: \(error.message)"
        case .rateLimited:
            let seconds = max(1, Int(((error.retryAfter ?? 1000) + 999) / 1000))
            return "the server refuses this login for now (too many logins in a row): try again in \(seconds) s"
        default:
            return "logging in failed: \(error)"
        }
    }

    /// The sentence for a call that ended `offline`: the server knows no device of the callee.
    static func offline(_ user: String) -> String {
        "no device of \(user) is known to the server (never logged in, or logged out, and no push token): "
            + "check the user id, or log \(user) in first"
    }

    /// The sentence for a call the server refused.
    static func callFailure(_ error: any Error, user: String, callees: [String]) -> String {
        guard let error = error as? SwitchboardError else { return "the call failed: \(error)" }
        switch error.code {
        case .cannotCallSelf:
            return "you cannot call yourself (\(error.code.name) \(error.code.rawValue)): --to names \(user), who is logged in here; call another user"
        case .invalidUserID:
            return "the call failed: \(error.message) (\(error.code.name) \(error.code.rawValue)); --to takes user ids separated by commas"
        default:
            return "the call failed: \(error)"
        }
    }

    /// What the run has seen so far.
    struct RunState {
        var callId: CallID?
        /// Whom the run called (with --to).
        var callees: [String] = []
        var connected = false
        var connectedAt: ContinuousClock.Instant?
        var answeredAt: ContinuousClock.Instant?
        var endedAt: ContinuousClock.Instant?
        var endReason: CallEndReason?
        var endedBy: UserID?
        /// Each member's figures as last read (``LastFigures``: a reading after the media closed
        /// keeps them).
        private var figures = LastFigures()
        var statistics: MediaStatistics { figures.statistics }
        var loudest: [UserID: Int] = [:]
        var firstAudio: [UserID: Int] = [:]
        var timers: [Task<Void, Never>] = []

        mutating func note(_ reading: MediaStatistics) { figures.note(reading) }

        func summary(user: String) -> CallSummary {
            let duration = connectedAt.map { start in
                let elapsed = (endedAt ?? .now) - start
                return Int(elapsed.components.seconds)
            } ?? 0
            var members: [String: CallSummary.Member] = [:]
            for (peer, statistics) in statistics.peers {
                members[peer.rawValue] = CallSummary.Member(
                    statistics, loudest: loudest[peer] ?? 0, firstAudioMs: firstAudio[peer])
            }
            return CallSummary(
                callId: callId?.rawValue, connected: connected, endReason: endReason?.rawValue,
                endedBy: endedBy?.rawValue, durationSeconds: duration, members: members)
        }
    }

    /// Handles one input; true when the run is over.
    private func handle(
        _ input: Input, _ run: inout RunState, client: SwitchboardClient, engine: GStreamerMediaEngine,
        feed: AsyncStream<Input>.Continuation
    ) async -> Bool {
        switch input {
        case .call(let event):
            return await handle(event, &run, client: client, feed: feed)
        case .media(let event):
            switch event {
            case .audioLevel(let peer, let level, _):
                run.loudest[peer] = max(run.loudest[peer] ?? 0, level)
            case .trackStarted(let peer, .audio) where run.firstAudio[peer] == nil:
                if let start = run.answeredAt ?? run.connectedAt {
                    run.firstAudio[peer] = Int((ContinuousClock.now - start) / .milliseconds(1))
                }
                output.media(event)
            default:
                output.media(event)
            }
        case .tick:
            guard run.connected, run.endReason == nil else { return false }
            run.note(await engine.statistics())
            output.status(client.callStore.state, statistics: run.statistics)
        case .hangupTime:
            run.note(await engine.statistics())
            output.line("hanging up", ["event": "hangingUp"])
            try? await client.callStore.hangup()
        case .noCallInTime:
            guard run.callId == nil else { return false }
            output.error("no call came within \(options.timeout) s")
            return true
        case .connection(let status):
            output.line("connection: \(status.rawValue)", ["event": "connection", "state": status.rawValue])
        case .command(let line):
            await command(line, &run, client: client, engine: engine)
        }
        return false
    }

    private func handle(
        _ event: CallStoreEvent, _ run: inout RunState, client: SwitchboardClient, feed: AsyncStream<Input>.Continuation
    ) async -> Bool {
        output.event(event)
        switch event {
        case .onCallReceived(let callId, _, _, let mediaType, _) where options.answer && run.callId == nil:
            run.callId = callId
            if mediaType == .video { client.deviceStore.openLocalCamera() }
            run.answeredAt = .now
            do {
                try await client.callStore.accept(callId: callId)
            } catch {
                output.error("accepting failed: \(error)")
                return true
            }
        case .onCallStarted(let callId, _, _) where callId == run.callId:
            run.connected = true
            run.connectedAt = .now
            if let seconds = options.hangupAfter {
                Self.after(seconds: seconds, feed: feed, .hangupTime, into: &run.timers)
            }
        case .onCallEnded(let callId, _, let reason, let userId) where callId == run.callId:
            run.endReason = reason
            run.endedBy = userId
            run.endedAt = .now
            if reason == .offline, !run.connected {
                output.error(Self.offline(userId.map(\.rawValue) ?? run.callees.joined(separator: ", ")))
            }
            return true
        case .onMediaTypeChangeRequested(let callId, let transaction, let mediaType, let userId) where callId == run.callId:
            let agree = options.mediaChange == "agree"
            output.line(
                "\(userId) asks to switch to \(mediaType.rawValue): \(agree ? "agreed" : "declined")",
                ["event": "mediaTypeChangeAnswered", "agree": agree ? "true" : "false"])
            try? await client.callStore.replyMediaTypeChange(transactionId: transaction, agree: agree)
        default:
            break
        }
        return false
    }

    /// A line from stdin.
    private func command(_ line: String, _ run: inout RunState, client: SwitchboardClient, engine: GStreamerMediaEngine) async {
        let words = line.split(separator: " ").map(String.init)
        let devices = client.deviceStore
        switch (words.first ?? "", words.dropFirst().first) {
        case ("", _): return
        case ("mute", _): devices.closeLocalMicrophone()
        case ("unmute", _): devices.openLocalMicrophone()
        case ("camera", "on"): devices.openLocalCamera(isFront: devices.state.isFrontCamera)
        case ("camera", "off"): devices.closeLocalCamera()
        case ("quality", let value?):
            guard let quality = VideoQuality(rawValue: value) else { return output.error("unknown quality \(value)") }
            devices.setVideoQuality(quality)
        case ("share", let value):
            devices.startScreenShare(Self.screen(value))
        case ("unshare", _): devices.stopScreenShare()
        case ("switch", let value?):
            guard let mediaType = CallMediaType(rawValue: value) else { return output.error("switch audio|video") }
            do {
                try await client.callStore.requestMediaTypeChange(to: mediaType)
            } catch {
                output.error("switching failed: \(error)")
            }
        case ("hangup", _):
            run.note(await engine.statistics())
            try? await client.callStore.hangup()
        default:
            return output.error("unknown command: \(line)")
        }
        output.line("> \(line)", ["event": "command", "command": line])
    }

    static func screen(_ argument: String?) -> ScreenShareSource {
        switch argument {
        case nil, "pattern": .testPattern
        case "display", "screen": .screen
        case let value? where value.hasPrefix("display:"): .display(String(value.dropFirst("display:".count)))
        case let value?: .file(value)
        }
    }

    static func directory(_ path: String) throws -> URL {
        let url = URL(fileURLWithPath: path, isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    // MARK: - inputs

    private func startSources(
        client: SwitchboardClient, engine: GStreamerMediaEngine, feed: AsyncStream<Input>.Continuation
    ) -> [Task<Void, Never>] {
        let calls = Task {
            for await event in client.callStore.events { feed.yield(.call(event)) }
        }
        let media = Task {
            for await event in engine.events { feed.yield(.media(event)) }
        }
        let connection = Task {
            // The first value is the state when this starts (before the login): changes only.
            var last: LoginStore.LoginStatus?
            for await state in client.loginStore.stateUpdates {
                if let last, state.loginStatus != last { feed.yield(.connection(state.loginStatus)) }
                last = state.loginStatus
            }
        }
        let interval = Duration.milliseconds(Int(options.statusInterval * 1000))
        let ticks = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                feed.yield(.tick)
            }
        }
        // stdin is read on a thread of its own: reading blocks.
        let stdin = Thread {
            while let line = readLine() { feed.yield(.command(line.trimmingCharacters(in: .whitespaces))) }
        }
        stdin.start()
        return [calls, media, connection, ticks]
    }

    private static func after(
        seconds: Double, feed: AsyncStream<Input>.Continuation, _ input: Input, into timers: inout [Task<Void, Never>]
    ) {
        timers.append(
            Task {
                guard (try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))) != nil else { return }
                feed.yield(input)
            })
    }
}

/// What `switchboard call --json` prints last: the call and what each other member's media did.
struct CallSummary: Encodable {
    struct Track: Encodable {
        var packetsReceived: Int
        var bytesReceived: Int
        var packetsSent: Int
        var bytesSent: Int
        var packetsLost: Int
        var framesDecoded: Int
        var codec: String?
        /// Audio: the loudest tenth of a second received, 0–100.
        var level: Int?
        /// Audio: ms from answering (or the call connecting, for the caller) to the first decoded frame.
        var firstFrameMs: Int?
        /// Video: the last decoded frame's size.
        var frameWidth: Int?
        var frameHeight: Int?
    }

    struct Member: Encodable {
        var audio: Track
        var video: Track
        var screen: Track
        var roundTripTimeMs: Int?
        var candidateType: String?

        init(_ statistics: PeerStatistics, loudest: Int, firstAudioMs: Int?) {
            func track(_ value: TrackStatistics, video: Bool) -> Track {
                Track(
                    packetsReceived: value.packetsReceived, bytesReceived: value.bytesReceived,
                    packetsSent: value.packetsSent, bytesSent: value.bytesSent, packetsLost: value.packetsLost,
                    framesDecoded: value.framesDecoded, codec: value.codec, level: video ? nil : max(loudest, value.level),
                    firstFrameMs: video ? nil : firstAudioMs, frameWidth: video ? value.frameWidth : nil,
                    frameHeight: video ? value.frameHeight : nil)
            }
            audio = track(statistics.audio, video: false)
            video = track(statistics.video, video: true)
            screen = track(statistics.screen, video: true)
            roundTripTimeMs = statistics.roundTripTimeMs
            candidateType = statistics.localCandidateType
        }
    }

    var callId: String?
    var connected: Bool
    var endReason: String?
    var endedBy: String?
    var durationSeconds: Int
    /// Per other member, by user id.
    var members: [String: Member]
}

/// What the run prints: lines for people, or JSON lines with `--json` (each with `ms`, the
/// milliseconds since the run started).
struct Output: Sendable {
    let json: Bool
    private let start = ContinuousClock.now

    func line(_ text: String, _ object: [String: String]) {
        write(json ? encode(object) : text)
    }

    func error(_ text: String) {
        if json { write(encode(["event": "error", "message": text])) }
        FileHandle.standardError.write(Data("switchboard call: \(text)\n".utf8))
    }

    func event(_ event: CallStoreEvent) {
        if json {
            write(encode(["event": "call", "summary": event.summary]))
        } else {
            write(event.summary)
        }
    }

    func media(_ event: MediaEvent) {
        let text: String
        switch event {
        case .trackStarted(let peer, let kind): text = "receiving \(peer)'s \(kind.rawValue)"
        case .trackEnded(let peer, let kind): text = "\(peer)'s \(kind.rawValue) ended"
        case .frameSize(let peer, let kind, let width, let height): text = "\(peer)'s \(kind.rawValue) is \(width)×\(height)"
        case .connectionState(let peer, let state): text = "connection to \(peer): \(state)"
        case .teardownStalled(let peer, let part):
            text = "closing \(peer.map { "the connection to \($0)" } ?? "the call's media") stalled: \(part) left behind"
        case .sendRate(let kind, let kbps): text = "sending \(kind.rawValue) at \(kbps) kbps"
        case .videoSending(let peer, .paused): text = "video to \(peer) paused: the network is too weak for video"
        case .videoSending(let peer, .trial): text = "trying video to \(peer) again"
        case .videoSending(let peer, .on): text = "sending video to \(peer) again"
        case .audioLevel: return
        }
        write(json ? encode(["event": "media", "summary": text]) : text)
    }

    /// The once-a-second line: timer, and per member quality, volume and what arrives.
    func status(_ state: CallStore.State, statistics: MediaStatistics) {
        let timer = CallDurationText.format(seconds: state.activeCall?.duration ?? 0)
        let others = state.allParticipants.filter { $0.userId != state.selfInfo.userId && $0.status == .accept }
        if json {
            var members: [String: [String: String]] = [:]
            for member in others {
                let peer = statistics.peers[member.userId]
                members[member.userId.rawValue] = [
                    "quality": member.networkQuality.rawValue, "volume": member.volumeLevel.rawValue,
                    "audioLevel": "\(peer?.audio.level ?? 0)", "audioFrames": "\(peer?.audio.framesDecoded ?? 0)",
                    "videoFrames": "\(peer?.video.framesDecoded ?? 0)", "screenFrames": "\(peer?.screen.framesDecoded ?? 0)",
                ]
            }
            let data = (try? JSONSerialization.data(
                withJSONObject: [
                    "event": "status", "time": timer, "members": members,
                    "ms": (ContinuousClock.now - start) / .milliseconds(1),
                ], options: [.sortedKeys])) ?? Data()
            write(String(decoding: data, as: UTF8.self))
            return
        }
        let parts = others.map { member -> String in
            let peer = statistics.peers[member.userId]
            var text = "\(member.userId) \(member.networkQuality.rawValue)/\(member.volumeLevel.rawValue)"
            if let peer {
                text += " audio \(peer.audio.framesDecoded) level \(peer.audio.level)"
                if peer.video.framesDecoded > 0 {
                    text += " video \(peer.video.framesDecoded) \(peer.video.frameWidth)×\(peer.video.frameHeight)"
                }
                if peer.screen.framesDecoded > 0 { text += " screen \(peer.screen.framesDecoded)" }
            }
            return text
        }
        write("[\(timer)] " + (parts.isEmpty ? "waiting for the others" : parts.joined(separator: " | ")))
    }

    func summary(_ summary: CallSummary) {
        if !json {
            // `offline` names the callee, who did nothing: say what it means instead of "by".
            let ended =
                summary.endReason == CallEndReason.offline.rawValue
                ? "offline (no device of \(summary.endedBy ?? "the callee") is known)"
                : "\(summary.endReason ?? "-") by \(summary.endedBy ?? "server")"
            write(
                "call \(summary.callId ?? "-"): \(summary.connected ? "connected" : "not connected"), "
                    + "ended: \(ended), \(summary.durationSeconds) s")
            for (user, member) in summary.members.sorted(by: { $0.key < $1.key }) {
                write(
                    "  \(user): audio \(member.audio.packetsReceived) packets, \(member.audio.framesDecoded) frames, "
                        + "loudest \(member.audio.level ?? 0); video \(member.video.framesDecoded) frames; "
                        + "screen \(member.screen.framesDecoded) frames")
            }
        }
        // Always last on stdout with --json: one object, sorted keys.
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let data = (try? encoder.encode(summary)) ?? Data("{}".utf8)
            write(String(decoding: data, as: UTF8.self))
        }
    }

    private func write(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    private func encode(_ object: [String: String]) -> String {
        var object: [String: Any] = object
        object["ms"] = (ContinuousClock.now - start) / .milliseconds(1)
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
#endif
