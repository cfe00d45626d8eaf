import Foundation

/// The host of a `Host` header or of an origin: a DNS name, an IPv4 address or an IPv6 one (in
/// brackets), in one canonical form, so that two spellings of one address compare equal.
enum HostName: Hashable, Sendable {
    /// Lowercase letters, digits, `-` and `.`, no empty label (what CSP and DNS accept).
    case name(String)
    case ipv4([UInt8])
    case ipv6([UInt8])

    /// Parses a host as a URL or a `Host` header spells it: `example.com`, `127.0.0.1`, `[::1]`.
    /// Nil for anything else (user info, a percent sign, a non-ASCII name: write it in punycode).
    init?(_ text: some StringProtocol) {
        if text.hasPrefix("[") {
            guard text.hasSuffix("]"), let bytes = Self.address(AF_INET6, String(text.dropFirst().dropLast()), 16)
            else { return nil }
            self = .ipv6(bytes)
        } else if let bytes = Self.address(AF_INET, String(text), 4) {
            self = .ipv4(bytes)
        } else {
            let name = text.lowercased()
            let labels = name.split(separator: ".", omittingEmptySubsequences: false)
            guard (1...253).contains(name.utf8.count),
                labels.allSatisfy({ (1...63).contains($0.utf8.count) && $0.utf8.allSatisfy(Self.isNameByte) })
            else { return nil }
            self = .name(name)
        }
    }

    /// Whether every connection to this host stays on this machine: `localhost`, 127.0.0.0/8,
    /// `::1` and IPv4-mapped 127.0.0.0/8. A DNS name other than `localhost` never is, whatever it
    /// resolves to now: DNS rebinding points a name at 127.0.0.1 after the page has loaded.
    var isLoopback: Bool {
        switch self {
        case .name(let name): name == "localhost"
        case .ipv4(let bytes): bytes[0] == 127
        case .ipv6(let bytes):
            bytes == Array(repeating: 0, count: 15) + [1]
                || (bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff && bytes[12] == 127)
        }
    }

    /// The host as a Content-Security-Policy source names it; nil for IPv6 addresses, which CSP
    /// cannot name (its host grammar has no brackets).
    var cspHost: String? {
        switch self {
        case .name(let name): name
        case .ipv4(let bytes): bytes.map(String.init).joined(separator: ".")
        case .ipv6: nil
        }
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || byte == UInt8(ascii: "-")
    }

    /// The bytes of a numeric address in its strict form (`inet_pton`: four decimal parts for IPv4).
    private static func address(_ family: Int32, _ text: String, _ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        let parsed = bytes.withUnsafeMutableBytes { inet_pton(family, text, $0.baseAddress) }
        return parsed == 1 ? bytes : nil
    }
}

/// A host and an optional port, as a `Host` header or an origin's authority has them.
struct HostAndPort: Hashable, Sendable {
    var host: HostName
    var port: Int?

    /// Parses `HOST[:PORT]`; nil when the host is not one (``HostName``) or the port is not 1-65535.
    init?(_ text: some StringProtocol) {
        let hostPart: Substring
        let portPart: Substring?
        let text = Substring(text)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            hostPart = text[...close]
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { return nil }
            portPart = rest.isEmpty ? nil : rest.dropFirst()
        } else if let colon = text.firstIndex(of: ":") {
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        } else {
            hostPart = text
            portPart = nil
        }
        guard let host = HostName(hostPart) else { return nil }
        self.host = host
        if let portPart {
            guard (1...5).contains(portPart.count), portPart.allSatisfy({ ("0"..."9").contains($0) }), let port = Int(portPart),
                (1...65535).contains(port)
            else { return nil }
            self.port = port
        } else {
            self.port = nil
        }
    }

    init(host: HostName, port: Int?) {
        self.host = host
        self.port = port
    }
}
