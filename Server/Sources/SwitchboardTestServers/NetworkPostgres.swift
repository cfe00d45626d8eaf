import Foundation
import SwitchboardTools


/// A PostgreSQL server of its own inside a host of a ``TestNetwork``, listening on the host's
/// address only, so that the network between it and its clients can fail for real (the shared test
/// server, on the machine's loopback, is out of the network's reach). A fresh cluster each time
/// (`initdb`, about a second), run as the `postgres` user, as scripts/postgres does (initdb and
/// postgres refuse to run as root, and a ``TestNetwork`` needs root).
public final class NetworkPostgres: Sendable {
    /// The server's binaries (the newest installed version), or nil when PostgreSQL is not installed.
    public static let binaries: URL? = {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return versions.compactMap { Int($0) }.sorted().reversed()
            .map { root.appendingPathComponent("\($0)/bin") }
            .first { FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("initdb").path) }
    }()

    public static let port = 5432
    /// The URL of its `postgres` database (trust authentication: tests only).
    public let url: String
    private let directory: URL
    private let binaries: URL

    private init(url: String, directory: URL, binaries: URL) {
        self.url = url
        self.directory = directory
        self.binaries = binaries
    }

    /// Makes a cluster in a new directory and starts it in `host`'s namespace; returns once it
    /// accepts connections.
    public static func start(in network: TestNetwork, host: String) throws -> NetworkPostgres {
        guard let binaries else { throw ChildProcessError(description: "PostgreSQL is not installed (scripts/postgres install)") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-netpg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let runuser = URL(fileURLWithPath: "/usr/sbin/runuser")
        func asOwner(_ tool: String, _ arguments: [String]) -> [String] {
            ["-u", "postgres", "--", binaries.appendingPathComponent(tool).path] + arguments
        }
        do {
            try TestNetwork.command(URL(fileURLWithPath: "/usr/bin/chown"), ["postgres", directory.path])
            let data = directory.appendingPathComponent("data").path
            try TestNetwork.command(runuser, asOwner("initdb", ["-D", data, "-U", "postgres", "--auth-local=trust", "--auth-host=trust"]))
            // Its clients are the network's other hosts, not the loopback initdb lets in.
            let access = try FileHandle(forWritingTo: URL(fileURLWithPath: data).appendingPathComponent("pg_hba.conf"))
            try access.seekToEnd()
            try access.write(contentsOf: Data("host all all 10.0.0.0/8 trust\n".utf8))
            try access.close()
            // Tests only: no fsync (a crash of this server loses nothing anyone keeps).
            let options = [
                "-p \(port)", "-c listen_addresses=\(network.address(of: host))", "-c unix_socket_directories=\(directory.path)",
                "-c fsync=off", "-c synchronous_commit=off", "-c max_connections=100",
            ]
            let launcher = network.launcher(in: host)
            try TestNetwork.command(
                launcher.executable,
                launcher.arguments + [runuser.path] + asOwner(
                    "pg_ctl", ["-D", data, "-l", directory.appendingPathComponent("server.log").path, "-w", "-o", options.joined(separator: " "), "start"]))
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        return NetworkPostgres(
            url: "postgresql://postgres@\(network.address(of: host)):\(port)/postgres", directory: directory, binaries: binaries)
    }

    /// Stops the server at once (its namespace can then be deleted) and deletes its directory.
    public func stop() {
        _ = try? TestNetwork.command(
            URL(fileURLWithPath: "/usr/sbin/runuser"),
            ["-u", "postgres", "--", binaries.appendingPathComponent("pg_ctl").path, "-D", directory.appendingPathComponent("data").path,
             "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(at: directory)
    }
}
