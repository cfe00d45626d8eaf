import Foundation
import SwitchboardTestServers
import SwitchboardTools
import Testing

@testable import SwitchboardWebClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The browser client travels with the binary: `serve` started anywhere serves it, `--web-root`
/// still picks another folder, and the banner says which.
struct WebClientTests {
    static func page(_ port: Int, _ path: String) async throws -> (Int, String) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    static func emptyDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-web-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Started in a directory that has nothing of the repository: the shipped files are served.
    @Test func serveStartedAnywhereServesTheShippedClient() async throws {
        let directory = try Self.emptyDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ServerProcess.launch(binary: CLITests.binary, arguments: [], directory: directory)
        defer { server.kill() }
        let shipped = CLITests.binary.deletingLastPathComponent()
            .appendingPathComponent("SwitchboardServer_SwitchboardWebClient.resources/Web").path
        #expect(server.output.contains("web client http://127.0.0.1:\(server.port)/ (shipped with this binary, "))
        let (status, index) = try await Self.page(server.port, "/")
        #expect(status == 200 && index.contains("<script type=\"module\""))
        let (scriptStatus, script) = try await Self.page(server.port, "/js/protocol.js")
        let source = try String(contentsOfFile: shipped + "/js/protocol.js", encoding: .utf8)
        #expect(scriptStatus == 200 && script == source)
    }

    /// `--web-root` still wins, and the banner names the folder.
    @Test func webRootOverridesTheShippedClient() async throws {
        let directory = try Self.emptyDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let site = directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        try "<p>our own page</p>".write(to: site.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
        let server = try ServerProcess.launch(
            binary: CLITests.binary, arguments: ["--web-root", site.path], directory: directory)
        defer { server.kill() }
        #expect(server.output.contains("web client http://127.0.0.1:\(server.port)/ ("))
        #expect(!server.output.contains("shipped with this binary"))
        let (status, index) = try await Self.page(server.port, "/")
        #expect(status == 200 && index == "<p>our own page</p>")
    }

    /// The page's policy comes from `serve`'s flags: the servers the page may use and who may
    /// frame it in its headers, the development hosts answered.
    @Test func serveTakesThePagesPolicyFromItsFlags() async throws {
        let directory = try Self.emptyDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ServerProcess.launch(
            binary: CLITests.binary,
            arguments: [
                "--web-allowed-servers", "wss://node2.example.com, ws://node3.example.com:8080",
                "--web-allowed-servers", "WSS://Node4.example.com:443/", "--web-frame-ancestors", "self",
                "--dev-allowed-hosts", "dev.example.com", "--web-image-origins", "https://cdn.example.com",
            ], directory: directory)
        defer { server.kill() }
        let own = "localhost:\(server.port)"
        let page = try await RawTCPClient.get(port: server.port, rawPath: "/", host: own)
        let policy = try #require(page["Content-Security-Policy"])
        #expect(
            policy.contains(
                "connect-src 'self' ws://\(own) wss://\(own) wss://node2.example.com ws://node3.example.com:8080 wss://node4.example.com;"
            ), "\(policy)")
        #expect(policy.hasSuffix("frame-ancestors 'self'"), "\(policy)")
        #expect(policy.contains("img-src 'self' https://cdn.example.com;"), "\(policy)")
        #expect(page["X-Frame-Options"] == "SAMEORIGIN")
        let listed = try await RawTCPClient.get(port: server.port, rawPath: "/v1/dev/usersig?userID=alice", host: "dev.example.com")
        #expect(listed.status == 200)
        let other = try await RawTCPClient.get(port: server.port, rawPath: "/v1/dev/usersig?userID=alice", host: "evil.example.com")
        #expect(other.status == 403 && other.body.contains("5007"))
    }

    @Test func serveRefusesPolicyEntriesThatAreNotOnes() throws {
        for (flag, value, message) in [
            ("--web-allowed-servers", "https://node2.example.com", "--web-allowed-servers takes WebSocket origins"),
            ("--web-allowed-servers", "wss://node2.example.com/v1/ws", "--web-allowed-servers takes WebSocket origins"),
            ("--web-frame-ancestors", "*", "--web-frame-ancestors takes 'self' or origins"),
            ("--web-image-origins", "https://cdn.example.com/avatars", "--web-image-origins takes origins"),
            ("--dev-allowed-hosts", "dev.example.com:8080", "--dev-allowed-hosts takes host names"),
        ] {
            let output = try CLITests.run(["serve", "--port", "0", flag, value])
            #expect(output.status != 0, "\(flag) \(value)")
            #expect(output.stderr.contains(message), "\(output.stderr)")
        }
        // The environment variables go through the same checks.
        for (name, value) in [
            ("SWITCHBOARD_WEB_ALLOWED_SERVERS", "wss://node2.example.com,https://node3.example.com"),
            ("SWITCHBOARD_WEB_FRAME_ANCESTORS", "none"), ("SWITCHBOARD_DEV_ALLOWED_HOSTS", "dev_box"),
        ] {
            let output = try CLITests.run(["serve", "--port", "0"], environment: [name: value])
            #expect(output.status != 0, "\(name)")
            #expect(output.stderr.contains("takes"), "\(name): \(output.stderr)")
        }
    }

    /// Where the files are looked for: the resources beside the binary, or nothing (never a crash).
    @Test func theShippedFilesAreFoundBesideTheBinaryOnly() throws {
        let directory = try Self.emptyDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(WebClient.root(near: [directory]) == nil)
        let web = directory.appendingPathComponent("\(WebClient.bundleName).resources/Web")
        try FileManager.default.createDirectory(at: web, withIntermediateDirectories: true)
        #expect(WebClient.root(near: [directory]) == nil)
        try "<html></html>".write(to: web.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
        #expect(WebClient.root(near: [URL(fileURLWithPath: "/nonexistent"), directory]) == web.path)
    }
}
