#if GStreamer
import Foundation
import NIOConcurrencyHelpers
import SwitchboardProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Where a received track is recorded: `<dir>/<peer>-<kind>.wav|webm`, numbered (`-2`, `-3`, …)
/// when the name is taken (a screen shared twice, a connection replaced).
///
/// The name is given when the track's first media reaches the recorder, not when its chain is
/// built, so names follow the order in which tracks carried something, and a chain that never
/// carried anything (a session replaced before its media flowed, a section the SFU gave to
/// another member) leaves no file: until then the recorder writes to a hidden `.part` file,
/// which ``claim()`` renames and ``discard()`` removes.
final class RecordingFile: Sendable {
    enum State: Sendable {
        /// Written under the hidden name; nothing has arrived yet.
        case pending
        /// Renamed to its recording name at the first media.
        case claimed(URL)
        /// Ended without media: the hidden file is gone.
        case discarded
    }

    let directory: URL
    let peer: UserID
    let kind: TrackKind
    /// The hidden file the recorder writes to (opened by the file sink, renamed by ``claim()``).
    let location: URL
    private let state = NIOLockedValueBox(State.pending)

    init(directory: URL, peer: UserID, kind: TrackKind) {
        self.directory = directory
        self.peer = peer
        self.kind = kind
        location = directory.appendingPathComponent(".\(peer.rawValue)-\(kind.rawValue)-\(UUID().uuidString).part")
    }

    var current: State { state.withLockedValue { $0 } }

    /// The first media arrived: the file takes the first free recording name. Called from the
    /// streaming thread; later calls change nothing.
    func claim() {
        state.withLockedValue { state in
            guard case .pending = state else { return }
            // Over the empty file that reserved the name; the sink writes on through its open
            // file. If no name can be had, the recording stays under its hidden one.
            guard let name = Self.reserveName(in: directory, peer: peer, kind: kind) else {
                state = .claimed(location)
                return
            }
            guard rename(location.path, name.path) == 0 else {
                unlink(name.path)
                state = .claimed(location)
                return
            }
            state = .claimed(name)
        }
    }

    /// The track ended (its sink is closed): a file that never got media is removed.
    func discard() {
        state.withLockedValue { state in
            guard case .pending = state else { return }
            unlink(location.path)
            state = .discarded
        }
    }

    /// Creates `<peer>-<kind>.<suffix>`, or the first free numbered name, exclusively (two tracks
    /// claiming at once get different names).
    private static func reserveName(in directory: URL, peer: UserID, kind: TrackKind) -> URL? {
        let suffix = kind == .audio ? "wav" : "webm"
        for number in 1...10_000 {
            let name = "\(peer.rawValue)-\(kind.rawValue)" + (number == 1 ? "" : "-\(number)") + ".\(suffix)"
            let candidate = directory.appendingPathComponent(name)
            let descriptor = open(candidate.path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
            if descriptor >= 0 {
                close(descriptor)
                return candidate
            }
            guard errno == EEXIST else { return nil }
        }
        return nil
    }
}
#endif
