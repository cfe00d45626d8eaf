import Switchboard
import SwitchboardProtocol
import Testing

/// The call view's rules (SPEC §7, the TRTC CallCoreView templates) on a 400×800 portrait view.
struct CallViewLayoutTests {
    static let viewport = LayoutSize(width: 400, height: 800)
    static let full = LayoutRect(x: 0, y: 0, width: 400, height: 800)
    /// The small tile: 28% of the view's size (112×224), 16 points from the top right corner.
    static let floating = LayoutRect(x: 272, y: 16, width: 112, height: 224)

    /// A call of `count` members: "me" (the caller) and u1…; connected or still ringing.
    static func state(
        members count: Int, connected: Bool, callId: CallID = "c1", speaker: UserID? = nil, video: Bool = true
    ) -> CallStore.State {
        let participants = (0..<count).map { index in
            CallParticipant(
                userId: index == 0 ? "me" : UserID(rawValue: "u\(index)"), status: connected ? .accept : .waiting,
                microphoneOn: true, cameraOn: true)
        }
        let info = CallInfo(
            callId: callId, roomId: "r1", callType: count > 2 ? .group : .oneToOne, mediaType: video ? .video : .audio,
            callerId: "me", timeout: 30, createdAt: 0, startTime: connected ? 1_000 : nil, participants: participants)
        let members = participants.map { CallParticipantInfo(userId: $0.userId, status: $0.status, cameraOn: true) }
        return CallStore.State(
            activeCall: ActiveCall(info: info, direction: .outgoing, inviterId: "me"), selfInfo: members[0],
            allParticipants: members, activeSpeakerId: speaker)
    }

    static func placement(_ tiles: [CallTile]) -> [String] {
        tiles.map { "\($0.userId.rawValue) \($0.role.rawValue) \($0.frame)" }
    }

    // MARK: - automatic template

    @Test(arguments: [(1, CallLayoutTemplate.float), (2, .float), (3, .grid), (4, .grid), (9, .grid)])
    func theTemplateFollowsTheMemberCount(_ count: Int, _ template: CallLayoutTemplate) {
        let layout = CallViewLayout()
        #expect(layout.effectiveTemplate(for: Self.state(members: count, connected: true)) == template)
    }

    // MARK: - float

