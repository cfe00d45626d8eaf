import Switchboard
import SwitchboardProtocol
import Testing

/// What the call views show when (SwitchboardUI draws these on iOS): the screen, the buttons,
/// the status line, the floating window's place.
struct CallScreenTests {
    enum Phase: String, CaseIterable {
        case idle, ringingHere, calling, connecting, connected
    }

    /// A one-to-one call between "me" and "u1" in `phase`; `incoming` when u1 called.
    static func state(
        _ phase: Phase, video: Bool = true, group: Bool = false, callId: CallID = "c1", peerCamera: Bool = true
    ) -> CallStore.State {
        guard phase != .idle else {
            return CallStore.State(activeCall: nil, selfInfo: CallParticipantInfo(userId: "me"), allParticipants: [])
        }
        let incoming = phase == .ringingHere
        let myStatus: CallParticipantStatus = phase == .connecting || phase == .connected ? .accept : .waiting
        let peerStatus: CallParticipantStatus = phase == .connected || phase == .connecting ? .accept : (incoming ? .accept : .waiting)
        let others: [UserID] = group ? ["u1", "u2"] : ["u1"]
        let participants =
            [CallParticipant(userId: "me", status: myStatus)]
            + others.map { CallParticipant(userId: $0, status: peerStatus, cameraOn: peerCamera) }
        let info = CallInfo(
            callId: callId, roomId: "r1", callType: group ? .group : .oneToOne, mediaType: video ? .video : .audio,
            callerId: incoming ? "u1" : "me", timeout: 30, createdAt: 0, startTime: phase == .connected ? 1_000 : nil,
            participants: participants)
        let members = participants.map { CallParticipantInfo(userId: $0.userId, status: $0.status, cameraOn: $0.cameraOn) }
        return CallStore.State(
            activeCall: ActiveCall(info: info, direction: incoming ? .incoming : .outgoing, inviterId: incoming ? "u1" : "me", duration: 65),
            selfInfo: members[0], allParticipants: members)
    }

    // MARK: - the screen

    @Test(arguments: [
        // phase, CallKit shows incoming calls, app active → screen
        (Phase.idle, false, true, CallScreenPresenter.Screen.none),
        (.ringingHere, false, true, .incoming("c1")), (.ringingHere, false, false, .incoming("c1")),
        (.ringingHere, true, true, .incoming("c1")), (.ringingHere, true, false, .none),
        (.calling, true, false, .call("c1")), (.connecting, true, true, .call("c1")), (.connected, false, true, .call("c1")),
    ])
    func theScreenFollowsTheCall(_ phase: Phase, _ callKit: Bool, _ active: Bool, _ screen: CallScreenPresenter.Screen) {
        var presenter = CallScreenPresenter(callKitShowsIncomingCalls: callKit)
        presenter.appIsActive = active
        #expect(presenter.screen(for: Self.state(phase)) == screen)
    }

    @Test func aMinimisedCallFloatsUntilRestoredAndTheNextCallStartsFullScreen() {
        var presenter = CallScreenPresenter(callKitShowsIncomingCalls: true)
        // A ringing call cannot be minimised.
        presenter.minimize(in: Self.state(.ringingHere))
        #expect(presenter.screen(for: Self.state(.ringingHere)) == .incoming("c1"))
        presenter.minimize(in: Self.state(.connected))
        #expect(presenter.screen(for: Self.state(.connected)) == .floating("c1"))
        #expect(presenter.screen(for: Self.state(.connected, callId: "c2")) == .call("c2"))
        #expect(presenter.screen(for: Self.state(.idle)) == .none)
        presenter.restore()
        #expect(presenter.screen(for: Self.state(.connected)) == .call("c1"))
    }

    @Test(arguments: [
        // phase, video, the peer's camera, app active → Picture in Picture
        (Phase.connected, true, true, false, true), (.connected, true, true, true, false),
        (.connected, false, true, false, false), (.connected, true, false, false, false),
        (.calling, true, true, false, false), (.ringingHere, true, true, false, false), (.idle, true, true, false, false),
    ])
    func pictureInPictureShowsAConnectedVideoCallInTheBackground(
        _ phase: Phase, _ video: Bool, _ camera: Bool, _ active: Bool, _ wanted: Bool
    ) {
        var presenter = CallScreenPresenter(callKitShowsIncomingCalls: true)
        presenter.appIsActive = active
        let state = Self.state(phase, video: video, peerCamera: camera)
        #expect(presenter.wantsPictureInPicture(for: state) == wanted)
        // Ready in the foreground too, so that iOS can start it on the way to the background.
        #expect((presenter.pictureInPictureMember(for: state) == "u1") == (wanted || (phase == .connected && video && camera)))
    }

    // MARK: - the buttons

    static func devices(mic: Bool = true, camera: Bool = true, speaker: Bool = false, front: Bool = true, sharing: Bool = false)
        -> DeviceStore.State
    {
        var devices = DeviceStore.State()
        devices.microphoneStatus = mic ? .on : .off
        devices.cameraStatus = camera ? .on : .off
        devices.audioRoute = speaker ? .speaker : .earpiece
        devices.isFrontCamera = front
        devices.screenShare = sharing ? .screen : nil
        return devices
    }

    static func names(_ items: [CallControlItem]) -> [String] {
        items.map { "\($0.control.rawValue)\($0.isOn ? "+" : "")\($0.isEnabled ? "" : "(off)")" }
    }

