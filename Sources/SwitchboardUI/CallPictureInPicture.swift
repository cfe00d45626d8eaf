#if canImport(SwiftUI) && canImport(UIKit) && canImport(AVKit)
import AVKit
import Switchboard
import SwitchboardProtocol
import SwiftUI
import UIKit

/// The system's Picture in Picture window for a video call (iOS 15's video-call content source):
/// kept ready while ``CallScreenPresenter/pictureInPictureMember(for:)`` names a member, so iOS
/// starts it by itself when the app goes to the background, and torn down when there is none.
/// It shows that member's camera through the engine's sample-buffer view.
@MainActor
public final class CallPictureInPicture: NSObject, ObservableObject, AVPictureInPictureControllerDelegate {
    /// Where the call view is: the window grows from and returns to it.
    public let sourceView = UIView()
    private var controller: AVPictureInPictureController?
    private var member: UserID?

    public override init() {
        super.init()
    }

    /// Shows `member`'s camera in Picture in Picture from now on, or nobody (nil).
    public func show(_ member: UserID?, from video: (any CallVideoSource)?) {
        guard member != self.member else { return }
        self.member = member
        controller?.stopPictureInPicture()
        controller = nil
        guard let member, let video, AVPictureInPictureController.isPictureInPictureSupported(),
            let view = video.pictureInPictureView(for: member)
        else { return }
        let content = AVPictureInPictureVideoCallViewController()
        content.preferredContentSize = CGSize(width: 180, height: 320)
        view.frame = content.view.bounds
        view.autoresizingMask = [.flexibleWidth, .flexibleHeight]
        content.view.addSubview(view)
        let controller = AVPictureInPictureController(
            contentSource: AVPictureInPictureController.ContentSource(
                activeVideoCallSourceView: sourceView, contentViewController: content))
        controller.canStartPictureInPictureAutomaticallyFromInline = true
        controller.delegate = self
        self.controller = controller
    }

    /// Starts it now (the app's own button); iOS starts it by itself on the way to the background.
    public func start() {
        controller?.startPictureInPicture()
    }
}

/// Puts the Picture in Picture source view into the SwiftUI hierarchy, behind the call view.
@MainActor
struct PictureInPictureAnchor: UIViewRepresentable {
    let controller: CallPictureInPicture

    func makeUIView(context: Context) -> UIView { controller.sourceView }
    func updateUIView(_ view: UIView, context: Context) {}
}
#endif
