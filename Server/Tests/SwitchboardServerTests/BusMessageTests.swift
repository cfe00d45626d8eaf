import Foundation
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

/// How the nodes' messages are written in the bus's table (``BusMessage/body()``).
struct BusMessageTests {
    static let alice = UserKey(app: 1_400_000_001, user: "alice")

    /// Every message reads back as it was written; a delivery's frame is written as it is (not
    /// escaped into a JSON string), whatever it holds, raw newlines included.
    @Test func everyMessageReadsBackAsItWasWritten() throws {
        let frame = #"{"type":"event","event":"callReceived","data":{"nickname":"Zoë \"Z\"\n","ids":[1,2]}}"#
        let messages: [BusMessage] = [
            .deliver(frame: frame, recipient: .userExcept(Self.alice, "phone")),
            .deliver(frame: "two\nlines", recipient: .device(Self.alice, "pad")),
            .deliver(frame: "", recipient: .user(Self.alice)),
            .reply(token: 7, reply: .ok),
            .blocks(token: 3, user: Self.alice, node: "node1-abcdef"),
            .appsChanged,
        ]
        for message in messages {
            #expect(try BusMessage(body: message.body()) == message)
        }
        #expect(try messages[0].body().hasSuffix("\n" + frame))
        #expect(try messages[3].body().hasPrefix("{"))
    }

    @Test func aDeliveryWithoutItsFrameOrRecipientIsRefused() {
        #expect(throws: (any Error).self) { try BusMessage(body: #"D{"user":{}}"#) }
        #expect(throws: (any Error).self) { try BusMessage(body: "D\nframe") }
        #expect(throws: (any Error).self) { try BusMessage(body: "") }
    }
}
