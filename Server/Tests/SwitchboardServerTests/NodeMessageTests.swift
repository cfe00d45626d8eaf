import Foundation
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

/// How the nodes' messages are written in the bus's table (``NodeMessage/body()``).
struct NodeMessageTests {
    static let alice = UserKey(app: 1_400_000_001, user: "alice")

    /// Every message reads back as it was written; a delivery's frame is written as it is (not
    /// escaped into a JSON string), whatever it holds, raw newlines included.
    @Test func everyMessageReadsBackAsItWasWritten() throws {
        let frame = #"{"type":"event","event":"callReceived","data":{"nickname":"Zoë \"Z\"\n","ids":[1,2]}}"#
        let messages: [NodeMessage] = [
            .deliver(frame: frame, recipient: .userExcept(Self.alice, "phone")),
            .deliver(frame: "two\nlines", recipient: .device(Self.alice, "pad")),
            .deliver(frame: "", recipient: .user(Self.alice)),
            .reply(token: 7, reply: .ok),
            .blocks(token: 3, user: Self.alice, node: "node1-abcdef"),
            .ringsByPush(token: 4, user: Self.alice, device: "phone", node: "node1-abcdef"),
            .appsChanged,
        ]
        for message in messages {
            #expect(try NodeMessage(body: message.body()) == message)
        }
        #expect(try messages[0].body().hasSuffix("\n" + frame))
        #expect(try messages[3].body().hasPrefix("{"))
    }

    @Test func aDeliveryWithoutItsFrameOrRecipientIsRefused() {
        #expect(throws: (any Error).self) { try NodeMessage(body: #"D{"user":{}}"#) }
        #expect(throws: (any Error).self) { try NodeMessage(body: "D\nframe") }
        #expect(throws: (any Error).self) { try NodeMessage(body: "") }
    }

    /// A forwarded call request carries the request alone, never facts about its invitees (the
    /// leader looks them up); for a leader of the version before, which requires its old fields,
    /// they are written empty, and those fields from such a node are ignored.
    @Test func aForwardedCallRequestCarriesNoFactsAndStillReadsAcrossVersions() throws {
        let command = CallCommand(user: Self.alice, device: "phone", callId: "c1")
        let start = StartCallCommand(
            caller: Self.alice, device: "phone", callId: "c1", generatedRoomId: "c1",
            request: StartCallRequest(participantIds: ["bob"], mediaType: .video), settings: AppSettings(),
            profiles: ["alice": UserProfile(userId: "alice", nickname: "Alice")])
        let events: [CallEvent] = [
            .start(start),
            .invite(InviteCommand(command: command, invitees: ["carol"], settings: AppSettings(), profiles: [:])),
            .join(JoinCommand(command: command, settings: AppSettings(), profile: nil)),
        ]
        for event in events {
            let message = NodeMessage.command(token: 1, from: "node0", event: event)
            let body = try message.body()
            #expect(try NodeMessage(body: body) == message)
            let written = try #require(
                try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any], "\(body)")
            let fields = try #require(Self.commandFields(written), "\(body)")
            switch event {
            case .join:
                #expect(fields["isChatGroupMember"] as? Bool == false, "\(body)")
            default:
                for key in ["online", "blockedBy", "pushable"] {
                    #expect((fields[key] as? [Any])?.isEmpty == true, "\(key) in \(body)")
                }
            }
        }

        // From a node of the version before: the facts it sends are not read.
        let old = try NodeMessage.command(token: 1, from: "node0", event: .start(start)).body()
            .replacingOccurrences(of: #""online":[]"#, with: #""online":["bob"]"#)
            .replacingOccurrences(of: #""blockedBy":[]"#, with: #""blockedBy":["bob"],"declineDelays":{"bob":5000}"#)
        #expect(old.contains(#""online":["bob"]"#) && old.contains(#""declineDelays""#), "\(old)")
        #expect(try NodeMessage(body: old) == .command(token: 1, from: "node0", event: .start(start)))
    }

    /// A forwarded call request without what was asked (a node's bug, a damaged row) is refused
    /// when read, never read as a request with defaults.
    @Test func aForwardedCallRequestWithoutItsFieldsIsRefused() throws {
        let start = StartCallCommand(
            caller: Self.alice, device: "phone", callId: "c1", generatedRoomId: "c1",
            request: StartCallRequest(participantIds: ["bob"], mediaType: .audio), settings: AppSettings(), profiles: [:])
        let body = try NodeMessage.command(token: 1, from: "node0", event: .start(start)).body()
        for field in ["settings", "request", "profiles"] {
            let damaged = body.replacingOccurrences(of: #""\#(field)":"#, with: #""x\#(field)":"#)
            #expect(damaged != body, "\(field) in \(body)")
            #expect(throws: (any Error).self, "without \(field)") { try NodeMessage(body: damaged) }
        }
    }

    /// The fields of the one command in a `command` message's JSON.
    private static func commandFields(_ json: [String: Any]) -> [String: Any]? {
        func search(_ value: Any) -> [String: Any]? {
            if let object = value as? [String: Any] {
                if object["settings"] != nil { return object }
                for child in object.values { if let found = search(child) { return found } }
            } else if let array = value as? [Any] {
                for child in array { if let found = search(child) { return found } }
            }
            return nil
        }
        return search(json)
    }
}
