import SwitchboardProtocol
import Testing

@testable import Switchboard

/// The SDK's table of unanswered requests: kept in the order they were made, the state-changing
/// ones kept across a drop, everything failed when the session ends.
struct PendingRequestsTests {
    static func table(_ entries: [(String, Bool)]) -> PendingRequests<String> {
        var table = PendingRequests<String>()
        for (name, resendable) in entries { table.add(RequestID(rawValue: name), name, resendable: resendable) }
        return table
    }

    @Test func aDropKeepsTheResendableInTheirOrder() {
        var table = Self.table([("call", true), ("ping", false), ("accept", true), ("login", false), ("hangup", true)])
        #expect(table.removeNotResendable() == ["ping", "login"])
        #expect(table.inOrder == ["call", "accept", "hangup"])
        // A second drop drops nothing more.
        #expect(table.removeNotResendable() == [])
        #expect(table.inOrder == ["call", "accept", "hangup"])
    }

    @Test func anAnswerRemovesItsRequestOnce() {
        var table = Self.table([("a", true), ("b", true), ("c", false)])
        #expect(table.remove("b") == "b")
        #expect(table.remove("b") == nil)
        #expect(table.remove("unknown") == nil)
        #expect(table.inOrder == ["a", "c"])
    }

    @Test func theEndOfTheSessionEmptiesTheTableInOrder() {
        var table = Self.table([("x", true), ("y", false), ("z", true)])
        _ = table.remove("x")
        table.add("w", "w", resendable: true)
        #expect(table.removeAll() == ["y", "z", "w"])
        #expect(table.inOrder.isEmpty)
    }

    @Test func anIdAddedAgainKeepsItsPlace() {
        var table = Self.table([("a", true), ("b", true)])
        table.add("a", "a again", resendable: false)
        #expect(table.inOrder == ["a again", "b"])
        #expect(table.removeNotResendable() == ["a again"])
    }
}
