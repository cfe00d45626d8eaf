import Foundation
import Testing

@testable import SwitchboardServer

/// The rules that keep every message between nodes handed over once and in order, whether it came
/// in its notification or from the table.
struct BusInboxTests {
    static func payload(_ ids: ClosedRange<Int64>) -> String {
        "[" + ids.map { "[\($0),\"m\($0)\"]" }.joined(separator: ",") + "]"
    }

    static func entries(_ ids: ClosedRange<Int64>) -> [BusInbox.Entry] {
        ids.map { BusInbox.Entry(id: $0, body: "m\($0)") }
    }

    @Test func aMessageHandedOverFromItsNotificationIsNotHandedOverAgainByATake() {
        var inbox = BusInbox()
        inbox.notified(Self.payload(1...2))
        #expect(inbox.next() == .messages(Self.entries(1...2)))
        #expect(inbox.toDelete == [1, 2])
        inbox.takeDue()
        #expect(inbox.next() == .take)
        // The take found 1 and 2 (not deleted yet) and 3, whose notification is still on its way.
        #expect(inbox.took(Self.entries(1...3).reversed()) == Self.entries(3...3))
        inbox.notified(Self.payload(3...3))
        inbox.notified(Self.payload(4...4))
        #expect(inbox.next() == .messages(Self.entries(4...4)))
        #expect(inbox.next() == nil)
        #expect(inbox.isEmpty)
    }

    @Test func aNotificationWithoutMessagesOrUnreadableIsATake() {
        var inbox = BusInbox()
        inbox.notified("")
        inbox.notified("[[1,")
        inbox.notified("{\"not\":\"a list\"}")
        // Takes in a row are one take.
        #expect(inbox.next() == .take)
        #expect(inbox.next() == nil)
    }

    /// A failed take could have returned messages that the notifications behind it come after:
    /// nothing is handed over from notifications until a take succeeds (their rows wait).
    @Test func afterAFailedTakeNotificationsWaitForATakeThatSucceeds() {
        var inbox = BusInbox()
        inbox.notified("")
        inbox.notified(Self.payload(5...5))
        #expect(inbox.next() == .take)
        inbox.takeFailed()
        #expect(inbox.next() == nil)
        inbox.notified(Self.payload(6...6))
        #expect(inbox.next() == nil)
        inbox.takeDue()
        #expect(inbox.next() == .take)
        #expect(inbox.took(Self.entries(4...6)) == Self.entries(4...6))
        inbox.notified(Self.payload(7...7))
        #expect(inbox.next() == .messages(Self.entries(7...7)))
        #expect(inbox.toDelete == [7])
    }

    @Test func pastTheBoundWaitingMessagesBecomeOneTake() {
        var inbox = BusInbox()
        for id in 1...Int64(BusInbox.maxQueued) { inbox.notified(Self.payload(id...id)) }
        inbox.notified(Self.payload(1_001...1_001))
        #expect(inbox.next() == .take)
        #expect(inbox.took(Self.entries(1...1_000)) == Self.entries(1...1_000))
        // The last notification came after the take began: only what the take did not return.
        #expect(inbox.next() == .messages(Self.entries(1_001...1_001)))
        #expect(inbox.next() == nil)
    }

    @Test func theIdsRememberedAreBoundedOldestForgottenFirst() {
        var inbox = BusInbox()
        let count = Int64(BusInbox.maxSeen + 10)
        #expect(inbox.took(Self.entries(1...count)).count == Int(count))
        #expect(inbox.seenCount == BusInbox.maxSeen)
        inbox.notified(Self.payload(count...count))
        inbox.notified(Self.payload(1...1))
        #expect(inbox.next() == .messages(Self.entries(1...1)))
        #expect(inbox.next() == nil)
    }

    @Test func aDeletedRowIsForgottenAndAFailedDeletionIsTriedAgain() {
        var inbox = BusInbox()
        inbox.notified(Self.payload(1...3))
        #expect(inbox.next() == .messages(Self.entries(1...3)))
        let first = inbox.takeDeletions()
        #expect(first == [1, 2, 3])
        #expect(inbox.toDelete.isEmpty)
        inbox.deletionFailed(first)
        inbox.notified(Self.payload(4...4))
        #expect(inbox.next() == .messages(Self.entries(4...4)))
        let second = inbox.takeDeletions()
        #expect(second == [1, 2, 3, 4])
        #expect(inbox.seenCount == 4)
        inbox.deleted(second)
        #expect(inbox.seenCount == 0)
    }
}
