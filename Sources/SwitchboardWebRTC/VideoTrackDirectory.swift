#if canImport(WebRTC) && canImport(UIKit)
import Foundation
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol
@preconcurrency import WebRTC

/// Which video track shows what, for the views: the local camera and screen, and each member's
/// camera and shared screen, as each connection receives them (a member's own connection, or the
/// SFU's subscribe connection). Written by the engine's queue and WebRTC's signaling thread, read
/// by the views on the main thread; each change is announced to the views that wait for it.
final class VideoTrackDirectory: @unchecked Sendable {
    private struct State {
        var localCamera: RTCVideoTrack?
        var localScreen: RTCVideoTrack?
        /// What each connection receives, by member (one entry per connection, so at most one
        /// per member and one for the SFU).
        var remote: [PeerConnection.Role: [UserID: [ReceivedVideoRole: RTCVideoTrack]]] = [:]
        var version = 0
    }

    private let state = NIOLockedValueBox(State())
    /// Views waiting for changes, by identity; each is told on the main thread.
    private let observers = NIOLockedValueBox<[ObjectIdentifier: @Sendable () -> Void]>([:])

    func setLocal(camera: RTCVideoTrack?, screen: RTCVideoTrack?) {
        state.withLockedValue {
            $0.localCamera = camera
            $0.localScreen = screen
        }
        announce()
    }

    /// Everything `connection` receives now (empty: it is closed or receives nothing).
    func setRemote(_ connection: PeerConnection.Role, _ tracks: [UserID: [ReceivedVideoRole: RTCVideoTrack]]) {
        state.withLockedValue { $0.remote[connection] = tracks.isEmpty ? nil : tracks }
        announce()
    }

    func removeAll() {
        state.withLockedValue { $0 = State() }
        announce()
    }

    /// The track that shows `user`'s camera or screen (`isSelf`: the local ones).
    func track(for user: UserID, isSelf: Bool, role: ReceivedVideoRole) -> RTCVideoTrack? {
        state.withLockedValue { state in
            if isSelf { return role == .camera ? state.localCamera : state.localScreen }
            // A member's media comes through the SFU or their own connection; both only while a
            // one-to-one call becomes a group call.
            return state.remote[.sfu(.subscribe)]?[user]?[role] ?? state.remote[.peer(user)]?[user]?[role]
        }
    }

    func observe(_ owner: AnyObject, _ changed: @escaping @Sendable () -> Void) {
        observers.withLockedValue { $0[ObjectIdentifier(owner)] = changed }
    }

    func stopObserving(_ owner: AnyObject) {
        observers.withLockedValue { $0[ObjectIdentifier(owner)] = nil }
    }

    private func announce() {
        let waiting = Array(observers.withLockedValue { $0 }.values)
        DispatchQueue.main.async { for changed in waiting { changed() } }
    }
}
#endif
