import Foundation
import NIOConcurrencyHelpers
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

/// `switchboard call`, the terminal client: with the GStreamer trait two of them call each other
/// through a server and each decodes the other's audio; without it, it says how to get it.
struct CallCommandTests {
    #if GStreamer
    @Test func refusesArgumentsThatDoNotMakeACall() throws {
        let neither = try CLITests.run(["call", "--app-id", "1", "--secret", "s", "--user", "alice"])
        #expect(neither.status == 64)
        #expect(neither.stderr.contains("give one of --to ID[,ID…], --answer or --take"))
        let noCredentials = try CLITests.run(["call", "--app-id", "1", "--user", "alice", "--answer"])
        #expect(noCredentials.status == 64 && noCredentials.stderr.contains("--secret or --user-sig"))
        let badServer = try CLITests.run([
            "call", "--app-id", "1", "--secret", "s", "--user", "alice", "--answer", "--server", "http://x",
        ])
        #expect(badServer.status == 64 && badServer.stderr.contains("ws://"))
    }

    /// A call the server refuses, or that reaches nobody, ends the process by itself with a
    /// sentence saying why, status 1, and nothing of the run still working when it exits (issue
    /// 48: calling yourself printed `cannotCallSelf (3006)` and then, in 2 runs of 3, crashed in a
    /// libcrypto thread on the way out; a user id nobody used said `offline by nobody`). Three
    /// runs of the refused call: the crash came after most of them.
    @Test(.tags(.gstreamer)) func aRefusedOrUnreachableCallEndsWithASentence() async throws {
        let server = try await TestServer.start()
        func call(_ user: String, to callee: String) async throws -> CLITests.Output {
            try await CLITests.run(
                [
                    "call", "--server", server.url.absoluteString, "--app-id", "\(server.app.sdkAppID)", "--user", user,
                    "--user-sig", server.userSig(user), "--to", callee, "--loopback",
                ], within: CLITests.hangBound)
        }
        for _ in 0..<3 {
            let yourself = try await call("alice", to: "alice")
            #expect(yourself.status == 1, "\(yourself.stderr)")
            #expect(yourself.stderr.contains("you cannot call yourself"), "\(yourself.stderr)")
        }
        let nobody = try await call("alice", to: "nobody")
        #expect(nobody.status == 1, "\(nobody.stderr)")
        #expect(nobody.stderr.contains("no device of nobody is known to the server"), "\(nobody.stderr)")
        #expect(nobody.stdout.contains("ended: offline (no device of nobody is known)"), "\(nobody.stdout)")
        #expect(!nobody.stdout.contains("by nobody"), "\(nobody.stdout)")
        await server.stop()
    }

    /// Two processes through a real server: bob answers, alice calls; once each one's status line
    /// shows the other's audio with a level, alice hangs up (a line on her stdin). Both exit 0 and
    /// their summaries show the other's audio decoded, with energy in it.
    @Test(.tags(.gstreamer)) func twoCallsDecodeEachOther() async throws {
        let server = try await TestServer.start()
        // UserSigs from the server's (test) clock, which the server checks them against.
        func arguments(_ user: String) -> [String] {
            [
                "call", "--server", server.url.absoluteString, "--app-id", "\(server.app.sdkAppID)", "--user", user,
                "--user-sig", server.userSig(user), "--json", "--loopback",
            ]
        }
        let bob = try Spawned(arguments("bob") + ["--answer", "--audio-source", "tone"])
        // bob is waiting before alice calls: his second line says so.
        try await bob.output.first(from: 0, timeout: .seconds(30)) { $0.contains("\"waiting\"") }
        let alice = try Spawned(arguments("alice") + ["--to", "bob"])
        for (process, peer) in [(alice, "bob"), (bob, "alice")] {
            try await process.output.first(from: 0, timeout: .seconds(30)) { line in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    object["event"] as? String == "status",
                    let member = (object["members"] as? [String: Any])?[peer] as? [String: Any]
                else { return false }
                return Int(member["audioLevel"] as? String ?? "") ?? 0 > 0
            }
        }
        alice.send("hangup")
        let (aliceStatus, aliceOutput) = await alice.finish()
        let (bobStatus, bobOutput) = await bob.finish()
        #expect(aliceStatus == 0, "\(aliceOutput)")
        #expect(bobStatus == 0, "\(bobOutput)")
        for (output, peer) in [(aliceOutput, "bob"), (bobOutput, "alice")] {
            let last = try #require(output.split(separator: "\n").last)
            let summary = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
            #expect(summary["endReason"] as? String == "hangup")
            #expect(summary["callId"] as? String != nil)
            let member = try #require((summary["members"] as? [String: Any])?[peer] as? [String: Any])
            let audio = try #require(member["audio"] as? [String: Any])
            #expect((audio["framesDecoded"] as? Int ?? 0) > 0)
            #expect((audio["packetsReceived"] as? Int ?? 0) > 0)
            #expect((audio["level"] as? Int ?? 0) > 0)
        }
        await server.stop()
    }

