import SwitchboardProtocol

/// A point in view coordinates (points, origin top left).
public struct LayoutPoint: Equatable, Sendable {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}

/// A size in points.
public struct LayoutSize: Equatable, Sendable {
    public var width: Double
    public var height: Double

    public init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }
}

/// A rectangle in view coordinates; the views turn it into a `CGRect`.
public struct LayoutRect: Equatable, Sendable, CustomStringConvertible {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public init(origin: LayoutPoint, size: LayoutSize) {
        self.init(x: origin.x, y: origin.y, width: size.width, height: size.height)
    }

    public var origin: LayoutPoint { LayoutPoint(x: x, y: y) }
    public var size: LayoutSize { LayoutSize(width: width, height: height) }
    public var maxX: Double { x + width }
    public var maxY: Double { y + height }

    public var description: String { "(\(x), \(y), \(width)×\(height))" }
}

/// How the call view arranges the members (the TRTC `CallLayoutTemplate`).
public enum CallLayoutTemplate: String, Sendable, CaseIterable, Codable {
    /// While calling: yourself full screen. Connected: the other member full screen and yourself in
    /// a small tile that can be dragged; tapping the small tile swaps the two.
    case float
    /// Every member in a grid; tapping a member enlarges them, tapping again goes back.
    case grid
    /// One member full screen: yourself while calling; connected, the other member in a one-to-one
    /// call and the active speaker in a group call. With the call timer (a floating window).
    case pip

    /// The template when the app sets none: float for one-to-one (up to two members), grid above.
    public static func automatic(memberCount: Int) -> CallLayoutTemplate {
        memberCount > 2 ? .grid : .float
    }
}

/// One member's place on screen, with what to draw there.
public struct CallTile: Equatable, Sendable {
    public enum Role: String, Sendable {
        /// Fills the view (float's large tile, pip's only tile, a lone grid tile).
        case main
        /// Float's small tile over the main one; drag it, tap it to swap.
        case floating
        /// A cell of the grid.
        case grid
        /// The member tapped in the grid, above the others.
        case enlarged
        /// Another member's shared screen, above the strip of members (every template).
        case screen
        /// A member in the strip below a shared screen.
        case strip
    }

    public var userId: UserID
    public var isSelf: Bool
    public var role: Role
    public var frame: LayoutRect
    /// The member's name to show: nickname, else user id.
    public var displayName: String
    /// Show the member's video (their camera is on in a video call); else their avatar.
    public var showsVideo: Bool
    /// The avatar to draw when there is no video (see ``CallViewSettings/avatar(for:)``).
    public var avatar: String?
    /// The member is being called: draw the waiting animation (when one is set).
    public var waitingAnimation: String?
    public var volumeIcon: String?
    public var networkQualityIcon: String?
}

/// The call view's layout: the template and what the user did (tap to swap, tap to enlarge,
/// drag the small tile), turned into tile frames for a viewport. A value: views keep one, feed it
/// ``CallStore/State`` and draw the tiles; the rules are tested on every platform.
public struct CallViewLayout: Equatable, Sendable {
    /// The template; nil picks one by member count (``CallLayoutTemplate/automatic(memberCount:)``).
    public var template: CallLayoutTemplate?
    public var settings: CallViewSettings

    /// The call the user's taps and drags belong to; they do not carry over to the next call.
    private var interactionCallId: CallID?
    private var swapped = false
    private var enlargedUserId: UserID?
    private var floatingOrigin: LayoutPoint?

    /// Gap between the small tile and the view's edges, in points.
    public static let margin = 16.0
    /// The small tile's size as a share of the view's: a miniature of the view, in either orientation.
    public static let floatingShare = 0.28
    /// The height of the strip of members below a shared screen, as a share of the view's.
    public static let stripShare = 0.2

    public init(template: CallLayoutTemplate? = nil, settings: CallViewSettings = CallViewSettings()) {
        self.template = template
        self.settings = settings
    }

    /// The members shown: everyone still in the call or being called, yourself first.
    public static func members(of state: CallStore.State) -> [CallParticipantInfo] {
        guard state.activeCall != nil else { return [] }
        let me = state.selfInfo.userId
        let others = state.allParticipants.filter { $0.userId != me && $0.status != .none }
        return [state.selfInfo] + others
    }

    /// The template in use for this state.
    public func effectiveTemplate(for state: CallStore.State) -> CallLayoutTemplate {
        template ?? .automatic(memberCount: Self.members(of: state).count)
    }

    /// Whether the view shows the call timer (``CallDurationText``): once the call is connected.
    public func showsTimer(for state: CallStore.State) -> Bool {
        state.activeCall?.startTime != nil && state.selfInfo.status == .accept
    }

