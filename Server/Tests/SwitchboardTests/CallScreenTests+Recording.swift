import Switchboard
import SwitchboardProtocol
import Testing

/// The recording mark and the record button (SwitchboardUI draws these on iOS).
extension CallScreenTests {
    /// `state(phase)` with the call recorded since 5000, started by `user` (nil: the app's policy).
    static func recorded(_ phase: Phase, by user: UserID?, video: Bool = true) -> CallStore.State {
        var state = Self.state(phase, video: video)
        state.activeCall?.info.recording = CallRecordingState(startedBy: user, startedAt: 5_000)
        if let index = state.allParticipants.firstIndex(where: { $0.userId == "u1" }) {
            state.allParticipants[index].nickname = "Uma"
        }
        return state
    }

    @Test(arguments: [
        // phase, started by → mark
        (Phase.connected, UserID?.some("u1"), CallRecordingMark?.some(.byMember("Uma"))),
        (.connected, "me", .byYou), (.connected, nil, .byApp),
        // A member who is not in the call any more is named by their id.
        (.connected, "u9", .byMember("u9")),
        // Ringing here: the notice before answering; placing the call, connecting: the same mark.
        (.ringingHere, nil, .byApp), (.calling, "me", .byYou), (.connecting, "u1", .byMember("Uma")),
    ])
    func theMarkSaysWhoStartedTheRecording(_ phase: Phase, _ user: UserID?, _ mark: CallRecordingMark?) {
        #expect(CallRecordingMark.of(Self.recorded(phase, by: user)) == mark)
    }

    @Test func noMarkWithoutARecording() {
        #expect(CallRecordingMark.of(Self.state(.connected)) == nil)
        #expect(CallRecordingMark.of(Self.state(.idle)) == nil)
    }

    @Test func voiceOverHearsTheSameCallsRecordingStartAndStop() {
        let plain = Self.state(.connected)
        let recorded = Self.recorded(.connected, by: "u1")
        #expect(CallRecordingMark.announcement(from: plain, to: recorded) == .started(.byMember("Uma")))
        #expect(CallRecordingMark.announcement(from: recorded, to: plain) == .stopped)
        // Not news: nothing changed, a name arrived, a recorded call came on screen or ended, or
        // another call replaced it.
        #expect(CallRecordingMark.announcement(from: recorded, to: recorded) == nil)
        var renamed = recorded
        renamed.allParticipants[1].nickname = "Uma B."
        #expect(CallRecordingMark.announcement(from: recorded, to: renamed) == nil)
        #expect(CallRecordingMark.announcement(from: Self.state(.idle), to: recorded) == nil)
        #expect(CallRecordingMark.announcement(from: recorded, to: Self.state(.idle)) == nil)
        #expect(CallRecordingMark.announcement(from: recorded, to: Self.state(.connected, callId: "c2")) == nil)
        // A recording started again (after a stop this device missed) is news.
        var again = Self.recorded(.connected, by: "me")
        again.activeCall?.info.recording?.startedAt = 9_000
        #expect(CallRecordingMark.announcement(from: recorded, to: again) == .started(.byYou))
    }

    @Test(arguments: [
        // phase, video, started by (nil: not recorded; "-": the app's policy) → buttons
        (Phase.connected, false, String?.none, ["microphone+", "speaker", "record", "moveToAnotherDevice", "minimize", "hangup"]),
        (.connected, false, "u1", ["microphone+", "speaker", "record+", "moveToAnotherDevice", "minimize", "hangup"]),
        // Nobody can stop what the app records every time.
        (.connected, false, "-", ["microphone+", "speaker", "record+(off)", "moveToAnotherDevice", "minimize", "hangup"]),
        (.connected, true, nil, [
            "microphone+", "speaker", "camera+", "switchCamera", "screenShare", "record", "moveToAnotherDevice", "minimize", "hangup",
        ]),
        // Only a connected call has it.
        (.calling, false, nil, ["microphone+", "speaker", "hangup"]), (.calling, false, "me", ["microphone+", "speaker", "hangup"]),
        (.ringingHere, false, "-", ["reject", "accept"]),
    ])
    func theRecordButtonWhereTheAppAsksForIt(_ phase: Phase, _ video: Bool, _ by: String?, _ expected: [String]) {
        let state = by.map { Self.recorded(phase, by: $0 == "-" ? nil : UserID(rawValue: $0), video: video) }
            ?? Self.state(phase, video: video)
        #expect(Self.names(CallControls.items(for: state, devices: Self.devices(), recordingControl: true)) == expected)
        // Without the app asking, no button, recorded or not.
        #expect(!CallControls.items(for: state, devices: Self.devices()).contains { $0.control == .record })
    }

    @Test func aPressStartsOrStopsTheRecording() {
        let devices = Self.devices()
        let record = { (state: CallStore.State) in
            CallControls.items(for: state, devices: devices, recordingControl: true).first { $0.control == .record }
        }
        #expect(record(Self.state(.connected)).flatMap { CallControls.action(for: $0, devices: devices) } == .setRecording(on: true))
        #expect(
            record(Self.recorded(.connected, by: "u1")).flatMap { CallControls.action(for: $0, devices: devices) }
                == .setRecording(on: false))
        #expect(record(Self.recorded(.connected, by: nil)).flatMap { CallControls.action(for: $0, devices: devices) } == nil)
    }
}
