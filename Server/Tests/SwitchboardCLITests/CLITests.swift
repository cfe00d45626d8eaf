import Foundation
import SwitchboardProtocol
import SwitchboardTools
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `switchboard` executable itself, as users run it.
struct CLITests {
    /// Built beside the test bundle (whatever `--scratch-path` the build used).
    static let binary: URL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("switchboard")

    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs the binary to its end; `environment` is added to this process's.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Output {
        let process = try ChildProcess(
            executable: binary, arguments: arguments,
            environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 },
            output: .pipe, error: .pipe)
        let stdout = process.output!.readDataToEndOfFile()
        let stderr = process.error!.readDataToEndOfFile()
        let termination = process.waitForExit()
        guard case .exit(let status) = termination else {
            throw ChildProcessError(description: "\(arguments) ended by \(termination)")
        }
        return Output(
            status: status, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }

    @Test func binaryIsBuilt() {
        #expect(FileManager.default.isExecutableFile(atPath: Self.binary.path), "build it with swift build first")
    }

    @Test func usersigGenerateAndVerify() throws {
        let gen = try Self.run(["usersig", "gen", "--app-id", "1400000001", "--secret", "s3cret", "--user", "alice"])
        #expect(gen.status == 0)
        let sig = gen.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let fields = try UserSig.decode(sig)
        #expect(fields.identifier == "alice" && fields.expire == UserSig.defaultExpire)

        let valid = try Self.run(["usersig", "verify", "--app-id", "1400000001", "--secret", "s3cret", "--sig", sig, "--user", "alice"])
        #expect(valid.status == 0)
        #expect(valid.stdout.contains("identifier alice"))
        #expect(valid.stdout.hasSuffix("valid\n"))

        let forged = try Self.run(["usersig", "verify", "--app-id", "1400000001", "--secret", "other", "--sig", sig])
        #expect(forged.status == 1)
        #expect(forged.stdout.contains("userSigBadSignature (2002)"))

        let otherUser = try Self.run(["usersig", "verify", "--app-id", "1400000001", "--secret", "s3cret", "--sig", sig, "--user", "bob"])
        #expect(otherUser.status == 1 && otherUser.stdout.contains("userSigWrongUser"))

        let otherApp = try Self.run(["usersig", "verify", "--app-id", "7", "--secret", "s3cret", "--sig", sig])
        #expect(otherApp.status == 1 && otherApp.stdout.contains("userSigWrongApp"))

        let garbage = try Self.run(["usersig", "verify", "--app-id", "1", "--secret", "s", "--sig", "nonsense"])
        #expect(garbage.status == 1 && garbage.stdout.contains("userSigMalformed"))

        let badUser = try Self.run(["usersig", "gen", "--app-id", "1", "--secret", "s", "--user", "no spaces"])
        #expect(badUser.status != 0)

        let short = try Self.run(["usersig", "gen", "--app-id", "1", "--secret", "s", "--user", "u", "--expire", "60"])
        #expect(try UserSig.decode(short.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).expire == 60)
    }

    /// `serve` with its defaults in an empty directory: creates the database and a development app,
    /// prints it, answers, and exits 0 on SIGTERM.
    /// With the shared event loops, and with its own (`--threads`), which it must shut down too.
    @Test(arguments: [[], ["--threads", "1"]])
    func serveStartsPrintsTheDevelopmentAppAndStopsOnSigterm(_ extra: [String]) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = try ChildProcess(
            executable: Self.binary, arguments: ["serve", "--port", "0", "--log-level", "warning"] + extra,
            environment: ["SWITCHBOARD_ADMIN_SECRET": "from-env"], directory: directory, output: .pipe)

        // Read the banner as it comes.
        var banner = ""
        while !banner.contains("Stop with Ctrl-C") {
            let chunk = process.output!.availableData
            if chunk.isEmpty { break }
            banner += String(decoding: chunk, as: UTF8.self)
        }
        #expect(banner.contains("Development app"))
        // A command that runs where the README runs things (issue 48: it lacked --package-path).
        #expect(banner.contains("a UserSig: swift run --package-path Server switchboard usersig gen --app-id"))
        #expect(!banner.contains("admin API  Authorization"), "an admin secret from the environment is not printed")
        let port = try #require(
            banner.split(separator: "\n").first?.split(separator: ":").last.flatMap { Int($0) }, "\(banner)")
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("switchboard.sqlite").path))

        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/health")!)
        #expect(String(decoding: data, as: UTF8.self).contains("\"status\":\"ok\""))

        process.send(SIGTERM)
        #expect(await process.ended() == .exit(0))
    }

    /// The build commands the help prints run from the repository's root, as the README's do.
    @Test func theHelpsBuildCommandsNameTheServerPackage() throws {
        let help = try Self.run(["call", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("swift build --package-path Server --traits GStreamer"), "\(help.stdout)")
    }

    @Test func serveRefusesACommitIntervalOutOfRange() throws {
        for flag in ["--commit-interval=1001", "--commit-interval=-1"] {
            let output = try Self.run(["serve", "--port", "0", flag])
            #expect(output.status != 0, "\(flag)")
            #expect(output.stderr.contains("the commit interval must be 0-1000 ms"), "\(output.stderr)")
        }
    }

    @Test func serveRefusesAThreadCountOutOfRange() throws {
        for count in ["0", "257"] {
            let output = try Self.run(["serve", "--port", "0", "--threads", count])
            #expect(output.status != 0, "--threads \(count)")
            #expect(output.stderr.contains("threads must be 1-256"), "\(output.stderr)")
        }
        let notANumber = try Self.run(["serve", "--port", "0", "--threads", "many"])
        #expect(notANumber.status != 0)
        #expect(notANumber.stderr.contains("--threads"), "\(notANumber.stderr)")
    }
}
