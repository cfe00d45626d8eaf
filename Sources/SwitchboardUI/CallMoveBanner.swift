#if canImport(SwiftUI) && canImport(UIKit)
import Switchboard
import SwitchboardProtocol
import SwiftUI

/// The "continue here" banner (``CallMovePrompt``): your call with these members is on another
/// of your devices, which offers it to this one; "Continue here" takes it.
@MainActor
public struct CallMoveBanner: View {
    @ObservedObject var model: CallViewModel
    let prompt: CallMovePrompt

    public init(model: CallViewModel, prompt: CallMovePrompt) {
        self.model = model
        self.prompt = prompt
    }

    public var body: some View {
        VStack {
            HStack(spacing: 12) {
                Image(systemName: prompt.mediaType == .video ? "video.fill" : "phone.fill")
                    .font(.title3)
                    .foregroundColor(.green)
                VStack(alignment: .leading, spacing: 2) {
                    Text(members).font(.headline).lineLimit(1)
                    Text(NSLocalizedString("Your call on another device", comment: ""))
                        .font(.subheadline).foregroundColor(.secondary)
                    if let error = model.lastError { Text(error).font(.footnote).foregroundColor(.red).lineLimit(2) }
                }
                Spacer()
                Button(NSLocalizedString("Continue here", comment: "")) { model.continueHere(prompt) }
                    .buttonStyle(.borderedProminent)
                    .tint(.green)
            }
            .padding()
            .background(RoundedRectangle(cornerRadius: 16).fill(Color(white: 0.15)))
            .foregroundColor(.white)
            .padding(.horizontal)
            .accessibilityElement(children: .combine)
            Spacer()
        }
    }

    private var members: String {
        let names = prompt.otherMembers.map(\.displayName)
        return names.isEmpty ? NSLocalizedString("Your call", comment: "") : names.joined(separator: ", ")
    }
}
#endif
