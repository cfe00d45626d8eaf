/// What the engine reads from (and adds to) SDP text, without GStreamer: the media sections with
/// their mid, kind, direction, stream id and payload types, and the ICE credentials. Plain text
/// work, so it is tested on machines without GStreamer too.
struct SessionDescriptionText: Equatable, Sendable {
    /// One `m=` section.
    struct Media: Equatable, Sendable {
        /// `audio`, `video` or `application`.
        var kind: String
        var mid: String?
        /// `sendrecv`, `sendonly`, `recvonly` or `inactive`.
        var direction: String
        /// The media stream id (`a=msid:<stream> <track>`, or the `msid:` of an `a=ssrc` line); a
        /// sender's microphone and camera share one, a shared screen has its own.
        var streamId: String?
        var trackId: String?
        /// Payload type per encoding name in upper case (`OPUS`, `VP8`), the first of each.
        var payloadTypes: [String: Int]
        /// The SSRCs the sender names (`a=ssrc:<id> …`).
        var ssrcs: [UInt32]
        var iceUfrag: String?
        var portZero: Bool
        /// The DTLS role offered or taken: `actpass`, `active` or `passive`.
        var setup: String?
        /// `a=bundle-only`: port 0 then means "on the bundle's transport", not rejected.
        var bundleOnly: Bool

        /// The section is rejected or stopped (port 0 outside a bundle).
        var rejected: Bool { portZero && !bundleOnly }
    }

    var media: [Media]
    /// Session-level `a=ice-ufrag` (media-level values win).
    var iceUfrag: String?

    init(_ sdp: String) {
        var media: [Media] = []
        var sessionUfrag: String?
        var current: Media?
        for rawLine in sdp.split(whereSeparator: \.isNewline) {
            let line = Substring(rawLine)
            if line.hasPrefix("m=") {
                if let current { media.append(current) }
                let fields = line.dropFirst(2).split(separator: " ")
                current = Media(
                    kind: fields.first.map(String.init) ?? "", mid: nil, direction: "sendrecv", streamId: nil,
                    trackId: nil, payloadTypes: [:], ssrcs: [], iceUfrag: nil, portZero: fields.count > 1 && fields[1] == "0",
                    setup: nil, bundleOnly: false)
                continue
            }
            guard line.hasPrefix("a=") else { continue }
            let attribute = line.dropFirst(2)
            let (key, value) = Self.split(attribute)
            if current == nil {
                if key == "ice-ufrag" { sessionUfrag = value.map(String.init) }
                continue
            }
            switch key {
            case "mid": current?.mid = value.map(String.init)
            case "sendrecv", "sendonly", "recvonly", "inactive": current?.direction = String(key)
            case "ice-ufrag": current?.iceUfrag = value.map(String.init)
            case "bundle-only": current?.bundleOnly = true
            case "setup": current?.setup = value.map(String.init)
            case "msid":
                let parts = value?.split(separator: " ") ?? []
                current?.streamId = parts.first.map(String.init)
                current?.trackId = parts.count > 1 ? String(parts[1]) : nil
            case "ssrc":
                // a=ssrc:1234 cname:… / a=ssrc:1234 msid:stream track
                guard let value else { break }
                if let id = value.split(separator: " ").first.flatMap({ UInt32($0) }), current?.ssrcs.contains(id) == false {
                    current?.ssrcs.append(id)
                }
                guard current?.streamId == nil, let range = value.range(of: " msid:") else { break }
                let parts = value[range.upperBound...].split(separator: " ")
                current?.streamId = parts.first.map(String.init)
                current?.trackId = parts.count > 1 ? String(parts[1]) : nil
            case "rtpmap":
                // a=rtpmap:111 opus/48000/2
                guard let value else { break }
                let parts = value.split(separator: " ", maxSplits: 1)
                guard parts.count == 2, let type = Int(parts[0]) else { break }
                let name = parts[1].split(separator: "/").first.map { $0.uppercased() } ?? ""
                if current?.payloadTypes[name] == nil { current?.payloadTypes[name] = type }
            default: break
            }
        }
        if let current { media.append(current) }
        self.media = media
        self.iceUfrag = sessionUfrag
    }

    /// Every section leaves the DTLS role to the answerer (`a=setup:actpass`), as a first offer does.
    var offersEitherDTLSRole: Bool { !media.isEmpty && media.allSatisfy { $0.setup == nil || $0.setup == "actpass" } }

