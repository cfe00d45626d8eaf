import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import SwitchboardTools
import Testing

/// SPEC §9: every bad frame gets an error response with a stable code, the connection stays
/// usable, and other calls are not disturbed.
struct BadInputTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var frame: String
        /// The id the answer is addressed to; nil for `id: null`.
        var id: String?
        var code: SwitchboardError.Code
        var testDescription: String { name }
    }

    static let frames: [Case] = [
        Case(name: "not JSON", frame: "hello", id: nil, code: .malformedMessage),
        Case(name: "a JSON array", frame: "[1,2,3]", id: nil, code: .malformedMessage),
        Case(name: "no id", frame: #"{"type":"ping"}"#, id: nil, code: .malformedMessage),
        Case(name: "numeric id", frame: #"{"id":5,"type":"ping"}"#, id: nil, code: .malformedMessage),
        Case(name: "empty id", frame: #"{"id":"","type":"ping"}"#, id: nil, code: .invalidRequestID),
        Case(
            name: "id too long", frame: #"{"id":"\#(String(repeating: "i", count: 65))","type":"ping"}"#, id: nil,
            code: .invalidRequestID),
        Case(name: "no type", frame: #"{"id":"t1","data":{}}"#, id: "t1", code: .malformedMessage),
        Case(name: "unknown type", frame: #"{"id":"t2","type":"call.teleport","data":{}}"#, id: "t2", code: .unknownType),
        Case(name: "missing field", frame: #"{"id":"t3","type":"call.accept","data":{}}"#, id: "t3", code: .invalidParams),
        Case(
            name: "wrong field type",
            frame: #"{"id":"t4","type":"call.start","data":{"participantIds":"bob","mediaType":"audio"}}"#, id: "t4",
            code: .invalidParams),
        Case(
            name: "unknown enum value",
            frame: #"{"id":"t5","type":"call.start","data":{"participantIds":["bob"],"mediaType":"hologram"}}"#,
            id: "t5", code: .invalidParams),
        Case(name: "data is not an object", frame: #"{"id":"t6","type":"call.hangup","data":7}"#, id: "t6", code: .invalidParams),
        Case(
            name: "message over 64 KiB",
            frame: #"{"id":"t7","type":"profile.set","data":{"nickname":"\#(String(repeating: "n", count: 70_000))"}}"#,
            id: "t7", code: .messageTooLarge),
        Case(
            name: "invalid userID in participants",
            frame: #"{"id":"t8","type":"call.start","data":{"participantIds":["bad user!"],"mediaType":"audio"}}"#,
            id: "t8", code: .invalidUserID),
        Case(
            name: "record count above 100",
            frame: #"{"id":"t9","type":"records.query","data":{"syncTime":-1,"count":101,"order":"descending"}}"#,
            id: "t9", code: .invalidRecordCount),
        Case(
            name: "negative syncTime",
            frame: #"{"id":"t10","type":"records.query","data":{"syncTime":-5,"count":10,"order":"ascending"}}"#,
            id: "t10", code: .invalidSyncTime),
        Case(
            name: "nickname too long",
            frame: #"{"id":"t11","type":"profile.set","data":{"nickname":"\#(String(repeating: "n", count: 193))"}}"#,
            id: "t11", code: .invalidParams),
        Case(
            // One "character" of 50 KB: sizes are bytes.
            name: "nickname of one letter and 25,000 combining marks",
            frame: #"{"id":"t13","type":"profile.set","data":{"nickname":"a\#(String(repeating: "\u{0301}", count: 25_000))"}}"#,
            id: "t13", code: .invalidParams),
        Case(
            name: "nickname with a control character",
            frame: #"{"id":"t14","type":"profile.set","data":{"nickname":"a\u0007b"}}"#,
            id: "t14", code: .invalidParams),
        Case(
            name: "nickname with a right-to-left override",
            frame: #"{"id":"t15","type":"profile.set","data":{"nickname":"Bank\u202Egnp.exe"}}"#,
            id: "t15", code: .invalidParams),
        Case(
            name: "nickname with a zero-width space",
            frame: #"{"id":"t16","type":"profile.set","data":{"nickname":"Your\u200Bbank"}}"#,
            id: "t16", code: .invalidParams),
        Case(
            name: "push title with a right-to-left isolate",
            frame: #"{"id":"t17","type":"call.start","data":{"participantIds":["bob"],"mediaType":"audio","params":{"pushConfig":{"title":"Alice\u2067"}}}}"#,
            id: "t17", code: .invalidPushConfig),
        Case(
            name: "push body with a byte-order mark",
            frame: #"{"id":"t18","type":"call.start","data":{"participantIds":["bob"],"mediaType":"audio","params":{"pushConfig":{"body":"\uFEFFcall"}}}}"#,
            id: "t18", code: .invalidPushConfig),
        Case(
            name: "second login on one connection",
            frame: #"{"id":"t12","type":"login","data":{"sdkAppID":1,"userID":"x","userSig":"y","protocolVersion":1}}"#,
            id: "t12", code: .alreadyLoggedIn),
    ]

    /// One server, one logged-in raw connection that receives every bad frame in turn, and a
    /// call between bob and carol that must survive all of it.
    @Test func everyBadFrameGetsItsCodeAndNothingBreaks() async throws {
        let server = try await TestServer.start()
        let raw = try await RawClient(url: server.url)
        let login = try await raw.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: "alice", userSig: server.userSig("alice")), id: "login")
        #expect(login["result"] != nil)

        let bob = try await server.client("bob")
        let carol = try await server.client("carol")
        let carolEvents = Recorder(carol.callStore.events)
        let bobEvents = Recorder(bob.callStore.events)
        let call = try await bob.callStore.calls(participantIds: ["carol"], mediaType: .audio)
        try await carolEvents.first(from: 0) { if case .onCallReceived = $0 { true } else { false } }
        try await carol.callStore.accept()

        for item in Self.frames {
            let response = try await raw.request(item.frame, id: item.id)
            #expect(RawClient.errorCode(response) == item.code.rawValue, "\(item.name): \(response)")
            let message = (response["error"] as? [String: Any])?["message"] as? String
            #expect(message?.isEmpty == false, "\(item.name) has no message")
            // The connection still answers.
            let ping = try await raw.request(PingRequest(), id: "ping-after-\(item.name)")
            #expect(ping["result"] != nil, "\(item.name) broke the connection")
        }

        // The field path is named for decoding errors.
        let missing = try await raw.request(#"{"id":"m","type":"call.accept","data":{}}"#, id: "m")
        #expect(((missing["error"] as? [String: Any])?["message"] as? String)?.contains("data.callId") == true)

        // The call between bob and carol was not disturbed.
        #expect(bob.callStore.state.activeCall?.callId == call.callId)
        try await carol.callStore.hangup()
        let ended = try await bobEvents.first(from: 0) { if case .onCallEnded = $0 { true } else { false } }
        #expect(ended == .onCallEnded(callId: call.callId, mediaType: .audio, reason: .hangup, userId: "carol"))
        raw.close()
        await server.stop()
    }

    @Test func requestsBeforeLoginAreRefused() async throws {
        let server = try await TestServer.start()
        let raw = try await RawClient(url: server.url)
        for (index, request) in [
            #"{"id":"a","type":"call.start","data":{"participantIds":["bob"],"mediaType":"audio"}}"#,
            #"{"id":"b","type":"records.query","data":{"syncTime":-1,"count":10,"order":"descending"}}"#,
            #"{"id":"c","type":"logout","data":{}}"#,
        ].enumerated() {
            let id = ["a", "b", "c"][index]
            let response = try await raw.request(request, id: id)
            #expect(RawClient.errorCode(response) == SwitchboardError.Code.notLoggedIn.rawValue)
        }
        // ping works without a login, and login still works afterwards.
        #expect(try await raw.request(PingRequest(), id: "p")["result"] != nil)
        let login = try await raw.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: "dave", userSig: server.userSig("dave")), id: "l")
        #expect(login["result"] != nil)
        raw.close()
        await server.stop()
    }

    /// Wrong-state and not-yours requests, through the SDK.
    @Test func callsThatAreNotYoursOrNotInThatState() async throws {
        let server = try await TestServer.start()
        let alice = try await server.client("alice")
        let bob = try await server.client("bob")
        let mallory = try await server.client("mallory")
        let bobEvents = Recorder(bob.callStore.events)
        let aliceEvents = Recorder(alice.callStore.events)
        let call = try await alice.callStore.calls(participantIds: ["bob"], mediaType: .video)
        try await bobEvents.first(from: 0) { if case .onCallReceived = $0 { true } else { false } }

        await expectCode(.notInCall) { try await mallory.callStore.accept(callId: call.callId) }
        await expectCode(.notInCall) { try await mallory.callStore.hangup(callId: call.callId) }
        await expectCode(.notInCall) { try await mallory.callStore.reject(callId: call.callId) }
        await expectCode(.callNotFound) { try await bob.callStore.accept(callId: "no-such-call") }
        await expectCode(.invalidCallState) { try await alice.callStore.reject(callId: call.callId) }

        try await bob.callStore.accept(callId: call.callId)
        await expectCode(.alreadyAccepted) { try await bob.callStore.accept(callId: call.callId) }
        await expectCode(.invalidCallState) { try await bob.callStore.reject(callId: call.callId) }
        // A stranger's hang-up did not end the call.
        #expect(alice.callStore.state.activeCall?.callId == call.callId)

        try await alice.callStore.hangup()
        try await bobEvents.first(from: 0) { if case .onCallEnded = $0 { true } else { false } }
        try await aliceEvents.first(from: 0) { if case .onCallEnded = $0 { true } else { false } }
        await expectCode(.callAlreadyEnded) { try await bob.callStore.hangup(callId: call.callId) }
        await expectCode(.callAlreadyEnded) { try await bob.callStore.accept(callId: call.callId) }
        await expectCode(.notInCall) { try await mallory.callStore.hangup(callId: call.callId) }
        // The records of the call are alice's and bob's: mallory's query shows only her own call,
        // and her deletes leave theirs.
        let aliceRecord = try #require(await aliceEvents.first(from: 0) { $0.record?.callId == call.callId }.record)
        let bobRecord = try #require(await bobEvents.first(from: 0) { $0.record?.callId == call.callId }.record)
        let malloryEvents = Recorder(mallory.callStore.events)
        let own = try await mallory.callStore.calls(participantIds: ["nobody"], mediaType: .audio).callId
        try await malloryEvents.first(from: 0) { $0.record?.callId == own }
        #expect(try await mallory.callStore.queryRecords(count: 100).records.map(\.callId) == [own])
        #expect(try await mallory.callStore.deleteRecords(callIds: [call.callId]) == 0)
        #expect(try await mallory.callStore.deleteAllRecords() == 1)
        #expect(try await alice.callStore.queryRecords(count: 100).records == [aliceRecord])
        #expect(try await bob.callStore.queryRecords(count: 100).records == [bobRecord])
        await server.stop()
    }

    @Test func aFrameAboveTheTransportLimitClosesOnlyThatConnection() async throws {
        let server = try await TestServer.start()
        let raw = try await RawClient(url: server.url)
        let other = try await RawClient(url: server.url)
        raw.send(String(repeating: "x", count: 2 << 20))
        // The oversized connection ends; the other one keeps working.
        #expect(await raw.frames.waitForEnd())
        #expect(try await other.request(PingRequest(), id: "p")["result"] != nil)
        await server.stop()
    }
}

func expectCode(
    _ code: SwitchboardError.Code, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    do {
        try await body()
        Issue.record("expected \(code.name), got success", sourceLocation: sourceLocation)
    } catch let error as SwitchboardError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(code.name), got \(error)", sourceLocation: sourceLocation)
    }
}
