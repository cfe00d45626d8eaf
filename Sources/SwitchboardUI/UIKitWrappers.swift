#if canImport(SwiftUI) && canImport(UIKit)
import Switchboard
import SwiftUI
import UIKit

/// The call screens for UIKit apps: a window above the app's own that shows
/// ``CallScreenView`` (incoming call, call view, floating window, Picture in Picture) and lets
/// touches through to the app wherever it shows nothing (around the floating window, or when
/// no call is on).
public final class CallWindow: UIWindow {
    public let model: CallViewModel

    public init(windowScene: UIWindowScene, model: CallViewModel) {
        self.model = model
        super.init(windowScene: windowScene)
        windowLevel = .alert - 1
        backgroundColor = .clear
        let host = UIHostingController(rootView: CallScreenView(model: model))
        host.view.backgroundColor = .clear
        rootViewController = host
        isHidden = false
    }

    @available(*, unavailable)
    required init?(coder: NSCoder) { fatalError("not from a storyboard") }

    public override func hitTest(_ point: CGPoint, with event: UIEvent?) -> UIView? {
        switch model.screen {
        case .none:
            return nil
        case .floating:
            let area = safeAreaLayoutGuide.layoutFrame
            return model.floatingWindowFrame(in: area).contains(point) ? super.hitTest(point, with: event) : nil
        case .incoming, .call:
            return super.hitTest(point, with: event)
        }
    }
}

/// The call view alone as a view controller, for apps that present it themselves.
public final class CallViewController: UIHostingController<CallView> {
    public init(model: CallViewModel) {
        super.init(rootView: CallView(model: model))
        modalPresentationStyle = .fullScreen
    }

    @available(*, unavailable)
    @MainActor required dynamic init?(coder: NSCoder) { fatalError("not from a storyboard") }
}

/// The incoming-call screen alone as a view controller.
public final class IncomingCallViewController: UIHostingController<IncomingCallView> {
    public init(model: CallViewModel) {
        super.init(rootView: IncomingCallView(model: model))
        modalPresentationStyle = .fullScreen
    }

    @available(*, unavailable)
    @MainActor required dynamic init?(coder: NSCoder) { fatalError("not from a storyboard") }
}
#endif