    @Test(arguments: [
        (Phase.idle, true, [String]()), (.ringingHere, true, ["reject", "accept"]), (.ringingHere, false, ["reject", "accept"]),
        (.calling, false, ["microphone+", "speaker", "hangup"]),
        (.calling, true, ["microphone+", "speaker", "camera+", "hangup"]),
        (.connected, false, ["microphone+", "speaker", "moveToAnotherDevice", "minimize", "hangup"]),
        (.connected, true, [
            "microphone+", "speaker", "camera+", "switchCamera", "screenShare", "moveToAnotherDevice", "minimize", "hangup",
        ]),
    ])
    func theButtonsFollowThePhase(_ phase: Phase, _ video: Bool, _ expected: [String]) {
        #expect(Self.names(CallControls.items(for: Self.state(phase, video: video), devices: Self.devices())) == expected)
    }

    @Test func theButtonsShowTheDevices() {
        let items = CallControls.items(
            for: Self.state(.connected), devices: Self.devices(mic: false, camera: false, speaker: true, front: false, sharing: true))
        #expect(
            Self.names(items) == [
                "microphone", "speaker+", "camera", "switchCamera+(off)", "screenShare+", "moveToAnotherDevice", "minimize", "hangup",
            ])
    }

    @Test func aPressBecomesAnAction() {
        let devices = Self.devices(speaker: true, front: false)
        let items = CallControls.items(for: Self.state(.connected), devices: devices)
        let actions = items.map { CallControls.action(for: $0, devices: devices) }
        #expect(
            actions == [
                .setMicrophone(on: false), .setAudioRoute(.earpiece), .setCamera(on: false, front: false),
                .setCamera(on: true, front: true), .setScreenShare(on: true), .offerMove, .minimize, .hangup,
            ])
        #expect(CallControls.action(for: CallControlItem(.switchCamera, isEnabled: false), devices: devices) == nil)
        #expect(CallControls.action(for: CallControlItem(.speaker), devices: devices) == .setAudioRoute(.speaker))
        #expect(
            CallControls.items(for: Self.state(.ringingHere), devices: devices).map { CallControls.action(for: $0, devices: devices) }
                == [.reject, .accept])
    }

    // MARK: - the "continue here" prompt

    static func offer(_ callId: CallID, from device: DeviceID = "me-laptop", expiresAt: Int64 = 31_000) -> CallMoveOffer {
        let participants = [
            CallParticipant(userId: "me", status: .accept), CallParticipant(userId: "u1", status: .accept, nickname: "Uma"),
            CallParticipant(userId: "u2", status: .none), CallParticipant(userId: "u3", status: .waiting),
        ]
        let info = CallInfo(
            callId: callId, roomId: "r1", callType: .group, mediaType: .video, callerId: "u1", timeout: 30, createdAt: 0,
            startTime: 1_000, participants: participants)
        return CallMoveOffer(call: info, fromDeviceId: device, expiresAt: expiresAt)
    }

    @Test func anOfferShowsWhileThisDeviceIsInNoCall() throws {
        var idle = Self.state(.idle)
        #expect(CallMovePrompt.of(idle) == nil)
        idle.moveOffers = [Self.offer("c7", expiresAt: 20_000), Self.offer("c8", from: "me-tablet")]
        // The newest offer; the members in the call besides me (not those who left or still ring).
        let prompt = try #require(CallMovePrompt.of(idle))
        #expect(prompt.callId == "c8" && prompt.fromDeviceId == "me-tablet" && prompt.expiresAt == 31_000)
        #expect(prompt.otherMembers.map(\.userId) == ["u1"] && prompt.mediaType == .video)
        // A device in a call of its own (or one ringing here) shows no prompt.
        for phase in [Phase.ringingHere, .calling, .connected] {
            var busy = Self.state(phase)
            busy.moveOffers = idle.moveOffers
            #expect(CallMovePrompt.of(busy) == nil, "\(phase)")
        }
    }

    // MARK: - the status line

    @Test(arguments: [
        (Phase.idle, true, false, CallStatusLine?.none), (.ringingHere, true, false, .invitation(.video, group: false)),
        (.ringingHere, false, true, .invitation(.audio, group: true)), (.calling, true, false, .waitingForAnswer),
        (.connecting, true, false, .connecting), (.connected, false, false, .duration("01:05")),
    ])
    func theStatusLineFollowsThePhase(_ phase: Phase, _ video: Bool, _ group: Bool, _ line: CallStatusLine?) {
        #expect(CallStatusLine.of(Self.state(phase, video: video, group: group)) == line)
    }

    // MARK: - the floating window

    static let screen = LayoutRect(x: 0, y: 47, width: 390, height: 763)

    @Test(arguments: [
        // dropped at → settles at (the window is 100×160, 12 from the edges)
        (LayoutPoint(x: 10, y: 300), LayoutPoint(x: 12, y: 300)), (LayoutPoint(x: 200, y: 300), LayoutPoint(x: 278, y: 300)),
        (LayoutPoint(x: 90, y: 0), LayoutPoint(x: 12, y: 59)), (LayoutPoint(x: 300, y: 900), LayoutPoint(x: 278, y: 638)),
        (LayoutPoint(x: -500, y: -500), LayoutPoint(x: 12, y: 59)),
    ])
    func theFloatingWindowSettlesAgainstASide(_ drop: LayoutPoint, _ settled: LayoutPoint) {
        var placement = FloatingWindowPlacement()
        #expect(placement.frame(in: Self.screen) == LayoutRect(x: 278, y: 59, width: 100, height: 160))
        placement.drop(at: drop, in: Self.screen)
        #expect(placement.frame(in: Self.screen).origin == settled)
        // Rotated or resized, it stays on its side and inside.
        #expect(placement.frame(in: LayoutRect(x: 0, y: 0, width: 200, height: 200)).maxY <= 200)
    }
}
