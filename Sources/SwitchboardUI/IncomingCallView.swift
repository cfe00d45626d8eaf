#if canImport(SwiftUI) && canImport(UIKit)
import Switchboard
import SwitchboardProtocol
import SwiftUI

/// The app's own incoming-call screen (CallKit's is the system's): the caller, what kind of call,
/// whether it is recorded, decline and answer. Shown while a call rings and the app is in the foreground, or always when
/// the app does not use CallKit (``CallScreenPresenter``).
@MainActor
public struct IncomingCallView: View {
    @ObservedObject var model: CallViewModel

    public init(model: CallViewModel) {
        self.model = model
    }

    public var body: some View {
        VStack(spacing: 20) {
            Spacer()
            if let caller = model.caller {
                AvatarView(avatar: model.avatar(for: caller), name: caller.displayName)
                    .frame(width: 120, height: 120)
                Text(caller.displayName).font(.largeTitle).bold()
            }
            if let line = model.statusLine { Text(line.text).font(.headline).foregroundColor(.secondary) }
            // The member's notice before answering.
            if let mark = model.recordingMark { RecordingMarkView(mark: mark) }
            Spacer()
            ControlBar(model: model)
                .padding(.bottom, 40)
        }
        .frame(maxWidth: .infinity)
        .foregroundColor(.white)
        .background(Color(white: 0.1).ignoresSafeArea())
    }
}
#endif
