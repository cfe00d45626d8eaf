import Foundation
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
            .appendingPathComponent("Switchboard_SwitchboardWebClient.resources/Web").path
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
