import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SwitchboardTools

#if canImport(Glibc)
import Glibc
#endif

extension BenchCommand {
    /// The guard against drift (docs/BENCHMARKS.md, "The cost guard"): what one call and one held
    /// connection cost the server, in figures that do not depend on how busy the machine is, checked
    /// against a baseline committed in the repository.
    ///
    /// - Instructions per call: the server runs under valgrind's callgrind, which counts every
    ///   instruction it executes, the same for the same binary and input whatever else the machine
    ///   does. Counting starts after the clients logged in and a warm-up placed a call per pair, and
    ///   covers a fixed number of whole calls (start, ring, accept, hang-up, both records
    ///   acknowledged), placed in a closed loop so the work does not depend on the machine's speed.
    /// - Bytes per held connection: the growth of the server's heap in use (no valgrind; malloc's
    ///   own count, `switchboard_heap_in_use_bytes` on `/metrics`) when `--connections` clients log
    ///   in and stay, divided by their number.
    struct Cost: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Instructions per call (callgrind) and bytes per held connection, against a committed baseline.",
            discussion: """
                Fails (exit 1) when a figure is more than --tolerance above --baseline's. A change worth \
                its cost writes the new figures with --write-baseline in the same commit and says why. \
                The baseline holds figures of one build configuration (scripts/test measures the debug \
                build it tests); compare like with like.
                """)
        @OptionGroup var options: Options
        @Option(help: "Calls counted (after a warm-up of one call per pair).") var calls = 120
        @Option(help: "Caller-callee pairs, each with one call at a time.") var pairs = 6
        @Option(help: "Connections held for the memory figure (0: no memory figure; a server without switchboard_heap_in_use_bytes).")
        var connections = 2000
        @Option(help: "A JSON file of figures to compare with (written by --write-baseline).") var baseline: String?
        @Option(help: "How far above the baseline a figure may be, as a fraction.") var tolerance = 0.15
        @Flag(help: "Write the figures measured to --baseline instead of comparing.") var writeBaseline = false
        @Option(help: "The valgrind program.") var valgrind = "valgrind"
        @Option(help: "Keep callgrind's counts of the calls here (read them with callgrind_annotate).") var profile: String?

        func validate() throws {
            guard calls > 0, pairs > 0, connections >= 0 else { throw ValidationError("--calls and --pairs must be positive") }
            if baseline != nil, connections == 0 { throw ValidationError("a baseline compares the memory figure too: --connections above 0") }
            guard tolerance > 0 else { throw ValidationError("--tolerance must be above 0") }
            if writeBaseline, baseline == nil { throw ValidationError("--write-baseline needs --baseline FILE") }
        }

        func run() async throws {
            let calls = options.smoke ? 4 : self.calls
            let pairs = min(options.smoke ? 2 : self.pairs, calls)
            let connections = options.smoke ? 50 : self.connections
            let instructions = try await instructionsPerCall(calls: calls, pairs: pairs)
            let bytes = connections > 0 ? try await bytesPerConnection(connections) : 0
            let build = options.serverBinary.map { "the server binary \($0)" } ?? Self.buildName
            let measured = CostFigures(
                instructionsPerCall: instructions, bytesPerConnection: bytes, build: build, calls: calls, pairs: pairs,
                connections: connections)
            print("instructions per call      \(measured.instructionsPerCall)  (\(calls) calls, \(pairs) pairs, callgrind)")
            if connections > 0 {
                print("bytes per held connection  \(measured.bytesPerConnection)  (\(connections) connections, heap in use)")
            }
            guard let baseline else { return }
            let url = URL(fileURLWithPath: baseline)
            if writeBaseline {
                try SwitchboardJSONFile.write(measured, to: url)
                print("wrote \(baseline)")
                return
            }
            let committed = try JSONDecoder().decode(CostFigures.self, from: Data(contentsOf: url))
            guard committed.build == measured.build else {
                throw BenchError("\(baseline) holds figures of a \(committed.build) build; this is a \(measured.build) build")
            }
            guard (committed.calls, committed.pairs, committed.connections) == (calls, pairs, connections) else {
                throw BenchError(
                    "\(baseline) was measured with --calls \(committed.calls) --pairs \(committed.pairs) --connections \(committed.connections): compare like with like")
            }
            let verdicts = measured.compare(with: committed, tolerance: tolerance)
            for verdict in verdicts { print(verdict.line) }
            if verdicts.contains(where: \.isOver) {
                print(
                    "a figure is more than \(Int(tolerance * 100)) % above \(baseline): find what costs more, or, when the change is worth it, "
                        + "write the new figures (--write-baseline) in the same commit and say why")
                throw ExitCode(1)
            }
        }

        #if DEBUG
        static let buildName = "debug"
        #else
        static let buildName = "release"
        #endif

        /// The server's instructions for `calls` whole calls, per call.
        private func instructionsPerCall(calls: Int, pairs: Int) async throws -> Int {
            let valgrindPath = try Self.find(valgrind)
            let control = try Self.find("callgrind_control")
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-cost-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let output = directory.appendingPathComponent("callgrind.out").path
            let products = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            let shim = products.appendingPathComponent("libSwitchboardValgrindShim.so").path
            guard FileManager.default.fileExists(atPath: shim) else {
                throw BenchError("\(shim) is missing: build the package's products (swift build --package-path Server)")
            }
            // Valgrind 3.19 cannot read the DWARF 5 of the C++ parts of the binary and gives up;
            // instructions are counted the same without debug information, so it runs a copy without.
            let server = directory.appendingPathComponent("switchboard")
            let binary = options.serverBinary ?? URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
            try Self.run(try Self.find("llvm-objcopy", or: "objcopy"), ["--strip-debug", binary, server.path])
            var serverOptions = options
            serverOptions.serverBinary = server.path
            // Each write commits at once: the commits per call do not depend on timing.
            serverOptions.serverCommitInterval = 0
            serverOptions.serverThreads = serverOptions.serverThreads ?? 2
            let bench = try await Bench(
                serverOptions,
                launcher: (
                    URL(fileURLWithPath: "/usr/bin/env"),
                    [
                        "LD_PRELOAD=\(shim)", valgrindPath, "--tool=callgrind", "--instr-atstart=no",
                        "--callgrind-out-file=\(output)", "--quiet",
                    ]
                ), warnOfDebugBuild: false)
            defer { bench.stop() }
            guard let pid = bench.target.pid else { throw BenchError("no server process to count") }
            let load = try await bench.callLoad(pairs: pairs)
            let warm = await load.closedLoop(calls: pairs, timeout: 300)
            guard warm.completed == pairs else { throw BenchError("the warm-up calls did not complete: \(warm)") }

            try Self.control(control, ["-i", "on", "\(pid)"])
            let start = monotonicNanos()
            let counted = await load.closedLoop(calls: calls, timeout: 600)
            let seconds = Double(monotonicNanos() - start) / 1e9
            try Self.control(control, ["-d", "\(pid)"])
            try Self.control(control, ["-i", "off", "\(pid)"])
            guard counted.completed == calls, counted.errors == 0, counted.recordsMissing == 0 else {
                throw BenchError("the counted calls did not all complete with their records: \(counted)")
            }
            // Everything the server did meanwhile counts, its timers' work too: under callgrind that
            // is a few per cent, and it moved the total by 1-2 % when the calls took half as long
            // again on a machine busy with other work (docs/BENCHMARKS.md, "The cost guard").
            let (dump, total) = try Self.dumped(output, number: 1)
            if let profile {
                try? FileManager.default.removeItem(atPath: profile)
                try FileManager.default.copyItem(atPath: dump, toPath: profile)
            }
            print("counted \(total) instructions in \(String(format: "%.1f", seconds)) s")
            return total / calls
        }

        /// The server's heap in use (`switchboard_heap_in_use_bytes`, glibc's count of what malloc
        /// handed out) gained per logged-in connection held.
        private func bytesPerConnection(_ count: Int) async throws -> Int {
            let bench = try await Bench(options, warnOfDebugBuild: false)
            defer { bench.stop() }
            // One connection first, so that what the first login makes once is not counted.
            let first = try await connectUsers(
                prefix: "u\(runTag())w", count: 1, targets: bench.targets, sources: ["127.0.0.10"], group: bench.group)
            try bench.limits.check(connections: count + 1)
            let before = try await Self.heapInUse(bench.target)
            let clients = try await connectUsers(
                prefix: "u\(runTag())i", count: count, targets: bench.targets,
                sources: bench.limits.sources(for: count, minimum: bench.minimumSources), group: bench.group)
            // A round trip on every connection: each login's work on the server is over.
            try await forEach(clients, width: 256) { client in
                _ = try await client.request(id: "p", #"{"id":"p","type":"ping","data":{}}"#)
            }
            let after = try await Self.heapInUse(bench.target)
            let closed = clients.filter(\.isClosed).count
            for client in clients + first { client.socket.close() }
            guard closed == 0 else { throw BenchError("\(closed) of \(count) connections were closed by the server") }
            return (after - before) / count
        }

        /// `switchboard_heap_in_use_bytes` from a server's `/metrics`.
        static func heapInUse(_ target: BenchTarget) async throws -> Int {
            guard let url = URL(string: "http://\(target.host):\(target.port)/metrics") else { throw BenchError("no URL") }
            let (data, _) = try await URLSession.shared.data(from: url)
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n")
            where line.hasPrefix("switchboard_heap_in_use_bytes ") {
                if let value = line.split(separator: " ").last.flatMap({ Double($0) }) { return Int(value) }
            }
            throw BenchError("the server at \(url) does not report switchboard_heap_in_use_bytes")
        }

        /// The path of `program` (or of `other`) on PATH.
        static func find(_ program: String, or other: String? = nil) throws -> String {
            if program.contains("/") { return program }
            for name in [program] + (other.map { [$0] } ?? []) {
                for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
                    let path = "\(folder)/\(name)"
                    if FileManager.default.isExecutableFile(atPath: path) { return path }
                }
            }
            throw BenchError("\(program) is not installed (scripts/cost-deps installs valgrind)")
        }

        static func control(_ program: String, _ arguments: [String]) throws {
            try run(program, arguments)
        }

        /// Runs a program to its end; throws unless it exits with 0.
        static func run(_ program: String, _ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw BenchError("\(program) \(arguments.joined(separator: " ")) failed (\(process.terminationStatus))")
            }
        }

        /// A callgrind dump's file and the instructions it counted (its `summary:` line).
        static func dumped(_ output: String, number: Int) throws -> (path: String, instructions: Int) {
            let folder = URL(fileURLWithPath: output).deletingLastPathComponent()
            let name = URL(fileURLWithPath: output).lastPathComponent
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
                .filter { $0.hasPrefix(name + ".") && $0.hasSuffix(".\(number)") }
            guard let file = files.first else { throw BenchError("callgrind wrote no dump \(number) in \(folder.path)") }
            let path = folder.appendingPathComponent(file).path
            let text = try String(contentsOfFile: path, encoding: .utf8)
            for line in text.split(separator: "\n") where line.hasPrefix("summary:") || line.hasPrefix("totals:") {
                if let value = line.split(separator: " ").last.flatMap({ Int($0) }) { return (path, value) }
            }
            throw BenchError("no summary in \(file)")
        }
    }
}