    /// Whether the user swapped float's tiles (yourself large) in the current call.
    public func isSwapped(in state: CallStore.State) -> Bool {
        interactionCallId == state.activeCall?.callId && swapped
    }

    /// The member enlarged in the grid in the current call, if still there.
    public func enlargedMember(in state: CallStore.State) -> UserID? {
        guard interactionCallId == state.activeCall?.callId, let enlargedUserId,
            Self.members(of: state).contains(where: { $0.userId == enlargedUserId })
        else { return nil }
        return enlargedUserId
    }

    // MARK: - interaction

    /// The user tapped a member's tile: float swaps when the small tile is tapped, grid enlarges the
    /// member (or goes back when they are enlarged already), pip ignores taps.
    public mutating func tap(_ userId: UserID, in state: CallStore.State, viewport: LayoutSize) {
        startInteraction(in: state)
        guard let tile = tiles(for: state, in: viewport).first(where: { $0.userId == userId }) else { return }
        switch (effectiveTemplate(for: state), tile.role) {
        case (.float, .floating):
            swapped.toggle()
        case (.grid, .enlarged):
            enlargedUserId = nil
        case (.grid, .grid):
            enlargedUserId = userId
        default:
            break
        }
    }

    /// The user dragged float's small tile to `origin`; it stays within the view, `margin` from the edges.
    public mutating func dragFloatingTile(to origin: LayoutPoint, in state: CallStore.State, viewport: LayoutSize) {
        startInteraction(in: state)
        let size = Self.floatingSize(in: viewport)
        floatingOrigin = LayoutPoint(
            x: Self.clamp(origin.x, Self.margin, viewport.width - size.width - Self.margin),
            y: Self.clamp(origin.y, Self.margin, viewport.height - size.height - Self.margin))
    }

    private mutating func startInteraction(in state: CallStore.State) {
        guard interactionCallId != state.activeCall?.callId else { return }
        interactionCallId = state.activeCall?.callId
        swapped = false
        enlargedUserId = nil
        floatingOrigin = nil
    }

    // MARK: - tiles

    /// Which layer of each other member's camera these tiles need (CallPlus's `isTiny`): big for a
    /// tile that fills the view (`main`) or is enlarged, small for thumbnails (grid cells, the
    /// floating tile, the strip under a shared screen). Hand it to
    /// ``DeviceStore/setRemoteVideoLayers(_:)``; the browser client applies the same rule.
    public static func videoLayers(for tiles: [CallTile]) -> [UserID: VideoLayer] {
        var layers: [UserID: VideoLayer] = [:]
        for tile in tiles where !tile.isSelf && tile.role != .screen {
            let layer: VideoLayer = tile.role == .main || tile.role == .enlarged ? .big : .small
            if layers[tile.userId] != .big { layers[tile.userId] = layer }
        }
        return layers
    }

    /// The tiles to draw, back to front.
    public func tiles(for state: CallStore.State, in viewport: LayoutSize) -> [CallTile] {
        let members = Self.members(of: state)
        guard !members.isEmpty, viewport.width > 0, viewport.height > 0 else { return [] }
        let full = LayoutRect(x: 0, y: 0, width: viewport.width, height: viewport.height)
        let me = members[0]
        let connected = state.selfInfo.status == .accept
        let placed: [(CallParticipantInfo, CallTile.Role, LayoutRect)]
        switch connected ? Self.screenSharer(members) : nil {
        case let sharer?:
            placed = Self.screenTiles(sharer, members, in: full)
        case nil:
            placed = templateTiles(state, members, in: viewport)
        }
        let video = state.activeCall?.mediaType == .video
        return placed.map { member, role, frame in
            CallTile(
                userId: member.userId, isSelf: member.userId == me.userId, role: role, frame: frame,
                displayName: member.displayName,
                showsVideo: role == .screen || (video && member.cameraOn && member.status == .accept),
                avatar: settings.avatar(for: member),
                waitingAnimation: member.status == .waiting && member.userId != me.userId
                    ? settings.waitingAnimationPath : nil,
                volumeIcon: settings.volumeIcon(for: member.volumeLevel),
                networkQualityIcon: settings.networkQualityIcon(for: member.networkQuality))
        }
    }

    /// The template's tiles: float, pip or grid.
    private func templateTiles(
        _ state: CallStore.State, _ members: [CallParticipantInfo], in viewport: LayoutSize
    ) -> [(CallParticipantInfo, CallTile.Role, LayoutRect)] {
        let full = LayoutRect(x: 0, y: 0, width: viewport.width, height: viewport.height)
        let me = members[0]
        let connected = state.selfInfo.status == .accept
        let placed: [(CallParticipantInfo, CallTile.Role, LayoutRect)]
        switch effectiveTemplate(for: state) {
        case .float:
            guard connected, let peer = Self.featured(state, members) else {
                placed = [(me, .main, full)]
                break
            }
            let (large, small) = isSwapped(in: state) ? (me, peer) : (peer, me)
            placed = [(large, .main, full), (small, .floating, floatingFrame(in: viewport, state: state))]
        case .pip:
            let shown = connected ? Self.featured(state, members) ?? me : me
            placed = [(shown, .main, full)]
        case .grid:
            placed = gridTiles(members, enlarged: enlargedMember(in: state), in: full)
        }
        return placed
    }

