import Foundation
import SwitchboardProtocol

/// Turns a take's `.mjr` files (Janus's RTP dumps, one per member, track and SFU session) into
/// files a browser plays: one WebM/Opus file per member over the whole take (each of the member's
/// segments at its place, silence between; a member's media restarts with every SFU session, so a
/// Janus restart or a move to another device makes a new segment), and a mixed WebM of the whole
/// take (every member's audio, and a grid of the members' video where any was sent).
///
/// Time: each `.mjr` file's header says when its first packet was written (Janus's clock, Unix
/// µs). The take's files start at the first packet of any of its files, and each segment is
/// placed by its own first packet after that one: the members stay in step with each other on
/// Janus's clock, whatever the server's clock says. The files last as long as the take did on the
/// server (from its start, or the call's connection, to its stop), which also counts the moments
/// before the first packet arrived (the connection's set-up): they are silence at the end.
struct RecordingConverter: Sendable {
    let files: RecordingFiles
    let tools: RecordingTools
    /// The mixed file's video size, and frames per second.
    var gridSize = (width: 640, height: 480)
    var frameRate = 15

    struct Segment {
        var track: RecordingFiles.Track
        /// When its first packet was written (Janus's clock, ms); then where it starts in the take, ms.
        var offset: Int64
        /// The converted file (Opus or WebM).
        var path: String
    }

    /// Converts the take; returns the files it made, in its output folder.
    func convert(_ take: RecordingTake) async throws -> [RecordedFile] {
        let output = files.outputFolder(callId: take.callId, take: take.take)
        let scratch = output + "/.work"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let duration = take.stoppedAt - take.startedAt
        var segments: [Segment] = []
        for track in files.tracks(callId: take.callId, take: take.take) {
            if let segment = try await segment(track, scratch: scratch) { segments.append(segment) }
        }
        guard let first = segments.map(\.offset).min() else {
            throw NothingRecorded(description: "no media was recorded")
        }
        for index in segments.indices { segments[index].offset -= first }
        var made: [RecordedFile] = []
        var memberFiles: [(user: UserID, path: String)] = []
        for user in take.members {
            let audio = segments.filter { !$0.track.isVideo && $0.track.userHex == RecordingFiles.hex(user) }
            guard !audio.isEmpty else { continue }
            let name = RecordingFiles.memberFile(user)
            let path = output + "/" + name
            try await mixAudio(audio, duration: duration, into: path, scratch: scratch)
            memberFiles.append((user, path))
            made.append(try await describe(path, name: name, kind: .member, user: user, scratch: scratch))
        }
        guard !memberFiles.isEmpty else { throw NothingRecorded(description: "no member's audio was recorded") }
        let video = segments.filter(\.track.isVideo)
        let mixed = output + "/" + RecordingFiles.mixedFile
        try await mix(memberFiles.map(\.path), video: video, members: take.members, duration: duration, into: mixed, scratch: scratch)
        made.append(try await describe(mixed, name: RecordingFiles.mixedFile, kind: .mixed, user: nil, scratch: scratch))
        return made
    }

