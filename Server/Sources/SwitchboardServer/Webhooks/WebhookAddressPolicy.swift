import Foundation
import NIOPosix
import SwitchboardProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 network, `ADDRESS/PREFIX` (a bare address is the host alone).
public struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    /// 4 or 16 bytes, the host bits cleared.
    let bytes: [UInt8]
    let prefix: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let address = IPNetwork.parse(parts[0]) else { return nil }
        let width = address.count * 8
        let prefix: Int
        if parts.count == 2 {
            guard let value = Int(parts[1]), (0...width).contains(value) else { return nil }
            prefix = value
        } else {
            prefix = width
        }
        self.prefix = prefix
        self.bytes = IPNetwork.masked(address, prefix)
    }

    public var description: String {
        let text =
            bytes.count == 4
            ? bytes.map(String.init).joined(separator: ".")
            : stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
                .joined(separator: ":")
        return "\(text)/\(prefix)"
    }

    /// Whether `address` (4 or 16 bytes) is in this network.
    func contains(_ address: [UInt8]) -> Bool {
        address.count == bytes.count && IPNetwork.masked(address, prefix) == bytes
    }

    /// The bytes of a textual IPv4 or IPv6 address (without brackets or a zone); nil otherwise.
    static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    private static func masked(_ address: [UInt8], _ prefix: Int) -> [UInt8] {
        address.enumerated().map { index, byte in
            let bits = max(0, min(8, prefix - index * 8))
            return bits == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
        }
    }
}

/// Where webhooks may go (SSRF): public addresses only, unless the operator allows a network.
/// Every address a host name resolves to must pass, and the one used is pinned for the
/// connection (``WebhookTransport``), so a name that answers differently a moment later (DNS
/// rebinding) reaches nothing else.
struct WebhookAddressPolicy: Sendable {
    /// Loopback, private, shared, link-local, documentation, benchmarking, multicast and reserved
    /// ranges, and the IPv6 forms that carry an IPv4 address elsewhere (NAT64, 6to4, Teredo).
    static let refused: [IPNetwork] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
        "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
        "::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "2002::/16",
        "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
    ].compactMap(IPNetwork.init)

    var allowed: [IPNetwork]

    /// Whether an address may be reached. An IPv4-mapped IPv6 address is judged as its IPv4 one.
    func permits(_ address: [UInt8]) -> Bool {
        var address = address
        if address.count == 16, address[0..<10].allSatisfy({ $0 == 0 }), address[10] == 0xFF, address[11] == 0xFF {
            address = Array(address[12...])
        }
        if allowed.contains(where: { $0.contains(address) }) { return true }
        return !Self.refused.contains { $0.contains(address) }
    }

    /// Checks a URL as an endpoint: `http` or `https`, a host, no user info; every address of the
    /// host permitted. Returns the host and the address to connect to.
    func check(_ text: String) async -> Result<Target, SwitchboardError> {
        guard text.utf8.count <= 2048, let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", var host = url.host, !host.isEmpty, url.user == nil,
            url.password == nil, url.fragment == nil
        else {
            return .failure(
                SwitchboardError(.invalidWebhookURL, "an endpoint is an http(s) URL with a host, no user info or fragment"))
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        let addresses: [[UInt8]]
        if let literal = IPNetwork.parse(host) {
            addresses = [literal]
        } else {
            addresses = await Self.resolve(host, port: port)
            guard !addresses.isEmpty else {
                return .failure(SwitchboardError(.webhookURLNotAllowed, "the endpoint's host does not resolve"))
            }
        }
        guard addresses.allSatisfy(permits) else {
            return .failure(
                SwitchboardError(
                    .webhookURLNotAllowed,
                    "the endpoint's host is on a loopback, private, link-local or reserved network; the operator may allow it with --webhook-allow"
                ))
        }
        return .success(Target(host: host, address: Self.text(addresses[0]), isLiteral: IPNetwork.parse(host) != nil))
    }

    /// A host checked for a delivery: what to connect to.
    struct Target: Sendable, Equatable {
        var host: String
        /// The address the connection goes to (textual).
        var address: String
        /// The URL names the address itself.
        var isLiteral: Bool
    }

    /// The addresses a name resolves to (getaddrinfo, on NIO's thread pool).
    static func resolve(_ host: String, port: Int) async -> [[UInt8]] {
        (try? await NIOThreadPool.singleton.runIfActive { () -> [[UInt8]] in
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return [] }
            defer { freeaddrinfo(first) }
            var addresses: [[UInt8]] = []
            var next: UnsafeMutablePointer<addrinfo>? = first
            while let info = next {
                if let address = info.pointee.ai_addr {
                    switch Int32(info.pointee.ai_family) {
                    case AF_INET:
                        address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                            var value = pointer.pointee.sin_addr
                            addresses.append(withUnsafeBytes(of: &value) { Array($0) })
                        }
                    case AF_INET6:
                        address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                            var value = pointer.pointee.sin6_addr
                            addresses.append(withUnsafeBytes(of: &value) { Array($0) })
                        }
                    default:
                        break
                    }
                }
                next = info.pointee.ai_next
            }
            return addresses
        }) ?? []
    }

    static func text(_ address: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var copy = address
        let family = address.count == 4 ? AF_INET : AF_INET6
        _ = copy.withUnsafeMutableBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
