import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

/// Which invitees' push tokens a call decision reads (``PushReachIndex``): those with a device
/// that may ring by push and is not connected, and no one else.
struct PushReachIndexTests {
    static let app = SdkAppID(1_400_000_001)
    static let other = SdkAppID(1_400_000_002)

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        /// Devices with a ringing token: (app, user, device).
        var ringing: [(SdkAppID, UserID, DeviceID)]
        /// Connected devices per user of ``PushReachIndexTests/app``.
        var connected: [UserID: Set<DeviceID>]
        var invitees: Set<UserID>
        var expected: Set<UserID>
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "nobody has a token", ringing: [], connected: [:], invitees: ["bob"], expected: []),
        Case(
            name: "the only ringing device is connected", ringing: [(app, "bob", "phone")], connected: ["bob": ["phone"]],
            invitees: ["bob"], expected: []),
        Case(
            name: "the ringing device is not connected", ringing: [(app, "bob", "phone")], connected: [:],
            invitees: ["bob"], expected: ["bob"]),
        Case(
            name: "a tablet is connected, the phone with a token is not", ringing: [(app, "bob", "phone")],
            connected: ["bob": ["tablet"]], invitees: ["bob"], expected: ["bob"]),
        Case(
            name: "phone and tablet ring by push, the tablet alone is connected",
            ringing: [(app, "bob", "phone"), (app, "bob", "tablet")], connected: ["bob": ["tablet"]], invitees: ["bob"],
            expected: ["bob"]),
        Case(
            name: "phone and tablet ring by push and both are connected",
            ringing: [(app, "bob", "phone"), (app, "bob", "tablet")], connected: ["bob": ["phone", "tablet"]],
            invitees: ["bob"], expected: []),
        Case(
            name: "the same user id in another app", ringing: [(other, "bob", "phone")], connected: [:],
            invitees: ["bob"], expected: []),
        Case(
            name: "only invitees are looked at", ringing: [(app, "carol", "phone"), (app, "bob", "phone")],
            connected: [:], invitees: ["bob", "dan"], expected: ["bob"]),
    ]

    @Test(arguments: cases) func unconnectedDevicesDecideWhoseTokensAreRead(_ test: Case) {
        let index = PushReachIndex()
        index.replace(with: test.ringing.map { (UserKey(app: $0.0, user: $0.1), $0.2) })
        let found = index.unconnected(among: test.invitees, app: Self.app) { test.connected[$0.user] ?? [] }
        #expect(found == test.expected)
    }

    /// A device added after the table was read counts at once; reading the table again replaces
    /// what was there.
    @Test func insertsCountAndAReadReplaces() {
        let index = PushReachIndex()
        let bob = UserKey(app: Self.app, user: "bob")
        index.replace(with: [])
        index.insert(bob, "phone")
        #expect(index.unconnected(among: ["bob"], app: Self.app) { _ in [] } == ["bob"])
        index.replace(with: [])
        #expect(index.unconnected(among: ["bob"], app: Self.app) { _ in [] } == [])
    }
}