    @Test func floatShowsYourselfWhileCallingThenThePeerWithYouSmall() {
        var layout = CallViewLayout(template: .float)
        let alone = Self.state(members: 1, connected: false)
        #expect(Self.placement(layout.tiles(for: alone, in: Self.viewport)) == ["me main \(Self.full)"])
        let calling = Self.state(members: 2, connected: false)
        #expect(Self.placement(layout.tiles(for: calling, in: Self.viewport)) == ["me main \(Self.full)"])

        let connected = Self.state(members: 2, connected: true)
        #expect(
            Self.placement(layout.tiles(for: connected, in: Self.viewport))
                == ["u1 main \(Self.full)", "me floating \(Self.floating)"])
        // Tapping the large tile does nothing; tapping the small one swaps; again swaps back.
        layout.tap("u1", in: connected, viewport: Self.viewport)
        #expect(!layout.isSwapped(in: connected))
        layout.tap("me", in: connected, viewport: Self.viewport)
        #expect(
            Self.placement(layout.tiles(for: connected, in: Self.viewport))
                == ["me main \(Self.full)", "u1 floating \(Self.floating)"])
        layout.tap("u1", in: connected, viewport: Self.viewport)
        #expect(
            Self.placement(layout.tiles(for: connected, in: Self.viewport))
                == ["u1 main \(Self.full)", "me floating \(Self.floating)"])
    }

    @Test func floatsSmallTileDragsWithinTheView() {
        var layout = CallViewLayout(template: .float)
        let connected = Self.state(members: 2, connected: true)
        layout.dragFloatingTile(to: LayoutPoint(x: 40, y: 500), in: connected, viewport: Self.viewport)
        #expect(layout.tiles(for: connected, in: Self.viewport)[1].frame == LayoutRect(x: 40, y: 500, width: 112, height: 224))
        layout.dragFloatingTile(to: LayoutPoint(x: -80, y: 900), in: connected, viewport: Self.viewport)
        #expect(
            layout.tiles(for: connected, in: Self.viewport)[1].frame
                == LayoutRect(x: 16, y: 800 - 224 - 16, width: 112, height: 224))
        // The next call starts from the default place, not swapped.
        let next = Self.state(members: 2, connected: true, callId: "c2")
        #expect(layout.tiles(for: next, in: Self.viewport)[1].frame == Self.floating)
    }

    @Test(arguments: [4, 9])
    func floatInAGroupShowsTheActiveSpeaker(_ count: Int) {
        let layout = CallViewLayout(template: .float)
        let speaker = UserID(rawValue: "u\(count - 1)")
        let state = Self.state(members: count, connected: true, speaker: speaker)
        #expect(
            Self.placement(layout.tiles(for: state, in: Self.viewport))
                == ["\(speaker.rawValue) main \(Self.full)", "me floating \(Self.floating)"])
    }

    // MARK: - grid

    @Test func gridOfOneAndTwo() {
        let layout = CallViewLayout(template: .grid)
        #expect(
            Self.placement(layout.tiles(for: Self.state(members: 1, connected: true), in: Self.viewport))
                == ["me main \(Self.full)"])
        #expect(
            Self.placement(layout.tiles(for: Self.state(members: 2, connected: true), in: Self.viewport)) == [
                "me grid (0.0, 300.0, 200.0×200.0)", "u1 grid (200.0, 300.0, 200.0×200.0)",
            ])
    }

    @Test func gridOfFourIsTwoByTwoAndATapEnlarges() {
        var layout = CallViewLayout()
        let state = Self.state(members: 4, connected: true)
        #expect(
            Self.placement(layout.tiles(for: state, in: Self.viewport)) == [
                "me grid (0.0, 200.0, 200.0×200.0)", "u1 grid (200.0, 200.0, 200.0×200.0)",
                "u2 grid (0.0, 400.0, 200.0×200.0)", "u3 grid (200.0, 400.0, 200.0×200.0)",
            ])
        layout.tap("u3", in: state, viewport: Self.viewport)
        #expect(layout.enlargedMember(in: state) == "u3")
        // u3 takes the top; the other three share the rest, the short row centred.
        #expect(
            Self.placement(layout.tiles(for: state, in: Self.viewport)) == [
                "u3 enlarged (0.0, 0.0, 400.0×400.0)", "me grid (0.0, 400.0, 200.0×200.0)",
                "u1 grid (200.0, 400.0, 200.0×200.0)", "u2 grid (100.0, 600.0, 200.0×200.0)",
            ])
        layout.tap("u1", in: state, viewport: Self.viewport)
        #expect(layout.enlargedMember(in: state) == "u1")
        layout.tap("u1", in: state, viewport: Self.viewport)
        #expect(layout.enlargedMember(in: state) == nil)
        #expect(layout.tiles(for: state, in: Self.viewport).allSatisfy { $0.role == .grid })
    }

    @Test func gridOfNineIsThreeByThree() {
        let layout = CallViewLayout()
        let tiles = layout.tiles(for: Self.state(members: 9, connected: true), in: Self.viewport)
        let side = 400.0 / 3
        #expect(tiles.count == 9)
        for (index, tile) in tiles.enumerated() {
            let expected = LayoutRect(
                x: side * Double(index % 3), y: 200 + side * Double(index / 3), width: side, height: side)
            #expect(abs(tile.frame.x - expected.x) < 1e-9 && abs(tile.frame.y - expected.y) < 1e-9)
            #expect(tile.frame.width == side && tile.role == .grid)
        }
        #expect(tiles.map(\.userId.rawValue) == ["me", "u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8"])
    }

    @Test func aMemberWhoLeftDropsOutOfTheGrid() {
        var layout = CallViewLayout()
        var state = Self.state(members: 4, connected: true)
        layout.tap("u2", in: state, viewport: Self.viewport)
        state.allParticipants[2].status = .none
        #expect(layout.enlargedMember(in: state) == nil)
        #expect(layout.tiles(for: state, in: Self.viewport).map(\.userId.rawValue) == ["me", "u1", "u3"])
    }

    // MARK: - pip

    @Test(arguments: [1, 2, 4, 9])
    func pipShowsYourselfWhileCalling(_ count: Int) {
        let layout = CallViewLayout(template: .pip)
        let tiles = layout.tiles(for: Self.state(members: count, connected: false), in: Self.viewport)
        #expect(Self.placement(tiles) == ["me main \(Self.full)"])
        #expect(!layout.showsTimer(for: Self.state(members: count, connected: false)))
    }

    @Test func pipShowsThePeerInOneToOneAndTheActiveSpeakerInGroups() {
        var layout = CallViewLayout(template: .pip)
        #expect(
            Self.placement(layout.tiles(for: Self.state(members: 1, connected: true), in: Self.viewport))
                == ["me main \(Self.full)"])
        let oneToOne = Self.state(members: 2, connected: true)
        #expect(Self.placement(layout.tiles(for: oneToOne, in: Self.viewport)) == ["u1 main \(Self.full)"])
        #expect(layout.showsTimer(for: oneToOne))
        layout.tap("u1", in: oneToOne, viewport: Self.viewport)
        #expect(Self.placement(layout.tiles(for: oneToOne, in: Self.viewport)) == ["u1 main \(Self.full)"])

        // Before anyone spoke, the first member who answered; then whoever speaks.
        #expect(
            Self.placement(layout.tiles(for: Self.state(members: 4, connected: true), in: Self.viewport))
                == ["u1 main \(Self.full)"])
        #expect(
            Self.placement(layout.tiles(for: Self.state(members: 4, connected: true, speaker: "u3"), in: Self.viewport))
                == ["u3 main \(Self.full)"])
        #expect(
            Self.placement(layout.tiles(for: Self.state(members: 9, connected: true, speaker: "u5"), in: Self.viewport))
                == ["u5 main \(Self.full)"])
        #expect(
            Self.placement(layout.tiles(for: Self.state(members: 9, connected: true, speaker: "u8"), in: Self.viewport))
                == ["u8 main \(Self.full)"])
    }

    // MARK: - what each tile draws

    @Test func tilesCarryVideoAvatarsAnimationAndIcons() {
        var settings = CallViewSettings(defaultAvatar: "default.png", waitingAnimationPath: "waiting.gif")
        settings.setParticipantAvatars(["u2": "/custom/u2.png"])
        settings.setNetworkQualityIcons([.poor: "poor.png"])
        let layout = CallViewLayout(template: .grid, settings: settings)
        var state = Self.state(members: 4, connected: true)
        state.allParticipants[1].avatarURL = "https://example.com/u1.png"
        state.allParticipants[1].nickname = "Uma"
        state.allParticipants[2].avatarURL = "https://example.com/u2.png"
        state.allParticipants[3].status = .waiting
        state.allParticipants[1].networkQuality = .poor
        state.allParticipants[2].networkQuality = .down
        state.allParticipants[1].volumeLevel = .medium
        state.allParticipants[2].cameraOn = false
        let tiles = Dictionary(uniqueKeysWithValues: layout.tiles(for: state, in: Self.viewport).map { ($0.userId, $0) })

        #expect(tiles["u1"]?.avatar == "https://example.com/u1.png")
        #expect(tiles["u2"]?.avatar == "/custom/u2.png")
        #expect(tiles["u3"]?.avatar == "default.png")
        #expect(tiles["u1"]?.displayName == "Uma" && tiles["u2"]?.displayName == "u2")
        #expect(tiles["u1"]?.showsVideo == true && tiles["u2"]?.showsVideo == false && tiles["u3"]?.showsVideo == false)
        #expect(tiles["u3"]?.waitingAnimation == "waiting.gif" && tiles["u1"]?.waitingAnimation == nil)
        #expect(tiles["u1"]?.networkQualityIcon == "poor.png" && tiles["u2"]?.networkQualityIcon == "wifi.slash")
        #expect(tiles["u3"]?.networkQualityIcon == nil)
        #expect(tiles["u1"]?.volumeIcon == "speaker.wave.2.fill" && tiles["u3"]?.volumeIcon == "mic.slash.fill")
        #expect(tiles["me"]?.isSelf == true && tiles["u1"]?.isSelf == false)
        // In an audio call nobody shows video.
        let audio = layout.tiles(for: Self.state(members: 4, connected: true, video: false), in: Self.viewport)
        #expect(audio.allSatisfy { !$0.showsVideo })
    }

    @Test(arguments: [
        (VolumeLevel.mute, "mic.slash.fill"), (.low, "speaker.wave.1.fill"), (.medium, "speaker.wave.2.fill"),
        (.high, "speaker.wave.3.fill"), (.peak, "speaker.wave.3.fill"),
    ])
    func volumeIcons(_ level: VolumeLevel, _ icon: String) {
        #expect(CallViewSettings().volumeIcon(for: level) == icon)
    }

    @Test(arguments: [
        (NetworkQuality.unknown, String?.none), (.excellent, nil), (.good, nil), (.poor, nil),
        (.bad, "wifi.exclamationmark"), (.veryBad, "wifi.exclamationmark"), (.down, "wifi.slash"),
    ])
    func networkQualityIcons(_ quality: NetworkQuality, _ icon: String?) {
        #expect(CallViewSettings().networkQualityIcon(for: quality) == icon)
    }

    /// From report to icon: packet loss and RTT give the quality, the audio level the volume.
    @Test func reportsMapToIcons() {
        let settings = CallViewSettings()
        #expect(settings.networkQualityIcon(for: .from(packetLoss: 12, rtt: 90)) == "wifi.exclamationmark")
        #expect(settings.networkQualityIcon(for: .from(packetLoss: 0.5, rtt: 90)) == nil)
        #expect(settings.volumeIcon(for: .from(audioLevel: 80, microphoneOn: true)) == "speaker.wave.3.fill")
        #expect(settings.volumeIcon(for: .from(audioLevel: 80, microphoneOn: false)) == "mic.slash.fill")
    }

    // MARK: - timer

    @Test(arguments: [
        (0, "00:00"), (9, "00:09"), (59, "00:59"), (61, "01:01"), (3_599, "59:59"), (3_600, "1:00:00"),
        (36_061, "10:01:01"), (-5, "00:00"),
    ])
    func timerText(_ seconds: Int, _ text: String) {
        #expect(CallDurationText.format(seconds: seconds) == text)
    }

    @Test func theActiveCallsTimerText() {
        var call = Self.state(members: 2, connected: true).activeCall!
        call.duration = 754
        #expect(call.durationText == "12:34")
    }
}
