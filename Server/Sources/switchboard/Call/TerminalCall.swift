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
                serverURL: URL(string: options.server)!, deviceId: options.deviceId.map(DeviceID.init(rawValue:)),
                platform: "cli", mediaEngine: engine,
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
        return status ?? (run.connected && (run.endReason == .hangup || run.movedTo != nil) ? 0 : 1)
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
            output.line(
                options.take ? "waiting for a call offered here (\(options.timeout) s)" : "waiting for a call (\(options.timeout) s)",
                ["event": "waiting"])
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
        /// The device the call moved to from here (the run's end, the call going on there).
        var movedTo: DeviceID?
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
                endedBy: endedBy?.rawValue, movedTo: movedTo?.rawValue, durationSeconds: duration, members: members)
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
            await command(line, &run, client: client, engine: engine, feed: feed)
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
        case .onCallMoveOffered(let callId, _, _) where options.take && run.callId == nil:
            run.callId = callId
            do {
                try await client.callStore.take(callId: callId)
            } catch {
                output.error("taking the call failed: \(error)")
                return true
            }
            tookCall(&run, feed: feed)
        case .onCallMoved(let callId, _, let to) where callId == run.callId && to != client.loginStore.state.deviceId:
            // The call goes on on another device of this user: this run is over, the call not (the
            // summary has the figures of the last status tick).
            run.movedTo = to
            run.endedAt = .now
            return true
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

    /// The call was taken onto this device: connected (long ago, on the other one).
    private func tookCall(_ run: inout RunState, feed: AsyncStream<Input>.Continuation) {
        run.connected = true
        run.connectedAt = .now
        run.answeredAt = .now
        if let seconds = options.hangupAfter {
            Self.after(seconds: seconds, feed: feed, .hangupTime, into: &run.timers)
        }
    }

    /// A line from stdin.
    private func command(
        _ line: String, _ run: inout RunState, client: SwitchboardClient, engine: GStreamerMediaEngine,
        feed: AsyncStream<Input>.Continuation
    ) async {
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
        case ("move", let device):
            do {
                try await client.callStore.offerMove(callId: run.callId, to: device.map(DeviceID.init(rawValue:)))
            } catch {
                output.error("offering the call failed: \(error)")
            }
        case ("take", let named):
            // The call named, else the newest offered to this device, else the newest elsewhere.
            let state = client.callStore.state
            guard
                let callId = named.map(CallID.init(rawValue:)) ?? state.moveOffers.last?.call.callId
                    ?? state.callsOnOtherDevices.last?.callId
            else {
                return output.error("none of your other devices is in a call")
            }
            do {
                try await client.callStore.take(callId: callId)
                run.callId = callId
                tookCall(&run, feed: feed)
            } catch {
                output.error("taking the call failed: \(error)")
            }
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

#endif
