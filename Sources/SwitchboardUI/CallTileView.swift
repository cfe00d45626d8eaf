#if canImport(SwiftUI) && canImport(UIKit)
import ImageIO
import Switchboard
import SwitchboardProtocol
import SwiftUI
import UIKit

/// One member's tile: their video or their avatar, their name, the volume and network icons,
/// and the waiting animation while they are called; all as ``CallTile`` says.
@MainActor
struct CallTileView: View {
    let tile: CallTile
    let video: (any CallVideoSource)?

    var body: some View {
        ZStack(alignment: .bottomLeading) {
            Color(white: 0.12)
            if tile.showsVideo, let video {
                VideoView(source: video, user: tile.userId, isSelf: tile.isSelf, screen: tile.role == .screen)
            } else {
                AvatarView(avatar: tile.avatar, name: tile.displayName)
                    .frame(width: avatarSide, height: avatarSide)
                    .frame(maxWidth: .infinity, maxHeight: .infinity)
            }
            if let animation = tile.waitingAnimation {
                AnimatedImageView(path: animation)
                    .frame(width: avatarSide, height: avatarSide)
                    .frame(maxWidth: .infinity, maxHeight: .infinity)
                    .allowsHitTesting(false)
            }
            if tile.role != .screen {
                HStack(spacing: 4) {
                    if let icon = tile.volumeIcon { IconView(icon: icon) }
                    Text(tile.displayName).lineLimit(1)
                    if let icon = tile.networkQualityIcon { IconView(icon: icon) }
                }
                .font(.caption)
                .foregroundColor(.white)
                .padding(6)
                .background(Color.black.opacity(0.35))
                .cornerRadius(6)
                .padding(6)
            }
        }
        .clipShape(RoundedRectangle(cornerRadius: tile.role == .floating || tile.role == .strip ? 8 : 0))
    }

    private var avatarSide: CGFloat { min(96, max(32, min(tile.frame.width, tile.frame.height) * 0.4)) }
}

/// An icon from ``CallViewSettings``: an SF Symbol name, or the path of an image file the app set.
@MainActor
struct IconView: View {
    let icon: String

    var body: some View {
        if let image = UIImage(contentsOfFile: icon) {
            Image(uiImage: image).resizable().scaledToFit().frame(width: 14, height: 14)
        } else {
            Image(systemName: icon)
        }
    }
}

/// A member's avatar: an image URL or file, else their initial on a circle.
@MainActor
struct AvatarView: View {
    let avatar: String?
    let name: String

    var body: some View {
        Group {
            if let avatar, let url = URL(string: avatar), url.scheme == "https" || url.scheme == "http" {
                AsyncImage(url: url) { image in image.resizable().scaledToFill() } placeholder: { initial }
            } else if let avatar, let image = UIImage(contentsOfFile: avatar) ?? UIImage(named: avatar) {
                Image(uiImage: image).resizable().scaledToFill()
            } else {
                initial
            }
        }
        .clipShape(Circle())
    }

    private var initial: some View {
        ZStack {
            Circle().fill(Color.gray)
            Text(name.prefix(1).uppercased()).font(.title).foregroundColor(.white)
        }
    }
}

/// The engine's video view for one member, inside SwiftUI.
@MainActor
struct VideoView: UIViewRepresentable {
    let source: any CallVideoSource
    let user: UserID
    let isSelf: Bool
    let screen: Bool

    func makeUIView(context: Context) -> UIView {
        source.videoView(for: user, isSelf: isSelf, screen: screen)
    }

    func updateUIView(_ view: UIView, context: Context) {}
}

/// The waiting animation: a GIF file, played in a loop.
@MainActor
struct AnimatedImageView: UIViewRepresentable {
    let path: String

    func makeUIView(context: Context) -> UIImageView {
        let view = UIImageView(image: Self.animation(path))
        view.contentMode = .scaleAspectFit
        return view
    }

    func updateUIView(_ view: UIImageView, context: Context) {}

    static func animation(_ path: String) -> UIImage? {
        guard let source = CGImageSourceCreateWithURL(URL(fileURLWithPath: path) as CFURL, nil) else { return nil }
        let count = CGImageSourceGetCount(source)
        var frames: [UIImage] = []
        var duration = 0.0
        for index in 0..<count {
            guard let image = CGImageSourceCreateImageAtIndex(source, index, nil) else { continue }
            frames.append(UIImage(cgImage: image))
            let properties = CGImageSourceCopyPropertiesAtIndex(source, index, nil) as? [CFString: Any]
            let gif = properties?[kCGImagePropertyGIFDictionary] as? [CFString: Any]
            duration += (gif?[kCGImagePropertyGIFDelayTime] as? Double) ?? 0.1
        }
        return frames.count > 1 ? UIImage.animatedImage(with: frames, duration: duration) : frames.first
    }
}
#endif
