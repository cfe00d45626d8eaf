import SwitchboardProtocol
import Testing

@testable import Switchboard

/// The call store's rules as a table (``CallStore/State/reduce(_:)``): bob's device hears
/// server events; each row sets up with some, applies one more, and compares the events the app
/// hears, the camera switch, and the state that results, written on one line:
///
///     active=<callId>/<your status> waiting=[…] elsewhere=[…] change=<transaction> peers=<user>:<quality>,…
///
/// followed by ` offers=[…]` while calls are offered to this device (bob's `phone`), and by
/// ` recording=<who started it, or app>@<when>` while the active call is recorded.
struct CallStoreReducerTests {
    static let me: UserID = "bob"
    /// The device whose store this is.
    static let phone: DeviceID = "phone"

    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var setup: [ServerEvent] = []
        var event: ServerEvent
        var events: [String]
        var camera: Bool? = nil
        var state: String
        /// The call the device hangs up (one the server resumed after this device heard it end).
        var hangUp: CallID? = nil

        var testDescription: String { name }
    }

    // MARK: - events

    static func call(
        _ id: CallID, from caller: UserID = "alice", bob: CallParticipantStatus = .waiting,
        carol: CallParticipantStatus? = nil, started: Bool = false, media: CallMediaType = .audio
    ) -> CallInfo {
        var participants = [
            CallParticipant(userId: caller, status: .accept),
            CallParticipant(userId: "bob", status: bob, inviterId: caller),
        ]
        if let carol { participants.append(CallParticipant(userId: "carol", status: carol, inviterId: caller)) }
        return CallInfo(
            callId: id, roomId: RoomID(rawValue: id.rawValue), callType: carol == nil ? .oneToOne : .group, mediaType: media,
            callerId: caller, timeout: 30, createdAt: 1_000, startTime: started ? 2_000 : nil, participants: participants)
    }

    static func received(_ id: CallID, from caller: UserID = "alice") -> ServerEvent {
        .callReceived(CallReceivedEvent(call: call(id, from: caller), inviterId: caller))
    }

    static func started(_ id: CallID, carol: CallParticipantStatus? = nil, media: CallMediaType = .audio) -> ServerEvent {
        .callStarted(CallStartedEvent(call: call(id, bob: .accept, carol: carol, started: true, media: media)))
    }

    static func elsewhere(_ id: CallID) -> ServerEvent {
        .callElsewhere(CallElsewhereEvent(call: call(id, bob: .accept, started: true), deviceId: "pad", active: true))
    }

    static func offered(_ id: CallID) -> ServerEvent {
        .callMoveOffered(
            CallMoveOfferedEvent(call: call(id, bob: .accept, started: true), fromDeviceId: "pad", toDeviceId: phone, expiresAt: 40_000))
    }

    static func moved(_ id: CallID, from: DeviceID, to: DeviceID) -> ServerEvent {
        .callMoved(CallMovedEvent(call: call(id, bob: .accept, started: true), fromDeviceId: from, toDeviceId: to))
    }

    static func ended(_ id: CallID) -> ServerEvent {
        .callEnded(CallEndedEvent(callId: id, mediaType: .audio, reason: .hangup, userId: "alice"))
    }

    // MARK: - the table

    static let rows: [Row] = [
        Row(
            name: "a call rings", event: received("c1"),
            events: ["received c1 from alice"], state: "active=c1/waiting waiting=[] elsewhere=[] change=- peers=alice:unknown"),
        Row(
            name: "a call heard again (a login replays it) rings once", setup: [received("c1")], event: received("c1"),
            events: [], state: "active=c1/waiting waiting=[] elsewhere=[] change=- peers=alice:unknown"),
        Row(
            name: "the start is announced once", setup: [received("c1"), started("c1")], event: started("c1"),
            events: [], state: "active=c1/accept waiting=[] elsewhere=[] change=- peers=alice:unknown"),
        Row(
            name: "answering: bob's status changes and the call starts", setup: [received("c1")], event: started("c1"),
            events: ["status c1 bob accept", "started c1"],
            state: "active=c1/accept waiting=[] elsewhere=[] change=- peers=alice:unknown"),
        Row(
            name: "a call started elsewhere is tracked without news", event: started("c1"),
            events: ["started c1"], state: "active=c1/accept waiting=[] elsewhere=[] change=- peers=alice:unknown"),
        Row(
            name: "a second call waits while bob is in one", setup: [received("c1"), started("c1")],
            event: received("c2", from: "dave"),
            events: ["received c2 from dave"], state: "active=c1/accept waiting=[c2] elsewhere=[] change=- peers=alice:unknown"),
        Row(
            name: "the end of a call bob never knew is not news", event: ended("c9"),
            events: [], state: "active=- waiting=[] elsewhere=[] change=- peers="),
        Row(
            name: "the end of the active call", setup: [received("c1"), started("c1")], event: ended("c1"),
            events: ["ended c1 hangup"], state: "active=- waiting=[] elsewhere=[] change=- peers="),
        Row(
            name: "a sync after a login ends the calls it does not list", setup: [received("c1"), received("c2", from: "dave")],
            event: .callsSynced(CallsSyncedEvent(callIds: ["c2"])),
            events: ["ended c1 endByServer"], state: "active=c2/waiting waiting=[] elsewhere=[] change=- peers=dave:unknown"),
        Row(
            name: "a member starts sharing a screen, then stops",
            setup: [
                received("c1"), started("c1"),
                .deviceChanged(DeviceChangedEvent(callId: "c1", userId: "alice", microphoneOn: true, cameraOn: false, screenSharing: true)),
            ],
            event: .deviceChanged(DeviceChangedEvent(callId: "c1", userId: "alice", microphoneOn: false, cameraOn: false)),
            events: ["device c1 alice mic=false camera=false", "screen c1 alice false"],
            state: "active=c1/accept waiting=[] elsewhere=[] change=- peers=alice:unknown"),
        Row(
            name: "a member's status report", setup: [received("c1"), started("c1")],
            event: .memberStatus(MemberStatusEvent(callId: "c1", userId: "alice", networkQuality: .poor, volumeLevel: .medium)),
            events: ["quality c1 alice poor"], state: "active=c1/accept waiting=[] elsewhere=[] change=- peers=alice:poor"),
        Row(
            name: "statistics of someone not in the call are not kept", setup: [received("c1"), started("c1")],
            event: .memberStats(MemberStatsEvent(callId: "c1", userId: "mallory", packetLoss: 0, rtt: 1, bitrate: 1, audioLevel: 1)),
            events: [], state: "active=c1/accept waiting=[] elsewhere=[] change=- peers=alice:unknown"),
        Row(
            name: "a switch to video asked", setup: [received("c1"), started("c1")],
            event: .mediaTypeChangeRequested(
                MediaTypeChangeRequestedEvent(callId: "c1", transactionId: "t1", mediaType: .video, userId: "alice")),
            events: ["change asked c1 t1 video"], state: "active=c1/accept waiting=[] elsewhere=[] change=t1 peers=alice:unknown"),
        Row(
            name: "a switch to video agreed turns the camera on",
            setup: [
                received("c1"), started("c1"),
                .mediaTypeChangeRequested(
                    MediaTypeChangeRequestedEvent(callId: "c1", transactionId: "t1", mediaType: .video, userId: "alice")),
            ],
            event: .mediaTypeChangeResult(
                MediaTypeChangeResultEvent(callId: "c1", transactionId: "t1", mediaType: .video, userId: "alice", result: .agreed)),
            events: ["change c1 t1 video agreed"], camera: true,
            state: "active=c1/accept waiting=[] elsewhere=[] change=- peers=alice:unknown"),
        Row(
            name: "a switch to audio agreed turns it off", setup: [received("c1"), started("c1", media: .video)],
            event: .mediaTypeChangeResult(
                MediaTypeChangeResultEvent(callId: "c1", transactionId: "t2", mediaType: .audio, userId: "bob", result: .agreed)),
            events: ["change c1 t2 audio agreed"], camera: false,
            state: "active=c1/accept waiting=[] elsewhere=[] change=- peers=alice:unknown"),
        Row(
            name: "a declined switch leaves the camera", setup: [received("c1"), started("c1")],
            event: .mediaTypeChangeResult(
                MediaTypeChangeResultEvent(callId: "c1", transactionId: "t1", mediaType: .video, userId: "alice", result: .declined)),
            events: ["change c1 t1 video declined"], state: "active=c1/accept waiting=[] elsewhere=[] change=- peers=alice:unknown"),
        Row(
            name: "a call on another device comes and goes",
            setup: [.callElsewhere(CallElsewhereEvent(call: call("c3", bob: .accept, started: true), deviceId: "pad", active: true))],
            event: .callElsewhere(CallElsewhereEvent(call: call("c3", bob: .accept, started: true), deviceId: "pad", active: false)),
            events: ["elsewhere c3 pad false"], state: "active=- waiting=[] elsewhere=[] change=- peers="),
        // Moving a call between bob's devices.
        Row(
            name: "a call offered to this device", setup: [elsewhere("c3")], event: offered("c3"),
            events: ["offered c3 from pad"], state: "active=- waiting=[] elsewhere=[c3] change=- peers= offers=[c3]"),
        Row(
            name: "an offer that lapses", setup: [elsewhere("c3"), offered("c3")],
            event: .callMoveOfferEnded(CallMoveOfferEndedEvent(callId: "c3", reason: .expired)),
            events: ["offer ended c3 expired"], state: "active=- waiting=[] elsewhere=[c3] change=- peers="),
        Row(
            name: "the end of an offer this device never had is not news",
            event: .callMoveOfferEnded(CallMoveOfferEndedEvent(callId: "c3", reason: .withdrawn)),
            events: [], state: "active=- waiting=[] elsewhere=[] change=- peers="),
        Row(
            name: "the call moves here: connected, with no new start", setup: [elsewhere("c3"), offered("c3")],
            event: moved("c3", from: "pad", to: "phone"),
            events: ["moved c3 pad→phone"], state: "active=c3/accept waiting=[] elsewhere=[] change=- peers=alice:unknown"),
        Row(
            name: "the call moves away from here: forgotten without an end, shown elsewhere",
            setup: [received("c1"), started("c1")], event: moved("c1", from: "phone", to: "pad"),
            events: ["moved c1 phone→pad"], state: "active=- waiting=[] elsewhere=[c1] change=- peers="),
        Row(
            name: "the call moves between two other devices", setup: [elsewhere("c3")],
            event: moved("c3", from: "pad", to: "watch"),
            events: ["moved c3 pad→watch"], state: "active=- waiting=[] elsewhere=[c3] change=- peers="),
        Row(
            name: "another member moved to another device", setup: [received("c1"), started("c1")],
            event: .memberMoved(MemberMovedEvent(callId: "c1", userId: "alice")),
            events: ["member moved c1 alice"], state: "active=c1/accept waiting=[] elsewhere=[] change=- peers=alice:unknown"),
        Row(
            name: "a member moving in a call bob does not have is not news",
            event: .memberMoved(MemberMovedEvent(callId: "c9", userId: "alice")),
            events: [], state: "active=- waiting=[] elsewhere=[] change=- peers="),
        Row(
            name: "back from a drop, bob's call is on his pad: it moved while he was away (no end)",
            setup: [received("c1"), started("c1")], event: elsewhere("c1"), events: ["moved c1 phone→pad"],
            state: "active=- waiting=[] elsewhere=[c1] change=- peers="),
        Row(
            name: "and the sync after it does not end it", setup: [received("c1"), started("c1"), elsewhere("c1")],
            event: .callsSynced(CallsSyncedEvent(callIds: [], elsewhereCallIds: ["c1"])), events: [],
            state: "active=- waiting=[] elsewhere=[c1] change=- peers="),
        Row(
            name: "a call heard ending that the server resumes (its end was lost) is hung up, not shown",
            setup: [received("c1"), started("c1"), ended("c1")], event: started("c1"),
            events: [], state: "active=- waiting=[] elsewhere=[] change=- peers=", hangUp: "c1"),
        Row(
            name: "the same through an update", setup: [received("c1"), started("c1"), ended("c1")],
            event: .callUpdated(CallUpdatedEvent(call: call("c1", bob: .accept))),
            events: [], state: "active=- waiting=[] elsewhere=[] change=- peers=", hangUp: "c1"),
        Row(
            name: "a call this device never heard end resumes (after a reconnect or a reload)", event: started("c1"),
            events: ["started c1"], state: "active=c1/accept waiting=[] elsewhere=[] change=- peers=alice:unknown"),
        Row(
            name: "invited again into a call heard ending: it rings", setup: [received("c1"), started("c1"), ended("c1")],
            event: received("c1"), events: ["received c1 from alice"],
            state: "active=c1/waiting waiting=[] elsewhere=[] change=- peers=alice:unknown"),
        Row(
            name: "media signals are not the store's", setup: [received("c1"), started("c1")],
            event: .mediaSignal(MediaSignalEvent(callId: "c1", from: "alice", kind: .offer, sdp: "v=0")),
            events: [], state: "active=c1/accept waiting=[] elsewhere=[] change=- peers=alice:unknown"),
    ]

    @Test(arguments: rows) func theStoreFollowsTheServer(_ row: Row) {
        var state = CallStore.State(userId: Self.me)
        state.deviceId = Self.phone
        for event in row.setup {
            _ = state.reduce(event)
            state.refresh()
        }
        let reduction = state.reduce(row.event)
        state.refresh()
        #expect(reduction.events.map(Self.describe) == row.events)
        #expect(reduction.camera == row.camera)
        #expect(Self.describe(state) == row.state)
        #expect(reduction.hangUp == row.hangUp)
    }

    // MARK: - description

    static func describe(_ event: CallStoreEvent) -> String {
        switch event {
        case .onCallReceived(let id, let caller, _, _, _): "received \(id) from \(caller)"
        case .onCallStarted(let id, _, _): "started \(id)"
        case .onCallEnded(let id, _, let reason, _): "ended \(id) \(reason)"
        case .onParticipantStatusChanged(let id, let user, let status, _): "status \(id) \(user) \(status)"
        case .onRemoteDeviceChanged(let id, let user, let microphone, let camera):
            "device \(id) \(user) mic=\(microphone) camera=\(camera)"
        case .onRemoteScreenShareChanged(let id, let user, let sharing): "screen \(id) \(user) \(sharing)"
        case .onMemberStatusChanged(let id, let user, let quality, _): "quality \(id) \(user) \(quality)"
        case .onMediaTypeChangeRequested(let id, let transaction, let media, _): "change asked \(id) \(transaction) \(media)"
        case .onMediaTypeChangeResult(let id, let transaction, let media, _, let result):
            "change \(id) \(transaction) \(media) \(result)"
        case .onCallElsewhere(let id, let device, let active): "elsewhere \(id) \(device) \(active)"
        case .onCallMoveOffered(let id, let from, _): "offered \(id) from \(from)"
        case .onCallMoveOfferEnded(let id, let reason): "offer ended \(id) \(reason)"
        case .onCallMoved(let id, let from, let to): "moved \(id) \(from)→\(to)"
        case .onMemberMoved(let id, let user): "member moved \(id) \(user)"
        case .onRecordingStarted(let id, let user, let at): "recording \(id) by \(user?.rawValue ?? "app") at \(at)"
        case .onRecordingStopped(let id, let user): "recording stopped \(id) by \(user?.rawValue ?? "-")"
        default: "\(event)"
        }
    }

    static func describe(_ state: CallStore.State) -> String {
        let active = state.activeCall.map { "\($0.callId)/\(state.selfInfo.status)" } ?? "-"
        let peers = state.allParticipants.filter { $0.userId != Self.me }
            .map { "\($0.userId):\($0.networkQuality)" }.joined(separator: ",")
        return "active=\(active) waiting=[\(state.waitingCalls.map(\.callId.rawValue).joined(separator: ","))] "
            + "elsewhere=[\(state.callsOnOtherDevices.map(\.callId.rawValue).joined(separator: ","))] "
            + "change=\(state.mediaTypeChange?.transactionId.rawValue ?? "-") peers=\(peers)"
            + (state.moveOffers.isEmpty ? "" : " offers=[\(state.moveOffers.map(\.call.callId.rawValue).joined(separator: ","))]")
            + (state.activeCall?.recording.map { " recording=\($0.startedBy?.rawValue ?? "app")@\($0.startedAt)" } ?? "")
    }
}
