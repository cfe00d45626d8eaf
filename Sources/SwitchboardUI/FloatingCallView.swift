#if canImport(SwiftUI) && canImport(UIKit)
import Switchboard
import SwitchboardProtocol
import SwiftUI

/// The minimised call: the pip template's one tile (the other member, or the active speaker)
/// with the timer, in a small window that can be dragged and settles against a side; a tap
/// goes back to the call view.
@MainActor
public struct FloatingCallView: View {
    @ObservedObject var model: CallViewModel
    @State private var dragOffset = CGSize.zero

    public init(model: CallViewModel) {
        self.model = model
    }

    public var body: some View {
        GeometryReader { geometry in
            let area = geometry.frame(in: .local)
            let frame = model.floatingWindowFrame(in: area)
            content(size: frame.size)
                .frame(width: frame.width, height: frame.height)
                .offset(x: frame.minX + dragOffset.width, y: frame.minY + dragOffset.height)
                .onTapGesture { model.restore() }
                .gesture(
                    DragGesture()
                        .onChanged { dragOffset = $0.translation }
                        .onEnded { value in
                            model.dropFloatingWindow(
                                at: CGPoint(x: frame.minX + value.translation.width, y: frame.minY + value.translation.height),
                                in: area)
                            dragOffset = .zero
                        })
        }
    }

    private func content(size: CGSize) -> some View {
        var pip = model.layout
        pip.template = .pip
        let tile = pip.tiles(for: model.call, in: LayoutSize(width: size.width, height: size.height)).first
        return ZStack(alignment: .bottom) {
            if let tile { CallTileView(tile: tile, video: model.video) } else { Color.black }
            if let line = model.statusLine {
                Text(line.text).font(.caption2).monospacedDigit().foregroundColor(.white).padding(4)
            }
        }
        .clipShape(RoundedRectangle(cornerRadius: 12))
        .shadow(radius: 6)
    }
}
#endif
