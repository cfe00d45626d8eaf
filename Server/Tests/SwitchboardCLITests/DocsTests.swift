import Crypto
import Foundation
import SwitchboardTestServers
import SwitchboardTools
import Testing
import _CryptoExtras

#if canImport(Glibc)
import Glibc
#endif

/// The docs as a newcomer uses them (issue 48): every relative link in the docs and the README
/// resolves, to a file and, in a Markdown file, to a heading; every command of a fenced `sh`
/// block in README.md, docs/OPERATIONS.md and docs/IOS.md is run here against a temporary server,
/// or named in ``ways`` with why it is not. A command added to those files fails
/// ``everyCommandIsRunOrSaysWhyNot()`` until it is classified.
///
/// The commands run as written, through `/bin/sh`, in a scratch directory, with these changes
/// (``substituted(_:server:)``), all of them about where, none about what: `swift run
/// --package-path Server switchboard` and `switchboard` are the built binary (a `swift` and a
/// `switchboard` in the PATH), `Server/.build/release/switchboard` too (the debug build stands for
/// the release one); servers listen on 127.0.0.1 (not 0.0.0.0) and on a free port (not 8080), and
/// a client's `http://127.0.0.1:8080` is the temporary server's; the database file is in the
/// scratch directory, and the cluster's PostgreSQL is a fresh test database; `…` (the docs' "your
/// other flags") is left out; `call` gets the temporary server's address and its development app
/// for `N` and `S`, and hangs up after 1 s instead of 30. Variables the docs use (`$SECRET`,
/// `$ADMIN_SECRET`, …) are set, and the key files they name are made.
struct DocsTests {
    /// The repository's root (this file is Server/Tests/SwitchboardCLITests/DocsTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    // MARK: - links

    /// Every relative link of docs/*.md, README.md and CHANGELOG.md, to a file that exists and,
    /// for a Markdown file with a `#fragment`, to one of its headings (GitHub's anchors).
    @Test func everyRelativeLinkResolves() throws {
        let docs = Self.root.appendingPathComponent("docs")
        let files =
            try FileManager.default.contentsOfDirectory(atPath: docs.path).filter { $0.hasSuffix(".md") }.sorted()
            .map { docs.appendingPathComponent($0) } + ["README.md", "CHANGELOG.md"].map { Self.root.appendingPathComponent($0) }
        var broken: [String] = []
        var checked = 0
        for file in files {
            let text = Self.outsideCode(try String(contentsOf: file, encoding: .utf8))
            for target in Self.linkTargets(text) where !target.contains("://") && !target.hasPrefix("mailto:") {
                checked += 1
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let path = parts[0].removingPercentEncoding ?? parts[0]
                let resolved = path.isEmpty ? file : file.deletingLastPathComponent().appendingPathComponent(path).standardized
                let name = "\(file.lastPathComponent): \(target)"
                guard FileManager.default.fileExists(atPath: resolved.path) else {
                    broken.append("\(name) (no such file)")
                    continue
                }
                if parts.count == 2, resolved.pathExtension == "md",
                    !Self.anchors(try String(contentsOf: resolved, encoding: .utf8)).contains(parts[1])
                {
                    broken.append("\(name) (no such heading)")
                }
            }
        }
        #expect(checked > 50, "the links were not found")
        #expect(broken == [])
    }

