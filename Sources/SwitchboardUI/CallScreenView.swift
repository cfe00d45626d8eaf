#if canImport(SwiftUI) && canImport(UIKit)
import Switchboard
import SwitchboardProtocol
import SwiftUI

/// Everything the calls show, for the top of a SwiftUI app (`.overlay(CallScreenView(model:))`
/// on the root view) or a ``CallWindow``: the incoming-call screen, the call view or the
/// floating window, as ``CallScreenPresenter`` decides, Picture in Picture for video calls, and
/// with no call on screen the "continue here" banner of a call another device offers.
@MainActor
public struct CallScreenView: View {
    @ObservedObject var model: CallViewModel
    @StateObject private var pictureInPicture = CallPictureInPicture()

    public init(model: CallViewModel) {
        self.model = model
    }

    public var body: some View {
        Group {
            switch model.screen {
            case .none:
                if let prompt = model.movePrompt {
                    CallMoveBanner(model: model, prompt: prompt).transition(.move(edge: .top))
                } else {
                    Color.clear.allowsHitTesting(false)
                }
            case .incoming: IncomingCallView(model: model).transition(.move(edge: .bottom))
            case .call: CallView(model: model).transition(.opacity)
            case .floating: FloatingCallView(model: model)
            }
        }
        .animation(.default, value: model.screen)
        .background(PictureInPictureAnchor(controller: pictureInPicture))
        .onReceive(model.$call) { _ in pictureInPicture.show(model.pictureInPictureMember, from: model.video) }
    }
}
#endif