    /// bob answers alice's call in one terminal client (his phone), types `move bob-laptop`, and a
    /// second one waiting with `--take` (his laptop) takes the call: the phone's run ends as a
    /// normal end with the call moved, the laptop decodes alice, alice decodes bob throughout her
    /// one call, and the laptop's hang-up ends it for alice, by bob.
    @Test(.tags(.gstreamer)) func aCallMovesFromOneTerminalClientToAnother() async throws {
        let server = try await TestServer.start()
        func arguments(_ user: String) -> [String] {
            [
                "call", "--server", server.url.absoluteString, "--app-id", "\(server.app.sdkAppID)", "--user", user,
                "--user-sig", server.userSig(user), "--json", "--loopback", "--status-interval", "0.2",
            ]
        }
        func hears(_ peer: String) -> @Sendable (String) -> Bool {
            { line in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    object["event"] as? String == "status",
                    let member = (object["members"] as? [String: Any])?[peer] as? [String: Any]
                else { return false }
                return Int(member["audioLevel"] as? String ?? "") ?? 0 > 0
            }
        }
        let phone = try Spawned(arguments("bob") + ["--answer", "--device-id", "bob-phone", "--audio-source", "tone"])
        let laptop = try Spawned(arguments("bob") + ["--take", "--device-id", "bob-laptop", "--audio-source", "tone"])
        for process in [phone, laptop] {
            try await process.output.first(from: 0, timeout: .seconds(30)) { $0.contains("\"waiting\"") }
        }
        let alice = try Spawned(arguments("alice") + ["--to", "bob"])
        try await alice.output.first(from: 0, timeout: .seconds(30), where: hears("bob"))
        try await phone.output.first(from: 0, timeout: .seconds(30), where: hears("alice"))

        phone.send("move bob-laptop")
        let (phoneStatus, phoneOutput) = await phone.finish()
        #expect(phoneStatus == 0, "\(phoneOutput)")
        let phoneSummary = try Self.summary(phoneOutput)
        #expect(phoneSummary["movedTo"] as? String == "bob-laptop", "\(phoneOutput)")
        #expect(phoneSummary["endReason"] == nil, "\(phoneOutput)")
        // After the phone's run ended, alice hears bob from the laptop, and the laptop hears her.
        let afterPhone = alice.output.values.count
        try await laptop.output.first(from: 0, timeout: .seconds(30), where: hears("alice"))
        try await alice.output.first(from: afterPhone, timeout: .seconds(30), where: hears("bob"))

        laptop.send("hangup")
        let (laptopStatus, laptopOutput) = await laptop.finish()
        let (aliceStatus, aliceOutput) = await alice.finish()
        #expect(laptopStatus == 0, "\(laptopOutput)")
        #expect(aliceStatus == 0, "\(aliceOutput)")
        let aliceSummary = try Self.summary(aliceOutput)
        let laptopSummary = try Self.summary(laptopOutput)
        // One call throughout: the laptop's run is the call alice placed.
        #expect(laptopSummary["callId"] as? String == aliceSummary["callId"] as? String)
        #expect(aliceSummary["endReason"] as? String == "hangup")
        #expect(aliceSummary["endedBy"] as? String == "bob")
        await server.stop()
    }

