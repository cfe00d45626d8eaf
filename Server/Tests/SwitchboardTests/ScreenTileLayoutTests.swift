import Switchboard
import SwitchboardProtocol
import Testing

/// The call view's rule for a shared screen: another member's screen fills the view above a strip
/// of the members, whatever the template; your own screen is not shown back to you.
struct ScreenTileLayoutTests {
    typealias Layout = CallViewLayoutTests

    static func sharing(_ users: Set<UserID>, members: Int, connected: Bool = true) -> CallStore.State {
        var state = Layout.state(members: members, connected: connected, video: false)
        for index in state.allParticipants.indices where users.contains(state.allParticipants[index].userId) {
            state.allParticipants[index].screenSharing = true
        }
        state.selfInfo = state.allParticipants[0]
        return state
    }

    @Test(arguments: [CallLayoutTemplate.float, .grid, .pip, nil])
    func aSharedScreenFillsTheViewAboveAStripOfMembers(_ template: CallLayoutTemplate?) {
        let layout = CallViewLayout(template: template)
        // 400×800: the strip is 160 high; three 133.33-point squares fit its width.
        let tiles = layout.tiles(for: Self.sharing(["u2"], members: 3), in: Layout.viewport)
        let side = 400.0 / 3
        #expect(
            Layout.placement(tiles) == [
                "u2 screen \(LayoutRect(x: 0, y: 0, width: 400, height: 640))",
                "me strip \(LayoutRect(x: 0, y: 640 + (160 - side) / 2, width: side, height: side))",
                "u1 strip \(LayoutRect(x: side, y: 640 + (160 - side) / 2, width: side, height: side))",
                "u2 strip \(LayoutRect(x: 2 * side, y: 640 + (160 - side) / 2, width: side, height: side))",
            ])
        // The screen is video even in an audio call; the members keep their avatars.
        #expect(tiles.map(\.showsVideo) == [true, false, false, false])
    }

    @Test func twoMembersFitTheStripAtItsHeightCentred() {
        let tiles = CallViewLayout().tiles(for: Self.sharing(["u1"], members: 2), in: Layout.viewport)
        #expect(
            Layout.placement(tiles) == [
                "u1 screen \(LayoutRect(x: 0, y: 0, width: 400, height: 640))",
                "me strip \(LayoutRect(x: 40, y: 640, width: 160, height: 160))",
                "u1 strip \(LayoutRect(x: 200, y: 640, width: 160, height: 160))",
            ])
    }

    @Test func yourOwnScreenAndUnconnectedCallsKeepTheTemplate() {
        let layout = CallViewLayout(template: .float)
        let own = Self.sharing(["me"], members: 2)
        #expect(layout.tiles(for: own, in: Layout.viewport).map(\.role) == [.main, .floating])
        let ringing = Self.sharing(["u1"], members: 2, connected: false)
        #expect(layout.tiles(for: ringing, in: Layout.viewport).map(\.role) == [.main])
        // The first sharer in member order is shown when two share.
        let two = Self.sharing(["u1", "u2"], members: 3)
        #expect(layout.tiles(for: two, in: Layout.viewport).first?.userId == "u1")
    }
}
