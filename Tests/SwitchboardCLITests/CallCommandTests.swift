import Foundation
import SwitchboardProtocol
import SwitchboardTesting
import Testing

/// `switchboard call`, the terminal client: with the GStreamer trait two of them call each other
/// through a server and each decodes the other's audio; without it, it says how to get it.
struct CallCommandTests {
    #if GStreamer
    @Test func refusesArgumentsThatDoNotMakeACall() throws {
        let neither = try CLITests.run(["call", "--app-id", "1", "--secret", "s", "--user", "alice"])
        #expect(neither.status == 64)
        #expect(neither.stderr.contains("give either --to ID[,ID…] or --answer"))
        let noCredentials = try CLITests.run(["call", "--app-id", "1", "--user", "alice", "--answer"])
        #expect(noCredentials.status == 64 && noCredentials.stderr.contains("--secret or --user-sig"))
        let badServer = try CLITests.run([
            "call", "--app-id", "1", "--secret", "s", "--user", "alice", "--answer", "--server", "http://x",
        ])
        #expect(badServer.status == 64 && badServer.stderr.contains("ws://"))
    }

    /// Two processes through a real server: bob answers, alice calls and hangs up after a second;
    /// both exit 0 and their summaries show the other's audio decoded, with energy in it.
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
        _ = try await bob.firstLine(containing: "\"waiting\"")
        let alice = try Spawned(arguments("alice") + ["--to", "bob", "--hangup-after", "1"])
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
    #else
    @Test func aBuildWithoutMediaSaysHowToGetIt() throws {
        let output = try CLITests.run(["call", "--app-id", "1", "--secret", "s", "--user", "alice", "--to", "bob"])
        #expect(output.status == 3)
        #expect(output.stderr.contains("built without the GStreamer trait"))
        #expect(output.stderr.contains("swift build --traits GStreamer"))
    }
    #endif
}

#if GStreamer
extension Tag {
    /// Needs GStreamer (the `GStreamer` trait).
    @Tag static var gstreamer: Self
}

/// A `switchboard` process whose output is read off Swift's thread pool (reading blocks).
final class Spawned: Sendable {
    private let lines: AsyncStream<String>
    private let finished: Task<(Int32, String), Never>

    init(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = CLITests.binary
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let (lines, continuation) = AsyncStream<String>.makeStream()
        self.lines = lines
        try process.run()
        finished = Task.detached {
            await withCheckedContinuation { (result: CheckedContinuation<(Int32, String), Never>) in
                Thread.detachNewThread {
                    var text = ""
                    var pending = Data()
                    while true {
                        let chunk = out.fileHandleForReading.availableData
                        if chunk.isEmpty { break }
                        pending.append(chunk)
                        while let newline = pending.firstIndex(of: 10) {
                            let line = String(decoding: pending[..<newline], as: UTF8.self)
                            pending.removeSubrange(...newline)
                            text += line + "\n"
                            continuation.yield(line)
                        }
                    }
                    continuation.finish()
                    process.waitUntilExit()
                    result.resume(returning: (process.terminationStatus, text))
                }
            }
        }
    }

    /// The first line of output that contains `text`.
    func firstLine(containing text: String) async throws -> String {
        for await line in lines where line.contains(text) { return line }
        throw CocoaError(.fileReadUnknown)
    }

    func finish() async -> (Int32, String) {
        await finished.value
    }
}
#endif
