import Foundation
import SwitchboardProtocol
import Testing

@testable import SwitchboardServer

/// The webhook events the call rules report, per scenario: which, about whom, numbered per call
/// in the order they happened (`type user #sequence`). Each row runs its steps 1 s apart.
struct CallWebhookEventTests {
    typealias T = CallStateMachineTests

    /// The events of `steps`, for an app that has an endpoint from the step numbered `from` on.
    static func events(_ steps: [T.Step], endpointFrom: Int = 0) -> [String] {
        var machine = CallStateMachine()
        var now = T.t0
        var described: [String] = []
        for (index, step) in steps.enumerated() {
            machine.webhookApps = index >= endpointFrom ? [T.app] : []
            switch step {
            case .wait(let ms): now += ms
            case .event(let event, let facts):
                now += 1000
                for case .notify(let notice) in machine.handle(event, facts: facts, now: now).actions {
                    #expect(notice.id == "evt_\(notice.callId?.rawValue ?? "")_\(notice.data.sequence ?? 0)")
                    described.append(describe(notice.data))
                }
            }
        }
        return described
    }

    static func describe(_ data: WebhookEventData) -> String {
        let who: String =
            switch data {
            case .memberInvited(let d): " " + d.userId.rawValue
            case .memberRinging(let d): " " + d.userId.rawValue + (d.pushed ? " pushed" : "")
            case .memberAnswered(let d), .memberJoined(let d): " " + d.userId.rawValue
            case .memberRejected(let d): " " + d.userId.rawValue
            case .memberMissed(let d): " \(d.userId.rawValue) \(d.result.rawValue)/\(d.reason.rawValue)"
            case .memberLeft(let d): " \(d.userId.rawValue) \(d.result.rawValue)/\(d.reason.rawValue)"
            case .callEnded(let d): " \(d.reason.rawValue) \(d.duration)s"
            case .recordWritten(let d): " \(d.userId.rawValue) \(d.result.rawValue)"
            case .mediaTypeChanged(let d): " \(d.from.rawValue)>\(d.to.rawValue)"
            default: ""
            }
        return "\(data.typeName)\(who) #\(data.sequence ?? 0)"
    }

    @Test func anAnsweredCallThatChangesMediaAndHangsUp() {
        #expect(
            Self.events([
                T.start(), T.accept("bob", "b1"), T.changeMedia("alice", "a1", to: .video),
                T.replyMedia("bob", "b1", agree: true), T.hangup("bob", "b1"),
            ]) == [
                "call.created #1", "call.member.invited bob #2", "call.member.ringing bob #3",
                "call.member.answered bob #4", "call.media_type.changed audio>video #5",
                "call.member.left bob answered/hangup #6", "call.member.left alice answered/hangup #7",
                "call.ended hangup 3s #8", "call.record.written alice answered #9", "call.record.written bob answered #10",
            ])
    }

    /// A call nobody answered sends no `call.member.left` for its caller, who was never in a
    /// connected call (issue 48: it did; WEBHOOKS.md says the event is for a member who was in
    /// the call); `call.ended` has the caller's outcome.
    @Test func rejectedCanceledMissedAndOffline() {
        #expect(
            Self.events([T.start(), T.reject("bob", "b1")]) == [
                "call.created #1", "call.member.invited bob #2", "call.member.ringing bob #3", "call.member.rejected bob #4",
                "call.ended reject 0s #5", "call.record.written alice rejected #6", "call.record.written bob rejected #7",
            ])
        // The caller hangs up while it rings: the invitee missed a canceled call.
        #expect(
            Self.events([T.start(), T.hangup("alice", "a1")]).suffix(4) == [
                "call.member.missed bob missed/canceled #4", "call.ended canceled 0s #5",
                "call.record.written alice canceled #6", "call.record.written bob missed #7",
            ])
        #expect(!Self.events([T.start(), T.ringTimeout("bob")]).contains { $0.hasPrefix("call.member.left") })
        #expect(Self.events([T.start(), T.ringTimeout("bob")]).contains { $0.hasPrefix("call.member.missed bob missed/noResponse #") })
        let offline = Self.events([T.start(online: [])])
        #expect(offline.prefix(3) == ["call.created #1", "call.member.invited bob #2", "call.member.missed bob missed/offline #3"])
        #expect(!offline.contains { $0.hasPrefix("call.member.ringing") })
    }

    /// An app without an endpoint gets no events made, and its calls are numbered all the same:
    /// an endpoint made during a call gets the numbers that follow, not 1 again.
    @Test func anAppWithoutAnEndpointGetsNoEventsAndItsCallsNumbersGoOn() {
        let steps = [T.start(), T.accept("bob", "b1"), T.hangup("bob", "b1")]
        #expect(Self.events(steps, endpointFrom: 3).isEmpty)
        #expect(
            Self.events(steps, endpointFrom: 2) == [
                "call.member.left bob answered/hangup #5", "call.member.left alice answered/hangup #6",
                "call.ended hangup 1s #7", "call.record.written alice answered #8", "call.record.written bob answered #9",
            ])
    }

    @Test func aGroupCallsJoinAndLeave() {
        let events = Self.events([
            T.start(to: ["bob", "carol"]), T.accept("bob", "b1"), T.hangup("carol", "c1"), T.join("carol", "c2"),
            T.hangup("carol", "c2"),
        ])
        #expect(events.contains { $0.hasPrefix("call.member.joined carol #") })
        let sequences = events.compactMap { $0.split(separator: "#").last.flatMap { Int($0) } }
        #expect(sequences == Array(1...sequences.count))
    }
}
