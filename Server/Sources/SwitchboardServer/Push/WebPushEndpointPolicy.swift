import Foundation
import NIOPosix
import SwitchboardProtocol

/// Which Web Push endpoints the server sends to. A subscription's endpoint is a URL a client
/// chose, and the server makes a POST to it: without a rule, any user could make the server
/// reach its own network (an admin port on 127.0.0.1, a cloud metadata service on
/// 169.254.169.254, a database on 10.0.0.5). So an endpoint must be `https` on port 443 of a
/// public DNS name or a public address, unless the operator allows its host
/// (``WebPushConfiguration/allowedHosts``).
///
/// Checked twice: at registration, the URL as written (`pushEndpointNotAllowed` 6004); before each
/// push, the addresses its name resolves to now, so a name that points into the network is
/// refused too (the token is then removed). A name that is rebound between that look-up and the
/// HTTP client's own is not caught; an egress firewall closes that last gap.
struct WebPushEndpointPolicy: Sendable {
    let allowedHosts: Set<HostName>

    init(allowedHosts: [String]) throws(SwitchboardError) {
        var hosts = Set<HostName>()
        for text in allowedHosts {
            guard let host = HostName(text) else {
                throw SwitchboardError(
                    .invalidParams, "a Web Push host is a name or an address without a port, not '\(text.prefix(100))'")
            }
            hosts.insert(host)
        }
        self.allowedHosts = hosts
    }

    /// Why the server will not send to `endpoint`, or nil.
    func problem(_ endpoint: String) -> SwitchboardError? {
        guard let url = URL(string: endpoint), url.scheme == "https", let host = Self.host(of: url) else {
            return SwitchboardError(.invalidPushToken, "a Web Push endpoint is an https URL")
        }
        if allowedHosts.contains(host) { return nil }
        guard url.port == nil || url.port == 443 else {
            return SwitchboardError(.pushEndpointNotAllowed, "a Web Push endpoint is on port 443")
        }
        guard host.isPublic else {
            return SwitchboardError(
                .pushEndpointNotAllowed, "a Web Push endpoint is on a public host, not a loopback, private or local one")
        }
        return nil
    }

    /// Whether every address `endpoint`'s host resolves to now is public (or the host is allowed).
    func resolvesPublicly(_ endpoint: URL) async -> Bool {
        guard let host = Self.host(of: endpoint) else { return false }
        if allowedHosts.contains(host) { return true }
        guard case .name(let name) = host else { return host.isPublic }
        let addresses = try? await NIOThreadPool.singleton.runIfActive { Self.resolve(name) }
        guard let addresses, !addresses.isEmpty else { return false }
        return addresses.allSatisfy(\.isPublic)
    }

    /// The URL's host; an IPv6 address, which `URL` gives without its brackets, is read as one.
    static func host(of url: URL) -> HostName? {
        guard let text = url.host, !text.isEmpty else { return nil }
        return HostName(text.contains(":") && !text.hasPrefix("[") ? "[\(text)]" : text)
    }

    /// The IPv4 and IPv6 addresses of a name (`getaddrinfo`, blocking).
    private static func resolve(_ name: String) -> [HostName] {
        var hints = addrinfo()
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, "443", &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var found: [HostName] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let entry = next {
            if let address = entry.pointee.ai_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET:
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        let bytes = withUnsafeBytes(of: v4.pointee.sin_addr) { Array($0) }
                        found.append(.ipv4(bytes))
                    }
                case AF_INET6:
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        let bytes = withUnsafeBytes(of: v6.pointee.sin6_addr) { Array($0) }
                        found.append(.ipv6(bytes))
                    }
                default:
                    break
                }
            }
            next = entry.pointee.ai_next
        }
        return found
    }
}

extension HostName {
    /// Whether the host is on the public internet: a DNS name that is not local by its form
    /// (`localhost`, a single label, `.local`, `.localhost`, `.internal`, `.home.arpa`, `.lan`), or
    /// an address outside the special-purpose ranges (RFC 6890: loopback, private, shared,
    /// link-local, documentation, benchmarking, multicast, reserved; for IPv6 also unique-local,
    /// link-local, and IPv4-mapped and NAT64 forms of those).
    var isPublic: Bool {
        switch self {
        case .name(let name):
            let local = [".localhost", ".local", ".internal", ".home.arpa", ".lan", ".intranet", ".corp"]
            return name != "localhost" && name.contains(".") && !local.contains { name.hasSuffix($0) }
        case .ipv4(let bytes):
            return Self.isPublicIPv4(bytes)
        case .ipv6(let bytes):
            let prefix96 = Array(bytes[0..<12])
            // IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d): the IPv4 address decides.
            if prefix96 == Array(repeating: 0, count: 10) + [0xff, 0xff]
                || prefix96 == [0, 0x64, 0xff, 0x9b] + Array(repeating: 0, count: 8)
            {
                return Self.isPublicIPv4(Array(bytes[12..<16]))
            }
            if bytes[0..<15].allSatisfy({ $0 == 0 }) { return false }  // :: and ::1
            if bytes[0] & 0xfe == 0xfc { return false }  // fc00::/7 unique local
            if bytes[0] == 0xfe && bytes[1] & 0xc0 == 0x80 { return false }  // fe80::/10 link-local
            if bytes[0] == 0xfe && bytes[1] & 0xc0 == 0xc0 { return false }  // fec0::/10 site-local
            if bytes[0] == 0xff { return false }  // multicast
            if bytes[0] == 0x20 && bytes[1] == 0x01 && bytes[2] == 0x0d && bytes[3] == 0xb8 { return false }  // documentation
            if bytes[0] == 0x01 && bytes[1...7].allSatisfy({ $0 == 0 }) { return false }  // 100::/64 discard
            if bytes[0..<12].allSatisfy({ $0 == 0 }) { return false }  // ::a.b.c.d (deprecated compatible)
            return true
        }
    }

    private static func isPublicIPv4(_ b: [UInt8]) -> Bool {
        switch (b[0], b[1], b[2]) {
        case (0, _, _), (10, _, _), (127, _, _), (224...255, _, _): false
        case (100, 64...127, _): false  // shared address space (carrier-grade NAT)
        case (169, 254, _): false  // link-local, cloud metadata services
        case (172, 16...31, _): false
        case (192, 168, _): false
        case (192, 0, 0), (192, 0, 2): false  // IETF protocol assignments, documentation
        case (198, 18...19, _): false  // benchmarking
        case (198, 51, 100), (203, 0, 113): false  // documentation
        default: true
        }
    }
}