    /// One `.mjr` file converted, with its place; nil for a file without media (a track that
    /// never sent a packet).
    private func segment(_ track: RecordingFiles.Track, scratch: String) async throws -> Segment? {
        struct Header: Decodable {
            var s: Int64?
            var u: Int64?
        }
        let header: Header
        do {
            let json = try await tools.run(tools.ppRec, ["--json", track.path], scratch: scratch)
            header = try JSONDecoder().decode(Header.self, from: json)
        } catch {
            return nil
        }
        guard let written = header.u ?? header.s else { return nil }
        let base = URL(fileURLWithPath: track.path).deletingPathExtension().lastPathComponent
        let path = scratch + "/" + base + (track.isVideo ? ".webm" : ".opus")
        do {
            _ = try await tools.run(tools.ppRec, [track.path, path], scratch: scratch)
        } catch {
            // janus-pp-rec refuses a file with no packet in it: nothing was recorded there.
            return nil
        }
        guard (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 > 0 else { return nil }
        return Segment(track: track, offset: written / 1000, path: path)
    }

    /// A member's audio segments, each at its place, silence around, cut to the take's length.
    private func mixAudio(_ segments: [Segment], duration: Int64, into path: String, scratch: String) async throws {
        var arguments = ["-y", "-v", "error"]
        var filter: [String] = []
        for (index, segment) in segments.enumerated() {
            arguments += ["-i", segment.path]
            filter.append("[\(index):a]aresample=48000:async=1:first_pts=0,adelay=delays=\(segment.offset):all=1[a\(index)]")
        }
        let inputs = segments.indices.map { "[a\($0)]" }.joined()
        let joined = segments.count == 1 ? "[a0]anull" : "\(inputs)amix=inputs=\(segments.count):normalize=0:dropout_transition=0"
        filter.append("\(joined),apad,atrim=end=\(Self.seconds(duration))[out]")
        arguments += [
            "-filter_complex", filter.joined(separator: ";"), "-map", "[out]", "-ac", "1", "-c:a", "libopus", "-b:a", "32k",
            path,
        ]
        _ = try await tools.run(tools.ffmpeg, arguments, scratch: scratch)
    }

    /// Every member's file mixed, and a grid of the video segments (a cell per member who sent
    /// video, in the members' order) where there are any.
    private func mix(
        _ audio: [String], video: [Segment], members: [UserID], duration: Int64, into path: String, scratch: String
    ) async throws {
        var arguments = ["-y", "-v", "error"]
        var filter: [String] = []
        for file in audio { arguments += ["-i", file] }
        let inputs = audio.indices.map { "[\($0):a]" }.joined()
        let mixed = audio.count == 1 ? "[0:a]anull" : "\(inputs)amix=inputs=\(audio.count):normalize=0:dropout_transition=0"
        filter.append("\(mixed),apad,atrim=end=\(Self.seconds(duration))[aout]")
        var maps = ["-map", "[aout]"]
        if !video.isEmpty {
            let senders = members.filter { user in video.contains { $0.track.userHex == RecordingFiles.hex(user) } }
            let columns = Int(Double(senders.count).squareRoot().rounded(.up))
            let rows = (senders.count + columns - 1) / columns
            let cell = (width: gridSize.width / columns / 2 * 2, height: gridSize.height / rows / 2 * 2)
            filter.append(
                "color=c=black:s=\(gridSize.width)x\(gridSize.height):r=\(frameRate):d=\(Self.seconds(duration))[base0]")
            for (index, segment) in video.enumerated() {
                let input = audio.count + index
                arguments += ["-i", segment.path]
                let place = senders.firstIndex { RecordingFiles.hex($0) == segment.track.userHex } ?? 0
                let x = place % columns * cell.width
                let y = place / columns * cell.height
                filter.append(
                    "[\(input):v]setpts=PTS-STARTPTS+\(Self.seconds(segment.offset))/TB,"
                        + "scale=\(cell.width):\(cell.height):force_original_aspect_ratio=decrease,"
                        + "pad=\(cell.width):\(cell.height):(ow-iw)/2:(oh-ih)/2,setsar=1[v\(index)]")
                filter.append("[base\(index)][v\(index)]overlay=x=\(x):y=\(y):eof_action=pass:repeatlast=0[base\(index + 1)]")
            }
            maps += [
                "-map", "[base\(video.count)]", "-c:v", "libvpx", "-pix_fmt", "yuv420p", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "600k",
                "-r", "\(frameRate)",
            ]
        }
        arguments += ["-filter_complex", filter.joined(separator: ";")] + maps + ["-c:a", "libopus", "-b:a", "48k", path]
        _ = try await tools.run(tools.ffmpeg, arguments, scratch: scratch)
    }

    /// A made file's size, duration and whether it has video, as `ffprobe` reads them.
    private func describe(
        _ path: String, name: String, kind: RecordedFile.Kind, user: UserID?, scratch: String
    ) async throws -> RecordedFile {
        let probe = try await tools.run(
            tools.ffprobe,
            ["-v", "error", "-show_entries", "format=duration:stream=codec_type", "-of", "json", path], scratch: scratch)
        struct Probe: Decodable {
            struct Format: Decodable { var duration: String? }
            struct Stream: Decodable { var codec_type: String? }
            var format: Format?
            var streams: [Stream]?
        }
        let read = try JSONDecoder().decode(Probe.self, from: probe)
        let seconds = read.format?.duration.flatMap(Double.init) ?? 0
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int).map(Int64.init) ?? 0
        let video = read.streams?.contains { $0.codec_type == "video" } ?? false
        return RecordedFile(
            name: name, kind: kind, userId: user, contentType: video ? "video/webm" : "audio/webm", size: size,
            duration: Int64((seconds * 1000).rounded()), video: video)
    }

    /// The take has nothing to convert (no member's media reached the SFU while it was recorded):
    /// trying again would find the same, so it fails at once.
    struct NothingRecorded: Error, CustomStringConvertible {
        var description: String
    }

    static func seconds(_ milliseconds: Int64) -> String {
        String(format: "%.3f", Double(milliseconds) / 1000)
    }
}