    /// The member whose screen is shown: the first other member in the call who shares one (your
    /// own shared screen is not shown back to you).
    static func screenSharer(_ members: [CallParticipantInfo]) -> CallParticipantInfo? {
        members.dropFirst().first { $0.screenSharing && $0.status == .accept }
    }

    /// A shared screen fills the view above a strip of square member tiles (you first), centred,
    /// smaller when too many to fit.
    static func screenTiles(
        _ sharer: CallParticipantInfo, _ members: [CallParticipantInfo], in area: LayoutRect
    ) -> [(CallParticipantInfo, CallTile.Role, LayoutRect)] {
        let stripHeight = (area.height * stripShare).rounded()
        let screen = LayoutRect(x: area.x, y: area.y, width: area.width, height: area.height - stripHeight)
        let side = min(stripHeight, area.width / Double(members.count))
        let left = area.x + (area.width - side * Double(members.count)) / 2
        let top = screen.maxY + (stripHeight - side) / 2
        return [(sharer, .screen, screen)]
            + members.enumerated().map { index, member in
                (member, .strip, LayoutRect(x: left + side * Double(index), y: top, width: side, height: side))
            }
    }

    /// The member other than you the single large tile shows: the other member in a one-to-one
    /// call; in a group the active speaker, else the first member who answered, else the first one called.
    static func featured(_ state: CallStore.State, _ members: [CallParticipantInfo]) -> CallParticipantInfo? {
        let others = members.dropFirst()
        if let speaker = state.activeSpeakerId, let member = others.first(where: { $0.userId == speaker }) {
            return member
        }
        return others.first { $0.status == .accept } ?? others.first
    }

    static func floatingSize(in viewport: LayoutSize) -> LayoutSize {
        LayoutSize(width: (viewport.width * floatingShare).rounded(), height: (viewport.height * floatingShare).rounded())
    }

    private func floatingFrame(in viewport: LayoutSize, state: CallStore.State) -> LayoutRect {
        let size = Self.floatingSize(in: viewport)
        let origin =
            (interactionCallId == state.activeCall?.callId ? floatingOrigin : nil)
            ?? LayoutPoint(x: viewport.width - size.width - Self.margin, y: Self.margin)
        return LayoutRect(origin: origin, size: size)
    }

    /// Grid cells: up to 4 members in 2 columns, up to 9 in 3, more in 4; square cells as large as
    /// fit, the grid centred, a short last row centred. An enlarged member takes the top (the full
    /// width, two thirds of the height at most) and the others share the rest.
    private func gridTiles(
        _ members: [CallParticipantInfo], enlarged: UserID?, in area: LayoutRect
    ) -> [(CallParticipantInfo, CallTile.Role, LayoutRect)] {
        if members.count == 1 { return [(members[0], .main, area)] }
        guard let enlarged, let focus = members.first(where: { $0.userId == enlarged }) else {
            return zip(members, Self.cells(count: members.count, in: area)).map { ($0, .grid, $1) }
        }
        let top = LayoutRect(x: area.x, y: area.y, width: area.width, height: min(area.width, area.height * 2 / 3))
        let rest = LayoutRect(x: area.x, y: top.maxY, width: area.width, height: area.height - top.height)
        let others = members.filter { $0.userId != enlarged }
        return [(focus, .enlarged, top)] + zip(others, Self.cells(count: others.count, in: rest)).map { ($0, .grid, $1) }
    }

    static func cells(count: Int, in area: LayoutRect) -> [LayoutRect] {
        guard count > 0 else { return [] }
        let columns = switch count {
        case 1: 1
        case ...4: 2
        case ...9: 3
        default: 4
        }
        let rows = (count + columns - 1) / columns
        let side = min(area.width / Double(columns), area.height / Double(rows))
        let top = area.y + (area.height - side * Double(rows)) / 2
        return (0..<count).map { index in
            let row = index / columns
            let inRow = min(columns, count - row * columns)
            let left = area.x + (area.width - side * Double(inRow)) / 2
            return LayoutRect(
                x: left + side * Double(index % columns), y: top + side * Double(row), width: side, height: side)
        }
    }

    private static func clamp(_ value: Double, _ low: Double, _ high: Double) -> Double {
        min(max(value, low), max(low, high))
    }
}
