import Foundation
import SwitchboardTestServers
import SwitchboardTesting
import SwitchboardTools
import Testing

/// The web root serves regular files inside it and nothing else: no dotfiles, no `.git/`, no
/// symlink that leaves it, however the path is spelled.
struct WebRootTests {
    @Test func onlyRegularFilesInsideTheRootAreServed() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("webroot-\(UUID().uuidString)")
        let files = FileManager.default
        try files.createDirectory(at: root.appendingPathComponent(".git"), withIntermediateDirectories: true)
        try files.createDirectory(at: root.appendingPathComponent("js"), withIntermediateDirectories: true)
        try "<html>client</html>".write(to: root.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
        try "export const x = 1".write(to: root.appendingPathComponent("js/app.js"), atomically: true, encoding: .utf8)
        try "[core] secret".write(to: root.appendingPathComponent(".git/config"), atomically: true, encoding: .utf8)
        try "TOKEN=secret".write(to: root.appendingPathComponent(".env"), atomically: true, encoding: .utf8)
        try files.createSymbolicLink(atPath: root.appendingPathComponent("etc").path, withDestinationPath: "/etc")
        try files.createSymbolicLink(
            atPath: root.appendingPathComponent("hosts").path, withDestinationPath: "/etc/hosts")
        try files.createSymbolicLink(
            atPath: root.appendingPathComponent("alias.html").path, withDestinationPath: "index.html")
        defer { try? files.removeItem(at: root) }

        let server = try await TestServer.start { $0.webRoot = root.path }
        for path in ["/", "/index.html", "/js/app.js", "/alias.html"] {
            let (status, body) = try await RawTCPClient.get(port: server.port, rawPath: path)
            #expect(status == 200, "\(path)")
            #expect(!body.contains("secret"), "\(path)")
        }
        for path in [
            "/.git/config", "/.env", "/etc/passwd", "/etc/", "/hosts", "/../etc/passwd", "/js/../.env",
            "/%2e%2e/%2e%2e/etc/passwd", "/%2e%67%69%74/config", "/js/%2e%2e/.env", "/.git/",
        ] {
            let (status, body) = try await RawTCPClient.get(port: server.port, rawPath: path)
            #expect(status == 404 || status == 400, "\(path) answered \(status)")
            #expect(!body.contains("secret") && !body.contains("root:"), "\(path)")
        }
        await server.stop()
    }
}
