#if canImport(SwiftUI) && canImport(UIKit)
import SwitchboardProtocol
import UIKit

/// Where the call views get video from: the media engine's renderers (`WebRTCEngine` is one).
/// The views ask for a member's video once per tile; the view returned follows the member's
/// track as it comes and goes and shows nothing while there is none.
public protocol CallVideoSource: Sendable {
    /// A view showing `user`'s camera (or their shared screen when `screen`); `isSelf` for yours.
    @MainActor func videoView(for user: UserID, isSelf: Bool, screen: Bool) -> UIView
    /// A view of `user`'s camera that the system's Picture in Picture window can show (backed by
    /// an `AVSampleBufferDisplayLayer`); nil when the engine has none.
    @MainActor func pictureInPictureView(for user: UserID) -> UIView?
}
#endif