    /// The summary, the last line of a `--json` run's output.
    static func summary(_ output: String) throws -> [String: Any] {
        let last = try #require(output.split(separator: "\n").last)
        return try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
    }
    #else
    @Test func aBuildWithoutMediaSaysHowToGetIt() throws {
        let output = try CLITests.run(["call", "--app-id", "1", "--secret", "s", "--user", "alice", "--to", "bob"])
        #expect(output.status == 3)
        #expect(output.stderr.contains("built without the GStreamer trait"))
        #expect(output.stderr.contains("swift build --package-path Server --traits GStreamer"))
    }
    #endif
}

#if GStreamer
extension Tag {
    /// Needs GStreamer (the `GStreamer` trait).
    @Tag static var gstreamer: Self
}
#endif

/// A process fed through stdin, whose output lines are recorded as they come (read on a thread
/// of its own: reading blocks): `switchboard`, or a shell command (the docs' commands).
final class Spawned: Sendable {
    let output: Recorder<String>
    /// When each line of `output` arrived, by position.
    private let arrivals = NIOLockedValueBox<[ContinuousClock.Instant]>([])
    private let input: FileHandle
    private let process: ChildProcess
    private let finished: Task<(Int32, String), Never>

    /// With a `launcher` (such as `ip netns exec NAME`), the binary runs through it.
    convenience init(_ arguments: [String], launcher: (executable: URL, arguments: [String])? = nil) throws {
        try self.init(
            executable: launcher?.executable ?? CLITests.binary,
            arguments: (launcher.map { $0.arguments + [CLITests.binary.path] } ?? []) + arguments)
    }

    /// `command` run by /bin/sh, with `environment` (whole) in `directory`.
    convenience init(shell command: String, environment: [String: String], directory: URL) throws {
        try self.init(
            executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", command], environment: environment,
            directory: directory)
    }

    init(executable: URL, arguments: [String], environment: [String: String]? = nil, directory: URL? = nil) throws {
        let process = try ChildProcess(
            executable: executable, arguments: arguments, environment: environment, directory: directory, input: .pipe,
            output: .pipe)
        input = process.input!
        self.process = process
        let (lines, continuation) = AsyncStream<String>.makeStream()
        output = Recorder(lines)
        let arrivals = self.arrivals
        finished = Task.detached {
            await withCheckedContinuation { (result: CheckedContinuation<(Int32, String), Never>) in
                Thread.detachNewThread {
                    var text = ""
                    var pending = Data()
                    while true {
                        let chunk = process.output!.availableData
                        if chunk.isEmpty { break }
                        pending.append(chunk)
                        while let newline = pending.firstIndex(of: 10) {
                            let line = String(decoding: pending[..<newline], as: UTF8.self)
                            pending.removeSubrange(...newline)
                            text += line + "\n"
                            arrivals.withLockedValue { $0.append(.now) }
                            continuation.yield(line)
                        }
                    }
                    continuation.finish()
                    let status: Int32
                    switch process.waitForExit() {
                    case .exit(let code): status = code
                    case .signal(let signal): status = 128 + signal  // as a shell shows it
                    }
                    result.resume(returning: (status, text))
                }
            }
        }
    }

    /// When the line at `position` of `output` arrived.
    func arrival(of position: Int) -> ContinuousClock.Instant {
        arrivals.withLockedValue { $0[position] }
    }

    /// A command line on the process's stdin.
    func send(_ line: String) {
        input.write(Data((line + "\n").utf8))
    }

    /// SIGKILL, for a test that stops half-way (a process left in a call would run on).
    func kill() {
        process.send(SIGKILL)
    }

    func signal(_ signal: Int32) {
        process.send(signal)
    }

    func finish() async -> (Int32, String) {
        await finished.value
    }
}
