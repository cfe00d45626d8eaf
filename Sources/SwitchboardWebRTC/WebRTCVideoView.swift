#if canImport(WebRTC) && canImport(UIKit)
import AVFoundation
import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardUI
import UIKit
@preconcurrency import WebRTC

/// One member's camera or shared screen, following the track as connections come and go (an ICE
/// restart, a screen shared again): Metal rendering (`RTCMTLVideoView`), or for Picture in
/// Picture an `AVSampleBufferDisplayLayer`, which the system can show outside the app.
final class WebRTCVideoView: UIView {
    private let directory: VideoTrackDirectory
    private let user: UserID
    private let isSelf: Bool
    private let role: ReceivedVideoRole
    private let renderer: any RTCVideoRenderer & UIView
    /// The track rendered now; let go of in `deinit`, which runs off the main actor.
    private let attachment: Attachment

    /// A renderer and the track it is added to. WebRTC's add and remove may be called from any thread.
    private final class Attachment: @unchecked Sendable {
        let renderer: any RTCVideoRenderer
        private let lock = NSLock()
        private var track: RTCVideoTrack?

        init(_ renderer: any RTCVideoRenderer) { self.renderer = renderer }

        /// Renders `track` instead of the current one; false when it is the current one already.
        func attach(_ track: RTCVideoTrack?) -> Bool {
            let previous: RTCVideoTrack?? = lock.withLock {
                guard track !== self.track else { return .none }
                defer { self.track = track }
                return .some(self.track)
            }
            guard case .some(let old) = previous else { return false }
            old?.remove(renderer)
            track?.add(renderer)
            return true
        }
    }

    init(directory: VideoTrackDirectory, user: UserID, isSelf: Bool, role: ReceivedVideoRole, pictureInPicture: Bool) {
        self.directory = directory
        self.user = user
        self.isSelf = isSelf
        self.role = role
        if pictureInPicture {
            renderer = SampleBufferVideoView()
        } else {
            let metal = RTCMTLVideoView()
            // A screen is shown whole; a face may be cropped to fill its tile.
            metal.videoContentMode = role == .screen ? .scaleAspectFit : .scaleAspectFill
            renderer = metal
        }
        attachment = Attachment(renderer)
        super.init(frame: .zero)
        renderer.frame = bounds
        renderer.autoresizingMask = [.flexibleWidth, .flexibleHeight]
        addSubview(renderer)
        // Your own camera reads like a mirror.
        if isSelf && role == .camera { renderer.transform = CGAffineTransform(scaleX: -1, y: 1) }
        directory.observe(self) { [weak self] in
            MainActor.assumeIsolated { self?.follow() }
        }
        follow()
    }

    @available(*, unavailable)
    required init?(coder: NSCoder) { fatalError("not from a storyboard") }

    deinit {
        directory.stopObserving(self)
        _ = attachment.attach(nil)
    }

    /// Renders the track that shows this member now.
    private func follow() {
        let current = directory.track(for: user, isSelf: isSelf, role: role)
        if attachment.attach(current) { renderer.isHidden = current == nil }
    }
}

extension WebRTCEngine: CallVideoSource {
    @MainActor public func videoView(for user: UserID, isSelf: Bool, screen: Bool) -> UIView {
        WebRTCVideoView(
            directory: videoTracks, user: user, isSelf: isSelf, role: screen ? .screen : .camera, pictureInPicture: false)
    }

    @MainActor public func pictureInPictureView(for user: UserID) -> UIView? {
        WebRTCVideoView(directory: videoTracks, user: user, isSelf: false, role: .camera, pictureInPicture: true)
    }
}
#endif