    /// The text with fenced code blocks and inline code left out (their brackets are no links).
    static func outsideCode(_ text: String) -> String {
        var kept: [Substring] = []
        var fenced = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                fenced.toggle()
                continue
            }
            if !fenced { kept.append(line) }
        }
        return kept.joined(separator: "\n").split(separator: "`", omittingEmptySubsequences: false).enumerated()
            .filter { $0.offset % 2 == 0 }.map(\.element).joined(separator: " ")
    }

    /// The targets of `[text](target)` and `![alt](target)`.
    static func linkTargets(_ text: String) -> [String] {
        var targets: [String] = []
        var rest = Substring(text)
        while let close = rest.range(of: "](") {
            let after = rest[close.upperBound...]
            guard let end = after.firstIndex(where: { $0 == ")" || $0 == " " || $0 == "\n" }) else { break }
            if after[end] == ")" { targets.append(String(after[..<end])) }
            rest = after[end...]
        }
        return targets
    }

    /// The anchors GitHub gives a Markdown file's headings: lower case, letters, digits, spaces,
    /// `-` and `_` kept, spaces to `-`; a repeated one gets `-1`, `-2`, ….
    static func anchors(_ markdown: String) -> Set<String> {
        var seen: [String: Int] = [:]
        var anchors: Set<String> = []
        var fenced = false
        for line in markdown.split(separator: "\n") {
            if line.hasPrefix("```") { fenced.toggle() }
            guard !fenced, line.hasPrefix("#") else { continue }
            var title = String(line.drop { $0 == "#" }).trimmingCharacters(in: .whitespaces)
            // A link in a heading counts by its text.
            while let open = title.range(of: "]("), let close = title[open.upperBound...].firstIndex(of: ")") {
                title.removeSubrange(open.lowerBound...close)
            }
            let slug = String(
                title.lowercased().replacingOccurrences(of: "`", with: "").replacingOccurrences(of: "[", with: "")
                    .filter { $0.isLetter || $0.isNumber || $0 == " " || $0 == "-" || $0 == "_" }
            ).replacingOccurrences(of: " ", with: "-")
            let count = seen[slug, default: 0]
            seen[slug] = count + 1
            anchors.insert(count == 0 ? slug : "\(slug)-\(count)")
        }
        return anchors
    }

    // MARK: - commands

    /// A command of a fenced `sh` block: its file, its block (numbered in the file) and its text,
    /// continuation lines joined and comments left out.
    struct Command: Sendable, CustomTestStringConvertible {
        var file: String
        var block: Int
        var text: String
        var testDescription: String { "\(file) #\(block): \(text.prefix(70))" }
        /// The text with runs of white space as one space (what ``ways`` match).
        var words: String {
            text.split(whereSeparator: { $0 == " " || $0 == "\n" }).filter { $0 != "\\" }.joined(separator: " ")
        }
    }

    /// The files whose commands are run.
    static let files = ["README.md", "docs/OPERATIONS.md", "docs/IOS.md"]

    static let commands: [Command] = files.flatMap { file in
        let text = (try? String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)) ?? ""
        return shellCommands(text).map { Command(file: file, block: $0.block, text: $0.text) }
    }

    /// The commands of a Markdown text's ```` ```sh ```` blocks.
    static func shellCommands(_ markdown: String) -> [(block: Int, text: String)] {
        var result: [(Int, String)] = []
        var block = 0
        var inShell = false
        var inOther = false
        var pending = ""
        for rawLine in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(rawLine)
            if line.hasPrefix("```") {
                if inShell || inOther {
                    if !pending.isEmpty { result.append((block, pending)) }
                    pending = ""
                    inShell = false
                    inOther = false
                } else if ["sh", "bash", "shell"].contains(line.dropFirst(3).trimmingCharacters(in: .whitespaces)) {
                    inShell = true
                    block += 1
                } else {
                    inOther = true
                }
                continue
            }
            guard inShell else { continue }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if pending.isEmpty && (trimmed.isEmpty || trimmed.hasPrefix("#")) { continue }
            pending += (pending.isEmpty ? "" : "\n") + line
            let code = withoutComment(pending)
            // Not done while a line ends with `\` or `|`, or a quote is open.
            if code.hasSuffix("\\") || code.hasSuffix("|") || code.filter({ $0 == "'" }).count % 2 == 1 { continue }
            result.append((block, code))
            pending = ""
        }
        return result
    }

    /// The command without a trailing `# comment` (a `#` after white space, outside quotes).
    static func withoutComment(_ text: String) -> String {
        var out = ""
        var quote: Character?
        var previous: Character = " "
        for character in text {
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "'" || character == "\"" {
                quote = character
            } else if character == "#" && (previous == " " || previous == "\t") {
                // Drop the rest of this line only.
                out = out.trimmingCharacters(in: .whitespaces)
                quote = "\n"
                previous = character
                continue
            }
            if quote != "\n" { out.append(character) }
            previous = character
        }
        return out.trimmingCharacters(in: .whitespaces)
    }

    /// How this test runs a command.
    enum Way: Sendable, Equatable {
        /// A server: started, it prints its banner, and SIGTERM ends it with 0.
        case serve
        /// A server that needs a PostgreSQL database (skipped where the tests have none).
        case servePostgres
        /// A client of the admin API: run, in order with the others of its block, against a
        /// server of app 1400123456 with `$ADMIN_SECRET`; the block's output must contain `expect`.
        case adminAPI(expect: [String])
        /// `switchboard call`: the block's commands together, against a server's development app.
        case call
        /// Not run, and why.
        case notRun(String)
    }

    /// Every command the three files give, by how it starts (its words), and how it is run.
    static let ways: [(start: String, way: Way)] = [
        ("scripts/test", .notRun("the test suite itself")),
        (".build-venv/bin/python Server/Tests/Browser/run.py", .notRun("the browser tests, which scripts/test runs")),
        ("Server/.build-test/debug/switchboard bench cost", .notRun("the cost guard, which scripts/test runs (a minute under callgrind)")),
        ("scripts/media-deps", .notRun("installs packages with apt (scripts/test runs it before it builds)")),
        ("swift build --package-path Server", .notRun("the build this test runs on (the release build's 20 minutes: the debug binary stands for it)")),
        ("apt-get install janus", .notRun("installs a package (scripts/janus installs Janus for the SFU tests)")),
        ("switchboard serve … --sfu", .notRun("needs Janus servers at those addresses (SFUTests start them)")),
        ("swift run --package-path Server switchboard serve", .serve),
        ("Server/.build/release/switchboard serve --host 0.0.0.0 --port 8080 --node-id", .servePostgres),
        ("Server/.build/release/switchboard serve", .serve),
        ("switchboard serve", .serve),
        ("jq -n --rawfile p8", .adminAPI(expect: [#""keyId":"ABC123DEFG""#, #""projectId":"my-project""#])),
        ("curl", .adminAPI(expect: [#""keyId":"ABC123DEFG""#, #""projectId":"my-project""#])),
        ("Server/.build/debug/switchboard call", .call),
    ]

    static func way(of command: Command) -> Way? {
        ways.first { command.words.hasPrefix($0.start) }?.way
    }

    /// Every command is run by one of the tests below, or says why not.
    @Test func everyCommandIsRunOrSaysWhyNot() {
        #expect(Self.commands.count >= 15, "the commands were not found: \(Self.commands.map(\.text))")
        for command in Self.commands {
            #expect(Self.way(of: command) != nil, "a command of \(command.file) this test does not know: \(command.text)")
        }
    }

    /// The `serve` commands; those that need PostgreSQL where the tests have one.
    static let serveCommands = commands.filter {
        way(of: $0) == .serve || (way(of: $0) == .servePostgres && PostgresTestDatabase.isAvailable)
    }

    /// Each `serve` command starts a server that says where it listens, and stops with 0 on SIGTERM.
    @Test(arguments: serveCommands)
    func aServeCommandStartsAndStops(_ command: Command) async throws {
        let database = Self.way(of: command) == .servePostgres ? try await PostgresTestDatabase.create() : nil
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await scratch.serve(Self.substituted(command.text, database: database))
        #expect(server.banner.contains("Switchboard is listening on http://127.0.0.1:"), "\(server.banner)")
        #expect(await server.stop() == .exit(0))
    }

    /// The admin API's commands, each block's in order, against a server of the app they name.
    @Test func theAdminAPICommandsDoWhatTheDocsSay() async throws {
        let blocks = Dictionary(grouping: Self.commands.filter { if case .adminAPI = Self.way(of: $0) { true } else { false } }) {
            "\($0.file) #\($0.block)"
        }
        #expect(!blocks.isEmpty)
        for (_, commands) in blocks.sorted(by: { $0.key < $1.key }) {
            let scratch = try Scratch()
            defer { scratch.remove() }
            let server = try await scratch.serve(
                "exec switchboard serve --port 0 --app 1400123456:$SECRET --admin-secret $ADMIN_SECRET")
            var output = ""
            for command in commands {
                let run = try await scratch.run(Self.substituted(command.text, port: server.port))
                #expect(run.status == 0, "\(command.text): \(run.stderr)")
                output += run.stdout
            }
            if case .adminAPI(let expected) = Self.way(of: commands[0]) {
                for piece in expected { #expect(output.contains(piece), "\(output)") }
            }
            #expect(await server.stop() == .exit(0))
        }
    }

    #if GStreamer
    /// The README's two `switchboard call` commands call each other through a server.
    @Test(.tags(.gstreamer)) func theCallCommandsCallEachOther() async throws {
        let calls = Self.commands.filter { Self.way(of: $0) == .call }
        try #require(calls.count == 2, "\(calls.map(\.text))")
        let scratch = try Scratch()
        defer { scratch.remove() }
        let server = try await scratch.serve("exec switchboard serve --port 0")
        let app = try #require(server.value(after: "sdkAppID"))
        let secret = try #require(server.value(after: "secretKey"))
        func text(_ command: Command) -> String {
            Self.substituted(command.text, port: server.port)
                .replacingOccurrences(of: "--app-id N --secret S", with: "--app-id \(app) --secret \(secret)")
                .replacingOccurrences(of: "--hangup-after 30", with: "--hangup-after 1")
                .replacingOccurrences(of: "switchboard call", with: "switchboard call --server ws://127.0.0.1:\(server.port)/v1/ws")
        }
        let answering = try scratch.start(text(calls[0]))
        try await answering.output.first(from: 0, timeout: .seconds(30)) { $0.contains("waiting for a call") }
        let placing = try await scratch.run(text(calls[1]))
        #expect(placing.status == 0, "\(placing.stdout)\n\(placing.stderr)")
        let (status, output) = await answering.finish()
        #expect(status == 0, "\(output)")
        #expect(await server.stop() == .exit(0))
    }
    #endif

    /// A command with what this test changes about where it runs (the type's documentation).
    static func substituted(_ text: String, port: Int? = nil, database: String? = nil) -> String {
        var text = text.replacingOccurrences(of: "--host 0.0.0.0", with: "--host 127.0.0.1")
            .replacingOccurrences(of: "--port 8080", with: "--port 0")
            .replacingOccurrences(of: "/var/lib/switchboard/switchboard.sqlite", with: "switchboard.sqlite")
            .replacingOccurrences(of: " … ", with: " ")
        if let port { text = text.replacingOccurrences(of: "http://127.0.0.1:8080", with: "http://127.0.0.1:\(port)") }
        if let database, let start = text.range(of: "postgresql://"),
            let end = text[start.lowerBound...].firstIndex(where: { $0 == " " || $0 == "\n" })
        {
            text.replaceSubrange(start.lowerBound..<end, with: database)
        }
        return text
    }

    /// A directory to run the docs' commands in: `Server/.build/{debug,release}/switchboard`
    /// there and `swift`, `switchboard` in the PATH are the built binary; the key files the docs
    /// name are made.
    final class Scratch: Sendable {
        let directory: URL
        let environment: [String: String]

        init() throws {
            let files = FileManager.default
            directory = files.temporaryDirectory.appendingPathComponent("switchboard-docs-\(UUID().uuidString)")
            let bin = directory.appendingPathComponent("bin")
            try files.createDirectory(at: bin, withIntermediateDirectories: true)
            for build in ["debug", "release"] {
                let folder = directory.appendingPathComponent("Server/.build/\(build)")
                try files.createDirectory(at: folder, withIntermediateDirectories: true)
                try files.createSymbolicLink(
                    at: folder.appendingPathComponent("switchboard"), withDestinationURL: CLITests.binary)
            }
            try files.createSymbolicLink(at: bin.appendingPathComponent("switchboard"), withDestinationURL: CLITests.binary)
            let swift = bin.appendingPathComponent("swift")
            try """
                #!/bin/sh
                # The docs test's `swift run --package-path Server switchboard …`: the built binary.
                if [ "$1 $2 $3 $4" = "run --package-path Server switchboard" ]; then shift 4; exec switchboard "$@"; fi
                echo "the docs test runs no other swift command: swift $*" >&2
                exit 97

                """.write(to: swift, atomically: true, encoding: .utf8)
            try files.setAttributes([.posixPermissions: 0o755], ofItemAtPath: swift.path)
            // The files docs/OPERATIONS.md names: an APNs key (.p8), a Firebase service account,
            // a VAPID key.
            try P256.Signing.PrivateKey().pemRepresentation.write(
                to: directory.appendingPathComponent("AuthKey_ABC123DEFG.p8"), atomically: true, encoding: .utf8)
            try P256.Signing.PrivateKey().pemRepresentation.write(
                to: directory.appendingPathComponent("vapid.key"), atomically: true, encoding: .utf8)
            let account: [String: String] = [
                "type": "service_account", "project_id": "my-project", "private_key_id": "0123456789abcdef",
                "private_key": try _RSA.Signing.PrivateKey(keySize: .bits2048).pkcs8PEMRepresentation,
                "client_email": "push@my-project.iam.gserviceaccount.com", "token_uri": "https://oauth2.googleapis.com/token",
            ]
            try JSONSerialization.data(withJSONObject: account).write(to: directory.appendingPathComponent("firebase-key.json"))
            var environment = ProcessInfo.processInfo.environment
            environment["PATH"] = bin.path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
            environment["SECRET"] = "5f3c1e2d7a9b4c6d8e0f1a2b3c4d5e6f"
            environment["ADMIN_SECRET"] = "docs-admin-secret"
            environment["TURN_SECRET"] = "docs-turn-secret"
            environment["DB_PASSWORD"] = ""
            // A command without --port listens on a free one (a flag wins over the variable).
            environment["SWITCHBOARD_PORT"] = "0"
            environment["SWITCHBOARD_LOG_LEVEL"] = "warning"
            self.environment = environment
        }

        func remove() {
            try? FileManager.default.removeItem(at: directory)
        }

        /// Runs `command` with /bin/sh to its end (within ``CLITests/hangBound``).
        func run(_ command: String) async throws -> CLITests.Output {
            let output = try await CLITests.runExecutable(
                URL(fileURLWithPath: "/bin/sh"), ["-c", command], environment: environment, directory: directory,
                within: CLITests.hangBound)
            return output
        }

        /// Starts `command` with /bin/sh, its lines recorded as they come.
        func start(_ command: String) throws -> Spawned {
            try Spawned(shell: command, environment: environment, directory: directory)
        }

        /// Starts a server with `command` (`exec`, so that signals reach it) and returns once its
        /// banner is out.
        func serve(_ command: String) async throws -> Server {
            let process = try start(command.hasPrefix("exec ") ? command : "exec " + command)
            let banner = try await process.output.first(from: 0, timeout: .seconds(60)) { $0.contains("Stop with Ctrl-C") }
            _ = banner
            let lines = process.output.values
            let port = lines.first.flatMap { $0.split(separator: ":").last.flatMap { Int($0) } }
            return Server(process: process, banner: lines.joined(separator: "\n"), port: try #require(port, "\(lines)"))
        }
    }

    struct Server {
        let process: Spawned
        let banner: String
        let port: Int

        /// The value on the banner's line that starts with `label`.
        func value(after label: String) -> String? {
            banner.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix(label + " ") }?.split(separator: " ").last.map(String.init)
        }

        func stop() async -> ChildProcess.Termination {
            process.signal(SIGTERM)
            let (status, _) = await process.finish()
            return .exit(status)
        }
    }
}
