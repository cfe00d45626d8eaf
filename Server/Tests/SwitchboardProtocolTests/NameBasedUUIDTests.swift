import Foundation
import SwitchboardProtocol
import Testing

struct NameBasedUUIDTests {
    /// The same bytes as Python's
    /// `sha256(b"switchboard.call:call-42").digest()[:16]` with the version 5 and variant bits set:
    /// CallKit UUIDs and APNs ids must not change between versions.
    @Test func theSameNameGivesTheSameUUIDEverywhere() {
        #expect(UUID(nameBasedOn: "switchboard.call:call-42").uuidString == "51D3B968-6AB2-5BFD-8EB4-6DEF890DC8B3")
        #expect(UUID(nameBasedOn: "call-42:callEnded") != UUID(nameBasedOn: "call-42:incomingCall"))
    }
}
