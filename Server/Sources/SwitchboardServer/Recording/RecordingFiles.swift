import Foundation
import SwitchboardProtocol

/// Where recordings live on disk: a folder per call under the recordings directory, which the
/// SFU (Janus's `rec_dir`) and the server share. Janus writes each member's tracks of each take
/// and SFU session as `.mjr` files named by ``base(take:user:session:)``; the conversion writes a
/// take's files into its own folder (``outputFolder(callId:take:)``).
///
/// Every name is made here from values the server made (a call id is a UUID, a user id goes in
/// as hex), and a name asked for from outside is checked against the take's files: no path can
/// reach out of the directory.
struct RecordingFiles: Sendable, Equatable {
    /// The recordings directory, absolute.
    let root: String

    init(root: String) {
        self.root = URL(fileURLWithPath: root).standardizedFileURL.path
    }

    func folder(of callId: CallID) -> String { root + "/" + callId.rawValue }

    func outputFolder(callId: CallID, take: Int) -> String { folder(of: callId) + "/t\(take)" }

    /// Janus's `filename` for a member's tracks in a take and SFU session; Janus adds
    /// `-audio-<mindex>.mjr`, `-video-<mindex>.mjr`.
    static func base(take: Int, user: UserID, session: Int) -> String {
        "t\(take)-\(hex(user))-s\(session)"
    }

    static func hex(_ user: UserID) -> String {
        user.rawValue.utf8.map { String(format: "%02x", $0) }.joined()
    }

    /// The member file's name for a user.
    static func memberFile(_ user: UserID) -> String { "member-\(hex(user)).webm" }
    static let mixedFile = "mixed.webm"

    /// One `.mjr` file of a take: whose, which session, which track.
    struct Track: Equatable, Sendable {
        var path: String
        var userHex: String
        var session: Int
        var isVideo: Bool
        var mindex: Int
    }

    /// The `.mjr` files of a take in the call's folder.
    func tracks(callId: CallID, take: Int) -> [Track] {
        let folder = folder(of: callId)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        let prefix = "t\(take)-"
        return names.sorted().compactMap { name -> Track? in
            guard name.hasPrefix(prefix), name.hasSuffix(".mjr") else { return nil }
            // t<take>-<hex>-s<session>-<audio|video>-<mindex>.mjr
            let parts = name.dropFirst(prefix.count).dropLast(4).split(separator: "-")
            guard parts.count == 4, parts[1].hasPrefix("s"), let session = Int(parts[1].dropFirst()),
                parts[2] == "audio" || parts[2] == "video", let mindex = Int(parts[3])
            else { return nil }
            return Track(
                path: folder + "/" + name, userHex: String(parts[0]), session: session, isVideo: parts[2] == "video",
                mindex: mindex)
        }
    }

    /// The path of a take's file for a download, if `name` is one of the recording's files.
    func path(of name: String, in recording: StoredRecording) -> String? {
        guard recording.files.contains(where: { $0.name == name }) else { return nil }
        return outputFolder(callId: recording.take.callId, take: recording.take.take) + "/" + name
    }
}
