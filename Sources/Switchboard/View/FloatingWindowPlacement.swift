/// Where the floating call window sits: dragged anywhere, it settles against the nearer side
/// of the screen, `margin` from the edges and inside the safe area, as TUICallKit's does.
public struct FloatingWindowPlacement: Equatable, Sendable {
    /// The window's size in points (a portrait miniature).
    public static let size = LayoutSize(width: 100, height: 160)
    public static let margin = 12.0

    /// The window's origin now.
    public private(set) var origin: LayoutPoint?

    public init() {}

    /// The window's frame in `screen` (the area inside the safe-area insets): at the top right
    /// until the user moves it.
    public func frame(in screen: LayoutRect) -> LayoutRect {
        LayoutRect(origin: origin.map { Self.settled($0, in: screen) } ?? Self.settled(LayoutPoint(x: .infinity, y: 0), in: screen),
                   size: Self.size)
    }

    /// The user let go of the window at `point` (its origin): it settles against the nearer side.
    public mutating func drop(at point: LayoutPoint, in screen: LayoutRect) {
        origin = Self.settled(point, in: screen)
    }

    static func settled(_ point: LayoutPoint, in screen: LayoutRect) -> LayoutPoint {
        let size = Self.size
        let left = screen.x + margin
        let right = max(left, screen.maxX - size.width - margin)
        let top = screen.y + margin
        let bottom = max(top, screen.maxY - size.height - margin)
        let centre = point.x.isFinite ? point.x + size.width / 2 : .infinity
        let x = centre < screen.x + screen.width / 2 ? left : right
        let y = point.y.isFinite ? min(max(point.y, top), bottom) : top
        return LayoutPoint(x: x, y: y)
    }
}
