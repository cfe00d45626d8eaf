import SwitchboardProtocol

/// What each section of a member's publish offer sends, by the rule every client follows for
/// peer-to-peer calls too (docs/PROTOCOL.md, `call.deviceState`): the microphone and the camera
/// share one media stream (`a=msid`), a shared screen has a stream of its own. Sections that send
/// nothing (inactive, a stopped screen) are left out.
enum PublishedTracks {
    static func sources(inOffer sdp: String) -> [String: TrackSource] {
        struct Section {
            var kind: Substring
            var mid: String?
            var stream: Substring?
            var sends = true
        }
        var sections: [Section] = []
        for raw in sdp.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\r" || $0 == "\n" }) {
            let line = raw
            if line.hasPrefix("m=") {
                let kind = line.dropFirst(2).prefix { $0 != " " }
                // A rejected section (port 0) sends nothing.
                let port = line.dropFirst(2).drop { $0 != " " }.dropFirst().prefix { $0 != " " }
                sections.append(Section(kind: kind, sends: port != "0"))
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
            } else if line == "a=inactive" || line == "a=recvonly" {
                sections[last].sends = false
            }
        }
        let audioStream = sections.first { $0.kind == "audio" }?.stream
        var sources: [String: TrackSource] = [:]
        var cameraSeen = false
        for section in sections where section.sends {
            guard let mid = section.mid else { continue }
            switch section.kind {
            case "audio":
                sources[mid] = .microphone
            case "video":
                let isCamera = audioStream.map { section.stream == $0 } ?? !cameraSeen
                if isCamera { cameraSeen = true }
                sources[mid] = isCamera ? .camera : .screen
            default:
                break
            }
        }
        return sources
    }
}
