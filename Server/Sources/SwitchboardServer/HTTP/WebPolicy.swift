import HTTPTypes
import Hummingbird
import SwitchboardProtocol

/// What browsers may do with the page this server serves, and whose requests get development
/// UserSigs (``ServerConfiguration/web``). Lists hold the operator's text; ``WebPolicy`` checks it.
public struct WebSecurity: Sendable, Equatable {
    /// Signaling servers besides the page's own that the page may connect to, and so send a
    /// UserSig to, as WebSocket origins: `wss://node2.example.com`, `ws://10.0.0.2:8080`. The page
    /// refuses a `?server=` elsewhere before it opens a socket, and its Content-Security-Policy
    /// lets the browser connect nowhere else.
    public var allowedServers: [String] = []
    /// Who may show the page in a frame: `'self'` or origins such as `https://app.example.com`.
    /// Empty: nobody (`frame-ancestors 'none'`, `X-Frame-Options: DENY`), so no other site can lay
    /// the page under its own and have the user click Accept.
    public var frameAncestors: [String] = []
    /// Hosts besides loopback ones (`localhost`, 127.0.0.0/8, `[::1]`) whose requests
    /// `GET /v1/dev/usersig` answers; any port. A name listed here is trusted not to be rebound.
    public var devAllowedHosts: [String] = []
    /// Origins besides the page's own that members' pictures (profile avatar URLs) may come from,
    /// such as the app's image CDN: `https://cdn.example.com`. The page shows an avatar elsewhere
    /// as the member's initial, and its Content-Security-Policy loads images from nowhere else,
    /// so a stranger's avatar URL cannot make every page that shows it call a server of theirs.
    public var imageOrigins: [String] = []

    public init() {}

    /// `text` as an allowed server (`ws://` or `wss://`, a host CSP can name, an optional port, no
    /// path), in the form browsers write origins; nil when it is not one.
    public static func serverOrigin(_ text: String) -> String? {
        Origin(text, schemes: ["ws", "wss"]).map(\.description)
    }

    /// `text` as a frame ancestor: `'self'` (or `self`), or an `http(s)://` origin; nil otherwise.
    public static func frameAncestor(_ text: String) -> String? {
        FrameAncestor(text)?.source
    }

    /// `text` as an image origin (`http(s)://HOST[:PORT]`, no path), in the form browsers write
    /// origins; nil when it is not one.
    public static func imageOrigin(_ text: String) -> String? {
        Origin(text, schemes: ["http", "https"]).map(\.description)
    }

    /// Whether `text` is a host that can be listed in ``devAllowedHosts`` (a name or an address,
    /// no port).
    public static func isDevHost(_ text: String) -> Bool {
        HostName(text) != nil
    }
}

/// An origin as browsers write it: lowercase scheme and host, no default port, no path.
struct Origin: Hashable, Sendable, CustomStringConvertible {
    var scheme: String
    var authority: HostAndPort

    /// Parses `SCHEME://HOST[:PORT]`, a single `/` after it allowed; the host must be one CSP can
    /// name (not an IPv6 address).
    init?(_ text: String, schemes: Set<String>) {
        guard let separator = text.range(of: "://") else { return nil }
        let scheme = text[..<separator.lowerBound].lowercased()
        var rest = text[separator.upperBound...]
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard schemes.contains(scheme), let authority = HostAndPort(rest), authority.host.cspHost != nil else {
            return nil
        }
        self.scheme = scheme
        self.authority = authority
        if authority.port == Self.defaultPorts[scheme] { self.authority.port = nil }
    }

    private static let defaultPorts = ["ws": 80, "http": 80, "wss": 443, "https": 443]

    var description: String {
        "\(scheme)://\(authority.host.cspHost ?? "")" + (authority.port.map { ":\($0)" } ?? "")
    }
}

/// One entry of `frame-ancestors`.
enum FrameAncestor: Hashable, Sendable {
    case sameOrigin
    case origin(Origin)

    init?(_ text: String) {
        if text == "'self'" || text == "self" {
            self = .sameOrigin
        } else if let origin = Origin(text, schemes: ["http", "https"]) {
            self = .origin(origin)
        } else {
            return nil
        }
    }

    var source: String {
        switch self {
        case .sameOrigin: "'self'"
        case .origin(let origin): origin.description
        }
    }
}

/// The checked ``WebSecurity``: the headers of every HTTP response, and who may have development
/// UserSigs.
///
/// The page's files get a Content-Security-Policy that allows scripts and styles from the page's
/// own origin only (the page has no inline script, style or handler), connections to its own
/// origin (HTTP and WebSocket) and the allowed servers only, and framing by the configured
/// ancestors only. The APIs' responses (`/v1/…`, `/health`, `/metrics`) allow nothing at all.
/// Every response says `nosniff` and `Referrer-Policy: no-referrer` (a page URL never leaks to the
/// servers it talks to).
struct WebPolicy: Sendable {
    let allowedServers: [Origin]
    let frameAncestors: [FrameAncestor]
    let devAllowedHosts: Set<HostName>
    let imageOrigins: [Origin]