/// The figures the cost guard compares (its baseline file's content).
struct CostFigures: Codable, Equatable {
    var instructionsPerCall: Int
    var bytesPerConnection: Int
    /// "debug" or "release": figures of different builds are not compared.
    var build: String
    /// The scenario they were measured with (`--calls`, `--pairs`, `--connections`).
    var calls: Int
    var pairs: Int
    var connections: Int

    struct Verdict {
        var name: String
        var measured: Int
        var baseline: Int
        var tolerance: Double
        var ratio: Double { Double(measured) / Double(max(1, baseline)) }
        var isOver: Bool { ratio > 1 + tolerance }
        var line: String {
            "\(name): \(measured) against \(baseline) in the baseline, \(String(format: "%.3f", ratio))×"
                + (isOver ? "  MORE THAN \(Int(tolerance * 100)) % ABOVE" : "")
        }
    }

    func compare(with baseline: CostFigures, tolerance: Double) -> [Verdict] {
        [
            Verdict(
                name: "instructions per call", measured: instructionsPerCall, baseline: baseline.instructionsPerCall,
                tolerance: tolerance),
            Verdict(
                name: "bytes per held connection", measured: bytesPerConnection, baseline: baseline.bytesPerConnection,
                tolerance: tolerance),
        ]
    }
}

/// Pretty JSON with sorted keys, for files people read and diff.
enum SwitchboardJSONFile {
    static func write<T: Encodable>(_ value: T, to url: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try (encoder.encode(value) + Data("\n".utf8)).write(to: url)
    }
}
