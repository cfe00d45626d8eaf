#if canImport(WebRTC) && canImport(UIKit)
import Foundation
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol
@preconcurrency import WebRTC

/// Which video track shows what, for the views: the local camera and screen, and each member's
/// camera and shared screen. Written by the engine's queue and WebRTC's signaling thread, read
/// by the views on the main thread; each change is announced to the views that wait for it.
final class VideoTrackDirectory: @unchecked Sendable {
    private struct State {
        var localCamera: RTCVideoTrack?
        var localScreen: RTCVideoTrack?
        var remote: [UserID: [ReceivedVideoRole: RTCVideoTrack]] = [:]
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

    func setRemote(_ peer: UserID, _ tracks: [ReceivedVideoRole: RTCVideoTrack]) {
        state.withLockedValue { $0.remote[peer] = tracks.isEmpty ? nil : tracks }
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
            return state.remote[user]?[role]
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