    init(_ configuration: WebSecurity) throws(SwitchboardError) {
        allowedServers = try configuration.allowedServers.map { text throws(SwitchboardError) in
            guard let origin = Origin(text, schemes: ["ws", "wss"]) else {
                throw SwitchboardError(
                    .invalidParams,
                    "an allowed server is a WebSocket origin such as wss://node2.example.com:8443 (no path, no IPv6 address), not '\(text.prefix(100))'"
                )
            }
            return origin
        }
        frameAncestors = try configuration.frameAncestors.map { text throws(SwitchboardError) in
            guard let ancestor = FrameAncestor(text) else {
                throw SwitchboardError(
                    .invalidParams,
                    "a frame ancestor is 'self' or an origin such as https://app.example.com, not '\(text.prefix(100))'")
            }
            return ancestor
        }
        imageOrigins = try configuration.imageOrigins.map { text throws(SwitchboardError) in
            guard let origin = Origin(text, schemes: ["http", "https"]) else {
                throw SwitchboardError(
                    .invalidParams, "an image origin is an origin such as https://cdn.example.com, not '\(text.prefix(100))'")
            }
            return origin
        }
        devAllowedHosts = Set(
            try configuration.devAllowedHosts.map { text throws(SwitchboardError) in
                guard let host = HostName(text) else {
                    throw SwitchboardError(
                        .invalidParams, "a development host is a name or an address without a port, not '\(text.prefix(100))'")
                }
                return host
            })
    }

    /// The allowed servers as the page's configuration lists them.
    var allowedServerOrigins: [String] { allowedServers.map(\.description) }

    /// The image origins as the page's configuration lists them.
    var imageOriginNames: [String] { imageOrigins.map(\.description) }

    /// Whether `path` is one of the APIs' rather than the page's.
    static func isAPI(_ path: String) -> Bool {
        path.hasPrefix("/v1/") || path == "/v1" || path == "/health" || path == "/metrics"
    }

    /// The headers for the response to a request for `path` with `Host: host`.
    func headers(path: String, host: String?) -> HTTPFields {
        var fields = HTTPFields()
        fields[.xContentTypeOptions] = "nosniff"
        fields[.referrerPolicy] = "no-referrer"
        if Self.isAPI(path) {
            fields[.contentSecurityPolicy] = "default-src 'none'; frame-ancestors 'none'"
            fields[.xFrameOptions] = "DENY"
        } else {
            fields[.contentSecurityPolicy] = pageContentSecurityPolicy(host: host)
            if let frameOptions { fields[.xFrameOptions] = frameOptions }
        }
        return fields
    }

    /// The page's policy. `connect-src` names the WebSocket origins of the request's Host besides
    /// `'self'`: CSP Level 2 browsers (Safari before 15.4 among them) do not count `ws:` as `'self'`.
    func pageContentSecurityPolicy(host: String?) -> String {
        var connect = ["'self'"]
        // The Host is the page's own origin as the browser sees it; one CSP cannot name (an IPv6
        // address, or something no browser sends) is left to 'self'.
        if let host, let authority = HostAndPort(host), let name = authority.host.cspHost {
            let hostPort = name + (authority.port.map { ":\($0)" } ?? "")
            connect += ["ws://\(hostPort)", "wss://\(hostPort)"]
        }
        connect += allowedServers.map(\.description)
        let ancestors = frameAncestors.isEmpty ? "'none'" : frameAncestors.map(\.source).joined(separator: " ")
        let images = (["'self'"] + imageOrigins.map(\.description)).joined(separator: " ")
        return [
            "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src \(images)",
            "connect-src \(connect.joined(separator: " "))", "base-uri 'none'", "form-action 'none'",
            "frame-ancestors \(ancestors)",
        ].joined(separator: "; ")
    }

    /// `X-Frame-Options` for browsers that know no `frame-ancestors`: `DENY` for none, `SAMEORIGIN`
    /// for `'self'` alone; nothing when other origins may frame the page (the header cannot name
    /// them, and browsers that know CSP follow `frame-ancestors`).
    var frameOptions: String? {
        if frameAncestors.isEmpty { return "DENY" }
        if frameAncestors.allSatisfy({ $0 == .sameOrigin }) { return "SAMEORIGIN" }
        return nil
    }

    /// Whether `GET /v1/dev/usersig` answers a request with `Host: host`: a loopback host, or one
    /// the operator listed. Anything else may be a DNS rebinding: a site the user visits points its
    /// own name at 127.0.0.1 and reads a UserSig for anyone from the user's development server.
    func issuesDevelopmentSigs(host: String?) -> Bool {
        guard let host, let authority = HostAndPort(host) else { return false }
        return authority.host.isLoopback || devAllowedHosts.contains(authority.host)
    }
}

/// Puts ``WebPolicy``'s headers on every response, error responses included.
struct SecurityHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    let policy: WebPolicy

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        for field in policy.headers(path: request.uri.path, host: request.head.authority) {
            response.headers[field.name] = field.value
        }
        return response
    }
}

extension HTTPField.Name {
    static let referrerPolicy = Self("Referrer-Policy")!
    static let xFrameOptions = Self("X-Frame-Options")!
}
