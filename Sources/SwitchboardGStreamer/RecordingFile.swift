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
///
/// The member's id names the file only if it is a valid user id (letters, digits, `-`, `_`): an
/// id a server should never send (`../x`, a slash, 300 characters) is recorded as `member`, so a
/// file never lands outside the directory.
final class RecordingFile: Sendable {
    private enum State: Sendable {
        /// Written under the hidden name; nothing has arrived yet.
        case pending
        /// Renamed to its recording name at the first media.
        case claimed(URL)
        /// Ended without media: the hidden file is gone.
        case discarded
    }

    private let directory: URL
    /// `<peer>-<kind>`, the start of every name the file may take.
    private let stem: String
    private let suffix: String
    /// The hidden file the recorder writes to (opened by the file sink, renamed by ``claim()``).
    let location: URL
    private let state = NIOLockedValueBox(State.pending)

    init(directory: URL, peer: UserID, kind: TrackKind) {
        self.directory = directory
        stem = "\(peer.isValid ? peer.rawValue : "member")-\(kind.rawValue)"
        suffix = kind == .audio ? "wav" : "webm"
        location = directory.appendingPathComponent(".\(stem)-\(UUID().uuidString).part")
    }

    /// The first media arrived: the file takes the first free recording name. Called from the
    /// streaming thread; later calls change nothing.
    func claim() {
        state.withLockedValue { state in
            guard case .pending = state else { return }
            // Over the empty file that reserved the name; the sink writes on through its open
            // file. If no name can be had, the recording stays under its hidden one.
            guard let name = reserveName() else {
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

    /// Creates `<stem>.<suffix>`, or the first free numbered name, exclusively (two tracks
    /// claiming at once get different names).
    private func reserveName() -> URL? {
        for number in 1...10_000 {
            let name = stem + (number == 1 ? "" : "-\(number)") + ".\(suffix)"
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