    /// The ICE username fragment in use (the first section's, else the session's).
    var ufrag: String? { media.first?.iceUfrag ?? iceUfrag }

    /// The section with this mid.
    func media(mid: String) -> Media? { media.first { $0.mid == mid } }

    /// The stream id of the sender's microphone (its first audio section).
    var audioStreamId: String? { media.first { $0.kind == "audio" }?.streamId }

    /// Whether the video section `mid` is a shared screen: its stream is not the microphone's.
    func isScreen(mid: String) -> Bool {
        guard let section = media(mid: mid), section.kind == "video", let stream = section.streamId else { return false }
        return stream != audioStreamId
    }

    /// Adds `a=msid:<stream> <track>` to the sections that send these SSRCs and have none:
    /// browsers take stream ids from `a=msid`, which webrtcbin 1.22 does not write.
    static func addingMsid(_ streams: [UInt32: (stream: String, track: String)], to sdp: String) -> String {
        rewritingSections(of: sdp) { section in
            guard !section.contains(where: { $0.hasPrefix("a=msid:") }),
                let ssrcLine = section.firstIndex(where: { line in
                    line.hasPrefix("a=ssrc:")
                        && UInt32(line.dropFirst("a=ssrc:".count).prefix { $0 != " " }).map { streams[$0] != nil } == true
                }),
                let ssrc = UInt32(section[ssrcLine].dropFirst("a=ssrc:".count).prefix { $0 != " " }),
                let stream = streams[ssrc]
            else { return }
            section.insert("a=msid:\(stream.stream) \(stream.track)", at: ssrcLine)
        }
    }

    /// `sdp` with the direction of the sections whose mid is in `mids` set to `direction`.
    static func settingDirection(_ direction: String, ofSections mids: Set<String>, in sdp: String) -> String {
        guard !mids.isEmpty else { return sdp }
        let directions: Set<String> = ["a=sendrecv", "a=sendonly", "a=recvonly", "a=inactive"]
        return rewritingSections(of: sdp) { section in
            guard let mid = section.first(where: { $0.hasPrefix("a=mid:") }).map({ String($0.dropFirst("a=mid:".count)) }),
                mids.contains(mid)
            else { return }
            section = section.map { directions.contains($0) ? "a=\(direction)" : $0 }
        }
    }

    /// `sdp` with each media section's lines (from its `m=` line to the next) passed through
    /// `rewrite`; the session part and the line endings are kept as they were.
    private static func rewritingSections(of sdp: String, _ rewrite: (inout [String]) -> Void) -> String {
        var lines = sdp.components(separatedBy: "\r\n")
        let trailing = lines.last == "" ? lines.removeLast() : nil
        var output: [String] = []
        var section: [String] = []
        func flush() {
            if section.first?.hasPrefix("m=") == true { rewrite(&section) }
            output += section
            section = []
        }
        for line in lines {
            if line.hasPrefix("m=") { flush() }
            section.append(line)
        }
        flush()
        if let trailing { output.append(trailing) }
        return output.joined(separator: "\r\n")
    }

    /// `sdp` without the `a=candidate` lines of addresses outside 127.0.0.0/8.
    static func keepingLoopbackCandidates(_ sdp: String) -> String {
        sdp.components(separatedBy: "\r\n").filter { line in
            !line.hasPrefix("a=candidate:") || CandidateLine(String(line.dropFirst(2)))?.isLoopback == true
        }.joined(separator: "\r\n")
    }

    private static func split(_ attribute: Substring) -> (Substring, Substring?) {
        guard let colon = attribute.firstIndex(of: ":") else { return (attribute, nil) }
        return (attribute[..<colon], attribute[attribute.index(after: colon)...])
    }
}

/// A `candidate:` line's parts that decide whether the engine uses it.
struct CandidateLine: Equatable, Sendable {
    var address: String
    /// `host`, `srflx`, `prflx` or `relay`.
    var type: String

    /// On 127.0.0.0/8.
    var isLoopback: Bool { address.hasPrefix("127.") }
}

extension CandidateLine {
    /// nil when the line is not a candidate (the empty end-of-candidates one included).
    init?(_ line: String) {
        let fields = line.split(separator: " ")
        guard fields.count >= 8, fields[0].hasPrefix("candidate:") || fields[0].hasPrefix("a=candidate:"),
            let typeIndex = fields.firstIndex(of: "typ"), typeIndex + 1 < fields.count
        else { return nil }
        address = String(fields[4])
        type = String(fields[typeIndex + 1])
    }
}
