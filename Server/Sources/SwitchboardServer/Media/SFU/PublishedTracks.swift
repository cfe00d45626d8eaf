import SwitchboardProtocol

/// One track a member publishes: what it is, and in how many simulcast layers (`a=rid` … `send`
/// lines; 1 without simulcast).
struct PublishedTrack: Equatable, Sendable {
    var source: TrackSource
    var layers: Int
}

/// What each section of a member's publish offer sends, by the rule every client follows for
/// peer-to-peer calls too (docs/PROTOCOL.md, `call.deviceState`): the microphone and the camera
/// share one media stream (`a=msid`), a shared screen has a stream of its own. Sections that send
/// nothing (inactive, a stopped screen) are left out.
enum PublishedTracks {
    static func tracks(inOffer sdp: String) -> [String: PublishedTrack] {
        struct Section {
            var kind: Substring
            var mid: String?
            var stream: Substring?
            var sends = true
            var rids = 0
            /// Port 0 with `a=bundle-only` (RFC 8843): on the bundle's transport, not rejected.
            var portZero = false
            var bundleOnly = false
        }
        var sections: [Section] = []
        for raw in sdp.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
            let line = raw
            if line.hasPrefix("m=") {
                let kind = line.dropFirst(2).prefix { $0 != " " }
                // A rejected section (port 0 without a=bundle-only) sends nothing.
                let port = line.dropFirst(2).drop { $0 != " " }.dropFirst().prefix { $0 != " " }
                sections.append(Section(kind: kind, portZero: port == "0"))
                continue
            }
            guard !sections.isEmpty else { continue }
            let last = sections.count - 1
            if line.hasPrefix("a=mid:") {
                let mid = line.dropFirst(6)
                if mid.utf8.count <= SFULimits.maxMidLength { sections[last].mid = String(mid) }
            } else if line.hasPrefix("a=msid:") {
                sections[last].stream = line.dropFirst(7).prefix { $0 != " " }
            } else if line.hasPrefix("a=ssrc:"), sections[last].stream == nil, let range = line.range(of: " msid:") {
                sections[last].stream = line[range.upperBound...].prefix { $0 != " " }
            } else if line.hasPrefix("a=rid:"), line.hasSuffix(" send") || line.contains(" send ") {
                sections[last].rids += 1
            } else if line == "a=inactive" || line == "a=recvonly" {
                sections[last].sends = false
            } else if line == "a=bundle-only" {
                sections[last].bundleOnly = true
            }
        }
        let audioStream = sections.first { $0.kind == "audio" }?.stream
        var tracks: [String: PublishedTrack] = [:]
        var cameraSeen = false
        for section in sections where section.sends && (!section.portZero || section.bundleOnly) {
            guard let mid = section.mid else { continue }
            switch section.kind {
            case "audio":
                tracks[mid] = PublishedTrack(source: .microphone, layers: 1)
            case "video":
                let isCamera = audioStream.map { section.stream == $0 } ?? !cameraSeen
                if isCamera { cameraSeen = true }
                tracks[mid] = PublishedTrack(source: isCamera ? .camera : .screen, layers: max(1, section.rids))
            default:
                break
            }
        }
        return tracks
    }
}
