import Foundation
import SwitchboardProtocol
@testable import SwitchboardServer
import SwitchboardTestServers
import Testing

/// What the server tells browsers about its page (a Content-Security-Policy that lets it connect
/// only to its own origin and the servers the operator lists, no framing unless allowed, no
/// sniffing, no referrer) and to whom the development endpoint gives UserSigs (loopback Hosts only,
/// against DNS rebinding).
struct WebSecurityTests {
    /// A web root with a page, a script and a style sheet.
    static func webRoot() throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("webroot-\(UUID().uuidString)")
        for folder in ["js", "css"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        try "<html>client</html>".write(to: root.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
        try "export const x = 1".write(to: root.appendingPathComponent("js/app.js"), atomically: true, encoding: .utf8)
        try "body {}".write(to: root.appendingPathComponent("css/app.css"), atomically: true, encoding: .utf8)
        return root
    }

    static func pagePolicy(connect: String, ancestors: String = "'none'", images: String = "'self'") -> String {
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src \(images); connect-src \(connect); "
            + "base-uri 'none'; form-action 'none'; frame-ancestors \(ancestors)"
    }

    static let apiPolicy = "default-src 'none'; frame-ancestors 'none'"

    @Test func everyFileOfThePageCarriesItsPolicy() async throws {
        let root = try Self.webRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try await TestServer.start { $0.webRoot = root.path }
        let host = "127.0.0.1:\(server.port)"
        let types = ["/": "text/html", "/index.html": "text/html", "/js/app.js": "text/javascript", "/css/app.css": "text/css"]
        for path in ["/", "/index.html", "/js/app.js", "/css/app.css", "/missing.js"] {
            let response = try await RawTCPClient.get(port: server.port, rawPath: path, host: host)
            #expect(response.status == (path == "/missing.js" ? 404 : 200), "\(path)")
            #expect(
                response["Content-Security-Policy"]
                    == Self.pagePolicy(connect: "'self' ws://\(host) wss://\(host)"), "\(path)")
            #expect(response["X-Frame-Options"] == "DENY", "\(path)")
            #expect(response["X-Content-Type-Options"] == "nosniff", "\(path)")
            #expect(response["Referrer-Policy"] == "no-referrer", "\(path)")
            // nosniff makes the browser hold the files to their types.
            if let type = types[path] { #expect(response["Content-Type"]?.hasPrefix(type) == true, "\(path)") }
        }
        await server.stop()
    }

    @Test func theAPIsAllowNothing() async throws {
        let root = try Self.webRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try await TestServer.start { $0.webRoot = root.path }
        for path in ["/health", "/metrics", "/v1/web/config", "/v1/dev/usersig?userID=alice", "/v1/apps/1/online", "/v1/nothing"] {
            let response = try await RawTCPClient.get(port: server.port, rawPath: path, host: "127.0.0.1:\(server.port)")
            #expect(response.status != 0, "\(path)")
            #expect(response["Content-Security-Policy"] == Self.apiPolicy, "\(path)")
            #expect(response["X-Frame-Options"] == "DENY", "\(path)")
            #expect(response["X-Content-Type-Options"] == "nosniff", "\(path)")
            #expect(response["Referrer-Policy"] == "no-referrer", "\(path)")
        }
        // A UserSig is not kept by caches.
        let sig = try await RawTCPClient.get(port: server.port, rawPath: "/v1/dev/usersig?userID=alice", host: "localhost")
        #expect(sig.status == 200 && sig["Cache-Control"] == "no-store")
        await server.stop()
    }

    @Test func theOperatorsListsShapeThePolicy() async throws {
        let root = try Self.webRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try await TestServer.start { configuration in
            configuration.webRoot = root.path
            configuration.web.allowedServers = ["wss://node2.example.com", "WS://Node3.Example.com:80/", "ws://10.0.0.2:8080"]
            configuration.web.frameAncestors = ["https://app.example.com:443", "self"]
            configuration.web.imageOrigins = ["https://CDN.example.com:443/", "http://10.0.0.3:8081"]
        }
        let host = "switchboard.example.com"
        let page = try await RawTCPClient.get(port: server.port, rawPath: "/", host: host)
        let servers = "wss://node2.example.com ws://node3.example.com ws://10.0.0.2:8080"
        #expect(
            page["Content-Security-Policy"]
                == Self.pagePolicy(
                    connect: "'self' ws://\(host) wss://\(host) \(servers)", ancestors: "https://app.example.com 'self'",
                    images: "'self' https://cdn.example.com http://10.0.0.3:8081"))
        // X-Frame-Options cannot name another origin: it is left out, and browsers follow frame-ancestors.
        #expect(page["X-Frame-Options"] == nil)

        // The page learns the same list, as browsers write origins.
        let config = try await RawTCPClient.get(port: server.port, rawPath: "/v1/web/config", host: host)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(config.body.utf8)) as? [String: Any])
        #expect(body["allowedServers"] as? [String] == servers.split(separator: " ").map(String.init))
        #expect(body["imageOrigins"] as? [String] == ["https://cdn.example.com", "http://10.0.0.3:8081"])
        #expect(config["Cache-Control"] == "no-store")
        await server.stop()

        let sameOrigin = try await TestServer.start { configuration in
            configuration.webRoot = root.path
            configuration.web.frameAncestors = ["'self'"]
        }
        let framed = try await RawTCPClient.get(port: sameOrigin.port, rawPath: "/", host: "localhost")
        #expect(framed["X-Frame-Options"] == "SAMEORIGIN")
        #expect(framed["Content-Security-Policy"]?.hasSuffix("frame-ancestors 'self'") == true)
        let none = try await RawTCPClient.get(port: sameOrigin.port, rawPath: "/v1/web/config", host: "localhost")
        #expect(String(none.body.filter { !$0.isWhitespace }) == #"{"allowedServers":[],"imageOrigins":[]}"#)
        await sameOrigin.stop()
    }

    /// The Host goes into the policy only as a host CSP can name: an IPv6 address is left to
    /// 'self', and a Host that is no host at all cannot add a directive.
    @Test func onlyANameableHostJoinsConnectSrc() async throws {
        let root = try Self.webRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try await TestServer.start { $0.webRoot = root.path }
        for host in ["[::1]:\(server.port)", "a; script-src *", "a b", "x@evil.example", ""] {
            let response = try await RawTCPClient.get(port: server.port, rawPath: "/", host: host)
            #expect(response["Content-Security-Policy"] == Self.pagePolicy(connect: "'self'"), "\(host)")
        }
        await server.stop()
    }

    enum List: String, CaseIterable, Sendable {
        case allowedServers, frameAncestors, devAllowedHosts

        func set(_ entries: [String], in web: inout WebSecurity) {
            switch self {
            case .allowedServers: web.allowedServers = entries
            case .frameAncestors: web.frameAncestors = entries
            case .devAllowedHosts: web.devAllowedHosts = entries
            }
        }
    }

    @Test(arguments: [
        (List.allowedServers, "https://node2.example.com"), (.allowedServers, "wss://node2.example.com/v1/ws"),
        (.allowedServers, "wss://[::1]:8080"), (.allowedServers, "wss://user@node2.example.com"),
        (.allowedServers, "wss://node2.example.com:0"), (.allowedServers, "wss://*.example.com"),
        (.allowedServers, "node2.example.com"), (.frameAncestors, "*"), (.frameAncestors, "'none'"),
        (.frameAncestors, "wss://app.example.com"), (.frameAncestors, "https://app.example.com; script-src *"),
        (.devAllowedHosts, "dev.example.com:8080"), (.devAllowedHosts, "dev_box"), (.devAllowedHosts, ""),
    ])
    func aListEntryThatIsNotOneIsRefusedAtStart(list: List, entry: String) async throws {
        let error = await #expect(throws: SwitchboardError.self) {
            try await TestServer.start { list.set([entry], in: &$0.web) }
        }
        #expect(error?.code == .invalidParams)
        // The command line checks with the same rules.
        switch list {
        case .allowedServers: #expect(WebSecurity.serverOrigin(entry) == nil)
        case .frameAncestors: #expect(WebSecurity.frameAncestor(entry) == nil)
        case .devAllowedHosts: #expect(!WebSecurity.isDevHost(entry))
        }
    }

    // MARK: - development UserSigs

    @Test func developmentSigsGoToLoopbackHostsOnly() async throws {
        let server = try await TestServer.start()
        let port = server.port
        for host in [
            "127.0.0.1:\(port)", "127.0.0.1", "localhost", "LocalHost:\(port)", "127.8.9.10:1", "[::1]:\(port)",
            "[0:0:0:0:0:0:0:1]", "[::ffff:127.0.0.1]:\(port)",
        ] {
            let response = try await RawTCPClient.get(port: port, rawPath: "/v1/dev/usersig?userID=alice", host: host)
            #expect(response.status == 200 && response.body.contains("userSig"), "\(host)")
        }
        // A name pointed at this server by its owner's DNS (rebinding), any other address, and
        // anything that is no host at all, or none.
        for host in [
            "evil.example.com", "evil.example.com:\(port)", "127.0.0.1.evil.example.com", "localhost.evil.example.com",
            "localhost.", "10.0.0.1:\(port)", "0.0.0.0", "[::2]", "[::]", "127.1", "0x7f000001", "localhost:abc",
            "localhost:99999", "", nil,
        ] as [String?] {
            let response = try await RawTCPClient.get(port: port, rawPath: "/v1/dev/usersig?userID=alice", host: host)
            #expect(response.status == 403, "\(host ?? "no Host")")
            #expect(Self.code(response.body) == SwitchboardError.Code.hostNotAllowed.rawValue, "\(host ?? "no Host")")
            #expect(!response.body.contains("userSig"), "\(host ?? "no Host")")
        }
        await server.stop()
    }

    @Test func theOperatorMayNameMoreDevelopmentHosts() async throws {
        let server = try await TestServer.start { $0.web.devAllowedHosts = ["Dev.Example.com", "192.168.1.5", "[fd00::5]"] }
        for host in ["dev.example.com:8080", "dev.example.com", "192.168.1.5:\(server.port)", "[fd00:0::5]", "localhost"] {
            let response = try await RawTCPClient.get(port: server.port, rawPath: "/v1/dev/usersig?userID=alice", host: host)
            #expect(response.status == 200, "\(host)")
        }
        for host in ["other.example.com", "example.com", "dev.example.com.evil.example", "192.168.1.6"] {
            let response = try await RawTCPClient.get(port: server.port, rawPath: "/v1/dev/usersig?userID=alice", host: host)
            #expect(response.status == 403 && Self.code(response.body) == SwitchboardError.Code.hostNotAllowed.rawValue, "\(host)")
        }
        await server.stop()
    }

    /// Outside development mode the endpoint says so, whatever the Host.
    @Test func productionServersIssueNoSigsToAnyHost() async throws {
        let server = try await TestServer.start { configuration in
            configuration.apps = [AppCredentials(sdkAppID: 1_400_000_777, secretKey: String(repeating: "k", count: 32))]
        }
        for host in ["localhost", "evil.example.com"] {
            let response = try await RawTCPClient.get(port: server.port, rawPath: "/v1/dev/usersig?userID=alice", host: host)
            #expect(response.status == 403 && Self.code(response.body) == SwitchboardError.Code.developmentOnly.rawValue)
        }
        await server.stop()
    }

    static func code(_ body: String) -> Int? {
        let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return (object?["error"] as? [String: Any])?["code"] as? Int
    }

    // MARK: - hosts

    @Test(arguments: [
        ("localhost", true), ("LOCALHOST", true), ("127.0.0.1", true), ("127.255.255.254", true), ("[::1]", true),
        ("[::ffff:127.0.0.2]", true), ("[::ffff:10.0.0.1]", false), ("128.0.0.1", false), ("localhost.localdomain", false),
        ("[::]", false), ("0.0.0.0", false), ("example.com", false),
    ])
    func loopbackHosts(host: String, loopback: Bool) throws {
        let name = try #require(HostName(host))
        #expect(name.isLoopback == loopback)
    }

    @Test(arguments: [
        "", "a..b", ".a", "a.", "a_b", "é.example", "[::1", "[nothing]", "a b", "a%2eb", "user@host", String(repeating: "a", count: 64),
    ])
    func notHosts(text: String) {
        #expect(HostName(text) == nil)
    }

    @Test(arguments: [
        ("example.com:443", "example.com", 443), ("[::1]:8080", "[::1]", 8080), ("127.0.0.1", "127.0.0.1", nil),
    ] as [(String, String, Int?)])
    func hostsAndPorts(text: String, host: String, port: Int?) throws {
        let parsed = try #require(HostAndPort(text))
        #expect(parsed.host == HostName(host) && parsed.port == port)
    }

    @Test(arguments: ["example.com:", "example.com:+80", "example.com:65536", "[::1]8080", "a:b:c", "example.com:0"])
    func notHostsAndPorts(text: String) {
        #expect(HostAndPort(text) == nil)
    }
}
