import Foundation
import Testing

@testable import Switchboard

/// Which server address a reconnect tries: the one in use first, unless it is going away or
/// stopped answering; then the others in turn.
struct ServerAddressesTests {
    static let urls = ["a", "b", "c"].map { URL(string: "wss://\($0).example.com/v1/ws")! }

    static func host(_ url: URL?) -> String { url?.host()?.prefix(1).description ?? "-" }

    /// Logged in on b; then what happens (`drop`, `silent` for a drop after two silent heartbeats,
    /// `away` for `sessionEnded` `shuttingDown`, `try` for a reconnect attempt, `back` for a
    /// login again), and the addresses the attempts went to.
    @Test(arguments: [
        ("drop try", "b"),
        ("drop try try try try", "bcab"),
        ("silent try", "c"),
        ("away drop try", "c"),
        // Told once: after the login again, the next drop tries the address in use first.
        ("away drop try back drop try", "cc"),
        ("silent try try back silent try", "cab"),
        // A new round starts at the address in use.
        ("drop try try drop try", "bcc"),
    ])
    func reconnectAttempts(_ script: String, _ expected: String) {
        var addresses = ServerAddresses()
        addresses.loggedIn(Self.urls, at: 1)
        var round = 0
        var tried = ""
        for step in script.split(separator: " ") {
            switch step {
            case "drop", "silent":
                addresses.dropped(stoppedAnswering: step == "silent")
                round = 0
            case "away": addresses.serverSaidGoingAway()
            case "try":
                tried += Self.host(addresses.address(forAttempt: round))
                round += 1
            case "back": _ = addresses.reconnected()
            default: Issue.record("unknown step \(step)")
            }
        }
        #expect(tried == expected, "\(script)")
    }

    @Test func theLoginAgainSaysWhetherTheServerWasGoingAway() {
        var addresses = ServerAddresses()
        addresses.loggedIn(Self.urls, at: 0)
        addresses.dropped(stoppedAnswering: false)
        #expect(addresses.reconnected() == false)
        addresses.serverSaidGoingAway()
        addresses.dropped(stoppedAnswering: false)
        #expect(addresses.reconnected() == true)
        #expect(addresses.reconnected() == false)
    }

    @Test func noAddressNoAttempt() {
        var addresses = ServerAddresses()
        #expect(addresses.isEmpty)
        addresses.dropped(stoppedAnswering: true)
        #expect(addresses.address(forAttempt: 3) == nil)
    }
}
