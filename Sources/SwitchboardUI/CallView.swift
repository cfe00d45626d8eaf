#if canImport(SwiftUI) && canImport(UIKit)
import Switchboard
import SwitchboardProtocol
import SwiftUI

/// The call view (TUICallKit's `CallCoreView`): the members' tiles in the float, grid or pip
/// template (a shared screen above a strip of members), the status line or the timer, and the
/// controls. Taps swap or enlarge tiles, float's small tile can be dragged.
@MainActor
public struct CallView: View {
    @ObservedObject var model: CallViewModel

    public init(model: CallViewModel) {
        self.model = model
    }

    public var body: some View {
        ZStack {
            GeometryReader { geometry in
                let size = geometry.size
                ZStack(alignment: .topLeading) {
                    ForEach(model.tiles(in: size), id: \.id) { tile in
                        CallTileView(tile: tile, video: model.video)
                            .frame(width: tile.frame.width, height: tile.frame.height)
                            .offset(x: tile.frame.x, y: tile.frame.y)
                            .onTapGesture { model.tap(tile.userId, in: size) }
                            .gesture(drag(tile, in: size), including: tile.role == .floating ? .all : .subviews)
                    }
                }
            }
            .ignoresSafeArea()
            VStack {
                CallHeader(model: model)
                Spacer()
                ControlBar(model: model)
            }
            .padding()
        }
        .background(Color.black.ignoresSafeArea())
    }

    private func drag(_ tile: CallTile, in size: CGSize) -> some Gesture {
        DragGesture().onChanged { value in
            model.dragFloatingTile(
                to: CGPoint(x: tile.frame.x + value.translation.width, y: tile.frame.y + value.translation.height), in: size)
        }
    }
}

extension CallTile {
    /// A tile is the same tile, for SwiftUI, as long as it shows the same member in the same role.
    var id: String { "\(userId.rawValue)/\(role.rawValue)" }
}

/// The other members' names, and the status line (the timer once connected).
@MainActor
struct CallHeader: View {
    @ObservedObject var model: CallViewModel

    var body: some View {
        VStack(spacing: 6) {
            Text(names).font(.title2).bold().lineLimit(1)
            if let line = model.statusLine { Text(line.text).font(.subheadline).monospacedDigit() }
            if let mark = model.recordingMark { RecordingMarkView(mark: mark) }
            if let error = model.lastError { Text(error).font(.footnote).foregroundColor(.red).lineLimit(2) }
        }
        .foregroundColor(.white)
        .shadow(radius: 2)
    }

    private var names: String {
        let me = model.call.selfInfo.userId
        return model.call.allParticipants.filter { $0.userId != me && $0.status != .none }
            .map(\.displayName).joined(separator: ", ")
    }
}

/// A red dot and who started the recording; one element for VoiceOver, which reads it in full.
struct RecordingMarkView: View {
    let mark: CallRecordingMark

    var body: some View {
        HStack(spacing: 6) {
            Circle().fill(Color.red).frame(width: 10, height: 10)
            Text(mark.text).font(.footnote).bold()
        }
        .padding(.horizontal, 10)
        .padding(.vertical, 4)
        .background(Capsule().fill(Color.black.opacity(0.5)))
        .accessibilityElement(children: .ignore)
        .accessibilityLabel(Text(mark.accessibilityText))
    }
}

extension CallRecordingMark {
    /// The mark as English text; apps localise the same keys in their `Localizable.strings`.
    var text: String {
        switch self {
        case .byApp: NSLocalizedString("This call is recorded", comment: "")
        case .byYou: NSLocalizedString("Recording · started by you", comment: "")
        case .byMember(let name): String(format: NSLocalizedString("Recording · started by %@", comment: ""), name)
        }
    }

    /// The mark as VoiceOver says it.
    var accessibilityText: String {
        switch self {
        case .byApp: NSLocalizedString("This call is recorded", comment: "")
        case .byYou: NSLocalizedString("This call is being recorded. You started the recording.", comment: "")
        case .byMember(let name):
            String(format: NSLocalizedString("This call is being recorded. %@ started the recording.", comment: ""), name)
        }
    }
}

extension CallRecordingMark.Announcement {
    var text: String {
        switch self {
        case .started(let mark): mark.accessibilityText
        case .stopped: NSLocalizedString("The recording of this call stopped", comment: "")
        }
    }
}

extension CallStatusLine {
    /// The line as English text; apps localise the same keys in their `Localizable.strings`.
    var text: String {
        switch self {
        case .invitation(.video, false): NSLocalizedString("Invites you to a video call", comment: "")
        case .invitation(.audio, false): NSLocalizedString("Invites you to a voice call", comment: "")
        case .invitation(_, true): NSLocalizedString("Invites you to a group call", comment: "")
        case .waitingForAnswer: NSLocalizedString("Waiting for an answer…", comment: "")
        case .connecting: NSLocalizedString("Connecting…", comment: "")
        case .duration(let text): text
        }
    }
}

/// The buttons of ``CallControls``, with their symbols.
@MainActor
struct ControlBar: View {
    @ObservedObject var model: CallViewModel

    var body: some View {
        // At most five buttons a row: a connected video call has eight.
        let columns = Array(repeating: GridItem(.fixed(56), spacing: 14), count: max(1, min(model.controls.count, 5)))
        LazyVGrid(columns: columns, spacing: 14) {
            ForEach(model.controls, id: \.control) { item in
                Button { model.press(item) } label: {
                    Image(systemName: item.symbol)
                        .font(.title2)
                        .frame(width: 56, height: 56)
                        .background(Circle().fill(item.background))
                        .foregroundColor(item.isOn && !item.control.isCallAction ? .black : .white)
                }
                .disabled(!item.isEnabled)
                .opacity(item.isEnabled ? 1 : 0.4)
                .accessibilityLabel(Text(item.label))
            }
        }
    }
}

extension CallControl {
    var isCallAction: Bool { self == .accept || self == .reject || self == .hangup }
}

extension CallControlItem {
    var symbol: String {
        switch control {
        case .accept: "phone.fill"
        case .reject, .hangup: "phone.down.fill"
        case .microphone: isOn ? "mic.fill" : "mic.slash.fill"
        case .speaker: isOn ? "speaker.wave.3.fill" : "speaker.fill"
        case .camera: isOn ? "video.fill" : "video.slash.fill"
        case .switchCamera: "arrow.triangle.2.circlepath.camera"
        case .screenShare: "rectangle.on.rectangle"
        case .record: isOn ? "stop.circle.fill" : "record.circle"
        case .moveToAnotherDevice: "iphone.and.arrow.forward"
        case .minimize: "arrow.down.right.and.arrow.up.left"
        }
    }

    /// What VoiceOver calls the button.
    var label: String {
        switch control {
        case .record:
            isOn ? NSLocalizedString("Stop recording", comment: "") : NSLocalizedString("Record", comment: "")
        default: control.rawValue
        }
    }

    var background: Color {
        switch control {
        case .accept: .green
        case .reject, .hangup: .red
        default: isOn ? .white : Color.white.opacity(0.2)
        }
    }
}
#endif
